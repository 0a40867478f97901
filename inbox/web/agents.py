"""Agent pages: the agents a user can see, and one agent's page with "Start a run" and, for staff, its settings,
ingest tokens and enabled state.

Whoever sees an agent may start a run on it; only staff change it (403; 404 for who does not see it), and only
superusers where resumes go (endpoint, auth header). Changes go through ``agents.services``; a new token is shown
once."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.db.models import Count, OuterRef, Q, Subquery
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.cache import add_never_cache_headers
from django.views.decorators.http import require_POST

from agents import services
from agents.demo import SCENARIOS
from agents.forms import AgentSettingsForm, TokenIssueForm
from agents.models import Agent, AgentToken
from inbox import access
from inbox.conformance.rules import CONFORMS, DEVIATES
from inbox.conformance.selectors import agent_report
from inbox.core.errors import ApplicationError
from inbox.ingest.start import run_start_queue, start_overdue
from inbox.models import InboxItem, Run, RunStart
from inbox.resumes.states import agent_deliveries

VIA = "agent_page"
NEW_TOKEN_KEY = "agents.new_token"
TOKENS_SHOWN = 50  # tokens listed on an agent's page: every live one, then the newest revoked ones


def conformance_summary(agent: Agent) -> dict[str, int]:
    """How many behaviours of the report conform, deviate, carry a note, or were never seen."""
    counts = {CONFORMS: 0, DEVIATES: 0, "note": 0, "unseen": 0}
    for behaviour in agent_report(agent):
        counts[behaviour["status"]] += 1
    return counts


@login_required
def agent_list(request: HttpRequest) -> HttpResponse:
    last_run = Run.objects.filter(agent=OuterRef("pk")).order_by("-created_at", "-pk")
    agents = list(
        access.visible_agents(request.user)
        .prefetch_related("teams")
        .annotate(
            open_items=Count("items", filter=Q(items__status=InboxItem.Status.OPEN), distinct=True),
            last_run_at=Subquery(last_run.values("created_at")[:1]),
            last_run_outcome=Subquery(last_run.values("outcome")[:1]),
        )
    )
    outcomes = dict(Run.Outcome.choices)
    deliveries = agent_deliveries([agent.pk for agent in agents])
    # One small query per agent (the report reads its observations): a registry holds tens of agents.
    rows = [
        {
            "agent": agent,
            "host": services.endpoint_host(agent.endpoint_url),
            "last_outcome": outcomes.get(agent.last_run_outcome or "", ""),
            "conformance": conformance_summary(agent),
            "delivery": deliveries[agent.pk],
        }
        for agent in agents
    ]
    return render(request, "agents/list.html", {"rows": rows})


def _detail(request: HttpRequest, agent: Agent, status: int = 200, **context: Any) -> HttpResponse:
    """The agent's page; ``context`` carries a bound form with errors when a POST was refused."""
    can_manage = bool(request.user.is_staff)
    runs = (
        Run.objects.filter(agent=agent)
        .select_related("thread")
        .annotate(open_items=Count("items", filter=Q(items__status=InboxItem.Status.OPEN)))
        .order_by("-created_at", "-pk")[:20]
    )
    page: dict[str, Any] = {
        "agent": agent,
        "endpoint": services.redact_url(agent.endpoint_url),
        "teams": list(agent.teams.order_by("name")),
        "runs": runs,
        "form": {"message": "", "thread_id": ""},
        "error": None,
        "scenarios": SCENARIOS.items() if agent.slug == "demo" else (),
        "conformance": agent_report(agent),
        "can_manage": can_manage,
        "agent_delivery": agent_deliveries([agent.pk])[agent.pk],
    }
    new_token = None
    if can_manage:
        can_set_endpoint = bool(request.user.is_superuser)
        new_token = _pop_new_token(request, agent)
        page.update(
            settings_form=AgentSettingsForm(instance=_copy(agent), can_set_endpoint=can_set_endpoint),
            token_form=TokenIssueForm(),
            tokens=_tokens(agent),
            new_token=new_token,
            can_set_endpoint=can_set_endpoint,
        )
    page.update(context)
    response = render(request, "agents/detail.html", page, status=status)
    if new_token:
        add_never_cache_headers(response)
    return response


def _copy(agent: Agent) -> Agent:
    """A fresh instance for a form to validate into (a ModelForm writes what it reads onto its instance,
    and a refused form must not change what the page shows as stored)."""
    return Agent.objects.get(pk=agent.pk)


def _tokens(agent: Agent) -> list[AgentToken]:
    """Every live token, then the newest revoked ones."""
    live = list(agent.tokens.filter(revoked_at__isnull=True).order_by("-created_at", "-pk"))
    revoked = agent.tokens.filter(revoked_at__isnull=False).order_by("-revoked_at", "-pk")
    return live + list(revoked[: max(0, TOKENS_SHOWN - len(live))])


def _pop_new_token(request: HttpRequest, agent: Agent) -> str | None:
    held = request.session.get(NEW_TOKEN_KEY)
    if not isinstance(held, dict) or held.get("agent") != agent.pk:
        return None
    del request.session[NEW_TOKEN_KEY]
    return str(held.get("token") or "") or None


def _agent_url(agent: Agent, anchor: str = "") -> str:
    return reverse("agents:detail", args=[agent.slug]) + (f"#{anchor}" if anchor else "")


