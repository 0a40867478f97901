"""Auto-decision policies: which of an agent's requests need a human at all.

A ``Policy`` belongs to an agent or a team and is evaluated in ``position`` order at ingest: shadow policies
only record what they would have done, the first enforced one that matches acts. Every match is a
``PolicyMatch`` row; an enforced approve or deny is a real ``Decision`` by the policy's service account
(docs/policies.md)."""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth.models import Group
from django.db import models
from django.db.models import Q
from django.urls import reverse
from django.utils import timezone


class Policy(models.Model):
    class Action(models.TextChoices):
        APPROVE = "approve", "Approve"
        DENY = "deny", "Deny"
        REQUIRE_APPROVALS = "require_approvals", "Require N approvals"
        ROUTE = "route", "Route to a team"

    class Mode(models.TextChoices):
        ENFORCE = "enforce", "Enforce"
        SHADOW = "shadow", "Shadow (record only)"

    class Subject(models.TextChoices):
        ARGUMENTS = "arguments", "Tool arguments"
        METADATA = "metadata", "Interrupt metadata"

    name = models.CharField(max_length=100, unique=True)
    description = models.TextField(blank=True)
    # Exactly one of agent / team (policy_scope_is_one_of_agent_or_team).
    agent = models.ForeignKey("agents.Agent", null=True, blank=True, on_delete=models.CASCADE, related_name="policies")
    team = models.ForeignKey(Group, null=True, blank=True, on_delete=models.CASCADE, related_name="policies")
    position = models.PositiveIntegerField(default=100, help_text="Lower runs first.")
    enabled = models.BooleanField(default=True)
    # The match: each empty part matches anything.
    reason = models.CharField(max_length=255, blank=True, help_text="The interrupt's reason; empty = any.")
    tool_name = models.CharField(max_length=255, blank=True, help_text="For tool_call: the tool; empty = any.")
    subject = models.CharField(max_length=16, choices=Subject.choices, default=Subject.ARGUMENTS)
    match_schema = models.JSONField(
        null=True, blank=True, help_text="A JSON Schema the subject must satisfy; empty = any."
    )
    action = models.CharField(max_length=32, choices=Action.choices)
    approvals = models.PositiveSmallIntegerField(null=True, blank=True, help_text="For 'require N approvals'.")
    route_team = models.ForeignKey(
        Group, null=True, blank=True, on_delete=models.PROTECT, related_name="routed_by_policies"
    )
    counts_as_approver = models.BooleanField(
        default=False,
        help_text="On an agent that needs several approvals, an approval by this policy counts as one of them. "
        "Otherwise it is recorded and the item still needs every approval from people.",
    )
    mode = models.CharField(max_length=16, choices=Mode.choices, default=Mode.SHADOW)
    version = models.PositiveIntegerField(default=1)
    service_user = models.OneToOneField(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="inbox_policy"
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(auto_now=True)
    # The backtest it was last promoted on (``policy_update``): it stays linked after the version moves on; None
    # when it was promoted untested (or never promoted).
    evidence = models.ForeignKey(
        "inbox.PolicyBacktest", null=True, blank=True, on_delete=models.SET_NULL, related_name="+", db_index=False
    )

    class Meta:
        app_label = "inbox"
        ordering = ["position", "pk"]
        constraints = [
            models.CheckConstraint(
                condition=(Q(agent__isnull=False) & Q(team__isnull=True))
                | (Q(agent__isnull=True) & Q(team__isnull=False)),
                name="policy_scope_is_one_of_agent_or_team",
            )
        ]
        verbose_name_plural = "policies"

    def __str__(self) -> str:
        return self.name

    def get_absolute_url(self) -> str:
        return reverse("inbox:policy", args=[self.pk])

    @property
    def actor_label(self) -> str:
        return f"policy:{self.name}"

    @property
    def scope_label(self) -> str:
        return f"agent {self.agent}" if self.agent_id else f"team {self.team}"

    @property
    def action_label(self) -> str:
        if self.action == self.Action.REQUIRE_APPROVALS:
            return f"Require {self.approvals} approvals"
        if self.action == self.Action.ROUTE:
            return f"Route to {self.route_team}"
        return self.get_action_display()

    def snapshot(self) -> dict:
        """The editable fields as the audit log records them (and diffs them)."""
        return {
            "name": self.name,
            "description": self.description,
            "agent": self.agent.slug if self.agent_id and self.agent else None,
            "team": self.team.name if self.team_id and self.team else None,
            "position": self.position,
            "enabled": self.enabled,
            "reason": self.reason,
            "toolName": self.tool_name,
            "subject": self.subject,
            "matchSchema": self.match_schema,
            "action": self.action,
            "approvals": self.approvals,
            "routeTeam": self.route_team.name if self.route_team_id and self.route_team else None,
            "countsAsApprover": self.counts_as_approver,
            "mode": self.mode,
        }


class PolicyMatch(models.Model):
    """One policy matching one item at ingest: what it did (enforce) or would have done (shadow)."""

    class Outcome(models.TextChoices):
        DECIDED = "decided", "Decided the item"
        VOTED = "voted", "Counted as one approval"
        RECORDED = "recorded", "Approval recorded, not counted"
        RAISED = "raised", "Raised the quorum"
        ROUTED = "routed", "Routed the item"
        SHADOW = "shadow", "Would have acted (shadow)"
        REFUSED = "refused", "Could not act"

    policy = models.ForeignKey(Policy, on_delete=models.CASCADE, related_name="matches")
    policy_version = models.PositiveIntegerField()
    item = models.ForeignKey("inbox.InboxItem", on_delete=models.CASCADE, related_name="policy_matches")
    mode = models.CharField(max_length=16, choices=Policy.Mode.choices)
    action = models.CharField(max_length=32, choices=Policy.Action.choices)
    outcome = models.CharField(max_length=16, choices=Outcome.choices)
    # The payload an approve/deny produces ({"approved": true|false}).
    payload = models.JSONField(null=True, blank=True)
    decision = models.ForeignKey(
        "inbox.Decision", null=True, blank=True, on_delete=models.SET_NULL, related_name="policy_matches"
    )
    note = models.TextField(blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        app_label = "inbox"
        ordering = ["-created_at", "-pk"]
        indexes = [models.Index(fields=["policy", "mode"], name="policymatch_policy_mode")]

    def __str__(self) -> str:
        return f"{self.policy_id} {self.outcome} item {self.item_id}"

    @property
    def effect(self) -> str:
        """What the policy did to the item, or would have done (shadow), in words: the item page and the API say it."""
        if self.mode == Policy.Mode.SHADOW:
            return "Would have " + SHADOW_EFFECTS.get(self.action, "acted on it")
        if self.outcome == self.Outcome.DECIDED:
            # Its decision's stored verdict (``Decision.outcome``, the one judge); the policy's action for a match
            # whose decision is gone or was stored before decisions carried one.
            decision = self.decision
            if decision is not None and decision.outcome:
                return decision.get_outcome_display()
            return "Denied" if self.action == Policy.Action.DENY else "Approved"
        return self.get_outcome_display()


# What a shadow match would have done, after "Would have".
SHADOW_EFFECTS: dict[str, str] = {
    Policy.Action.APPROVE.value: "approved",
    Policy.Action.DENY.value: "denied",
    Policy.Action.ROUTE.value: "routed it",
    Policy.Action.REQUIRE_APPROVALS.value: "raised its quorum",
}


class PolicyBacktest(models.Model):
    """A policy run over the items people decided in a period (``inbox.policies.backtest``): what it would have
    matched, how often people agreed, where they did not. It belongs to the policy's version it tested, or to
    the unsaved values of its form (``draft``); promoting a shadow policy records its version's latest backtest
    in the audit log as the evidence."""

    class State(models.TextChoices):
        PENDING = "pending", "Queued"
        RUNNING = "running", "Reading items"
        DONE = "done", "Done"
        FAILED = "failed", "Failed"

    # None for a backtest of the ordered set of enforced policies (``ordered_set``; ``rules["policies"]``).
    policy = models.ForeignKey(Policy, null=True, blank=True, on_delete=models.CASCADE, related_name="backtests")
    policy_version = models.PositiveIntegerField()
    ordered_set = models.BooleanField(
        default=False, help_text="The enforced policies in order (the first that matches acts), not one policy."
    )
    draft = models.BooleanField(default=False, help_text="The form's unsaved values, not the saved version.")
    # What was tested: ``Policy.snapshot()`` of the saved version or of the draft.
    rules = models.JSONField()
    days = models.PositiveSmallIntegerField()
    since = models.DateTimeField()
    until = models.DateTimeField()
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    state = models.CharField(max_length=16, choices=State.choices, default=State.PENDING)
    # Progress: the candidates (decided items of the policy's agents whose reason and tool it names) and how
    # many of them were read.
    total = models.PositiveIntegerField(default=0)
    scanned = models.PositiveIntegerField(default=0)
    # The result. ``decided``: every item people decided in the period for the policy's agents.
    decided = models.PositiveIntegerField(default=0)
    matched = models.PositiveIntegerField(default=0)
    compared = models.PositiveIntegerField(default=0)
    agreed = models.PositiveIntegerField(default=0)
    found_wrong = models.PositiveIntegerField(default=0)
    # Matched items per what people decided (``InboxItem.Outcome``).
    outcomes = models.JSONField(default=dict)
    # An ordered set's counts per policy that would have acted first: [{"policy": id, "name", "matched", ...}].
    breakdown = models.JSONField(default=list, blank=True)
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    finished_at = models.DateTimeField(null=True, blank=True)
    # Recovery (``inbox.policies.backtest.backtest_requeue_stalled``): when it was queued or last read a chunk, and
    # which reading holds it. A reading whose worker died is started again under the next number; the one before
    # it, should it still be alive, writes nothing more.
    progress_at = models.DateTimeField(default=timezone.now)
    attempt = models.PositiveSmallIntegerField(default=0)

    class Meta:
        app_label = "inbox"
        ordering = ["-created_at", "-pk"]
        # A policy's page and its promotion read its latest backtests.
        indexes = [models.Index(fields=["policy", "-created_at"], name="backtest_policy_newest")]

    def __str__(self) -> str:
        if self.ordered_set:
            return f"backtest {self.pk} of the enforced policies in order"
        return f"backtest {self.pk} of policy {self.policy_id} v{self.policy_version}"

    def get_absolute_url(self) -> str:
        if self.policy_id is None:
            return reverse("inbox:policy_set_backtest", args=[self.pk])
        return reverse("inbox:policy_backtest", args=[self.policy_id, self.pk])

    @property
    def disagreed(self) -> int:
        return self.compared - self.agreed

    @property
    def agreement(self) -> float | None:
        return self.agreed / self.compared if self.compared else None

    @property
    def is_finished(self) -> bool:
        return self.state in (self.State.DONE, self.State.FAILED)

    @property
    def percent(self) -> int:
        return 100 if self.state == self.State.DONE else (100 * self.scanned // self.total if self.total else 0)


class BacktestFinding(models.Model):
    """An item a backtest lists: people decided otherwise, or a person denied what the agent did next."""

    class Kind(models.TextChoices):
        DISAGREED = "disagreed", "People decided otherwise"
        FOUND_WRONG = "found_wrong", "Found wrong later"

    backtest = models.ForeignKey(PolicyBacktest, on_delete=models.CASCADE, related_name="findings", db_index=False)
    item = models.ForeignKey("inbox.InboxItem", on_delete=models.CASCADE, related_name="+")
    kind = models.CharField(max_length=16, choices=Kind.choices)
    # In an ordered set's backtest: the policy that would have acted on the item (the first that matches).
    policy = models.ForeignKey(
        Policy, null=True, blank=True, on_delete=models.SET_NULL, related_name="+", db_index=False, db_constraint=False
    )

    class Meta:
        app_label = "inbox"
        # A backtest's page lists one kind, by item, a page at a time.
        indexes = [models.Index(fields=["backtest", "kind", "item"], name="finding_backtest_kind")]

    def __str__(self) -> str:
        return f"{self.kind} item {self.item_id} in backtest {self.backtest_id}"
