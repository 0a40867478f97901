"""Starting a run on an agent from the inbox (the inbox as AG-UI client): it POSTs the user's message, reads the
reply stream and ingests its outcome like a run posted to ``/api/v1/runs``.

No request waits on the agent: the API (``POST /api/v1/agents/<slug>/runs``, 202) and the agent's page call
``run_start_queue`` (the checks that need no agent, the starts in flight bounded, a ``RunStart`` stored); a worker
finishes it with ``run_start_finish``, holding no database connection while the agent answers."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from ag_ui.core import PROTOCOL_VERSION, RunAgentInput, UserMessage
from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils import timezone

from agents.client import AgentCallError, run_agent
from agents.models import Agent
from inbox import limits
from inbox.agui.reader import IngestError, read_run
from inbox.audit.record import Actor
from inbox.conformance.recorder import record_call_error, record_cut, record_ingest_error
from inbox.core.db import release_connections
from inbox.core.errors import ApplicationError
from inbox.core.queue import send_on_commit
from inbox.ingest.services import run_ingest
from inbox.models import InboxItem, Run, RunStart, Thread


@dataclass
class StartedRun:
    run: Run
    created: bool


def build_start_input(*, agent: Agent, thread_id: str, message: str) -> dict[str, Any]:
    """A RunAgentInput carrying the user's message after the thread's last known conversation and state, declaring
    the AG-UI version the inbox speaks (``protocolVersion``, see ``inbox.resumes.input``)."""
    last = (
        Run.objects.filter(thread__agent=agent, thread__thread_id=thread_id, messages_snapshot__isnull=False)
        .order_by("-created_at", "-pk")
        .first()
    )
    history = list(last.messages_snapshot or []) if last else []
    state = last.state_snapshot if last and last.state_snapshot is not None else {}
    user_message = UserMessage(id=f"user-{uuid.uuid4().hex[:16]}", role="user", content=message)
    run_input = RunAgentInput.model_validate(
        {
            "threadId": thread_id,
            "runId": f"run-{uuid.uuid4().hex}",
            "protocolVersion": PROTOCOL_VERSION,
            "state": state,
            "messages": history,
            "tools": [],
            "context": [],
            "forwardedProps": {},
        }
    )
    run_input.messages.append(user_message)
    return run_input.model_dump(mode="json", by_alias=True)


def check_thread_idle(*, agent: Agent, thread_id: str) -> None:
    """Rule 4 from the client's side: never start a run on a thread with open interrupts (ag-ui-langgraph
    would silently re-emit them rather than answer RUN_ERROR)."""
    thread = Thread.objects.filter(agent=agent, thread_id=thread_id).first()
    if thread is None:
        return
    open_items = list(thread.items.filter(status=InboxItem.Status.OPEN).values("pk", "interrupt_id", "run__run_id"))
    if open_items:
        raise ApplicationError(
            409,
            "thread_has_open_interrupts",
            f"Thread {thread_id!r} has {len(open_items)} open interrupt(s); decide them before starting a new run.",
            openItems=[
                {"id": i["pk"], "interruptId": i["interrupt_id"], "runId": i["run__run_id"]} for i in open_items
            ],
        )


def check_start_input(message: str, thread_id: str | None) -> None:
    if thread_id is not None and len(thread_id) > limits.MAX_ID_LENGTH:
        raise ApplicationError(
            400,
            "invalid_thread",
            f"A threadId is at most {limits.MAX_ID_LENGTH} characters.",
            errors=[{"path": "threadId", "message": f"must be at most {limits.MAX_ID_LENGTH} characters"}],
        )
    if not message.strip():
        raise ApplicationError(
            400,
            "invalid_message",
            "Write a message for the agent.",
            errors=[{"path": "message", "message": "must not be empty"}],
        )
    if len(message) > limits.MAX_START_MESSAGE:
        raise ApplicationError(
            400,
            "invalid_message",
            f"The message is at most {limits.MAX_START_MESSAGE} characters ({len(message)} given).",
            errors=[{"path": "message", "message": f"must be at most {limits.MAX_START_MESSAGE} characters"}],
        )


def _prepare(*, agent: Agent, message: str, thread_id: str | None) -> tuple[str, dict[str, Any]]:
    """The checks that need no agent, and the RunAgentInput to send: (thread id, input)."""
    check_start_input(message, thread_id)
    if not agent.enabled:
        raise ApplicationError(409, "agent_disabled", f"Agent {agent.slug!r} is disabled.")
    if not agent.endpoint_url:
        raise ApplicationError(409, "no_endpoint", f"Agent {agent.slug!r} has no AG-UI endpoint URL to start runs on.")
    thread_id = thread_id or f"thread-{uuid.uuid4().hex[:16]}"
    check_thread_idle(agent=agent, thread_id=thread_id)
    return thread_id, build_start_input(agent=agent, thread_id=thread_id, message=message)


def run_start(*, agent: Agent, user: Any, message: str, thread_id: str | None = None) -> StartedRun:
    """POST the message to the agent's endpoint, read its reply and ingest the run (source=started), in the
    caller's thread: for commands and tests, never a request (those queue: ``run_start_queue``). Refusals are
    ``ApplicationError`` (an IngestError when the run cannot be stored)."""
    thread_id, run_input = _prepare(agent=agent, message=message, thread_id=thread_id)
    return _send(agent=agent, user=user, thread_id=thread_id, run_input=run_input)


def run_start_queue(*, agent: Agent, user: Any, message: str, thread_id: str | None = None) -> RunStart:
    """Check the start, store it and queue its send to the agent (on commit). Refusals are ``ApplicationError``."""
    thread_id, run_input = _prepare(agent=agent, message=message, thread_id=thread_id)
    with transaction.atomic():
        check_in_flight(agent=agent, user=user)
        start = RunStart.objects.create(agent=agent, user=user, thread_id=thread_id, run_input=run_input)

        def unqueued() -> None:
            RunStart.objects.filter(pk=start.pk, state=RunStart.State.PENDING).update(
                state=RunStart.State.FAILED,
                error_status=503,
                error_code="not_queued",
                error="The inbox could not queue the start (its queue is unreachable). Try again shortly.",
            )

        send_on_commit("inbox.tasks.start_run", [start.pk], when_unqueued=unqueued)
    return start


def start_give_up_seconds() -> float:
    """How long a start may ask its agent: the connect timeout, the stream deadline, and a minute for its queue."""
    return settings.INBOX_AGENT_STREAM_DEADLINE + settings.INBOX_AGENT_CONNECT_TIMEOUT + 60


def in_flight(**scope: Any) -> int:
    """Starts of ``scope`` (``user=…`` or ``agent=…``) still asking their agent and not yet given up."""
    since = timezone.now() - timedelta(seconds=start_give_up_seconds())
    return RunStart.objects.filter(state=RunStart.State.PENDING, created_at__gt=since, **scope).count()


def check_in_flight(*, agent: Agent, user: Any) -> None:
    """429 when the person, or the agent started on, already has its limit of starts in flight. Locks the agent's
    and the person's rows (in that order) until the caller's transaction ends, so two starts count one another."""
    list(Agent.objects.select_for_update().filter(pk=agent.pk).values_list("pk", flat=True))
    list(get_user_model().objects.select_for_update().filter(pk=user.pk).values_list("pk", flat=True))
    limits_of = (
        ("user", settings.INBOX_STARTS_IN_FLIGHT_PER_USER, {"user": user}, "You have"),
        ("agent", settings.INBOX_STARTS_IN_FLIGHT_PER_AGENT, {"agent": agent}, f"Agent {agent.slug!r} has"),
    )
    for scope, limit, where, who in limits_of:
        count = in_flight(**where)
        if count >= limit:
            retry_after = settings.INBOX_START_RETRY_AFTER_SECONDS
            raise ApplicationError(
                429,
                "too_many_starts",
                f"{who} {count} run start(s) still waiting for an agent's answer; the limit is {limit}. "
                f"Try again in {retry_after} s.",
                limit=limit,
                limitName=f"INBOX_STARTS_IN_FLIGHT_PER_{scope.upper()}",
                scope=scope,
                inFlight=count,
                retryAfter=retry_after,
            )


def run_start_finish(start_id: int) -> str:
    """The worker's part: send a pending start to its agent and record the outcome. A start that is no longer
    pending is left alone."""
    start = RunStart.objects.select_related("agent", "user").filter(pk=start_id).first()
    if start is None or start.state != RunStart.State.PENDING:
        return "gone"
    if start_overdue(start):  # its message waited longer than a start may take: it was already reported lost
        RunStart.objects.filter(pk=start.pk, state=RunStart.State.PENDING).update(
            state=RunStart.State.FAILED, error_status=504, error_code="start_lost", error=START_LOST
        )
        return "failed"
    try:
        started = _send(agent=start.agent, user=start.user, thread_id=start.thread_id, run_input=start.run_input)
    except ApplicationError as error:
        RunStart.objects.filter(pk=start.pk).update(
            state=RunStart.State.FAILED,
            error_status=error.status,
            error_code=error.code,
            error=error.message,
            error_field=(error.field or "")[:255],
        )
        return "failed"
    RunStart.objects.filter(pk=start.pk).update(state=RunStart.State.DONE, run=started.run)
    return "done"


START_LOST = "The agent did not answer in time; the start was given up. Try again."


def start_overdue(start: RunStart) -> bool:
    """A pending start older than any agent reply may take lost its worker or its queue message."""
    age = (timezone.now() - start.created_at).total_seconds()
    return start.state == RunStart.State.PENDING and age > start_give_up_seconds()


def _send(*, agent: Agent, user: Any, thread_id: str, run_input: dict[str, Any]) -> StartedRun:
    where = f"reply to a run started from the inbox ({run_input['runId']})"
    release_connections()  # nothing of the database is held while the agent answers
    try:
        raw_events = run_agent(agent=agent, run_input=run_input)
    except AgentCallError as error:
        record_call_error(agent_id=agent.pk, error=error, run_id=run_input["runId"], where=where)
        raise ApplicationError(
            502, "agent_unreachable" if error.retryable else "agent_bad_reply", error.message
        ) from None
    try:
        record = read_run(raw_events, "events", allow_error=True)
    except IngestError as error:  # parsing only: every error here is the agent's reply breaking the contract
        record_ingest_error(agent_id=agent.pk, error=error, raw_events=raw_events, where=where)
        raise ApplicationError(
            502,
            "agent_bad_reply",
            f"The agent's reply breaks the AG-UI contract: {error.message}",
            field=error.field or "",
        ) from None
    record.thread_id = record.thread_id or thread_id
    record.run_id = record.run_id or run_input["runId"]
    if record.thread_id != thread_id:
        message = f"The agent answered on thread {record.thread_id!r}, not {thread_id!r}."
        record_cut(agent_id=agent.pk, variant="other_thread", message=message, run_id=record.run_id, where=where)
        raise ApplicationError(
            502, "agent_bad_reply", f"The agent answered on thread {record.thread_id!r}, not {thread_id!r}."
        )
    # An IngestError here (409: the thread gained open interrupts meanwhile) is the caller's answer as is.
    try:
        result = run_ingest(
            agent=agent, record=record, source=Run.Source.STARTED, actor=Actor.for_user(user), run_input=run_input
        )
    except IngestError as error:
        if error.code != "thread_has_open_interrupts":  # the inbox's own race, not the agent's doing
            record_ingest_error(agent_id=agent.pk, error=error, raw_events=raw_events, where=where)
        raise
    return StartedRun(run=result.run, created=result.created)
