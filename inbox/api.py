"""REST API: ingest for agents, reads for approvers. Views parse, call one service, and serialize."""

from __future__ import annotations

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.shortcuts import get_object_or_404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiExample, OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import generics, permissions, serializers, status
from rest_framework.parsers import BaseParser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from agents.auth import AgentTokenAuthentication
from agents.models import Agent
from inbox import selectors
from inbox.decisions import DecisionError, decision_submit
from inbox.ingest import IngestError, parse_body, read_run
from inbox.models import Decision, InboxItem
from inbox.serializers import ItemSerializer, RunDetailSerializer, RunSerializer, run_summary
from inbox.services import run_ingest


class IsAgent(permissions.BasePermission):
    def has_permission(self, request, view) -> bool:
        return isinstance(request.auth, Agent)


class RawBodyParser(BaseParser):
    """Accepts anything: the ingest view reads ``request.body`` itself, as JSON or as an SSE stream."""

    media_type = "*/*"

    def parse(self, stream, media_type=None, parser_context=None):
        return None


INTERRUPT_SCHEMA = {
    "type": "object",
    "required": ["id", "reason"],
    "properties": {
        "id": {"type": "string"},
        "reason": {"type": "string", "description": "tool_call | input_required | confirmation | <framework>:<x>"},
        "message": {"type": "string"},
        "toolCallId": {"type": "string", "description": "Required when reason is tool_call."},
        "responseSchema": {"type": "object", "description": "JSON Schema (Draft 2020-12 unless $schema says)."},
        "expiresAt": {"type": "string", "format": "date-time"},
        "metadata": {"type": "object"},
    },
}
RUN_FINISHED_SCHEMA = {
    "type": "object",
    "required": ["type", "threadId", "runId"],
    "properties": {
        "type": {"type": "string", "enum": ["RUN_FINISHED"]},
        "threadId": {"type": "string"},
        "runId": {"type": "string"},
        "result": {},
        "outcome": {
            "type": "object",
            "properties": {
                "type": {"type": "string", "enum": ["interrupt", "success", "cancelled"]},
                "interrupts": {"type": "array", "minItems": 1, "maxItems": 100, "items": INTERRUPT_SCHEMA},
            },
        },
    },
}
INGEST_BODY_SCHEMA = {
    "oneOf": [
        RUN_FINISHED_SCHEMA,
        {
            "type": "object",
            "required": ["events"],
            "properties": {
                "events": {
                    "type": "array",
                    "description": "Every AG-UI event of one run, in order, ending with RUN_FINISHED.",
                    "items": {"type": "object", "required": ["type"], "properties": {"type": {"type": "string"}}},
                }
            },
        },
    ]
}
ERROR_SCHEMA = {
    "type": "object",
    "properties": {
        "error": {"type": "string"},
        "detail": {"type": "string"},
        "field": {"type": "string", "description": "Path of the first offending field."},
        "rule": {"type": "string"},
        "errors": {"type": "array", "items": {"type": "object"}},
    },
}


