"""The inbox domain: threads, runs, interrupts as inbox items, decisions, resumes and the audit log.

State machines (see docs/deciding.md and docs/resumes.md):
- InboxItem: open → resolved | cancelled | expired. Terminal states never change.
- Resume (one per interrupted run): pending → sending → delivered | failed | expired.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib.auth.models import Group
from django.db import models
from django.urls import reverse
from django.utils import timezone
from django.utils.text import Truncator

from agents.models import Agent
from inbox.core import schema_view
from inbox.core.fields import RowsJSONField
from inbox.core.json_view import in_key_order, in_schema_order, proposal_args
from inbox.limits import MAX_JSON_DEPTH

# What carries a full replacement of a tool call's arguments in an answer, in the order they are looked for: the
# spec's ``editedArgs`` and Claude Agent SDK's ``updatedInput`` (docs/deciding.md, "Known emitters").
EDIT_KEYS = ("editedArgs", "updatedInput")

# What a decision means (approved, denied, answered…) is judged once, when it is made, by the item's own schema
# (``inbox.decisions.shapes.outcome_for``), and stored: on the decision (``Decision.outcome``) and, when it closes
# the item, on the item (``InboxItem.outcome``). Every reader reads the stored outcome; nothing here judges a payload.


class Thread(models.Model):
    # No index of its own: thread_unique_per_agent starts with agent.
    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="threads", db_index=False)
    thread_id = models.CharField(max_length=255)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["agent", "thread_id"], name="thread_unique_per_agent")]
        # The list's thread filter (?thread=) names a thread by its id alone, whatever the agent: without
        # this, each of the list's tab counts would read every thread.
        indexes = [models.Index(fields=["thread_id"], name="thread_by_thread_id")]

    def __str__(self) -> str:
        return self.thread_id

    def get_absolute_url(self) -> str:
        return reverse("inbox:thread", args=[self.pk])


class Run(models.Model):
    class Outcome(models.TextChoices):
        INTERRUPT = "interrupt", "Interrupted"
        SUCCESS = "success", "Succeeded"
        CANCELLED = "cancelled", "Cancelled"
        ERROR = "error", "Failed (RUN_ERROR)"

    class Source(models.TextChoices):
        INGEST = "ingest", "Posted by the agent"
        RESUME = "resume", "Resumed by the inbox"
        STARTED = "started", "Started from the inbox"

    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="runs")
    # No index of its own: run_unique_per_thread starts with thread.
    thread = models.ForeignKey(Thread, on_delete=models.CASCADE, related_name="runs", db_index=False)
    run_id = models.CharField(max_length=255)
    parent_run_id = models.CharField(max_length=255, blank=True)
    source = models.CharField(max_length=16, choices=Source.choices, default=Source.INGEST)
    outcome = models.CharField(max_length=16, choices=Outcome.choices)
    # True when RUN_FINISHED carried no outcome at all (the legacy success shape).
    outcome_omitted = models.BooleanField(default=False)
    result = models.JSONField(null=True, blank=True)
    error_message = models.TextField(blank=True)
    state_snapshot = models.JSONField(null=True, blank=True)
    messages_snapshot = models.JSONField(null=True, blank=True)
    # [{"id", "name", "args" (parsed JSON or None), "argsText", "source": "events"|"messages"}]
    tool_calls = models.JSONField(default=list, blank=True)
    # Tool results seen in this run: [{"toolCallId", "content", "messageId"}]
    tool_results = models.JSONField(default=list, blank=True)
    # A success outcome's pendingToolCallIds (ag-ui-protocol 1.0): calls the run left for the client to answer.
    pending_tool_call_ids = models.JSONField(default=list, blank=True)
    # A compact record of the events the inbox read (RAW and rawEvent dropped), for the run page.
    events = models.JSONField(default=list, blank=True)
    # The RunAgentInput this run answered: what the inbox sent (source=started or resume), else what the
    # agent echoed in RUN_STARTED.input. A resume without MESSAGES_SNAPSHOT rebuilds its messages from it.
    input = models.JSONField(null=True, blank=True)
    # Who asked for the run's actions, when the agent names them (metadata/forwardedProps "requestedBy"):
    # that person may not approve its interrupts.
    requested_by = models.CharField(max_length=255, blank=True)
    # sha256 of the canonical ingest body, for idempotent replays of the same POST.
    content_hash = models.CharField(max_length=64, blank=True)
    # When the team was told about the run's open items (inbox.notifications). NULL while that is still to
    # do: the task that announces a run claims it by setting this, so a run is announced once.
    notified_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now, db_index=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["thread", "run_id"], name="run_unique_per_thread")]
        indexes = [
            # The beat task that announces runs whose queued task was lost reads only these rows.
            models.Index(fields=["created_at"], condition=models.Q(notified_at__isnull=True), name="run_unannounced"),
        ]
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return self.run_id

    def get_absolute_url(self) -> str:
        return reverse("inbox:run", args=[self.pk])

    def tool_call(self, tool_call_id: str | None) -> dict | None:
        if not tool_call_id:
            return None
        return next((call for call in self.tool_calls if call.get("id") == tool_call_id), None)


class InboxItem(models.Model):
    """One interrupt, as an approver sees it.

    Indexes are chosen for the expiry sweep as much as for reads: expiring items rewrites every index
    entry of each row, so the agent and run foreign keys use the composite indexes that start with them, and
    the expiry index covers open items only (an expired row leaves it instead of adding an entry).
    """

    class Status(models.TextChoices):
        OPEN = "open", "Open"
        RESOLVED = "resolved", "Resolved"
        CANCELLED = "cancelled", "Cancelled"
        EXPIRED = "expired", "Expired"

    class Outcome(models.TextChoices):
        """What happened, as an approver reads it (``inbox.decisions.shapes.outcome_for``); empty while open."""

        APPROVED = "approved", "Approved"
        APPROVED_WITH_EDITS = "approved_with_edits", "Approved with edits"
        DENIED = "denied", "Denied"
        ANSWERED = "answered", "Answered"
        CANCELLED = "cancelled", "Cancelled"
        EXPIRED = "expired", "Expired"
        # Closed unanswered because the agent finished a later run on the thread without a resume (rule 4):
        # status expired (nothing is ever sent for it), this outcome to say why.
        SUPERSEDED = "superseded", "Superseded"

    # The outcomes that say yes to the agent; an answer to a question is neither a yes nor a no.
    APPROVALS = (Outcome.APPROVED, Outcome.APPROVED_WITH_EDITS)
    TERMINAL = (Status.RESOLVED, Status.CANCELLED, Status.EXPIRED)
    # Decided by a person (as opposed to open or expired): the statuses a resume carries.
    DECIDED = (Status.RESOLVED, Status.CANCELLED)

    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="items", db_index=False)
    thread = models.ForeignKey(Thread, on_delete=models.CASCADE, related_name="items")
    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="items", db_index=False)
    position = models.PositiveIntegerField(help_text="Order within the run's interrupts[].")
    interrupt_id = models.CharField(max_length=255)
    reason = models.CharField(max_length=255)
    message = models.TextField(blank=True)
    tool_call_id = models.CharField(max_length=255, blank=True)
    response_schema = RowsJSONField(null=True, blank=True)
    # The schema's JSON as the agent wrote it: PostgreSQL's jsonb keeps keys in its own order (shortest first),
    # and a form must ask its fields in the agent's order (``schema_in_agent_order``).
    response_schema_text = models.TextField(blank=True, default="", db_default="")
    expires_at = models.DateTimeField()
    # True when expires_at came from the agent's default TTL rather than the interrupt.
    expires_at_defaulted = models.BooleanField(default=False)
    metadata = RowsJSONField(null=True, blank=True)
    # The original interrupt object exactly as received (camelCase), fields the SDK keeps included.
    raw = RowsJSONField(default=dict)
    # The tool-call proposal the interrupt's toolCallId points at: {"id", "name", "args", "argsText"}.
    tool_call = RowsJSONField(null=True, blank=True)

    status = models.CharField(max_length=16, choices=Status.choices, default=Status.OPEN)
    status_note = models.TextField(blank=True, help_text="Why the item ended as it did, when not decided.")
    # Set with status when the item closes (``inbox.decisions.shapes.outcome_for``): a deny is not shown as a green
    # "Resolved".
    outcome = models.CharField(max_length=24, choices=Outcome.choices, blank=True, default="")
    # The decision that closed the item (quorum votes are Decision rows).
    response_payload = RowsJSONField(null=True, blank=True)
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+", db_index=False
    )
    decided_at = models.DateTimeField(null=True, blank=True)
    decision_comment = models.TextField(blank=True)

    claimed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="claimed_items",
        db_index=False,
    )
    claimed_at = models.DateTimeField(null=True, blank=True)
    reminder_sent_at = models.DateTimeField(null=True, blank=True)
    # The TOOL_CALL_RESULT from the resumed run: {"content", "messageId", "runId"}.
    tool_result = RowsJSONField(null=True, blank=True)
    tool_result_at = models.DateTimeField(null=True, blank=True)
    # Set by an auto-decision policy (inbox.policies): a raised quorum for this item, and the team it was
    # routed to (that team decides it instead of the agent's teams).
    approvals_required = models.PositiveSmallIntegerField(null=True, blank=True)
    routed_team = models.ForeignKey(
        Group, null=True, blank=True, on_delete=models.SET_NULL, related_name="routed_items", db_index=False
    )
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["run", "interrupt_id"], name="item_unique_per_run")]
        indexes = [
            # The list's tabs, each read in its own order from an index that holds only that tab's rows, with the
            # agent and the routed team beside the key so that a team approver's visibility (``visible_items``:
            # their agents' unrouted items, or items routed to their teams) is checked in the index: an index-only
            # scan. Text search reads ItemSearchText.
            models.Index(
                fields=["expires_at", "id", "agent", "routed_team"],
                condition=models.Q(status="open"),
                name="item_open_expires",
            ),
            models.Index(
                fields=["id", "agent", "routed_team"], condition=models.Q(status="open"), name="item_open_newest"
            ),
            models.Index(
                fields=["id", "agent", "routed_team"],
                condition=models.Q(status__in=["resolved", "cancelled"]),
                name="item_decided_newest",
            ),
            models.Index(
                fields=["id", "agent", "routed_team"], condition=models.Q(status="expired"), name="item_expired_newest"
            ),
            # The All tab, which no status index holds: newest first with the visibility columns beside the key, as
            # in the tabs' own indexes (an approver's rows and count read the index alone), and by agent (the
            # agent filter: one agent's rows, newest first, are a range of the index however deep the page).
            models.Index(fields=["id", "agent", "routed_team"], name="item_newest"),
            models.Index(fields=["agent", "id", "routed_team"], name="item_agent_newest"),
            # The reasons of open items for the list's filter, read by skipping through this index; and the reason
            # filter's tab counts. Both hold every column of an approver's visibility (an escalated item is known by
            # its id), so the counts read the index alone.
            models.Index(
                fields=["reason", "agent", "routed_team", "id"],
                condition=models.Q(status="open"),
                name="item_open_reason",
            ),
            models.Index(fields=["reason", "status", "agent", "routed_team", "id"], name="item_reason_status"),
            # Decided items by expiry: the sweep finds open siblings of a lapsed decided item through it.
            models.Index(
                fields=["expires_at"],
                condition=models.Q(status__in=["resolved", "cancelled"]),
                name="item_decided_expires",
            ),
            models.Index(fields=["agent", "status", "expires_at"], name="item_agent_status_expires"),
            # Items by tool call id are found through ItemSearchText.tool_call_id: an index here would take a new
            # entry on every status change.
            # Partial: most rows (and every row the sweep writes) have no decider or holder.
            models.Index(fields=["decided_by"], condition=models.Q(decided_by__isnull=False), name="item_decided_by"),
            models.Index(fields=["claimed_by"], condition=models.Q(claimed_by__isnull=False), name="item_claimed_by"),
        ]
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"{self.reason}: {self.interrupt_id}"

    def get_absolute_url(self) -> str:
        return reverse("inbox:item", args=[self.pk])

    @property
    def short_title(self) -> str:
        """What people call the item: its message, shortened; its interrupt id only when it has no message."""
        return Truncator(self.message).chars(80) if self.message else self.interrupt_id

    @property
    def is_open(self) -> bool:
        return self.status == self.Status.OPEN

    @property
    def is_decided(self) -> bool:
        return self.status in self.DECIDED

    @property
    def outcome_label(self) -> str:
        """The outcome in words ("Denied"), or the status ("Open") while there is none."""
        return self.get_outcome_display() if self.outcome else self.get_status_display()

    @property
    def proposal(self) -> dict | None:
        """The tool call the item asks about: its own copy, else the one its run recorded."""
        return self.tool_call or (self.run.tool_call(self.tool_call_id) if self.tool_call_id else None)

    @property
    def proposed_args(self) -> Any:
        """The proposal's arguments in the order the agent wrote them (None when the proposal is unknown)."""
        return proposal_args(self.proposal, max_depth=MAX_JSON_DEPTH)

    @property
    def schema_in_agent_order(self) -> Any:
        """``response_schema`` with the key order of ``response_schema_text`` (as the agent sent it)."""
        return in_key_order(self.response_schema, self.response_schema_text, max_depth=MAX_JSON_DEPTH)

    @property
    def answer_in_form_order(self) -> Any:
        """The stored answer with its fields in the order the form asked them."""
        return in_schema_order(self.response_payload, self.schema_in_agent_order)

    @property
    def outcome_key(self) -> str:
        """The outcome, or the status while open: the CSS modifier of the outcome badge."""
        return self.outcome or self.status

    @property
    def is_denial(self) -> bool:
        """Closed by a denial, as judged when it was decided (``outcome``)."""
        return self.outcome == self.Outcome.DENIED

    def held_by(self, user: Any) -> bool:
        """``user`` holds (has claimed) this item."""
        return self.claimed_by_id is not None and self.claimed_by_id == user.pk

    def held_by_other(self, user: Any) -> bool:
        """Someone other than ``user`` holds this item. Whether that stops ``user`` deciding it is
        ``inbox.access.locked_by_claim``."""
        return self.claimed_by_id is not None and self.claimed_by_id != user.pk

    @property
    def subagent_run_id(self) -> str:
        """The subagent invocation that raised the interrupt (``subagentRunId``, ag-ui-protocol 1.0), or ''."""
        value = (self.raw or {}).get("subagentRunId") if isinstance(self.raw, dict) else None
        return value if isinstance(value, str) else ""

    @property
    def is_superseded(self) -> bool:
        return self.outcome == self.Outcome.SUPERSEDED

    @property
    def linked_call_id(self) -> str:
        """The tool call this item answers for: its proposal's id (which framework metadata may name, e.g. ADK's
        ``originalFunctionCall``), else its own ``toolCallId``. Tool results are filed by it."""
        return (self.tool_call or {}).get("id") or self.tool_call_id

    @property
    def tool_name(self) -> str:
        return (self.tool_call or {}).get("name", "")

    @property
    def required_approvals(self) -> int:
        """How many distinct approvers must approve: the agent's quorum, or more if a policy raised it."""
        return max(1, self.agent.approvals_required, self.approvals_required or 0)

    @property
    def offers_edits(self) -> bool:
        """The spec's capability signal: an edit key (editedArgs, or Claude's updatedInput) in the schema means
        the client may offer edit UI (the page also needs a yes/no shape: ``inbox.decisions.shapes``). Read through
        local ``$ref``s, ``allOf`` and union branches (``inbox.core.schema_view``)."""
        schema = self.response_schema
        return isinstance(schema, dict) and bool(schema_view.property_names(schema) & set(EDIT_KEYS))

    @property
    def edited_args(self) -> Any:
        """The edited arguments the closing answer sent (under its edit key), or None when it is not an approval
        with edits."""
        if self.outcome != self.Outcome.APPROVED_WITH_EDITS:
            return None
        return edited_args_in(self.response_payload)


