"""Output shapes of the REST API (camelCase where they mirror AG-UI, snake_case for inbox fields)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from agents.models import Agent
from inbox.api.policy_serializers import PolicyMatchSerializer
from inbox.models import InboxItem, Resume, Run
from inbox.resumes.services import retry_deadline
from inbox.resumes.states import delivery_of_item, delivery_of_resume
from inbox.teams.selectors import item_team_notes


class ItemSerializer(serializers.ModelSerializer):
    interruptId = serializers.CharField(source="interrupt_id")
    toolCallId = serializers.CharField(source="tool_call_id")
    responseSchema = serializers.JSONField(source="response_schema")
    expiresAt = serializers.DateTimeField(source="expires_at")
    agent: serializers.SlugRelatedField[Agent] = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    threadId = serializers.CharField(source="thread.thread_id")
    runId = serializers.CharField(source="run.run_id")
    run = serializers.IntegerField(source="run_id")
    url = serializers.SerializerMethodField()
    decidedBy = serializers.SerializerMethodField()
    claimedBy = serializers.SerializerMethodField()
    delivery = serializers.SerializerMethodField(
        help_text="Where the answer is on its way back to the agent (null while the item is open): state (queued, "
        "sending, retrying, delivered, delivered-reply-broke-protocol, delivered-result-unknown, failed, expired, waiting, "
        "none), label, sentence, "
        "attempts, lastError, nextTryAt, deliveredAt, needsPerson, and ahead: while the answer is due and waits to be "
        "sent, how many answers due before it wait too (delivery is behind; counted up to 10,000), else null."
    )
    outcome = serializers.ChoiceField(
        choices=InboxItem.Outcome.choices,
        allow_blank=True,
        read_only=True,
        help_text="What happened: approved, approved_with_edits, denied, answered, cancelled, expired or superseded "
        "(a later run of the agent finished on the thread without the answer; nothing is sent); empty while the "
        "item is open. A denial is a resolved status with outcome denied.",
    )
    subagentRunId = serializers.CharField(  # noqa: N815 (the wire name)
        source="subagent_run_id", read_only=True, help_text="The subagent run that raised the interrupt, or ''."
    )

    class Meta:
        model = InboxItem
        fields = [
            "id",
            "interruptId",
            "status",
            "outcome",
            "status_note",
            "reason",
            "message",
            "toolCallId",
            "tool_call",
            "responseSchema",
            "expiresAt",
            "expires_at_defaulted",
            "metadata",
            "subagentRunId",
            "agent",
            "threadId",
            "runId",
            "run",
            "position",
            "url",
            "response_payload",
            "decidedBy",
            "decided_at",
            "decision_comment",
            "claimedBy",
            "delivery",
            "tool_result",
            "created_at",
        ]

    def get_url(self, item: InboxItem) -> str:
        request = self.context.get("request")
        path = item.get_absolute_url()
        return request.build_absolute_uri(path) if request else path

    def get_decidedBy(self, item: InboxItem) -> str | None:
        return item.decided_by.get_username() if item.decided_by is not None else None

    def get_claimedBy(self, item: InboxItem) -> str | None:
        return item.claimed_by.get_username() if item.claimed_by is not None else None

    def get_delivery(self, item: InboxItem) -> dict | None:
        return delivery_of_item(item).as_api() if item.is_decided else None


class EscalationSerializer(serializers.Serializer):
    """One escalation step that fired on the item: whom it added to its deciders, when and why."""

    step = serializers.IntegerField()
    to = serializers.CharField(source="target_label", help_text="The team's name or the person's username.")
    toTeam = serializers.CharField(source="to_team.name", allow_null=True, default=None)  # noqa: N815
    toUser = serializers.CharField(source="to_user.username", allow_null=True, default=None)  # noqa: N815
    why = serializers.CharField(help_text='E.g. "no decision from Billing in 30 min".')
    at = serializers.DateTimeField(source="fired_at")
    sentence = serializers.CharField(help_text="As the item page says it.")


class DelegationSerializer(serializers.Serializer):
    """While the item is open: its holder holds it for someone away."""

    holder = serializers.CharField(source="to", allow_null=True, help_text="Who holds the item now.")
    heldFor = serializers.CharField(source="from", allow_null=True, help_text="The person away.")  # noqa: N815
    at = serializers.DateTimeField(help_text="When it was handed over.")


class HolderAwaySerializer(serializers.Serializer):
    """While the item is open: its holder is away themselves, and who decides for them."""

    holder = serializers.CharField(source="user.username")
    until = serializers.DateTimeField(source="ends_at")
    delegate = serializers.CharField(source="delegate.username")


class ItemDetailSerializer(ItemSerializer):
    """``GET /api/v1/items/<id>``: the item with what policies did to it, or would have done (its page's
    Policies card), and its team notes: escalations and who holds it for whom while a person is away."""

    policies = PolicyMatchSerializer(
        source="policy_matches",
        many=True,
        read_only=True,
        help_text="Every policy that matched the item at ingest, in order: shadow (what it would have done) and "
        "enforced (what it did).",
    )
    escalations = serializers.SerializerMethodField(help_text="The escalation steps that fired on it, oldest first.")
    delegation = serializers.SerializerMethodField(
        help_text="While open: its holder holds it for a person who is away (null otherwise)."
    )
    holderAway = serializers.SerializerMethodField(  # noqa: N815
        help_text="While open: its holder is away, until when, and who decides for them (null otherwise)."
    )

    class Meta(ItemSerializer.Meta):
        fields = [*ItemSerializer.Meta.fields, "policies", "escalations", "delegation", "holderAway"]

    _team_notes: dict[str, Any] | None = None

    def _notes(self, item: InboxItem) -> dict[str, Any]:
        """The item page's team notes (``item_team_notes``), read once for the three fields."""
        if self._team_notes is None or self._team_notes["item"].pk != item.pk:
            self._team_notes = item_team_notes(item)
        return self._team_notes

    @extend_schema_field(EscalationSerializer(many=True))
    def get_escalations(self, item: InboxItem) -> list[dict[str, Any]]:
        return list(EscalationSerializer(self._notes(item)["escalations"], many=True).data)

    @extend_schema_field(DelegationSerializer(allow_null=True))
    def get_delegation(self, item: InboxItem) -> dict[str, Any] | None:
        delegation = self._notes(item)["delegation"]
        return None if delegation is None else dict(DelegationSerializer(delegation).data)

    @extend_schema_field(HolderAwaySerializer(allow_null=True))
    def get_holderAway(self, item: InboxItem) -> dict[str, Any] | None:  # noqa: N802
        away = self._notes(item)["holder_away"]
        return None if away is None else dict(HolderAwaySerializer(away).data)


