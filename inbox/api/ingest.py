"""REST API: ingest for agents, reads for approvers. Views parse, call one service, and serialize."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import RequestDataTooBig
from django.shortcuts import get_object_or_404
from django.urls import reverse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiExample,
    OpenApiParameter,
    OpenApiResponse,
    extend_schema,
    extend_schema_field,
)
from rest_framework import exceptions, serializers, status
from rest_framework.parsers import BaseParser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from agents.auth import AgentTokenAuthentication, IsAgent, request_agent
from agents.throttles import IngestThrottle
from inbox import access, limits
from inbox.agui.reader import IngestError, parse_body, read_run
from inbox.api.serializers import RunSerializer
from inbox.conformance.recorder import record_cut, record_ingest_error
from inbox.core.errors import ERROR_SCHEMA, ApplicationError
from inbox.ingest.services import run_ingest
from inbox.ingest.start import START_LOST, run_start_queue, start_overdue
from inbox.models import RunStart

# Bodies the ingest refuses with 415: a run is JSON or an event stream, never a form.
FORM_MEDIA_TYPES = ("multipart/form-data", "application/x-www-form-urlencoded")


class RawBodyParser(BaseParser):
    """Accepts anything but a form: the ingest view reads ``request.body`` itself, as JSON or as an SSE stream."""

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
                "interrupts": {
                    "type": "array",
                    "minItems": 1,
                    "maxItems": limits.max_interrupts_per_run(),
                    "items": INTERRUPT_SCHEMA,
                },
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


class RunIngestApi(APIView):
    authentication_classes = [AgentTokenAuthentication]
    permission_classes = [IsAgent]
    parser_classes = [RawBodyParser]
    throttle_classes = [IngestThrottle]

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
            415: OpenApiResponse(ERROR_SCHEMA, description="A form body (multipart or urlencoded), not JSON."),
            429: OpenApiResponse(ERROR_SCHEMA, description="Over the agent's ingest rate, or too many failed tokens."),
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
        agent = request_agent(request)
        if (request.content_type or "").split(";")[0].strip().lower() in FORM_MEDIA_TYPES:
            raise exceptions.UnsupportedMediaType(request.content_type)
        try:
            body = _limited_body(request)
        except ApplicationError as error:
            if error.code == "body_too_large":
                record_cut(agent_id=agent.pk, variant="over_limits", message=error.message, where="POST /api/v1/runs")
            raise
        raw_events: list = []
        try:
            raw_events, prefix = parse_body(body, request.content_type or "")
            record = read_run(raw_events, prefix)
            result = run_ingest(agent=agent, record=record)
        except IngestError as error:
            # Everything refused is an observation of the agent's conformance report, with the rule broken.
            record_ingest_error(agent_id=agent.pk, error=error, raw_events=raw_events, where="POST /api/v1/runs")
            raise
        data = RunSerializer(result.run, context={"request": request, "items": result.items}).data
        return Response(data, status=status.HTTP_201_CREATED if result.created else status.HTTP_200_OK)


def _limited_body(request: Request) -> bytes:
    """The raw body, refused with 413 above ``limits.max_ingest_bytes()`` (declared or actual size)."""
    limit = limits.max_ingest_bytes()
    too_big = ApplicationError(
        status.HTTP_413_REQUEST_ENTITY_TOO_LARGE,
        "body_too_large",
        f"The body is larger than the {limit}-byte limit.",
        field="body",
        rule="max_bytes",
    )
    try:
        declared = int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        declared = 0
    if declared > limit:
        raise too_big
    try:
        body = request.body
    except RequestDataTooBig:
        raise too_big from None
    if len(body) > limit:
        raise too_big
    return body


class AgentWhoAmIApi(APIView):
    """A cheap authenticated call for agent authors to check their token (and the bench's baseline)."""

    authentication_classes = [AgentTokenAuthentication]
    permission_classes = [IsAgent]

    @extend_schema(summary="The agent this ingest token belongs to", responses={200: OpenApiTypes.OBJECT})
    def get(self, request: Request) -> Response:
        agent = request_agent(request)
        return Response({"slug": agent.slug, "name": agent.name, "enabled": agent.enabled})


class RunStartSerializer(serializers.ModelSerializer):
    """A run started from the inbox: ``pending`` while a worker asks the agent, then ``done`` with its run or
    ``failed`` with the refusal (the status and code the start would have answered)."""

    url = serializers.SerializerMethodField()
    agent: serializers.SlugRelatedField = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    threadId = serializers.CharField(source="thread_id", read_only=True)  # noqa: N815
    runId = serializers.SerializerMethodField(help_text="The runId sent to the agent.")  # noqa: N815
    state = serializers.SerializerMethodField(help_text="pending, done or failed.")
    stateLabel = serializers.SerializerMethodField()  # noqa: N815
    run = serializers.SerializerMethodField(help_text="The run the agent answered with, once `done`.")
    error = serializers.SerializerMethodField(
        help_text="Why it failed: `{status, error, detail, field}`, once `failed`."
    )
    createdAt = serializers.DateTimeField(source="created_at", read_only=True)  # noqa: N815
    updatedAt = serializers.DateTimeField(source="updated_at", read_only=True)  # noqa: N815

    class Meta:
        model = RunStart
        fields = [
            "id",
            "url",
            "agent",
            "threadId",
            "runId",
            "state",
            "stateLabel",
            "run",
            "error",
            "createdAt",
            "updatedAt",
        ]
        read_only_fields = fields

    def get_url(self, start: RunStart) -> str:
        request = self.context.get("request")
        path = reverse("api-agent-start", args=[start.agent.slug, start.pk])
        return request.build_absolute_uri(path) if request else path

    def get_runId(self, start: RunStart) -> str:  # noqa: N802
        return str((start.run_input or {}).get("runId", ""))

    def get_state(self, start: RunStart) -> str:
        return RunStart.State.FAILED if start_overdue(start) else start.state

    def get_stateLabel(self, start: RunStart) -> str:  # noqa: N802
        return RunStart.State(self.get_state(start)).label

    @extend_schema_field(RunSerializer(allow_null=True))
    def get_run(self, start: RunStart) -> dict | None:
        if start.state != RunStart.State.DONE or start.run is None:
            return None
        return RunSerializer(start.run, context=self.context).data

    @extend_schema_field(OpenApiTypes.OBJECT)
    def get_error(self, start: RunStart) -> dict | None:
        if start_overdue(start):
            return {"status": 504, "error": "start_lost", "detail": START_LOST}
        if start.state != RunStart.State.FAILED:
            return None
        error = {"status": start.error_status, "error": start.error_code, "detail": start.error}
        return error | ({"field": start.error_field} if start.error_field else {})


START_LIMIT_SCHEMA: dict[str, Any] = {
    **ERROR_SCHEMA,
    "properties": {
        **ERROR_SCHEMA["properties"],  # type: ignore[dict-item]
        "limit": {"type": "integer", "description": "The most starts in flight allowed."},
        "limitName": {"type": "string", "description": "The setting that sets it."},
        "scope": {"type": "string", "enum": ["user", "agent"], "description": "Whose limit: yours or the agent's."},
        "inFlight": {"type": "integer"},
        "retryAfter": {"type": "integer", "description": "Seconds; also in the Retry-After header."},
    },
}


class RunStartApi(APIView):
    class InputSerializer(serializers.Serializer):
        message = serializers.CharField(max_length=limits.MAX_START_MESSAGE, trim_whitespace=True)
        threadId = serializers.CharField(max_length=limits.MAX_ID_LENGTH, required=False, allow_blank=False)

    @extend_schema(
        operation_id="agents_runs_start",
        summary="Start a run on an agent (the inbox as AG-UI client)",
        description=(
            "Queues a `RunAgentInput` carrying `message` as a user message for the agent's AG-UI endpoint and "
            "answers 202 at once with the start (`state: pending`, its `url` also in `Location`). A worker POSTs "
            "it, reads the event stream and ingests the run like `POST /api/v1/runs`: its interrupts become inbox "
            "items. GET the start's `url` until `state` is `done` (its `run`) or `failed` (its `error`: 502 when the "
            "agent is unreachable or answered something that is not one AG-UI run). Without `threadId` a new thread "
            "is started. Refused with 409 while the thread has open interrupts, and with 429 while you, or the "
            "agent, already have the most starts waiting for an agent that the settings allow "
            "(`INBOX_STARTS_IN_FLIGHT_PER_USER`, `INBOX_STARTS_IN_FLIGHT_PER_AGENT`)."
        ),
        request=InputSerializer,
        parameters=[
            OpenApiParameter("Location", str, OpenApiParameter.HEADER, response=[202], description="The start's url."),
            OpenApiParameter("Retry-After", int, OpenApiParameter.HEADER, response=[429], description="Seconds."),
        ],
        responses={
            202: OpenApiResponse(RunStartSerializer, description="Queued; `Location` is the start's address."),
            400: OpenApiResponse(ERROR_SCHEMA, description="The body is not valid; names the field."),
            404: OpenApiResponse(ERROR_SCHEMA, description="No such agent, or you cannot see it."),
            409: OpenApiResponse(
                ERROR_SCHEMA, description="The thread has open interrupts, or the agent has no endpoint or is disabled."
            ),
            429: OpenApiResponse(
                START_LIMIT_SCHEMA,
                description="Too many starts in flight (yours or the agent's); names the limit. Retry after the "
                "seconds in the Retry-After header.",
            ),
        },
        examples=[OpenApiExample("Demo agent", request_only=True, value={"message": "parallel"})],
    )
    def post(self, request: Request, slug: str) -> Response:
        agent = get_object_or_404(access.visible_agents(request.user), slug=slug)
        body = self.InputSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        start = run_start_queue(
            agent=agent,
            user=request.user,
            message=body.validated_data["message"],
            thread_id=body.validated_data.get("threadId"),
        )
        data = RunStartSerializer(start, context={"request": request}).data
        return Response(data, status=status.HTTP_202_ACCEPTED, headers={"Location": data["url"]})


class RunStartDetailApi(APIView):
    @extend_schema(
        operation_id="agents_runs_start_retrieve",
        summary="A run start: pending while the agent is asked, then its run or why it failed",
        responses={
            200: RunStartSerializer,
            404: OpenApiResponse(ERROR_SCHEMA, description="No such start of yours on this agent."),
        },
    )
    def get(self, request: Request, slug: str, pk: int) -> Response:
        agent = get_object_or_404(access.visible_agents(request.user), slug=slug)
        start = get_object_or_404(
            RunStart.objects.select_related("agent", "run__thread", "run__agent"), pk=pk, agent=agent, user=request.user
        )
        return Response(RunStartSerializer(start, context={"request": request}).data)