def edited_args_in(payload: Any) -> Any:
    """The full replacement of a tool call's arguments an answer carries, under whichever edit key it came (the
    spec's ``editedArgs``, Claude Agent SDK's ``updatedInput``: ``EDIT_KEYS``), or None when it carries none."""
    if not isinstance(payload, dict):
        return None
    return next((payload[key] for key in EDIT_KEYS if key in payload), None)


class ItemSearchText(models.Model):
    """What the inbox list's text search reads: an item's message, tool name and thread id in one string.

    Written once at ingest and never updated. The trigram index that serves the search (PostgreSQL, migration
    0005) lives on this table rather than on the items because every change of an item's status writes new
    index entries for the row, and the expiry sweep rewrites many items at once: a trigram index on them would
    make every sweep pay for it."""

    item = models.OneToOneField(InboxItem, primary_key=True, on_delete=models.CASCADE, related_name="search_text")
    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="+", db_index=False)
    text = models.TextField()
    # The item's toolCallId, for the tool-call audit trail (``/audit/tool-calls/<id>``): like the trigram index,
    # its index lives here, on a row that is never updated, rather than on the item.
    tool_call_id = models.CharField(max_length=255, blank=True, default="")

    class Meta:
        indexes = [models.Index(fields=["tool_call_id"], condition=~models.Q(tool_call_id=""), name="search_tool_call")]

    def __str__(self) -> str:
        return self.text

    @staticmethod
    def text_of(item: InboxItem, thread_id: str) -> str:
        return " ".join(part for part in (item.message, item.tool_name, thread_id) if part)