class RunIngestApi(APIView):
    authentication_classes = [AgentTokenAuthentication]
    permission_classes = [IsAgent]
    parser_classes = [RawBodyParser]

    @extend_schema(
        operation_id="runs_ingest",
        summary="Post an agent run (its interrupts become inbox items)",
        description=(
            "Authenticate with `Authorization: Bearer <agent token>`. The body is one `RUN_FINISHED` event, "
            '`{"events": [...]}` (one run\'s AG-UI events ending with `RUN_FINISHED`), or the same events as a '
            "`text/event-stream` body. Replaying the same run returns 200 with the same body."
        ),
        request={"application/json": INGEST_BODY_SCHEMA, "text/event-stream": OpenApiTypes.STR},
        responses={
            201: RunSerializer,
            200: OpenApiResponse(RunSerializer, description="The same run was posted before: nothing new stored."),
            400: OpenApiResponse(ERROR_SCHEMA, description="The body breaks the AG-UI contract; names the field."),
            401: OpenApiResponse(ERROR_SCHEMA, description="Missing, unknown or revoked token."),
            403: OpenApiResponse(ERROR_SCHEMA, description="The agent is disabled."),
            409: OpenApiResponse(ERROR_SCHEMA, description="Thread has open interrupts, or same ids, other content."),
            413: OpenApiResponse(ERROR_SCHEMA, description="Body over the size limit."),
        },
        examples=[
            OpenApiExample(
                "Minimal tool approval",
                request_only=True,
                value={
                    "type": "RUN_FINISHED",
                    "threadId": "thread-1",
                    "runId": "run-1",
                    "outcome": {
                        "type": "interrupt",
                        "interrupts": [
                            {
                                "id": "int-abc123",
                                "reason": "tool_call",
                                "message": "Send email to a@b.com with subject 'Hi'?",
                                "toolCallId": "tc-001",
                                "responseSchema": {
                                    "type": "object",
                                    "properties": {"approved": {"type": "boolean"}},
                                    "required": ["approved"],
                                },
                            }
                        ],
                    },
                },
            )
        ],
    )
    def post(self, request: Request) -> Response:
        agent: Agent = request.auth
        limit = settings.INBOX_INGEST_MAX_BYTES
        too_big = Response(
            {"error": "body_too_large", "field": "body", "rule": "max_bytes",
             "detail": f"The body is larger than the {limit}-byte limit."},
            status=status.HTTP_413_REQUEST_ENTITY_TOO_LARGE,
        )  # fmt: skip
        try:
            declared = int(request.META.get("CONTENT_LENGTH") or 0)
        except ValueError:
            declared = 0
        if declared > limit:
            return too_big
        try:
            body = request.body
        except RequestDataTooBig:
            return too_big
        if len(body) > limit:
            return too_big
        try:
            raw_events, prefix = parse_body(body, request.content_type or "")
            record = read_run(raw_events, prefix)
            result = run_ingest(agent=agent, record=record)
        except IngestError as error:
            return Response(error.as_dict(), status=error.status)
        data = run_summary(result.run, request)
        return Response(data, status=status.HTTP_201_CREATED if result.created else status.HTTP_200_OK)


class ItemListApi(generics.ListAPIView):
    serializer_class = ItemSerializer

    @extend_schema(
        summary="List inbox items (newest first)",
        parameters=[
            OpenApiParameter("status", enum=[s.value for s in InboxItem.Status]),
            OpenApiParameter("agent", str, description="Agent slug"),
            OpenApiParameter("reason", str),
            OpenApiParameter("thread", str, description="AG-UI threadId"),
        ],
    )
    def get(self, request, *args, **kwargs):
        return super().get(request, *args, **kwargs)

    def get_queryset(self):
        params = self.request.query_params
        status_filter = params.get("status")
        if status_filter and status_filter not in InboxItem.Status.values:
            from rest_framework.exceptions import ValidationError

            raise ValidationError({"status": [f"Must be one of {', '.join(InboxItem.Status.values)}."]})
        return selectors.item_list(
            user=self.request.user,
            status=status_filter,
            agent=params.get("agent"),
            reason=params.get("reason"),
            thread=params.get("thread"),
        )


class ItemDetailApi(generics.RetrieveAPIView):
    serializer_class = ItemSerializer

    def get_queryset(self):
        return selectors.visible_items(self.request.user).select_related("agent", "thread", "run", "decided_by")


class RunDetailApi(APIView):
    @extend_schema(summary="A run with its items, snapshots, tool calls and resume", responses=RunDetailSerializer)
    def get(self, request: Request, pk: int) -> Response:
        run = get_object_or_404(selectors.visible_runs(request.user).select_related("agent", "thread"), pk=pk)
        return Response(RunDetailSerializer(run, context={"request": request}).data)


class AgentWhoAmIApi(APIView):
    """A cheap authenticated call for agent authors to check their token (and the bench's baseline)."""

    authentication_classes = [AgentTokenAuthentication]
    permission_classes = [IsAgent]

    @extend_schema(summary="The agent this ingest token belongs to", responses={200: OpenApiTypes.OBJECT})
    def get(self, request: Request) -> Response:
        agent: Agent = request.auth
        return Response({"slug": agent.slug, "name": agent.name, "enabled": agent.enabled})


