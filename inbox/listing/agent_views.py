"""Agent pages: the list of agents a user can see, and one agent's page with "Start a run"."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db.models import Count, Q
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render

from agents.demo import SCENARIOS
from inbox import access
from inbox.conformance.selectors import agent_report
from inbox.core.errors import ApplicationError
from inbox.ingest.start import run_start
from inbox.models import InboxItem, Run


@login_required
def agent_list(request: HttpRequest) -> HttpResponse:
    agents = access.visible_agents(request.user).annotate(
        open_items=Count("items", filter=Q(items__status=InboxItem.Status.OPEN), distinct=True)
    )
    return render(request, "agents/list.html", {"agents": agents})


@login_required
def agent_detail(request: HttpRequest, slug: str) -> HttpResponse:
    agent = get_object_or_404(access.visible_agents(request.user), slug=slug)
    error: ApplicationError | None = None
    form = {"message": "", "thread_id": ""}
    if request.method == "POST":
        form = {
            "message": request.POST.get("message", "").strip(),
            "thread_id": request.POST.get("thread_id", "").strip(),
        }
        try:
            started = run_start(
                agent=agent, user=request.user, message=form["message"], thread_id=form["thread_id"] or None
            )
        except ApplicationError as exc:
            error = exc
        else:
            run = started.run
            count = run.items.count()
            if count:
                messages.success(request, f"The agent paused with {count} interrupt(s) to decide.")
            else:
                messages.info(request, f"The run ended: {run.get_outcome_display().lower()}.")
            return redirect(run.get_absolute_url())
    runs = (
        Run.objects.filter(agent=agent)
        .select_related("thread")
        .annotate(open_items=Count("items", filter=Q(items__status=InboxItem.Status.OPEN)))
        .order_by("-created_at", "-pk")[:20]
    )
    context = {
        "agent": agent,
        "runs": runs,
        "form": form,
        "error": error,
        "scenarios": SCENARIOS.items() if agent.slug == "demo" else (),
        "conformance": agent_report(agent),
    }
    return render(request, "agents/detail.html", context, status=error.status if error else 200)
