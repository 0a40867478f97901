"""Policy API, staff only: ``GET/POST /api/v1/policies``, ``GET/PATCH /api/v1/policies/<id>``."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiExample, OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.permissions import IsAdminUser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from inbox.core.errors import ERROR_SCHEMA, ApplicationError
from inbox.policies.models import Policy
from inbox.policies.selectors import policy_list
from inbox.policies.serializers import PolicySerializer, first_error
from inbox.policies.services import policy_create, policy_update

EXAMPLE = {
    "name": "Internal email",
    "agent": "mailer",
    "reason": "tool_call",
    "toolName": "sendEmail",
    "matchSchema": {
        "type": "object",
        "properties": {"to": {"type": "string", "pattern": "@ourco\\.com$"}},
        "required": ["to"],
    },
    "action": "approve",
    "mode": "shadow",
}


def _invalid(serializer: PolicySerializer) -> ApplicationError:
    field, message = first_error(serializer.errors)
    return ApplicationError(
        400, "invalid", f"{field}: {message}", field=field, errors=[{"path": field, "message": message}]
    )


class PolicyListApi(APIView):
    permission_classes = [IsAdminUser]

    @extend_schema(
        operation_id="policies_list",
        summary="Auto-decision policies, in the order they run",
        responses={200: PolicySerializer(many=True), 403: OpenApiResponse(ERROR_SCHEMA, description="Not staff")},
    )
    def get(self, request: Request) -> Response:
        return Response(PolicySerializer(policy_list(), many=True, context={"request": request}).data)

    @extend_schema(
        operation_id="policies_create",
        summary="Create a policy",
        description=(
            "Exactly one of `agent` (slug) or `team` (name). `matchSchema` is a JSON Schema the tool arguments "
            "(`subject: arguments`) or the interrupt's metadata (`subject: metadata`) must satisfy: no remote "
            "`$ref`, patterns matched with RE2. `action`: approve | deny | require_approvals (with `approvals`) "
            "| route (with `routeTeam`); `mode`: enforce | shadow (the default)."
        ),
        request=PolicySerializer,
        responses={
            201: PolicySerializer,
            400: OpenApiResponse(ERROR_SCHEMA, description="A field is invalid; `field` names it."),
            403: OpenApiResponse(ERROR_SCHEMA, description="Not staff"),
        },
        examples=[OpenApiExample("Approve internal email", request_only=True, value=EXAMPLE)],
    )
    def post(self, request: Request) -> Response:
        serializer = PolicySerializer(data=request.data, context={"request": request})
        if not serializer.is_valid():
            raise _invalid(serializer)
        policy = policy_create(user=request.user, fields=serializer.service_fields())
        return Response(PolicySerializer(policy, context={"request": request}).data, status=status.HTTP_201_CREATED)


class PolicyDetailApi(APIView):
    permission_classes = [IsAdminUser]

    def _policy(self, pk: int) -> Policy | None:
        return Policy.objects.select_related("agent", "team", "route_team").filter(pk=pk).first()

    @extend_schema(operation_id="policies_retrieve", summary="One policy", responses={200: PolicySerializer})
    def get(self, request: Request, pk: int) -> Response:
        policy = self._policy(pk)
        if policy is None:
            raise ApplicationError(404, "not_found", "No such policy.")
        return Response(PolicySerializer(policy, context={"request": request}).data)

    @extend_schema(
        operation_id="policies_update",
        summary='Change a policy (e.g. promote it: {"mode": "enforce"})',
        description="A change bumps `version`; the audit log records the diff (`policy.updated`, `policy.promoted`).",
        request=PolicySerializer,
        responses={
            200: PolicySerializer,
            400: OpenApiResponse(ERROR_SCHEMA, description="A field is invalid; `field` names it."),
            404: OpenApiResponse(ERROR_SCHEMA, description="No such policy"),
        },
    )
    def patch(self, request: Request, pk: int) -> Response:
        policy = self._policy(pk)
        if policy is None:
            raise ApplicationError(404, "not_found", "No such policy.")
        serializer = PolicySerializer(policy, data=request.data, partial=True, context={"request": request})
        if not serializer.is_valid():
            raise _invalid(serializer)
        policy = policy_update(user=request.user, policy_id=pk, fields=serializer.service_fields())
        return Response(PolicySerializer(policy, context={"request": request}).data)