DECISION_BODY_SCHEMA = {
    "type": "object",
    "required": ["status"],
    "properties": {
        "status": {"type": "string", "enum": ["resolved", "cancelled"]},
        "payload": {"description": "The answer, valid against the item's responseSchema. Omit when cancelled."},
        "comment": {"type": "string", "maxLength": 5000},
    },
}
DECISION_ERROR_SCHEMA = {
    "type": "object",
    "properties": {
        "error": {"type": "string", "description": "invalid_payload | invalid_status | not_open | expired | ..."},
        "detail": {"type": "string"},
        "errors": {
            "type": "array",
            "items": {"type": "object", "properties": {"path": {"type": "string"}, "message": {"type": "string"}}},
            "description": "jsonschema errors: path is the payload path joined with '.', '' for the root.",
        },
        "state": {"type": "string", "description": "On 409: the item's state (resolved, cancelled, expired)."},
        "decision": {"type": "object", "description": "On 409 for a decided item: status, payload, decidedBy, ..."},
    },
}


class DecisionOutputSerializer(serializers.ModelSerializer):
    user = serializers.CharField(source="user.username")

    class Meta:
        model = Decision
        fields = ["id", "status", "payload", "comment", "user", "final", "created_at"]


class ItemDecisionApi(APIView):
    @extend_schema(
        operation_id="items_decide",
        summary="Decide an item: resolve it with a payload, or cancel it",
        description=(
            "`resolved` carries a `payload` valid against the item's `responseSchema` (denial is "
            '`{"approved": false}`); `cancelled` carries none. Session or token auth. When every item of the '
            "run is decided, the batched resume is queued."
        ),
        request={"application/json": DECISION_BODY_SCHEMA},
        responses={
            201: OpenApiResponse(
                OpenApiTypes.OBJECT, description="Stored: {item, decision, closed, approvals, required}"
            ),
            400: OpenApiResponse(DECISION_ERROR_SCHEMA, description="Invalid body or payload; errors name each path."),
            403: OpenApiResponse(DECISION_ERROR_SCHEMA, description="Claimed by someone else, or self-approval."),
            404: OpenApiResponse(DECISION_ERROR_SCHEMA, description="No such item visible to you."),
            409: OpenApiResponse(DECISION_ERROR_SCHEMA, description="No longer open (state, decision), or `expired`."),
        },
        examples=[
            OpenApiExample("Approve", request_only=True, value={"status": "resolved", "payload": {"approved": True}}),
            OpenApiExample(
                "Approve with edits",
                request_only=True,
                value={
                    "status": "resolved",
                    "comment": "softened the wording",
                    "payload": {"approved": True, "editedArgs": {"to": "a@b.com", "subject": "Hi", "body": "Hello"}},
                },
            ),  # fmt: skip
            OpenApiExample("Cancel", request_only=True, value={"status": "cancelled"}),
            OpenApiExample(
                "Invalid payload",
                response_only=True,
                status_codes=["400"],
                value={
                    "error": "invalid_payload",
                    "detail": "The answer does not match the schema at 'year': ...",
                    "errors": [{"path": "year", "message": "1999 is less than the minimum of 2000"}],
                },
            ),  # fmt: skip
        ],
    )
    def post(self, request: Request, pk: int) -> Response:
        body = request.data
        if not isinstance(body, dict):
            return Response({"error": "invalid_body", "detail": "The body must be a JSON object.", "field": "body",
                             "errors": [{"path": "body", "message": "must be a JSON object"}]}, status=400)  # fmt: skip
        comment = body.get("comment", "")
        if comment is None:
            comment = ""
        if not isinstance(comment, str):  # its length is checked by decision_submit
            return Response({"error": "invalid_comment", "detail": "comment must be a string.", "field": "comment",
                             "errors": [{"path": "comment", "message": "must be a string"}]}, status=400)  # fmt: skip
        try:
            outcome = decision_submit(item_id=pk, user=request.user, status=body.get("status"),
                                      payload=body.get("payload"), comment=comment)  # fmt: skip
        except DecisionError as error:
            data = error.as_dict()
            if error.errors:
                data.setdefault("field", error.errors[0]["path"])
            return Response(data, status=error.status)
        return Response(
            {
                "item": ItemSerializer(outcome.item, context={"request": request}).data,
                "decision": DecisionOutputSerializer(outcome.decision).data,
                "closed": outcome.closed,
                "approvals": outcome.approvals,
                "required": outcome.required,
            },
            status=status.HTTP_201_CREATED,
        )
