"""Policy API, staff only: ``GET/POST /api/v1/policies``, ``GET/PATCH /api/v1/policies/<id>``, and backtests:
``POST /api/v1/policies/<id>/backtests``, ``GET /api/v1/policies/<id>/backtests/<id>``."""

from __future__ import annotations

from django.core.paginator import EmptyPage, PageNotAnInteger, Paginator
from drf_spectacular.utils import OpenApiExample, OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.permissions import IsAdminUser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from inbox.api.policy_serializers import (
    BacktestDetailSerializer,
    BacktestRequestSerializer,
    BacktestSerializer,
    PolicyDetailSerializer,
    PolicySerializer,
    first_error,
)
from inbox.core.errors import ERROR_SCHEMA, ApplicationError
from inbox.models.policies import BacktestFinding, Policy, PolicyBacktest
from inbox.policies.backtest import backtest_start
from inbox.policies.selectors import backtest_findings, latest_backtest, policy_list, policy_stats
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


FINDINGS_PER_PAGE = 50


BACKTEST_EXAMPLE = {
    "days": 90,
    "draft": {"matchSchema": {"type": "object", "properties": {"amount": {"type": "number", "maximum": 100}}}},
}


def _invalid(serializer: serializers.Serializer, prefix: str = "") -> ApplicationError:
    field, message = first_error(serializer.errors)
    field = prefix + field
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

    def _detail(self, request: Request, policy: Policy) -> dict:
        context = {"request": request, "stats": policy_stats([policy])[0], "backtest": latest_backtest(policy)}
        return dict(PolicyDetailSerializer(policy, context=context).data)

    @extend_schema(
        operation_id="policies_retrieve",
        summary="One policy, with its match counts and agreement with people",
        responses={200: PolicyDetailSerializer, 404: OpenApiResponse(ERROR_SCHEMA, description="No such policy")},
    )
    def get(self, request: Request, pk: int) -> Response:
        policy = self._policy(pk)
        if policy is None:
            raise ApplicationError(404, "not_found", "No such policy.")
        return Response(self._detail(request, policy))

    @extend_schema(
        operation_id="policies_update",
        summary='Change a policy (e.g. promote it: {"mode": "enforce"})',
        description="A change bumps `version`; the audit log records the diff (`policy.updated`, `policy.promoted`).",
        request=PolicySerializer,
        responses={
            200: PolicyDetailSerializer,
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
        return Response(self._detail(request, policy))


class BacktestListApi(APIView):
    permission_classes = [IsAdminUser]

    @extend_schema(
        operation_id="policies_backtest_create",
        summary="Backtest a policy on the items people decided lately",
        description=(
            "Reads the items people decided in the last `days` days (default 30, at most 365) for the policy's "
            "agents and says what the saved version, or the unsaved `draft` fields, would have done: matches, "
            "agreement with people, disagreements, approvals found wrong later. A short period is read at once "
            "(201, `state: done`); a longer one by a worker (202, `state: pending`): GET its `url` until `state` "
            "is `done` or `failed`."
        ),
        request=BacktestRequestSerializer,
        responses={
            201: BacktestSerializer,
            202: BacktestSerializer,
            400: OpenApiResponse(ERROR_SCHEMA, description="`days` or a draft field is invalid; `field` names it."),
            404: OpenApiResponse(ERROR_SCHEMA, description="No such policy"),
        },
        examples=[OpenApiExample("Test a stricter schema over 90 days", request_only=True, value=BACKTEST_EXAMPLE)],
    )
    def post(self, request: Request, pk: int) -> Response:
        policy = Policy.objects.select_related("agent", "team", "route_team").filter(pk=pk).first()
        if policy is None:
            raise ApplicationError(404, "not_found", "No such policy.")
        body = BacktestRequestSerializer(data=request.data)
        if not body.is_valid():
            raise _invalid(body)
        draft_fields = None
        if body.validated_data.get("draft") is not None:
            draft = PolicySerializer(
                policy, data=body.validated_data["draft"], partial=True, context={"request": request}
            )
            if not draft.is_valid():
                raise _invalid(draft, prefix="draft.")
            draft_fields = draft.service_fields()
        try:
            backtest = backtest_start(
                user=request.user, policy=policy, days=body.validated_data.get("days"), draft_fields=draft_fields
            )
        except ApplicationError as error:
            if draft_fields is None or not error.errors:
                raise
            errors = [{**e, "path": f"draft.{e['path']}"} for e in error.errors]
            raise ApplicationError(error.status, error.code, f"draft.{error.message}", errors=errors) from None
        done = backtest.state == PolicyBacktest.State.DONE
        return Response(
            BacktestSerializer(backtest, context={"request": request}).data,
            status=status.HTTP_201_CREATED if done else status.HTTP_202_ACCEPTED,
        )


class BacktestDetailApi(APIView):
    permission_classes = [IsAdminUser]

    @extend_schema(
        operation_id="policies_backtest_retrieve",
        summary="A backtest: its progress, then its result with a page of the items it lists",
        parameters=[
            OpenApiParameter("kind", enum=BacktestFinding.Kind.values, description="Which items (default disagreed)"),
            OpenApiParameter("page", int, description=f"Page of {FINDINGS_PER_PAGE} items, newest first"),
        ],
        responses={
            200: BacktestDetailSerializer,
            400: OpenApiResponse(ERROR_SCHEMA, description="`kind` or `page` is invalid"),
            404: OpenApiResponse(ERROR_SCHEMA, description="No such backtest"),
        },
    )
    def get(self, request: Request, pk: int, backtest_pk: int) -> Response:
        backtest = PolicyBacktest.objects.select_related("requested_by").filter(pk=backtest_pk, policy_id=pk).first()
        if backtest is None:
            raise ApplicationError(404, "not_found", "No such backtest.")
        kind = request.query_params.get("kind") or BacktestFinding.Kind.DISAGREED
        if kind not in BacktestFinding.Kind.values:
            message = f"must be one of {', '.join(BacktestFinding.Kind.values)}"
            raise ApplicationError(400, "invalid", f"kind: {message}", errors=[{"path": "kind", "message": message}])
        paginator = Paginator(backtest_findings(backtest, kind), FINDINGS_PER_PAGE)
        try:
            page = paginator.page(request.query_params.get("page") or 1)
        except (EmptyPage, PageNotAnInteger):
            message = f"must be a page number from 1 to {paginator.num_pages}"
            raise ApplicationError(
                400, "invalid", f"page: {message}", errors=[{"path": "page", "message": message}]
            ) from None
        context = {"request": request, "kind": kind, "findings": page}
        return Response(BacktestDetailSerializer(backtest, context=context).data)