class ItemSummarySerializer(serializers.ModelSerializer):
    """What the ingest API answers per interrupt."""

    interruptId = serializers.CharField(source="interrupt_id")
    url = serializers.SerializerMethodField()
    expiresAt = serializers.DateTimeField(source="expires_at")

    class Meta:
        model = InboxItem
        fields = ["id", "interruptId", "status", "reason", "expiresAt", "url"]

    def get_url(self, item: InboxItem) -> str:
        request = self.context.get("request")
        path = item.get_absolute_url()
        return request.build_absolute_uri(path) if request else path


class ResumeSerializer(serializers.ModelSerializer):
    runId = serializers.CharField(source="next_run_id")
    resumedRun = serializers.SerializerMethodField()
    retryUntil = serializers.SerializerMethodField(
        help_text="Transport retries stop at this time (the retry window or the earliest expiresAt less the "
        "safety margin); the resume then fails and can be retried by hand."
    )

    class Meta:
        model = Resume
        fields = [
            "id",
            "state",
            "runId",
            "attempts",
            "retryUntil",
            "last_error",
            "next_attempt_at",
            "claimed_at",
            "lease_until",
            "last_sent_at",
            "delivered_at",
            "input",
            "resumed_run",
            "resumedRun",
            "created_at",
            "updated_at",
        ]

    def get_retryUntil(self, resume: Resume) -> str | None:

        if resume.state not in (Resume.State.PENDING, Resume.State.SENDING):
            return None
        return retry_deadline(resume)[0].isoformat()

    def get_resumedRun(self, resume: Resume) -> dict | None:
        """What the agent did next: the resumed run's outcome and its events (RAW dropped)."""
        run = resume.resumed_run
        if run is None:
            return None
        return {
            "id": run.pk,
            "runId": run.run_id,
            "outcome": run.outcome,
            "outcome_omitted": run.outcome_omitted,
            "result": run.result,
            "error_message": run.error_message,
            "tool_calls": run.tool_calls,
            "tool_results": run.tool_results,
            "events": run.events,
            "url": run.get_absolute_url(),
        }


