"""One row per (agent, behaviour, variant): the last time the inbox saw the agent do it, and a run where it did."""

from __future__ import annotations

from django.db import models
from django.utils import timezone

from agents.models import Agent


class ConformanceObservation(models.Model):
    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="conformance", db_index=False)
    behaviour = models.CharField(max_length=64)
    variant = models.CharField(max_length=64)
    # What the agent did, in this run's words (ids, names): shown next to the rule.
    detail = models.TextField(blank=True)
    # A run where it was seen (the latest); kept when that run is deleted, without the link.
    example_run = models.ForeignKey(
        "inbox.Run", on_delete=models.SET_NULL, null=True, blank=True, related_name="+", db_index=False
    )
    # Where it was seen when there is no stored run to link (the inbox refused or cut it): the runId the agent
    # gave, and the index of the event at fault in the run's stream.
    evidence_run_id = models.CharField(max_length=255, blank=True, default="")
    event_index = models.IntegerField(null=True, blank=True)
    first_seen_at = models.DateTimeField(default=timezone.now)
    last_seen_at = models.DateTimeField(default=timezone.now)

    class Meta:
        app_label = "inbox"
        constraints = [
            models.UniqueConstraint(fields=["agent", "behaviour", "variant"], name="conformance_unique_variant")
        ]

    def __str__(self) -> str:
        return f"{self.agent_id}: {self.behaviour}={self.variant}"
