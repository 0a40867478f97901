"""Resume API: retry a failed resume (`POST /api/v1/runs/<id>/resume/retry`)."""

from __future__ import annotations

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiResponse, extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from inbox import access
from inbox.api.serializers import ResumeSerializer
from inbox.core.errors import ERROR_SCHEMA, ApplicationError
from inbox.models import Resume
from inbox.resumes.services import resume_retry


class ResumeRetryApi(APIView):
    @extend_schema(
        operation_id="runs_resume_retry",
        summary="Send a failed resume again (same input, same runId)",
        request=None,
        responses={
            202: ResumeSerializer,
            403: OpenApiResponse(ERROR_SCHEMA, description="Only staff retry a resume (an operator's action)."),
            404: OpenApiResponse(ERROR_SCHEMA, description="No such run visible to you, or it has no resume."),
            409: OpenApiResponse(
                inline_serializer(
                    "ResumeRetryRefused",
                    {
                        "error": serializers.CharField(),
                        "detail": serializers.CharField(),
                        "state": serializers.CharField(),
                    },
                ),
                description="The resume is not in the failed state.",
            ),
        },
    )
    def post(self, request: Request, pk: int) -> Response:
        run = get_object_or_404(access.visible_runs(request.user), pk=pk)
        resume = get_object_or_404(Resume, run=run)
        if not access.sees_everything(request.user):
            raise ApplicationError(403, "staff_only", "Only staff retry a failed resume (an operator's action).")
        resume = resume_retry(resume=resume, user=request.user)
        return Response(ResumeSerializer(resume).data, status=status.HTTP_202_ACCEPTED)
