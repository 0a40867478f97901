"""Staff pages for auto-decision policies: the ordered list with each policy's stats, create, edit, a
policy's page (what it matched, next to what people decided) with Promote, and the stats page."""

from __future__ import annotations

from functools import wraps
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from inbox.decisions.rules import DecisionError
from inbox.policies import selectors
from inbox.policies.forms import PolicyForm
from inbox.policies.models import Policy
from inbox.policies.services import policy_create, policy_promote, policy_update


def staff_member_required(view: Any) -> Any:
    """Logged in (else the login page) and staff (else a 404, as for anything a user may not see)."""

    @login_required
    @wraps(view)
    def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if not request.user.is_staff:
            raise Http404("No such page.")
        return view(request, *args, **kwargs)

    return wrapped


@staff_member_required
def policy_list(request: HttpRequest) -> HttpResponse:
    policies = list(selectors.policy_list())
    stats = {row.policy.pk: row for row in selectors.policy_stats(policies)}
    rows = [(policy, stats[policy.pk]) for policy in policies]
    return render(request, "policies/list.html", {"rows": rows})


@staff_member_required
def policy_stats(request: HttpRequest) -> HttpResponse:
    return render(request, "policies/stats.html", {"stats": selectors.policy_stats(list(selectors.policy_list()))})


def _save(request: HttpRequest, policy: Policy | None) -> HttpResponse:
    form = PolicyForm(request.POST or None, instance=policy or Policy())
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
    status = 400 if request.method == "POST" else 200
    return render(request, "policies/form.html", {"form": form, "policy": policy}, status=status)


@staff_member_required
def policy_new(request: HttpRequest) -> HttpResponse:
    return _save(request, None)


@staff_member_required
def policy_edit(request: HttpRequest, pk: int) -> HttpResponse:
    return _save(request, get_object_or_404(Policy, pk=pk))


@staff_member_required
def policy_detail(request: HttpRequest, pk: int) -> HttpResponse:
    policy = get_object_or_404(Policy.objects.select_related("agent", "team", "route_team"), pk=pk)
    matches = selectors.recent_matches(policy)
    context = {
        "policy": policy,
        "stats": selectors.policy_stats([policy])[0],
        "matches": [
            (match, selectors.human_verdict(match.item), selectors.shadow_agrees(match, match.item))
            for match in matches
        ],
    }
    return render(request, "policies/detail.html", context)


@staff_member_required
@require_POST
def policy_promote_view(request: HttpRequest, pk: int) -> HttpResponse:
    policy = get_object_or_404(Policy, pk=pk)
    promoted = policy_promote(user=request.user, policy_id=policy.pk)
    messages.success(request, f"Policy “{promoted.name}” now decides (enforce, version {promoted.version}).")
    return redirect(promoted)