class DecisionVia(models.TextChoices):
    PAGE = "page", "Item page"
    RUN = "run", "Run page"
    LIST_KEY = "list_key", "Key from the list"
    BULK = "bulk", "Bulk"
    API = "api", "API"
    LINK = "link", "Signed link"
    POLICY = "policy", "Policy"


# Ways of deciding where the item's arguments were not on the decider's screen.
BLIND_VIAS = (DecisionVia.LIST_KEY.value, DecisionVia.BULK.value)


class Decision(models.Model):
    """One approver's answer to an item. With a quorum, several approvals lead to the closing one."""

    class Status(models.TextChoices):
        RESOLVED = "resolved", "Resolved"
        CANCELLED = "cancelled", "Cancelled"

    item = models.ForeignKey(InboxItem, on_delete=models.CASCADE, related_name="decisions")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="decisions")
    status = models.CharField(max_length=16, choices=Status.choices)
    payload = models.JSONField(null=True, blank=True)
    comment = models.TextField(blank=True)
    # True for the decision that closed the item.
    final = models.BooleanField(default=False)
    # False once an edited answer restarted the quorum count, or once its decider undid it.
    counts = models.BooleanField(default=True)
    created_at = models.DateTimeField(default=timezone.now, db_index=True)
    # Until when its decider may undo it (``inbox.decisions.undo``): nothing of its run is sent before then. Null
    # when it cannot be undone (undo off, an API call that opted out, a policy, a signed link).
    undo_until = models.DateTimeField(null=True, blank=True)
    # When its decider undid it. The row stays: a withdrawn decision is part of the item's history.
    withdrawn_at = models.DateTimeField(null=True, blank=True)
    # How it was made: where the decider was and whether the item's arguments were on their screen
    # (docs/review-quality.md). Empty for decisions recorded before the inbox kept it.
    via = models.CharField(max_length=16, choices=DecisionVia.choices, blank=True, default="", db_default="")
    # What this answer means, judged by the item's schema when it was made (``inbox.decisions.shapes.outcome_for``):
    # approved, approved_with_edits, denied, answered or cancelled. The closing decision's is the item's outcome.
    outcome = models.CharField(max_length=24, choices=InboxItem.Outcome.choices, blank=True, default="", db_default="")

    class Meta:
        ordering = ["created_at", "id"]

    def __str__(self) -> str:
        return f"{self.user_id} {self.status} item {self.item_id}"

    @property
    def is_denial(self) -> bool:
        return self.outcome == InboxItem.Outcome.DENIED

    @property
    def is_approval(self) -> bool:
        """An approval (or answer) that counts towards a quorum when ``counts`` is still set."""
        return self.status == self.Status.RESOLVED and self.outcome != InboxItem.Outcome.DENIED

    @property
    def is_edit(self) -> bool:
        """An approval whose edited arguments differ from the proposal's."""
        return self.outcome == InboxItem.Outcome.APPROVED_WITH_EDITS


