"""The policy API's shape (camelCase, like the rest of the API's own fields): one serializer reads a
request's fields (agent and team by slug and name) and writes a policy with its stats."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import Group
from django.urls import reverse
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from agents.models import Agent
from inbox import limits
from inbox.models import InboxItem
from inbox.models.policies import BacktestFinding, Policy, PolicyBacktest, PolicyMatch
from inbox.policies.selectors import FindingRow, PolicyStats, human_verdict, set_breakdown, shadow_agrees


class PolicySerializer(serializers.ModelSerializer):
    agent = serializers.SlugRelatedField(
        slug_field="slug", queryset=Agent.objects.all(), allow_null=True, required=False, help_text="Agent slug."
    )
    team = serializers.SlugRelatedField(
        slug_field="name", queryset=Group.objects.all(), allow_null=True, required=False, help_text="Team name."
    )
    toolName = serializers.CharField(source="tool_name", max_length=255, allow_blank=True, required=False)
    matchSchema = serializers.JSONField(
        source="match_schema", allow_null=True, required=False, help_text="JSON Schema the subject must satisfy."
    )
    routeTeam = serializers.SlugRelatedField(
        source="route_team", slug_field="name", queryset=Group.objects.all(), allow_null=True, required=False
    )
    countsAsApprover = serializers.BooleanField(source="counts_as_approver", required=False)
    actor = serializers.CharField(source="actor_label", read_only=True)
    createdAt = serializers.DateTimeField(source="created_at", read_only=True)
    updatedAt = serializers.DateTimeField(source="updated_at", read_only=True)
    url = serializers.SerializerMethodField()

    class Meta:
        model = Policy
        fields = [
            "id",
            "name",
            "description",
            "agent",
            "team",
            "position",
            "enabled",
            "reason",
            "toolName",
            "subject",
            "matchSchema",
            "action",
            "approvals",
            "routeTeam",
            "countsAsApprover",
            "mode",
            "version",
            "actor",
            "createdAt",
            "updatedAt",
            "url",
        ]
        read_only_fields = ["id", "version"]
        extra_kwargs: dict[str, dict[str, Any]] = {
            "name": {"validators": []}
        }  # uniqueness is the service's rule, reported like the others

    def get_url(self, policy: Policy) -> str:
        request = self.context.get("request")
        path = policy.get_absolute_url()
        return request.build_absolute_uri(path) if request else path

    def service_fields(self) -> dict[str, Any]:
        """The validated fields under their model names, for ``policy_create`` / ``policy_update``."""
        return dict(self.validated_data)


class PolicyMatchSerializer(serializers.ModelSerializer):
    """One policy's match on an item, as the item page says it: shadow (what it would have done) or enforced
    (what it did)."""

    policy = serializers.IntegerField(source="policy_id", read_only=True)
    policyName = serializers.CharField(source="policy.name", read_only=True)  # noqa: N815 (the wire name)
    policyUrl = serializers.SerializerMethodField()  # noqa: N815
    version = serializers.IntegerField(source="policy_version", read_only=True, help_text="The policy's version then.")
    effect = serializers.CharField(
        read_only=True, help_text='In words: "Approved", "Denied", "Would have approved", "Routed the item", …'
    )
    outcomeLabel = serializers.CharField(source="get_outcome_display", read_only=True)  # noqa: N815
    decision = serializers.IntegerField(source="decision_id", read_only=True, allow_null=True)
    createdAt = serializers.DateTimeField(source="created_at", read_only=True)  # noqa: N815

    class Meta:
        model = PolicyMatch
        fields = [
            "policy",
            "policyName",
            "policyUrl",
            "version",
            "mode",
            "action",
            "outcome",
            "outcomeLabel",
            "effect",
            "payload",
            "note",
            "decision",
            "createdAt",
        ]
        read_only_fields = fields

    def get_policyUrl(self, match: PolicyMatch) -> str:  # noqa: N802
        request = self.context.get("request")
        path = match.policy.get_absolute_url()
        return request.build_absolute_uri(path) if request else path


class PolicyStatsSerializer(serializers.Serializer):
    """A policy's matches and how people decided the items its shadow matches would have decided."""

    matches = serializers.IntegerField(help_text="Items it matched at ingest, shadow and enforced.")
    decided = serializers.IntegerField(help_text="Enforced matches that decided the item.")
    compared = serializers.IntegerField(help_text="Shadow approve/deny matches on items people decided.")
    agreed = serializers.IntegerField(help_text="Of those, the ones people decided as the policy would have.")
    agreement = serializers.FloatField(allow_null=True, help_text="agreed / compared (null when nothing compared).")
    timeSavedSeconds = serializers.SerializerMethodField(  # noqa: N815
        help_text="How long people took on the items it agreed with, in seconds."
    )
    outcomes = serializers.DictField(
        child=serializers.IntegerField(), help_text="Matches per outcome (shadow, decided, voted, routed, …)."
    )

    def get_timeSavedSeconds(self, stats: PolicyStats) -> float:  # noqa: N802
        return stats.time_saved.total_seconds()


