"""The pages of auto-decision policies, for staff and team leads (a lead sees the policies of the teams they
lead: ``inbox.policies.permissions``): the ordered list with each policy's stats, create, edit, a
policy's page (what it matched, next to what people decided) with Promote, the stats page, and backtests (run
from the policy's page on its saved version or from its form on the unsaved values; a page per backtest)."""

from __future__ import annotations

from functools import wraps
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.db.models import QuerySet
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from inbox import limits
from inbox.core.errors import ApplicationError
from inbox.decisions.rules import DecisionError
from inbox.models import InboxItem
from inbox.models.policies import BacktestFinding, Policy, PolicyBacktest
from inbox.policies import permissions, selectors
from inbox.policies.backtest import backtest_start, backtest_start_set
from inbox.policies.forms import PolicyForm
from inbox.policies.services import policy_create, policy_promote, policy_update


def policy_manager_required(view: Any) -> Any:
    """Logged in (else the login page) and staff or a team lead (else a 404, as for anything a user may not
    see); a lead sees only the policies of the teams they lead (``inbox.policies.permissions``)."""

    @login_required
    @wraps(view)
    def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if not permissions.may_manage_policies(request.user):
            raise Http404("No such page.")
        return view(request, *args, **kwargs)

    return wrapped


def staff_member_required(view: Any) -> Any:
    """Logged in (else the login page) and staff (else a 404): backtests of the enforced policies in order read
    every enforced policy, not only a lead's."""

    @login_required
    @wraps(view)
    def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if not request.user.is_staff:
            raise Http404("No such page.")
        return view(request, *args, **kwargs)

    return wrapped


def _mine(request: HttpRequest) -> QuerySet[Policy]:
    return selectors.policy_list().filter(pk__in=permissions.policies_managed_by(request.user).values("pk"))


def _managed(request: HttpRequest, pk: int) -> Policy:
    managed = permissions.policies_managed_by(request.user).select_related("agent", "team", "route_team", "evidence")
    return get_object_or_404(managed, pk=pk)


@policy_manager_required
def policy_list(request: HttpRequest) -> HttpResponse:
    policies = list(_mine(request))
    stats = {row.policy.pk: row for row in selectors.policy_stats(policies)}
    rows = [(policy, stats[policy.pk]) for policy in policies]
    context = {
        "rows": rows,
        "set_backtests": list(selectors.set_backtests()[:5]) if request.user.is_staff else [],
        "days": limits.BACKTEST_DEFAULT_DAYS,
        "max_days": limits.MAX_BACKTEST_DAYS,
    }
    return render(request, "policies/list.html", context)


@policy_manager_required
def policy_stats(request: HttpRequest) -> HttpResponse:
    return render(request, "policies/stats.html", {"stats": selectors.policy_stats(list(_mine(request)))})


def _form_page(request: HttpRequest, form: PolicyForm, policy: Policy | None, status: int = 200) -> HttpResponse:
    form.limit_to(request.user)
    context = {"form": form, "policy": policy, "default_days": limits.BACKTEST_DEFAULT_DAYS}
    return render(request, "policies/form.html", {**context, "max_days": limits.MAX_BACKTEST_DAYS}, status=status)


def _save(request: HttpRequest, policy: Policy | None) -> HttpResponse:
    form = PolicyForm(request.POST or None, instance=policy or Policy())
    form.limit_to(request.user)
    if request.method == "POST" and form.is_valid():
        try:
            if policy is None:
                saved = policy_create(user=request.user, fields=form.service_fields())
                messages.success(request, f"Policy “{saved.name}” created ({saved.get_mode_display().lower()}).")
            else:
                saved = policy_update(user=request.user, policy_id=policy.pk, fields=form.service_fields())
                messages.success(request, f"Policy “{saved.name}” saved (version {saved.version}).")
        except DecisionError as error:
            form.add_service_errors(error.errors or [{"path": "", "message": error.message}])
        else:
            return redirect(saved)
    return _form_page(request, form, policy, status=400 if request.method == "POST" else 200)


@policy_manager_required
def policy_new(request: HttpRequest) -> HttpResponse:
    return _save(request, None)


@policy_manager_required
def policy_edit(request: HttpRequest, pk: int) -> HttpResponse:
    return _save(request, _managed(request, pk))


def _detail_page(
    request: HttpRequest,
    policy: Policy,
    error: ApplicationError | None = None,
    days: str = "",
    promote_error: ApplicationError | None = None,
) -> HttpResponse:
    matches = selectors.recent_matches(policy)
    context = {
        "policy": policy,
        "stats": selectors.policy_stats([policy])[0],
        "matches": [
            (match, selectors.human_verdict(match.item), selectors.shadow_agrees(match, match.item))
            for match in matches
        ],
        "backtests": selectors.recent_backtests(policy),
        "set_backtests": selectors.set_backtests_with(policy) if request.user.is_staff else [],
        "evidence": selectors.latest_backtest(policy),
        "promoted_on": policy.evidence,
        "backtest_error": error,
        "promote_error": promote_error,
        "days": days or limits.BACKTEST_DEFAULT_DAYS,
        "max_days": limits.MAX_BACKTEST_DAYS,
    }
    failed = error or promote_error
    return render(request, "policies/detail.html", context, status=failed.status if failed else 200)


