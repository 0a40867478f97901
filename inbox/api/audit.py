"""``GET /api/v1/audit/review-quality``: the review-quality figures the audit page shows (``inbox.audit.review``),
over the same filters and team visibility; ``GET /api/v1/audit/stats``: the stats page's figures
(``inbox.audit.stats``), the escalated-versus-not times to decision among them."""

from __future__ import annotations

from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema, extend_schema_field
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from inbox.audit.exports import AuditFilterForm
from inbox.audit.review import review_for
from inbox.audit.stats import build_report
from inbox.core.errors import ERROR_SCHEMA, ApplicationError


class FiguresSerializer(serializers.Serializer):
    key = serializers.CharField(help_text="The approver's username or the agent's slug ('all' for the total).")
    name = serializers.CharField(help_text="The approver's username, or the agent's name.")
    decisions = serializers.IntegerField(help_text="People's standing decisions (policies and undone ones left out).")
    approvals = serializers.IntegerField()
    denials = serializers.IntegerField()
    timed = serializers.IntegerField(help_text="Decisions made after the decider was first shown the item.")
    medianSeconds = serializers.FloatField(  # noqa: N815
        allow_null=True, help_text="Median time from first seeing the item to deciding it, of the timed ones."
    )
    fast = serializers.IntegerField(help_text="Timed decisions made under 3 s.")
    fastShare = serializers.FloatField(allow_null=True, help_text="fast / timed.")  # noqa: N815
    blind = serializers.IntegerField(help_text="Made without the arguments on screen: bulk, or a key from the list.")
    blindShare = serializers.FloatField(allow_null=True, help_text="blind / decisions.")  # noqa: N815
    unseen = serializers.IntegerField(help_text="Neither blind nor timed: the decider never opened the item here.")
    contradicted = serializers.IntegerField(help_text="Approvals contradicted later (either way below).")
    contradictedByFollowUp = serializers.IntegerField(  # noqa: N815
        help_text="Approvals whose follow-up interrupt on the thread a person denied."
    )
    contradictedByShadow = serializers.IntegerField(  # noqa: N815
        help_text="Approvals a deny policy in shadow mode matched."
    )
    contradictedShare = serializers.FloatField(allow_null=True, help_text="contradicted / approvals.")  # noqa: N815
    longestStreak = serializers.IntegerField(  # noqa: N815
        help_text="The most approvals in a row without a denial, in decision order."
    )


class ReviewQualitySerializer(serializers.Serializer):
    since = serializers.DateTimeField(allow_null=True, help_text="Decisions from here (inclusive).")
    until = serializers.DateTimeField(allow_null=True, help_text="Decisions before here (exclusive).")
    total = FiguresSerializer()
    approvers = FiguresSerializer(many=True)
    agents = FiguresSerializer(many=True)


FILTERS = [
    OpenApiParameter("since", OpenApiTypes.DATE, description="First day (default: 29 days before today)."),
    OpenApiParameter("until", OpenApiTypes.DATE, description="Last day, inclusive."),
    OpenApiParameter("agent", OpenApiTypes.STR, description="An agent's slug."),
    OpenApiParameter("team", OpenApiTypes.STR, description="A team's name."),
    OpenApiParameter("actor", OpenApiTypes.STR, description="An approver's username."),
]


class ReviewQualityApi(APIView):
    @extend_schema(
        summary="Review quality per approver and per agent",
        description=(
            "For each approver and each agent over the period: time from first seeing an item to deciding it "
            "(median, share under 3 s), decisions made without the arguments on screen (bulk, a key from the "
            "list), approvals contradicted later (the agent's follow-up denied, or a shadow deny policy matched) "
            "and the longest approval streak. Staff see every agent; an approver the agents of their teams. The "
            "audit page /audit/review/ and its CSV show the same figures. docs/review-quality.md."
        ),
        parameters=FILTERS,
        responses={
            200: ReviewQualitySerializer,
            400: OpenApiResponse(ERROR_SCHEMA, description="A filter is invalid; `field` names it."),
        },
    )
    def get(self, request: Request) -> Response:
        form = AuditFilterForm(request.query_params, user=request.user)
        if not form.is_valid():
            field_name, message = form.first_error()
            raise ApplicationError.invalid(field_name, message)
        report = review_for(form)
        data = {
            "since": report.since,
            "until": report.until,
            "total": report.total.as_dict(),
            "approvers": [figures.as_dict() for figures in report.approvers],
            "agents": [figures.as_dict() for figures in report.agents],
        }
        return Response(ReviewQualitySerializer(data).data)