class Resume(models.Model):
    """The outbox row for one batched resume of an interrupted run."""

    class State(models.TextChoices):
        PENDING = "pending", "Pending"
        SENDING = "sending", "Sending"
        DELIVERED = "delivered", "Delivered"
        # The agent answered 2xx and started its reply, which was then cut by a read timeout or the stream
        # deadline: it has the input, what it did is not known. Final: never sent again by itself.
        ACCEPTED = "accepted", "Delivered, result unknown"
        FAILED = "failed", "Failed"
        EXPIRED = "expired", "Expired"

    run = models.OneToOneField(Run, on_delete=models.CASCADE, related_name="resume")
    thread = models.ForeignKey(Thread, on_delete=models.CASCADE, related_name="resumes")
    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="resumes")
    next_run_id = models.CharField(max_length=255, help_text="The resumed run's runId, fixed at creation.")
    input = models.JSONField(help_text="The exact RunAgentInput sent, camelCase.")
    state = models.CharField(max_length=16, choices=State.choices, default=State.PENDING)
    attempts = models.PositiveIntegerField(default=0)
    last_error = models.TextField(blank=True)
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    claimed_at = models.DateTimeField(null=True, blank=True)
    lease_until = models.DateTimeField(
        null=True, blank=True, help_text="While sending: the claim holds until then unless its worker renews it."
    )
    last_sent_at = models.DateTimeField(
        null=True, blank=True, help_text="When the latest attempt that reached the send step POSTed the input."
    )
    retry_until = models.DateTimeField(
        null=True, blank=True, help_text="Transport retries stop here (or at the earliest expiresAt)."
    )
    delivered_at = models.DateTimeField(null=True, blank=True)
    resumed_run = models.OneToOneField(Run, null=True, blank=True, on_delete=models.SET_NULL, related_name="resumed_by")
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        indexes = [
            models.Index(fields=["state", "lease_until"], name="resume_state_lease"),
            models.Index(fields=["state", "next_attempt_at"], name="resume_state_next_attempt"),
        ]

    def __str__(self) -> str:
        return f"resume {self.next_run_id} ({self.state})"

    def live_state(self) -> dict:
        """The payload of the ``resume.state`` live event."""
        return {
            "run": self.run_id,
            "resume": self.pk,
            "state": self.state,
            "attempts": self.attempts,
            "lastError": self.last_error,
            "nextAttemptAt": self.next_attempt_at.isoformat() if self.next_attempt_at else None,
            "resumedRun": self.resumed_run_id,
        }


