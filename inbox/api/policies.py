"""Policy API, for staff and team leads (a lead reads and writes the policies of the teams they lead;
``inbox.policies.permissions``): ``GET/POST /api/v1/policies``, ``GET/PATCH /api/v1/policies/<id>``, its matches
(``GET /api/v1/policies/<id>/matches``), the stats page's rows (``GET /api/v1/policies/stats``, the policies the caller
manages), backtests of one policy (``GET|POST /api/v1/policies/<id>/backtests``, ``GET
/api/v1/policies/<id>/backtests/<id>``); staff only: backtests of the enforced policies in order (``GET|POST
/api/v1/policies/backtests``, ``GET /api/v1/policies/backtests/<id>``), which read every enforced policy."""

from __future__ import annotations

from typing import Any

from django.core.paginator import EmptyPage, PageNotAnInteger, Paginator
from drf_spectacular.utils import OpenApiExample, OpenApiParameter, OpenApiResponse, extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.permissions import BasePermission, IsAdminUser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from inbox.api.policy_serializers import (
    BacktestDetailSerializer,
    BacktestRequestSerializer,
    BacktestSerializer,
    PolicyDetailSerializer,
    PolicyMatchRowSerializer,
    PolicySerializer,
    PolicyStatsRowSerializer,
    SetBacktestRequestSerializer,
    first_error,
    paged,
)
from inbox.core.errors import ERROR_SCHEMA, ApplicationError
from inbox.models.policies import BacktestFinding, Policy, PolicyBacktest
from inbox.policies.backtest import backtest_start, backtest_start_set
from inbox.policies.permissions import may_manage_policies, policies_managed_by
from inbox.policies.selectors import (
    backtest_findings,
    explain_findings,
    latest_backtest,
    policy_backtests,
    policy_list,
    policy_matches,
    policy_stats,
    set_backtests,
)
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


PER_PAGE = 50
PAGE_PARAMETER = OpenApiParameter("page", int, description=f"Page of {PER_PAGE}, newest first")


def _page(request: Request, rows: Any, per_page: int = PER_PAGE) -> Any:
    """A page of ``rows`` (``?page=N``, default 1); a page that is not there is a 400 naming ``page``."""
    paginator = Paginator(rows, per_page)
    try:
        return paginator.page(request.query_params.get("page") or 1)
    except (EmptyPage, PageNotAnInteger):
        message = f"must be a page number from 1 to {paginator.num_pages}"
        raise ApplicationError(
            400, "invalid", f"page: {message}", errors=[{"path": "page", "message": message}]
        ) from None


def _paged_schema(name: str, serializer: type[serializers.Serializer]) -> Any:
    return inline_serializer(
        name,
        {
            "count": serializers.IntegerField(),
            "page": serializers.IntegerField(),
            "pages": serializers.IntegerField(),
            "results": serializer(many=True),
        },
    )


class ManagesPolicies(BasePermission):
    """Staff, or a team lead (``inbox.policies.permissions``): anyone else gets 403, as before."""

    def has_permission(self, request: Request, view: APIView) -> bool:
        return bool(request.user and request.user.is_authenticated and may_manage_policies(request.user))


def _mine(request: Request) -> Any:
    """The policies the caller manages (staff: all; a lead: their teams'), in the order they run."""
    return policy_list().filter(pk__in=policies_managed_by(request.user).values("pk"))


def _managed(request: Request, pk: int) -> Policy | None:
    """The policy, when the caller may write it (a lead: their teams' policies); None reads as 404."""
    managed = policies_managed_by(request.user).select_related("agent", "team", "route_team", "evidence")
    return managed.filter(pk=pk).first()


def _policy_or_404(request: Request, pk: int) -> Policy:
    policy = _managed(request, pk)
    if policy is None:
        raise ApplicationError(404, "not_found", "No such policy.")
    return policy


def _invalid(serializer: serializers.Serializer, prefix: str = "") -> ApplicationError:
    field, message = first_error(serializer.errors)
    field = prefix + field
    return ApplicationError(
        400, "invalid", f"{field}: {message}", field=field, errors=[{"path": field, "message": message}]
    )