def _absolute(serializer: serializers.Serializer, path: str) -> str:
    request = serializer.context.get("request")
    return request.build_absolute_uri(path) if request else path


class SetBreakdownSerializer(serializers.Serializer):
    policy = serializers.IntegerField()
    name = serializers.CharField()
    version = serializers.IntegerField(allow_null=True)
    position = serializers.IntegerField(allow_null=True)
    action = serializers.CharField()
    candidate = serializers.BooleanField(help_text="A shadow (or disabled) policy tested as if it were enforced.")
    matched = serializers.IntegerField(help_text="Items it would have acted on first: no policy above it matched.")
    compared = serializers.IntegerField()
    agreed = serializers.IntegerField()
    foundWrong = serializers.IntegerField()  # noqa: N815


class BacktestSerializer(serializers.ModelSerializer):
    """A backtest: its progress while it runs, then what the policy would have done (``docs/policies.md``)."""

    url = serializers.SerializerMethodField()
    policy = serializers.IntegerField(
        source="policy_id", read_only=True, allow_null=True, help_text="null for a backtest of the ordered set."
    )
    version = serializers.IntegerField(
        source="policy_version", read_only=True, help_text="The policy's version tested (0 for an ordered set)."
    )
    orderedSet = serializers.BooleanField(  # noqa: N815
        source="ordered_set",
        read_only=True,
        help_text="A backtest of the enforced policies in order (the first that matches acts), not of one policy.",
    )
    rules = serializers.JSONField(
        read_only=True,
        help_text="The policy's fields as tested (the draft's, for a draft); for an ordered set, `policies`: each "
        "policy's fields with its `id`, `version` and `candidate` (a shadow policy tested as enforced), in order.",
    )
    breakdown = serializers.SerializerMethodField(
        help_text="An ordered set's policies in order, each with the items it would have acted on first "
        "(`matched`), `compared`, `agreed` and `foundWrong`; empty for one policy's backtest."
    )
    requestedBy = serializers.SerializerMethodField()  # noqa: N815
    stateLabel = serializers.CharField(source="get_state_display", read_only=True)  # noqa: N815
    percent = serializers.IntegerField(read_only=True, help_text="Progress, 0 to 100.")
    decided = serializers.IntegerField(read_only=True, help_text="Items people decided in the period.")
    matched = serializers.IntegerField(read_only=True, help_text="Of those, the items the policy matches.")
    compared = serializers.IntegerField(
        read_only=True, help_text="Matched items whose outcome compares with an approve or deny."
    )
    agreed = serializers.IntegerField(read_only=True, help_text="Of those, decided by people as the policy would have.")
    disagreed = serializers.IntegerField(read_only=True)
    agreement = serializers.FloatField(read_only=True, allow_null=True, help_text="agreed / compared.")
    foundWrong = serializers.IntegerField(  # noqa: N815
        source="found_wrong",
        read_only=True,
        help_text="Matched items people approved whose follow-up (the run that answered their resume) had an "
        "interrupt a person denied; approve policies only.",
    )
    outcomes = serializers.DictField(
        child=serializers.IntegerField(), read_only=True, help_text="Matched items per what people decided."
    )
    createdAt = serializers.DateTimeField(source="created_at", read_only=True)  # noqa: N815
    finishedAt = serializers.DateTimeField(source="finished_at", read_only=True)  # noqa: N815
    progressAt = serializers.DateTimeField(  # noqa: N815
        source="progress_at", read_only=True, help_text="When it was queued or last read a chunk of items."
    )
    attempt = serializers.IntegerField(
        read_only=True,
        help_text="0 for its first reading; more when it was started again from the beginning after its worker "
        "stopped (INBOX_BACKTEST_STALL_SECONDS without progress).",
    )

    class Meta:
        model = PolicyBacktest
        fields = [
            "id",
            "url",
            "policy",
            "version",
            "orderedSet",
            "draft",
            "rules",
            "breakdown",
            "days",
            "since",
            "until",
            "requestedBy",
            "state",
            "stateLabel",
            "total",
            "scanned",
            "percent",
            "decided",
            "matched",
            "compared",
            "agreed",
            "disagreed",
            "agreement",
            "foundWrong",
            "outcomes",
            "error",
            "createdAt",
            "finishedAt",
            "progressAt",
            "attempt",
        ]
        read_only_fields = fields

    def get_url(self, backtest: PolicyBacktest) -> str:
        if backtest.ordered_set:
            return _absolute(self, reverse("api-policy-set-backtest", args=[backtest.pk]))
        return _absolute(self, reverse("api-policy-backtest", args=[backtest.policy_id, backtest.pk]))

    @extend_schema_field(SetBreakdownSerializer(many=True))
    def get_breakdown(self, backtest: PolicyBacktest) -> list[dict[str, Any]]:
        if not backtest.ordered_set:
            return []
        return [dict(SetBreakdownSerializer(row).data) for row in set_breakdown(backtest)]

    def get_requestedBy(self, backtest: PolicyBacktest) -> str | None:  # noqa: N802
        return backtest.requested_by.get_username() if backtest.requested_by_id and backtest.requested_by else None