@policy_manager_required
def policy_detail(request: HttpRequest, pk: int) -> HttpResponse:
    return _detail_page(request, _managed(request, pk))


@policy_manager_required
@require_POST
def policy_backtest_start(request: HttpRequest, pk: int) -> HttpResponse:
    """Backtest the saved version (the policy's page) or the form's unsaved values (``draft``, its edit page)."""
    policy = _managed(request, pk)
    days = request.POST.get("days", "")
    if not request.POST.get("draft"):
        try:
            backtest = backtest_start(user=request.user, policy=policy, days=days)
        except ApplicationError as error:
            return _detail_page(request, policy, error, days)
        return redirect(backtest)
    form = PolicyForm(request.POST, instance=Policy.objects.get(pk=pk))
    form.limit_to(request.user)
    if not form.is_valid():
        return _form_page(request, form, policy, status=400)
    try:
        backtest = backtest_start(user=request.user, policy=policy, days=days, draft_fields=form.service_fields())
    except ApplicationError as error:
        form.add_service_errors(error.errors or [{"path": "", "message": error.message}])
        return _form_page(request, form, policy, status=400)
    return redirect(backtest)


def _findings_page(request: HttpRequest, backtest: PolicyBacktest, kind: str, param: str) -> Any:
    page = Paginator(selectors.backtest_findings(backtest, kind), 25).get_page(request.GET.get(param))
    page.rows = selectors.explain_findings(backtest, kind, page.object_list)  # type: ignore[attr-defined]
    return page


def _subject_label(subject: Any) -> str:
    try:
        return str(Policy.Subject(subject).label)
    except ValueError:  # a rules snapshot from another version: its word as stored
        return str(subject)


@policy_manager_required
def policy_backtest(request: HttpRequest, pk: int, backtest_pk: int) -> HttpResponse:
    """A backtest: its progress (the page reloads itself) until it is done, then what it found."""
    backtest = get_object_or_404(
        PolicyBacktest.objects.select_related("policy", "requested_by"), pk=backtest_pk, policy=_managed(request, pk)
    )
    return _backtest_page(request, backtest)


@staff_member_required
@require_POST
def policy_set_backtest_start(request: HttpRequest) -> HttpResponse:
    """Backtest the enforced policies in order (the list's form), or with a shadow policy among them (``policy``,
    its page's form)."""
    candidate = None
    if request.POST.get("policy"):
        candidate = get_object_or_404(
            Policy.objects.select_related("agent", "team", "route_team"), pk=_id(request.POST["policy"])
        )
    try:
        backtest = backtest_start_set(user=request.user, days=request.POST.get("days", ""), candidate=candidate)
    except ApplicationError as error:
        if candidate is not None:
            return _detail_page(request, candidate, error, request.POST.get("days", ""))
        messages.error(request, error.message.split(": ", 1)[-1].capitalize() + ".")
        return redirect("inbox:policies")
    return redirect(backtest)


def _id(value: str) -> int:
    if not value.isdigit() or len(value) > 18:
        raise Http404("No such policy.")
    return int(value)


@staff_member_required
def policy_set_backtest(request: HttpRequest, backtest_pk: int) -> HttpResponse:
    """A backtest of the enforced policies in order: its progress, then what each would have done first."""
    backtest = get_object_or_404(
        PolicyBacktest.objects.select_related("requested_by"), pk=backtest_pk, ordered_set=True
    )
    return _backtest_page(request, backtest)


def _backtest_page(request: HttpRequest, backtest: PolicyBacktest) -> HttpResponse:
    context: dict[str, Any] = {
        "backtest": backtest,
        "policy": backtest.policy,
        "lost": selectors.backtest_lost(backtest),
        "action_label": "" if backtest.ordered_set else Policy.Action(backtest.rules["action"]).label,
        "subject_label": "" if backtest.ordered_set else _subject_label(backtest.rules.get("subject")),
        "approves": backtest.ordered_set or backtest.rules["action"] == Policy.Action.APPROVE,
    }
    if backtest.ordered_set:
        context["breakdown"] = selectors.set_breakdown(backtest)
    if backtest.state == PolicyBacktest.State.DONE:
        context["disagreements"] = _findings_page(request, backtest, BacktestFinding.Kind.DISAGREED, "page")
        context["found_wrong"] = _findings_page(request, backtest, BacktestFinding.Kind.FOUND_WRONG, "wrong_page")
        context["outcomes"] = [
            (value, label, backtest.outcomes[value])
            for value, label in InboxItem.Outcome.choices
            if value in backtest.outcomes
        ]
    template = "policies/set_backtest.html" if backtest.ordered_set else "policies/backtest.html"
    return render(request, template, context)


@policy_manager_required
@require_POST
def policy_promote_view(request: HttpRequest, pk: int) -> HttpResponse:
    policy = _managed(request, pk)
    try:
        promoted = policy_promote(user=request.user, policy_id=policy.pk)
    except ApplicationError as error:  # a lead who wrote this version, or no backtest of it yet
        return _detail_page(request, policy, promote_error=error)
    messages.success(request, f"Policy “{promoted.name}” now decides (enforce, version {promoted.version}).")
    return redirect(promoted)