STATS_PERIODS = (7, 30, 90)


class StatsAgentSerializer(serializers.Serializer):
    slug = serializers.CharField()
    name = serializers.CharField()
    items = serializers.IntegerField()
    decided = serializers.IntegerField()
    approved = serializers.IntegerField()
    expired = serializers.IntegerField()
    approvalRate = serializers.FloatField(source="approval_rate", allow_null=True)  # noqa: N815
    expiredShare = serializers.FloatField(source="expired_share", allow_null=True)  # noqa: N815
    medianSeconds = serializers.FloatField(source="median_seconds", allow_null=True)  # noqa: N815


class EscalationFiguresSerializer(serializers.Serializer):
    escalatedDecided = serializers.IntegerField(  # noqa: N815
        source="escalated_decided", help_text="Decided items an escalation rule reached."
    )
    notEscalatedDecided = serializers.IntegerField(  # noqa: N815
        source="unescalated_decided", help_text="Decided items no escalation rule reached."
    )
    medianEscalatedSeconds = serializers.FloatField(  # noqa: N815
        source="median_escalated_seconds", allow_null=True, help_text="Their median time to decision."
    )
    medianNotEscalatedSeconds = serializers.FloatField(  # noqa: N815
        source="median_unescalated_seconds", allow_null=True
    )


class StatsSerializer(serializers.Serializer):
    days = serializers.IntegerField()
    since = serializers.DateTimeField(source="start", help_text="Items created from here (midnight, local time).")
    total = serializers.IntegerField()
    byStatus = serializers.DictField(source="by_status", child=serializers.IntegerField())  # noqa: N815
    medianSeconds = serializers.FloatField(  # noqa: N815
        source="median_seconds", allow_null=True, help_text="Median time from arrival to decision."
    )
    approvalRate = serializers.FloatField(source="approval_rate", allow_null=True)  # noqa: N815
    expiredShare = serializers.FloatField(source="expired_share")  # noqa: N815
    escalation = serializers.SerializerMethodField(
        help_text="Time to decision of the items an escalation rule reached, and of the rest (the page's "
        "'escalated · not escalated')."
    )
    agents = StatsAgentSerializer(many=True)
    resumeStates = serializers.DictField(source="resume_states", child=serializers.IntegerField())  # noqa: N815

    @extend_schema_field(EscalationFiguresSerializer)
    def get_escalation(self, report: Any) -> dict[str, Any]:
        return dict(EscalationFiguresSerializer(report).data)


class StatsApi(APIView):
    @extend_schema(
        operation_id="audit_stats",
        summary="The stats page's figures: items by status, times to decision (escalated or not), per agent",
        description="Over the items created in the last `days` days (7, 30 or 90; 30 unless given) of the agents "
        "you see, as /audit/stats/ shows them.",
        parameters=[OpenApiParameter("days", int, enum=list(STATS_PERIODS), description="The period (default 30).")],
        responses={
            200: StatsSerializer,
            400: OpenApiResponse(ERROR_SCHEMA, description="`days` is not 7, 30 or 90."),
        },
    )
    def get(self, request: Request) -> Response:
        days = request.query_params.get("days") or "30"
        if days not in {str(period) for period in STATS_PERIODS}:
            raise ApplicationError.invalid("days", "must be 7, 30 or 90")
        return Response(StatsSerializer(build_report(user=request.user, days=int(days))).data)
