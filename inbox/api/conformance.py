"""``GET /api/v1/agents/<slug>/conformance``: an agent's live conformance report (team visibility applies)."""

from __future__ import annotations

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from inbox import access
from inbox.conformance.selectors import agent_report


class ExampleRunSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    runId = serializers.CharField()  # noqa: N815 (the wire name)
    url = serializers.CharField()


class EvidenceSerializer(serializers.Serializer):
    runId = serializers.CharField(help_text="The runId the agent gave ('' when it gave none).")  # noqa: N815
    eventIndex = serializers.IntegerField(  # noqa: N815
        allow_null=True, help_text="The index of the event at fault in that run's stream."
    )


class VariantSerializer(serializers.Serializer):
    variant = serializers.CharField()
    verdict = serializers.ChoiceField(choices=["conforms", "deviates", "note"])
    did = serializers.CharField(help_text="What the agent did.")
    detail = serializers.CharField(help_text="Ids and names from the example run.")
    lastSeenAt = serializers.DateTimeField()  # noqa: N815
    firstSeenAt = serializers.DateTimeField()  # noqa: N815
    exampleRun = ExampleRunSerializer(allow_null=True)  # noqa: N815
    evidence = EvidenceSerializer(help_text="Where: the run and event, also for a run the inbox refused or cut.")


class BehaviourSerializer(serializers.Serializer):
    key = serializers.CharField()
    title = serializers.CharField()
    rule = serializers.CharField(help_text="Where in the AG-UI Interrupts spec.")
    expects = serializers.CharField(help_text="What the spec expects.")
    status = serializers.ChoiceField(choices=["conforms", "deviates", "note", "unseen"])
    seen = VariantSerializer(many=True)


class ConformanceReportSerializer(serializers.Serializer):
    agent = serializers.CharField(help_text="The agent's slug.")
    behaviours = BehaviourSerializer(many=True)


class AgentConformanceApi(APIView):
    @extend_schema(
        summary="An agent's live AG-UI conformance report",
        description=(
            "Every protocol behaviour the inbox follows (run outcome, snapshots at the interrupt boundary, "
            "tool_call binding, reasons, responseSchema, expiresAt, interrupt ids, tool result filing, "
            "RUN_ERROR shape, replays, re-emitted TOOL_CALL_*, open interrupts, same thread, resume linkage, "
            "readable event streams), with the spec rule, what the agent did, when it was last seen, an example "
            "run and the evidence (runId, event index). What the inbox refused or cut is reported too. 404 for an "
            "agent outside the caller's teams."
        ),
        responses=ConformanceReportSerializer,
    )
    def get(self, request: Request, slug: str) -> Response:
        agent = get_object_or_404(access.visible_agents(request.user), slug=slug)
        report = {"agent": agent.slug, "behaviours": agent_report(agent)}
        return Response(ConformanceReportSerializer(report).data)