class PolicyListApi(APIView):
    permission_classes = [ManagesPolicies]

    @extend_schema(
        operation_id="policies_list",
        summary="Auto-decision policies, in the order they run",
        responses={
            200: PolicySerializer(many=True),
            403: OpenApiResponse(ERROR_SCHEMA, description="Neither staff nor a team lead"),
        },
    )
    def get(self, request: Request) -> Response:
        return Response(PolicySerializer(_mine(request), many=True, context={"request": request}).data)

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
            403: OpenApiResponse(
                ERROR_SCHEMA, description="Neither staff nor a team lead, or a lead's policy outside their teams"
            ),
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
    permission_classes = [ManagesPolicies]

    def _policy(self, pk: int) -> Policy | None:
        return _managed(self.request, pk)

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
        description=(
            "A change bumps `version`; the audit log records the diff (`policy.updated`, `policy.promoted` with "
            "its backtest as evidence). A team lead changes shadow policies; promoting one needs staff, or a "
            "second lead (not the one who wrote the version) and a finished backtest of the version; an enforced "
            "policy a lead may only put back to shadow or disable."
        ),
        request=PolicySerializer,
        responses={
            200: PolicyDetailSerializer,
            400: OpenApiResponse(ERROR_SCHEMA, description="A field is invalid; `field` names it."),
            403: OpenApiResponse(ERROR_SCHEMA, description="A lead's change refused; `field` names why"),
            409: OpenApiResponse(ERROR_SCHEMA, description="A lead's promotion without a backtest of the version"),
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
        policy_update(user=request.user, policy_id=pk, fields=serializer.service_fields())
        return Response(self._detail(request, _policy_or_404(request, pk)))


class BacktestListApi(APIView):
    permission_classes = [ManagesPolicies]

    @extend_schema(
        operation_id="policies_backtest_list",
        summary="A policy's backtests, newest first (its page lists the latest)",
        parameters=[PAGE_PARAMETER],
        responses={
            200: _paged_schema("PagedBacktests", BacktestSerializer),
            400: OpenApiResponse(ERROR_SCHEMA, description="`page` is invalid"),
            404: OpenApiResponse(ERROR_SCHEMA, description="No such policy"),
        },
    )
    def get(self, request: Request, pk: int) -> Response:
        page = _page(request, policy_backtests(_policy_or_404(request, pk)))
        return Response(paged(page, BacktestSerializer(page, many=True, context={"request": request}).data))

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
        policy = _managed(request, pk)
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
    permission_classes = [ManagesPolicies]

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
        policy = _managed(request, pk)
        backtest = (
            PolicyBacktest.objects.select_related("requested_by").filter(pk=backtest_pk, policy=policy).first()
            if policy is not None
            else None
        )
        if backtest is None:
            raise ApplicationError(404, "not_found", "No such backtest.")
        return Response(_backtest_detail(request, backtest))


def _backtest_detail(request: Request, backtest: PolicyBacktest) -> dict[str, Any]:
    kind = request.query_params.get("kind") or BacktestFinding.Kind.DISAGREED
    if kind not in BacktestFinding.Kind.values:
        message = f"must be one of {', '.join(BacktestFinding.Kind.values)}"
        raise ApplicationError(400, "invalid", f"kind: {message}", errors=[{"path": "kind", "message": message}])
    page = _page(request, backtest_findings(backtest, kind), FINDINGS_PER_PAGE)
    rows = explain_findings(backtest, kind, page.object_list)
    context = {"request": request, "kind": kind, "findings": page, "rows": rows}
    return dict(BacktestDetailSerializer(backtest, context=context).data)


FINDINGS_PARAMETERS = [
    OpenApiParameter("kind", enum=BacktestFinding.Kind.values, description="Which items (default disagreed)"),
    OpenApiParameter("page", int, description=f"Page of {FINDINGS_PER_PAGE} items, newest first"),
]


class PolicyMatchesApi(APIView):
    permission_classes = [ManagesPolicies]

    @extend_schema(
        operation_id="policies_matches_list",
        summary="What a policy matched at ingest, newest first, beside what people decided",
        parameters=[PAGE_PARAMETER],
        responses={
            200: _paged_schema("PagedPolicyMatches", PolicyMatchRowSerializer),
            400: OpenApiResponse(ERROR_SCHEMA, description="`page` is invalid"),
            404: OpenApiResponse(ERROR_SCHEMA, description="No such policy"),
        },
    )
    def get(self, request: Request, pk: int) -> Response:
        page = _page(request, policy_matches(_policy_or_404(request, pk)))
        return Response(paged(page, PolicyMatchRowSerializer(page, many=True, context={"request": request}).data))


class PolicyStatsApi(APIView):
    permission_classes = [ManagesPolicies]

    @extend_schema(
        operation_id="policies_stats",
        summary="The stats page: per policy, in order, its matches, agreement with people and time it would save",
        description="The policies the caller manages: every policy for staff, a lead's teams' policies for a lead.",
        responses={
            200: PolicyStatsRowSerializer(many=True),
            403: OpenApiResponse(ERROR_SCHEMA, description="Neither staff nor a team lead"),
        },
    )
    def get(self, request: Request) -> Response:
        rows = policy_stats(list(_mine(request)))
        return Response(PolicyStatsRowSerializer(rows, many=True, context={"request": request}).data)


class SetBacktestListApi(APIView):
    permission_classes = [IsAdminUser]

    @extend_schema(
        operation_id="policies_set_backtest_list",
        summary="Backtests of the enforced policies in order, newest first",
        parameters=[PAGE_PARAMETER],
        responses={
            200: _paged_schema("PagedSetBacktests", BacktestSerializer),
            400: OpenApiResponse(ERROR_SCHEMA, description="`page` is invalid"),
        },
    )
    def get(self, request: Request) -> Response:
        page = _page(request, set_backtests())
        return Response(paged(page, BacktestSerializer(page, many=True, context={"request": request}).data))

    @extend_schema(
        operation_id="policies_set_backtest_create",
        summary="Backtest the enforced policies in order (the first that matches acts)",
        description=(
            "Reads the items people decided in the last `days` days for the agents the enabled enforced policies "
            "apply to and gives each to the first policy that matches it, as ingest does: totals, and per policy "
            "(`breakdown`) the items it would have acted on first, agreement and approvals found wrong. `policy` "
            "adds a shadow (or disabled) policy at its position as if it were enforced. 201 when read at once, "
            "202 while a worker reads it."
        ),
        request=SetBacktestRequestSerializer,
        responses={
            201: BacktestSerializer,
            202: BacktestSerializer,
            400: OpenApiResponse(ERROR_SCHEMA, description="`days` or `policy` is invalid, or nothing is enforced"),
        },
        examples=[
            OpenApiExample("With a shadow policy among them", request_only=True, value={"days": 30, "policy": 4})
        ],
    )
    def post(self, request: Request) -> Response:
        body = SetBacktestRequestSerializer(data=request.data)
        if not body.is_valid():
            raise _invalid(body)
        candidate = None
        if body.validated_data.get("policy") is not None:
            candidate = (
                Policy.objects.select_related("agent", "team", "route_team")
                .filter(pk=body.validated_data["policy"])
                .first()
            )
            if candidate is None:
                raise ApplicationError.invalid("policy", "no policy has this id")
        backtest = backtest_start_set(user=request.user, days=body.validated_data.get("days"), candidate=candidate)
        done = backtest.state == PolicyBacktest.State.DONE
        return Response(
            BacktestSerializer(backtest, context={"request": request}).data,
            status=status.HTTP_201_CREATED if done else status.HTTP_202_ACCEPTED,
        )


class SetBacktestDetailApi(APIView):
    permission_classes = [IsAdminUser]

    @extend_schema(
        operation_id="policies_set_backtest_retrieve",
        summary="A backtest of the enforced policies in order: its progress, then its result and a page of items",
        parameters=FINDINGS_PARAMETERS,
        responses={
            200: BacktestDetailSerializer,
            400: OpenApiResponse(ERROR_SCHEMA, description="`kind` or `page` is invalid"),
            404: OpenApiResponse(ERROR_SCHEMA, description="No such backtest"),
        },
    )
    def get(self, request: Request, backtest_pk: int) -> Response:
        backtest = (
            PolicyBacktest.objects.select_related("requested_by").filter(pk=backtest_pk, ordered_set=True).first()
        )
        if backtest is None:
            raise ApplicationError(404, "not_found", "No such backtest.")
        return Response(_backtest_detail(request, backtest))
