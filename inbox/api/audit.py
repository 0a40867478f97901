"""``GET /api/v1/audit/review-quality``: the review-quality figures the audit page shows (``inbox.audit.review``),
over the same filters and team visibility."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from inbox.audit.exports import AuditFilterForm
from inbox.audit.review import review_for
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
