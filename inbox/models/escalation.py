"""Escalation and delegation: a request that finds a person even when its team is silent or away.

An ``EscalationRule`` is one step of a team's or an agent's chain that adds a team or a person to an item's
deciders when it stays open too long; each firing is an ``Escalation`` row, unique per (item, rule). An
``AwayStatus`` names a person's delegate while they are away. docs/teams.md."""

from __future__ import annotations

from datetime import datetime

from django.conf import settings
from django.contrib.auth.models import Group
from django.db import models
from django.db.models import Q
from django.utils import timezone


class EscalationRule(models.Model):
    # Exactly one scope (team or agent), one trigger and one target: the check constraints below.
    team = models.ForeignKey(
        Group, null=True, blank=True, on_delete=models.CASCADE, related_name="escalation_rules", db_index=False
    )
    agent = models.ForeignKey(
        "agents.Agent", null=True, blank=True, on_delete=models.CASCADE, related_name="escalation_rules", db_index=False
    )
    step = models.PositiveSmallIntegerField(default=1, help_text="1, or 2 to go further up the chain.")
    after_minutes = models.PositiveIntegerField(null=True, blank=True, help_text="Still open this long after arrival.")
    before_deadline_minutes = models.PositiveIntegerField(
        null=True, blank=True, help_text="Still open this long before its deadline."
    )
    to_team = models.ForeignKey(
        Group, null=True, blank=True, on_delete=models.CASCADE, related_name="escalations_to", db_index=False
    )
    to_user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.CASCADE, related_name="+", db_index=False
    )
    enabled = models.BooleanField(default=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+", db_index=False
    )
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        app_label = "inbox"
        ordering = ["team_id", "agent_id", "step"]
        constraints = [
            models.CheckConstraint(
                condition=(Q(team__isnull=False) & Q(agent__isnull=True))
                | (Q(team__isnull=True) & Q(agent__isnull=False)),
                name="escalation_scope_is_one_of_team_or_agent",
            ),
            models.CheckConstraint(
                condition=(Q(after_minutes__isnull=False) & Q(before_deadline_minutes__isnull=True))
                | (Q(after_minutes__isnull=True) & Q(before_deadline_minutes__isnull=False)),
                name="escalation_trigger_is_one",
            ),
            models.CheckConstraint(
                condition=(Q(to_team__isnull=False) & Q(to_user__isnull=True))
                | (Q(to_team__isnull=True) & Q(to_user__isnull=False)),
                name="escalation_target_is_one",
            ),
            models.UniqueConstraint(
                fields=["team", "step"], condition=Q(team__isnull=False), name="escalation_team_step"
            ),
            models.UniqueConstraint(
                fields=["agent", "step"], condition=Q(agent__isnull=False), name="escalation_agent_step"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.scope_label} step {self.step} → {self.target_label}"

    @property
    def scope_label(self) -> str:
        if self.team is not None:
            return self.team.name
        assert self.agent is not None  # a rule's scope is its team or its agent (a check constraint)
        return self.agent.name or self.agent.slug

    @property
    def target_label(self) -> str:
        if self.to_team is not None:
            return self.to_team.name
        assert self.to_user is not None  # a rule's target is a team or a person (a check constraint)
        return self.to_user.get_username()

    @property
    def minutes(self) -> int:
        return self.after_minutes if self.after_minutes is not None else self.before_deadline_minutes or 0

    @property
    def why(self) -> str:
        """Why an item this rule fires on was escalated, in words: "no decision from Billing in 30 min"."""
        if self.after_minutes is not None:
            return f"no decision from {self.scope_label} in {self.after_minutes} min"
        return f"no decision from {self.scope_label} {self.before_deadline_minutes} min before the deadline"


class Escalation(models.Model):
    """One rule step fired on one item: its target is among the item's deciders from ``fired_at``."""

    # No database FK constraints (as on the audit log): a sweep inserts many rows at once, and checking four
    # deferred constraints each at COMMIT costs more than the insert. Django still cascades deletions.
    item = models.ForeignKey(
        "inbox.InboxItem", on_delete=models.CASCADE, related_name="escalations", db_index=False, db_constraint=False
    )
    # NULL once the rule is deleted: the item keeps the deciders it gained. Its index is the unique constraint's.
    rule = models.ForeignKey(
        EscalationRule,
        null=True,
        on_delete=models.SET_NULL,
        related_name="escalations",
        db_index=False,
        db_constraint=False,
    )
    step = models.PositiveSmallIntegerField()
    # The rule's target when it fired: the item stays with them if the rule changes later.
    to_team = models.ForeignKey(
        Group, null=True, blank=True, on_delete=models.CASCADE, related_name="+", db_index=False, db_constraint=False
    )
    to_user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="+",
        db_index=False,
        db_constraint=False,
    )
    target_label = models.CharField(max_length=200)
    why = models.CharField(max_length=300)
    fired_at = models.DateTimeField(default=timezone.now)

    class Meta:
        app_label = "inbox"
        ordering = ["fired_at", "id"]
        constraints = [models.UniqueConstraint(fields=["item", "rule"], name="escalation_once_per_item_and_rule")]
        indexes = [
            # ``inbox.access``: the items escalated to a person's teams, or to the person.
            models.Index(fields=["to_team", "item"], condition=Q(to_team__isnull=False), name="escalation_to_team"),
            models.Index(fields=["to_user", "item"], condition=Q(to_user__isnull=False), name="escalation_to_user"),
        ]

    def __str__(self) -> str:
        return f"item {self.item_id} → {self.target_label}"

    @property
    def sentence(self) -> str:
        """ "Escalated to Finance leads at 14:02 — no decision from Billing in 30 min"."""
        local = timezone.localtime(self.fired_at)
        return f"Escalated to {self.target_label} at {local:%H:%M} — {self.why}"


class AwayStatus(models.Model):
    """A person away from ``starts_at`` until ``ends_at``, and who decides their items meanwhile."""

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="inbox_away")
    starts_at = models.DateTimeField()
    ends_at = models.DateTimeField()
    delegate = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+", db_index=False)
    set_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+", db_index=False
    )
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        app_label = "inbox"
        verbose_name = "away status"
        verbose_name_plural = "away statuses"
        constraints = [
            models.CheckConstraint(condition=Q(ends_at__gt=models.F("starts_at")), name="away_ends_after_it_starts"),
            models.CheckConstraint(condition=~Q(delegate=models.F("user")), name="away_delegate_is_someone_else"),
        ]

    def __str__(self) -> str:
        return f"{self.user_id} away → {self.delegate_id}"

    def in_force(self, now: datetime | None = None) -> bool:
        now = now or timezone.now()
        return self.starts_at <= now < self.ends_at