@login_required
def agent_detail(request: HttpRequest, slug: str) -> HttpResponse:
    agent = get_object_or_404(access.visible_agents(request.user), slug=slug)
    if request.method != "POST":
        return _detail(request, agent)
    form = {"message": request.POST.get("message", "").strip(), "thread_id": request.POST.get("thread_id", "").strip()}
    try:
        start = run_start_queue(
            agent=agent, user=request.user, message=form["message"], thread_id=form["thread_id"] or None
        )
    except ApplicationError as error:
        response = _detail(request, agent, status=error.status, form=form, error=error)
        if "retryAfter" in error.extra:  # too many starts in flight
            response["Retry-After"] = str(error.extra["retryAfter"])
        return response
    # A worker asks the agent; this request does not wait on it (a silent agent would hold it for minutes).
    return redirect("agents:start", slug=agent.slug, start_id=start.pk)


@login_required
def start_progress(request: HttpRequest, slug: str, start_id: int) -> HttpResponse:
    """A start's progress: reloads itself while the agent is asked, then the run's page or the refusal."""
    agent = get_object_or_404(access.visible_agents(request.user), slug=slug)
    start = get_object_or_404(RunStart.objects.select_related("run"), pk=start_id, agent=agent, user=request.user)
    if start.state == RunStart.State.FAILED or start_overdue(start):
        message = start.error or "The agent did not answer in time; the start was given up. Try again."
        error = ApplicationError(start.error_status or 504, start.error_code or "start_lost", message)
        form = {"message": start.run_input["messages"][-1].get("content", ""), "thread_id": ""}
        return _detail(request, agent, status=error.status, form=form, error=error)
    if start.state == RunStart.State.PENDING or start.run is None:
        return render(request, "agents/start_progress.html", {"agent": agent, "start": start})
    run = start.run
    count = run.items.count()
    if count:
        messages.success(request, f"The agent paused with {count} interrupt(s) to decide.")
    else:
        messages.info(request, f"The run ended: {run.get_outcome_display().lower()}.")
    return redirect(run.get_absolute_url())


def _managed_agent(request: HttpRequest, slug: str) -> Agent:
    """The agent, for staff. Someone who sees it but is not staff gets a 403; who does not see it, a 404."""
    agent = get_object_or_404(access.visible_agents(request.user), slug=slug)
    if not request.user.is_staff:
        raise PermissionDenied("Only staff change an agent's settings.")
    return agent


@login_required
@require_POST
def agent_settings(request: HttpRequest, slug: str) -> HttpResponse:
    agent = _managed_agent(request, slug)
    form = AgentSettingsForm(request.POST, instance=_copy(agent), can_set_endpoint=bool(request.user.is_superuser))
    if form.is_valid():
        try:
            changed = services.agent_update(agent, values=form.service_values(), user=request.user, via=VIA)
        except ValidationError as error:
            form.add_error(None, error)
        else:
            if changed:
                labels = ", ".join(_label(form, name) for name in changed)
                messages.success(request, f"Settings saved: {labels}.")
            else:
                messages.info(request, "Nothing changed: the settings were already so.")
            return redirect(_agent_url(agent, "settings"))
    return _detail(request, agent, status=400, settings_form=form)


def _label(form: AgentSettingsForm, name: str) -> str:
    field = form.fields.get(name)
    return str(field.label) if field is not None and field.label else name


@login_required
@require_POST
def agent_enabled(request: HttpRequest, slug: str) -> HttpResponse:
    agent = _managed_agent(request, slug)
    wanted = request.POST.get("enabled")
    if wanted not in ("0", "1"):
        error = ApplicationError.invalid("enabled", "must be 1 (enable) or 0 (disable)")
        return _detail(request, agent, status=error.status, status_error=error)
    enabled = wanted == "1"
    if enabled != agent.enabled:
        services.agent_set_enabled(agent, enabled=enabled, user=request.user, via=VIA)
    if enabled:
        messages.success(request, f"{agent} is enabled: it may post runs again.")
    else:
        messages.success(request, f"{agent} is disabled: its runs are refused (403) until it is enabled.")
    return redirect(_agent_url(agent, "status"))


@login_required
@require_POST
def agent_tokens(request: HttpRequest, slug: str) -> HttpResponse:
    agent = _managed_agent(request, slug)
    action = request.POST.get("action", "")
    who = request.user.get_username()
    raw: str | None = None
    if action == "issue":
        form = TokenIssueForm(request.POST)
        if not form.is_valid():
            return _detail(request, agent, status=400, token_form=form)
        raw = services.token_issue(
            agent, label=form.cleaned_data["label"] or f"issued by {who}", user=request.user, via=VIA
        )
    elif action == "rotate":
        raw = services.tokens_rotate(agent, label=f"rotated by {who}", user=request.user, via=VIA)
    elif action == "revoke":
        revoked = services.token_list_revoke(
            _live_token(agent, request.POST.get("token", "")), user=request.user, via=VIA
        )
        messages.success(
            request, f"Revoked token {revoked[0].prefix}…." if revoked else "That token was already revoked."
        )
    elif action == "revoke_all":
        revoked = services.tokens_revoke(agent, user=request.user, via=VIA)
        messages.success(request, f"Revoked {len(revoked)} token(s): {agent} cannot post runs until it gets a new one.")
    else:
        error = ApplicationError.invalid("action", "must be issue, rotate, revoke or revoke_all")
        return _detail(request, agent, status=error.status, token_error=error)
    if raw is not None:
        request.session[NEW_TOKEN_KEY] = {"agent": agent.pk, "token": raw}
        messages.success(request, "New ingest token issued: copy it now, it is shown only once.")
    return redirect(_agent_url(agent, "tokens"))


def _live_token(agent: Agent, value: str) -> list[AgentToken]:
    if not value.isdigit() or len(value) > 18:
        return []
    return list(agent.tokens.filter(pk=int(value), revoked_at__isnull=True))