class BacktestRequestSerializer(serializers.Serializer):
    """``POST /api/v1/policies/<id>/backtests``."""

    days = serializers.IntegerField(
        required=False,
        min_value=1,
        max_value=limits.MAX_BACKTEST_DAYS,
        help_text=f"How many days back to read (default {limits.BACKTEST_DEFAULT_DAYS}).",
    )
    draft = serializers.DictField(
        required=False,
        allow_null=True,
        help_text="Unsaved changes to test instead of the saved version: any fields of the policy, as in PATCH.",
    )


class SetBacktestRequestSerializer(serializers.Serializer):
    """``POST /api/v1/policies/backtests``."""

    days = serializers.IntegerField(
        required=False,
        min_value=1,
        max_value=limits.MAX_BACKTEST_DAYS,
        help_text=f"How many days back to read (default {limits.BACKTEST_DEFAULT_DAYS}).",
    )
    policy = serializers.IntegerField(
        required=False,
        allow_null=True,
        min_value=1,
        max_value=limits.MAX_DB_ID,
        help_text="A shadow or disabled policy to test among the enforced ones, at its position, as if enforced.",
    )


class FindingItemSerializer(serializers.ModelSerializer):
    """An item as a backtest's row links it."""

    url = serializers.SerializerMethodField()
    agent: serializers.SlugRelatedField = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    decidedBy = serializers.SerializerMethodField()  # noqa: N815
    decidedAt = serializers.DateTimeField(source="decided_at", read_only=True)  # noqa: N815
    comment = serializers.CharField(source="decision_comment", read_only=True, help_text="The decider's comment.")

    class Meta:
        model = InboxItem
        fields = ["id", "url", "message", "agent", "outcome", "decidedBy", "decidedAt", "comment"]
        read_only_fields = fields

    def get_url(self, item: InboxItem) -> str:
        return _absolute(self, item.get_absolute_url())

    def get_decidedBy(self, item: InboxItem) -> str | None:  # noqa: N802
        return item.decided_by.get_username() if item.decided_by_id and item.decided_by else None


class EditSerializer(serializers.Serializer):
    name = serializers.CharField()
    proposed = serializers.CharField(help_text="The agent's value ('' when the person added the argument).")
    edited = serializers.CharField(help_text="The person's value.")


