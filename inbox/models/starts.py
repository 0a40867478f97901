"""A run started from the inbox page, while a worker asks the agent (``inbox.ingest.start``)."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from agents.models import Agent


class RunStart(models.Model):
    """One "Start a run" (an agent's page, or the API): queued, then sent to the agent by a worker, so no request
    waits on the agent. Its progress page and its API address show it until it is ``done`` (its run) or
    ``failed``."""

    class State(models.TextChoices):
        PENDING = "pending", "Asking the agent"
        DONE = "done", "Done"
        FAILED = "failed", "Failed"

    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="starts")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="run_starts")
    thread_id = models.CharField(max_length=255)
    run_input = models.JSONField()
    state = models.CharField(max_length=16, choices=State.choices, default=State.PENDING)
    run = models.ForeignKey("inbox.Run", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    error_status = models.PositiveSmallIntegerField(null=True, blank=True)
    error_code = models.CharField(max_length=64, blank=True)
    error_field = models.CharField(
        max_length=255, blank=True, help_text="The field of the reply that broke the contract."
    )
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        app_label = "inbox"
        ordering = ["-created_at", "-pk"]

    def __str__(self) -> str:
        return f"start {self.pk} of {self.agent_id} on {self.thread_id} ({self.state})"