class AuditEvent(models.Model):
    """Append-only record of every write: who did what to which object, and when."""

    class ActorType(models.TextChoices):
        USER = "user", "User"
        AGENT = "agent", "Agent"
        SYSTEM = "system", "System"

    actor_type = models.CharField(max_length=16, choices=ActorType.choices)
    # No database FK constraints on the log's references: a sweep writes many rows at once and checking
    # four constraints each costs more than the insert; Django still nulls them when the target is deleted.
    actor_user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        db_constraint=False,
        db_index=False,
    )
    actor_agent = models.ForeignKey(
        Agent, null=True, blank=True, on_delete=models.SET_NULL, related_name="+", db_constraint=False, db_index=False
    )
    actor_label = models.CharField(max_length=200, help_text="Username, agent slug or 'system' at the time.")
    verb = models.CharField(max_length=64)
    object_type = models.CharField(max_length=32)
    object_id = models.CharField(max_length=64)
    agent = models.ForeignKey(
        Agent, null=True, blank=True, on_delete=models.SET_NULL, related_name="audit_events", db_constraint=False
    )
    # Not indexed: every event pays for each index on the log, and a thread's events are found by their objects
    # (inbox.listing.timeline). Nor nulled when the thread is deleted (DO_NOTHING): without an index, nulling it would read
    # the whole log at every deletion of threads.
    # The event keeps the id of the thread it was about, as it keeps every other value it was written with; the log
    # page shows that thread as deleted.
    thread = models.ForeignKey(
        Thread,
        null=True,
        blank=True,
        on_delete=models.DO_NOTHING,
        related_name="audit_events",
        db_constraint=False,
        db_index=False,
    )
    data = RowsJSONField(default=dict, blank=True)
    created_at = models.DateTimeField(default=timezone.now, db_index=True)

    class Meta:
        indexes = [
            models.Index(fields=["object_type", "object_id"], name="audit_object"),
            # The log filtered by verb, newest first: read in the page's order from the index (by verb alone, a
            # frequent verb was found through the date index, most rows read and thrown away). The verb list
            # skips through this index too (distinct_values). Newest first is a backward scan: the keys ascend, so a
            # new event lands after the last one of its verb and pages fill up (descending keys put each new event
            # before the previous one, and PostgreSQL split such pages half full: a sweep's 100k audit rows took a
            # tenth longer to insert).
            models.Index(fields=["verb", "created_at", "id"], name="audit_verb_newest"),
            # The log filtered by a person or an agent (inbox.audit.exports.actor_filter), newest first. Partial:
            # system events (the bulk of them, every row a sweep writes) have neither, and pay for no entry. Read
            # backwards, as the verb's.
            models.Index(
                fields=["actor_user", "created_at", "id"],
                condition=models.Q(actor_user__isnull=False),
                name="audit_actor_user_newest",
            ),
            models.Index(
                fields=["actor_agent", "created_at", "id"],
                condition=models.Q(actor_agent__isnull=False),
                name="audit_actor_agent_newest",
            ),
        ]
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"{self.actor_label} {self.verb} {self.object_type}:{self.object_id}"