class FindingSerializer(serializers.Serializer):
    """An item a backtest lists with what explains it: the arguments that differ between the listed items, the
    person's comment and edits, and for "approved, then found wrong" the follow-up a person denied."""

    id = serializers.IntegerField(source="item.pk")
    url = serializers.SerializerMethodField()
    message = serializers.CharField(source="item.message")
    agent = serializers.CharField(source="item.agent.slug")
    outcome = serializers.CharField(source="item.outcome")
    decidedBy = serializers.SerializerMethodField()  # noqa: N815
    decidedAt = serializers.DateTimeField(source="item.decided_at")  # noqa: N815
    arguments = serializers.SerializerMethodField(
        help_text="The subject's values (tool arguments, or metadata) that differ between the items of this list, "
        "each as shown (a string as it is, anything else as compact JSON, cut at 80 characters)."
    )
    comment = serializers.CharField(help_text="The person's comment on their decision ('' when none).")
    edits = serializers.SerializerMethodField(help_text="For an approval with edits: the arguments the person changed.")
    followUps = serializers.SerializerMethodField(  # noqa: N815
        help_text="For kind found_wrong: the interrupts on the agent's next run that a person denied."
    )
    policy = serializers.SerializerMethodField(
        help_text="In an ordered set's backtest: the id of the policy that would have acted (else null)."
    )

    def get_url(self, row: FindingRow) -> str:
        return _absolute(self, row.item.get_absolute_url())

    def get_decidedBy(self, row: FindingRow) -> str | None:  # noqa: N802
        return row.item.decided_by.get_username() if row.item.decided_by_id and row.item.decided_by else None

    @extend_schema_field(serializers.DictField(child=serializers.CharField()))
    def get_arguments(self, row: FindingRow) -> dict[str, str]:
        return dict(row.arguments)

    @extend_schema_field(EditSerializer(many=True))
    def get_edits(self, row: FindingRow) -> list[dict[str, str]]:
        return [{"name": name, "proposed": before, "edited": after} for name, before, after in row.edits]

    @extend_schema_field(FindingItemSerializer(many=True))
    def get_followUps(self, row: FindingRow) -> list[dict[str, Any]]:  # noqa: N802
        return list(FindingItemSerializer(row.follow_ups, many=True, context=self.context).data)

    @extend_schema_field(serializers.IntegerField(allow_null=True))
    def get_policy(self, row: FindingRow) -> int | None:
        return row.policy.pk if row.policy is not None else None


class FindingsPageSerializer(serializers.Serializer):
    kind = serializers.ChoiceField(choices=BacktestFinding.Kind.choices)
    page = serializers.IntegerField()
    pages = serializers.IntegerField()
    count = serializers.IntegerField()
    items = FindingSerializer(many=True)


class BacktestDetailSerializer(BacktestSerializer):
    """A backtest with one page of one kind of the items it lists (``?kind=disagreed|found_wrong&page=N``)."""

    findings = serializers.SerializerMethodField()

    class Meta(BacktestSerializer.Meta):
        fields = [*BacktestSerializer.Meta.fields, "findings"]
        read_only_fields = fields

    @extend_schema_field(FindingsPageSerializer)
    def get_findings(self, backtest: PolicyBacktest) -> dict[str, Any]:
        page = self.context["findings"]
        return {
            "kind": self.context["kind"],
            "page": page.number,
            "pages": page.paginator.num_pages,
            "count": page.paginator.count,
            "items": FindingSerializer(self.context["rows"], many=True, context=self.context).data,
        }