class RunSerializer(serializers.ModelSerializer):
    runId = serializers.CharField(source="run_id")
    threadId = serializers.CharField(source="thread.thread_id")
    agent: serializers.SlugRelatedField[Agent] = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    items = serializers.SerializerMethodField()
    url = serializers.SerializerMethodField()
    pendingToolCallIds = serializers.ListField(  # noqa: N815 (the wire name)
        child=serializers.CharField(),
        source="pending_tool_call_ids",
        read_only=True,
        help_text="A success outcome's pendingToolCallIds: tool calls the run left for the client to answer.",
    )

    class Meta:
        model = Run
        fields = [
            "id",
            "runId",
            "threadId",
            "agent",
            "source",
            "outcome",
            "outcome_omitted",
            "pendingToolCallIds",
            "result",
            "error_message",
            "url",
            "items",
            "created_at",
        ]

    def get_items(self, run: Run) -> list[dict]:
        # The ingest view hands over the items run_ingest returned (context "items") to save a query.
        items: Sequence[InboxItem] | None = self.context.get("items")
        if items is None:
            items = sorted(run.items.all(), key=lambda item: item.position)
        # many=True makes a ListSerializer, whose data is a list; the stubs type every serializer's data as a dict.
        return ItemSummarySerializer(items, many=True, context=self.context).data  # type: ignore[return-value]

    def get_url(self, run: Run) -> str:
        request = self.context.get("request")
        path = run.get_absolute_url()
        return request.build_absolute_uri(path) if request else path


class RunDetailSerializer(RunSerializer):
    resume = serializers.SerializerMethodField()
    resumedBy = serializers.SerializerMethodField()
    delivery = serializers.SerializerMethodField(help_text="The run's answer on its way back: as an item's delivery.")

    class Meta(RunSerializer.Meta):
        fields = RunSerializer.Meta.fields + [
            "parent_run_id",
            "state_snapshot",
            "messages_snapshot",
            "tool_calls",
            "tool_results",
            "events",
            "input",
            "resume",
            "resumedBy",
            "delivery",
        ]

    def get_items(self, run: Run) -> list[dict]:
        items = sorted(run.items.all(), key=lambda item: item.position)
        # many=True makes a ListSerializer (see RunSerializer.get_items).
        return ItemSerializer(items, many=True, context=self.context).data  # type: ignore[return-value]

    def get_resume(self, run: Run) -> dict | None:
        resume = getattr(run, "resume", None) if hasattr(run, "resume") else None
        return ResumeSerializer(resume).data if resume else None

    def get_delivery(self, run: Run) -> dict:
        resume = getattr(run, "resume", None) if hasattr(run, "resume") else None
        has_open = resume is None and run.items.filter(status=InboxItem.Status.OPEN).exists()
        return delivery_of_resume(resume, run_has_open=has_open).as_api()

    def get_resumedBy(self, run: Run) -> int | None:
        resume = Resume.objects.filter(resumed_run=run).only("run_id").first()
        return resume.run_id if resume else None


class ProvenanceEventSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    at = serializers.DateTimeField(source="created_at")
    actorType = serializers.CharField(source="actor_type")
    actor = serializers.CharField(source="actor_label")
    verb = serializers.CharField()
    objectType = serializers.CharField(source="object_type")
    objectId = serializers.CharField(source="object_id")
    details = serializers.JSONField(source="data", help_text="What the event recorded (its `data`).")
    seal = serializers.IntegerField(
        allow_null=True, help_text="The event's place in the audit chain; null until sealed (within seconds)."
    )


class ChainMarkSerializer(serializers.Serializer):
    events = serializers.IntegerField()
    sealed = serializers.IntegerField()
    lastSeal = serializers.IntegerField(source="last_seal", allow_null=True)
    verified = serializers.BooleanField(help_text="Every event sealed, and the last audit_verify walked past them.")
    verifiedAt = serializers.DateTimeField(source="verified_at", allow_null=True)
    verifiedThrough = serializers.IntegerField(source="verified_through")
    verificationOk = serializers.BooleanField(source="verification_ok", allow_null=True)
    words = serializers.CharField()


class SeenSerializer(serializers.Serializer):
    user = serializers.CharField()
    at = serializers.DateTimeField(help_text="When the item page or the split view first showed it to them.")


class ProvenanceSerializer(serializers.Serializer):
    """``GET /api/v1/items/<id>/provenance``: the item's audit events in order, each with its place in the audit
    chain, what the last verification of the chain said, and who was first shown the item when."""

    item = serializers.IntegerField()
    events = ProvenanceEventSerializer(many=True)
    chain = ChainMarkSerializer()
    seen = SeenSerializer(many=True)