class Comment(models.Model):
    """Discussion on an item or a run."""

    item = models.ForeignKey(InboxItem, null=True, blank=True, on_delete=models.CASCADE, related_name="comments")
    run = models.ForeignKey(Run, null=True, blank=True, on_delete=models.CASCADE, related_name="comments")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="inbox_comments")
    body = models.TextField()
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["created_at", "id"]

    def __str__(self) -> str:
        return f"comment {self.pk} by {self.user_id}"


class NotificationPreference(models.Model):
    class Mode(models.TextChoices):
        IMMEDIATE = "immediate", "Email me at once"
        DIGEST = "digest", "Periodic digest"
        OFF = "off", "No email"

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="inbox_prefs")
    email_mode = models.CharField(max_length=16, choices=Mode.choices, default=Mode.IMMEDIATE)
    digest_last_sent_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"{self.user_id}: {self.email_mode}"


class TeamWebhook(models.Model):
    team = models.ForeignKey(Group, on_delete=models.CASCADE, related_name="inbox_webhooks")
    url = models.CharField(max_length=500)
    secret = models.CharField(max_length=200, help_text="Signing key of the Standard Webhooks headers.")
    enabled = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"{self.team_id} → {self.url}"


# Models of capability packages that live in the ``inbox`` app's tables (their modules are in this package).
from inbox.models.audit_chain import AuditChain, AuditCheckpoint, AuditSeal, AuditVerification  # noqa: E402,F401
from inbox.models.conformance import ConformanceObservation  # noqa: E402,F401


