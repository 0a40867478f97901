"""REST API: starting a run on an agent from the inbox, and retrying a failed resume."""

from __future__ import annotations

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiExample, OpenApiResponse, extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from agents.services import RunStartError, run_start
from inbox import selectors
from inbox.api import ERROR_SCHEMA
from inbox.models import Resume
from inbox.resumes import ResumeRetryRefused, resume_retry
from inbox.serializers import ResumeSerializer, RunSerializer


class RunStartApi(APIView):
    class InputSerializer(serializers.Serializer):
        message = serializers.CharField(max_length=20_000, trim_whitespace=True)
        threadId = serializers.CharField(max_length=255, required=False, allow_blank=False)

    @extend_schema(
        operation_id="agents_runs_start",
        summary="Start a run on an agent (the inbox as AG-UI client)",
        description=(
            "POSTs a `RunAgentInput` carrying `message` as a user message to the agent's AG-UI endpoint, reads its "
            "event stream and ingests the run like `POST /api/v1/runs`: its interrupts become inbox items. Without "
            "`threadId` a new thread is started. Refused with 409 while the thread has open interrupts."
        ),
        request=InputSerializer,
        responses={
            201: RunSerializer,
            400: OpenApiResponse(ERROR_SCHEMA, description="The body is not valid; names the field."),
            404: OpenApiResponse(ERROR_SCHEMA, description="No such agent, or you cannot see it."),
            409: OpenApiResponse(
                ERROR_SCHEMA, description="The thread has open interrupts, or the agent has no endpoint or is disabled."
            ),  # fmt: skip
            502: OpenApiResponse(
                ERROR_SCHEMA, description="The agent is unreachable or answered something that is not one AG-UI run."
            ),  # fmt: skip
        },
        examples=[OpenApiExample("Demo agent", request_only=True, value={"message": "parallel"})],
    )
    def post(self, request: Request, slug: str) -> Response:
        agent = get_object_or_404(selectors.visible_agents(request.user), slug=slug)
        body = self.InputSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        try:
            started = run_start(agent=agent, user=request.user, message=body.validated_data["message"],
                                thread_id=body.validated_data.get("threadId"))  # fmt: skip
        except RunStartError as error:
            return Response(error.as_dict(), status=error.status)
        data = RunSerializer(started.run, context={"request": request}).data
        return Response(data, status=status.HTTP_201_CREATED if started.created else status.HTTP_200_OK)


class ResumeRetryApi(APIView):
    @extend_schema(
        operation_id="runs_resume_retry",
        summary="Send a failed resume again (same input, same runId)",
        request=None,
        responses={
            202: ResumeSerializer,
            404: OpenApiResponse(ERROR_SCHEMA, description="No such run visible to you, or it has no resume."),
            409: OpenApiResponse(
                inline_serializer(
                    "ResumeRetryRefused",
                    {
                        "error": serializers.CharField(),
                        "detail": serializers.CharField(),
                        "state": serializers.CharField(),
                    },
                ),  # fmt: skip
                description="The resume is not in the failed state.",
            ),
        },
    )
    def post(self, request: Request, pk: int) -> Response:
        run = get_object_or_404(selectors.visible_runs(request.user), pk=pk)
        resume = get_object_or_404(Resume, run=run)
        try:
            resume = resume_retry(resume=resume, user=request.user)
        except ResumeRetryRefused as refused:
            resume.refresh_from_db()
            return Response({"error": "not_failed", "detail": str(refused), "state": resume.state},
                            status=status.HTTP_409_CONFLICT)  # fmt: skip
        return Response(ResumeSerializer(resume).data, status=status.HTTP_202_ACCEPTED)