class PolicyDetailSerializer(PolicySerializer):
    """One policy with its stats and its version's latest backtest (``GET /api/v1/policies/<id>``)."""

    stats = serializers.SerializerMethodField()
    backtest = serializers.SerializerMethodField(
        help_text="The latest finished backtest of the current version (null when none): what promoting it records."
    )
    evidence = serializers.SerializerMethodField(
        help_text="The backtest the policy was last promoted on (null when promoted untested, or never): it stays "
        "here after the version moves on."
    )
    backtests = serializers.SerializerMethodField(help_text="Its backtests, newest first (GET this to page them).")
    matches = serializers.SerializerMethodField(help_text="What it matched, newest first (GET this to page them).")

    class Meta(PolicySerializer.Meta):
        fields = [*PolicySerializer.Meta.fields, "stats", "backtest", "evidence", "backtests", "matches"]

    def get_backtests(self, policy: Policy) -> str:
        return _absolute(self, reverse("api-policy-backtests", args=[policy.pk]))

    def get_matches(self, policy: Policy) -> str:
        return _absolute(self, reverse("api-policy-matches", args=[policy.pk]))

    @extend_schema_field(BacktestSerializer(allow_null=True))
    def get_evidence(self, policy: Policy) -> dict[str, Any] | None:
        evidence = policy.evidence if policy.evidence_id is not None else None
        return None if evidence is None else dict(BacktestSerializer(evidence, context=self.context).data)

    @extend_schema_field(PolicyStatsSerializer)
    def get_stats(self, policy: Policy) -> dict[str, Any]:
        stats: PolicyStats = self.context["stats"]
        return dict(PolicyStatsSerializer(stats).data)

    @extend_schema_field(BacktestSerializer(allow_null=True))
    def get_backtest(self, policy: Policy) -> dict[str, Any] | None:
        backtest = self.context.get("backtest")
        return None if backtest is None else dict(BacktestSerializer(backtest, context=self.context).data)


def first_error(errors: dict) -> tuple[str, str]:
    """(field, message) of a serializer's first error, for the API's error body."""
    field, messages = next(iter(errors.items()))
    message = messages[0] if isinstance(messages, list) and messages else messages
    if isinstance(message, dict):
        inner, message = first_error(message)
        field = f"{field}.{inner}"
    return field, str(message)


class PolicyMatchRowSerializer(serializers.ModelSerializer):
    """One of a policy's matches as its page lists it: the item, what the policy did or would have done, what
    people decided and whether they agreed."""

    item = serializers.SerializerMethodField()
    version = serializers.IntegerField(source="policy_version", read_only=True)
    outcomeLabel = serializers.CharField(source="get_outcome_display", read_only=True)  # noqa: N815
    effect = serializers.CharField(read_only=True)
    peopleDecided = serializers.SerializerMethodField(  # noqa: N815
        help_text="approved | denied for a shadow match on an item a person decided, else null."
    )
    agrees = serializers.SerializerMethodField(
        help_text="Whether people decided as the shadow policy would have (null: nothing to compare)."
    )
    createdAt = serializers.DateTimeField(source="created_at", read_only=True)  # noqa: N815

    class Meta:
        model = PolicyMatch
        fields = [
            "id",
            "item",
            "version",
            "mode",
            "action",
            "outcome",
            "outcomeLabel",
            "effect",
            "payload",
            "note",
            "peopleDecided",
            "agrees",
            "createdAt",
        ]
        read_only_fields = fields

    @extend_schema_field(FindingItemSerializer)
    def get_item(self, match: PolicyMatch) -> dict[str, Any]:
        return dict(FindingItemSerializer(match.item, context=self.context).data)

    @extend_schema_field(serializers.CharField(allow_null=True))
    def get_peopleDecided(self, match: PolicyMatch) -> str | None:  # noqa: N802
        return human_verdict(match.item) if match.mode == Policy.Mode.SHADOW else None

    @extend_schema_field(serializers.BooleanField(allow_null=True))
    def get_agrees(self, match: PolicyMatch) -> bool | None:
        return shadow_agrees(match, match.item) if match.mode == Policy.Mode.SHADOW else None


class PolicyStatsRowSerializer(PolicyStatsSerializer):
    """A row of the stats page: the policy and its figures."""

    policy = serializers.IntegerField(source="policy.pk")
    name = serializers.CharField(source="policy.name")
    mode = serializers.CharField(source="policy.mode")
    url = serializers.SerializerMethodField()

    def get_url(self, stats: PolicyStats) -> str:
        return _absolute(self, reverse("api-policy", args=[stats.policy.pk]))


def paged(page: Any, items: Any) -> dict[str, Any]:
    """A page of a list, as the policy API's lists answer: ``count``, ``page``, ``pages`` and ``results``."""
    return {"count": page.paginator.count, "page": page.number, "pages": page.paginator.num_pages, "results": items}