class ApiToken(models.Model):
    """An approver's API token (``Authorization: Token <key>``). Only its SHA-256 is stored; the key is shown
    once, when it is issued (admin or ``manage.py api_token``)."""

    PREFIX = "apt_"

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens")
    token_hash = models.CharField(max_length=64, unique=True, editable=False)
    prefix = models.CharField(max_length=16, editable=False, help_text="First characters, to tell tokens apart.")
    label = models.CharField(max_length=100, blank=True)
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    last_used_at = models.DateTimeField(null=True, blank=True, editable=False)
    revoked_at = models.DateTimeField(null=True, blank=True, editable=False)

    class Meta:
        verbose_name = "API token"

    def __str__(self) -> str:
        return f"{self.prefix}… ({self.user})"

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None

    @classmethod
    def issue(cls, user, *, label: str = "") -> tuple[ApiToken, str]:
        """A new token for ``user``; the raw key is returned once and never stored."""
        import secrets

        from agents.models import hash_token

        raw = cls.PREFIX + secrets.token_urlsafe(32)
        token = cls.objects.create(user=user, token_hash=hash_token(raw), prefix=raw[:12], label=label)
        return token, raw


# Decision links, auto-decision policies and single sign-on: their modules are in this package; importing them
# here registers them with the app.
from inbox.models.escalation import AwayStatus, Escalation, EscalationRule  # noqa: E402, F401
from inbox.models.links import DecisionLinkUse  # noqa: E402, F401
from inbox.models.notices import Notice  # noqa: E402, F401
from inbox.models.policies import BacktestFinding, Policy, PolicyBacktest, PolicyMatch  # noqa: E402, F401
from inbox.models.review import ItemSeen  # noqa: E402, F401
from inbox.models.sso import SSOIdentity, TeamClaimMapping  # noqa: E402, F401
from inbox.models.starts import RunStart  # noqa: E402, F401
from inbox.models.teams import BusinessHours, TeamLead  # noqa: E402, F401
from inbox.models.triage import SavedView, Snooze  # noqa: E402, F401
