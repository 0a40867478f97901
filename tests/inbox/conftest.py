"""Shared by the tests of tests/inbox: run bodies (``interrupt_run``, ``quarterly_filing``, an ``XSS`` string),
and for the expiry, guard and reminder tests a frozen clock and runs whose interrupts expire a given number of
minutes after it, posted by an agent (``post_run``) or stored with factories (``stored_run``)."""

from __future__ import annotations

import copy
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest
import time_machine
from django.utils import timezone

from inbox.models import Run
from tests.conftest import spec_example
from tests.factories import interrupted_run

NOW = datetime(2026, 12, 1, 10, 0, tzinfo=UTC)

XSS = '<script>alert("x")</script><img src=x onerror=alert(1)>'


def interrupt_run(thread: str, run: str, interrupts: list[dict], events: list[dict] | None = None) -> dict:
    finished = {
        "type": "RUN_FINISHED",
        "threadId": thread,
        "runId": run,
        "outcome": {"type": "interrupt", "interrupts": interrupts},
    }
    if events is None:
        return finished
    return {"events": [{"type": "RUN_STARTED", "threadId": thread, "runId": run}, *events, finished]}


def quarterly_filing() -> dict:
    body = copy.deepcopy(spec_example("non_tool_input_request"))
    body["outcome"]["interrupts"][0]["expiresAt"] = (timezone.now() + timedelta(hours=2)).isoformat()
    return body


def interrupted(thread: str, run: str, *expires_in_minutes: float | None, since: datetime = NOW) -> dict:
    """A RUN_FINISHED with one confirmation interrupt per given lifetime (None: the agent's default TTL), counted
    from ``since``: the frozen clock's NOW, or the real clock's now for a test that does not freeze it."""
    interrupts = []
    for index, minutes in enumerate(expires_in_minutes, start=1):
        interrupt = {"id": f"{run}-i{index}", "reason": "confirmation", "message": f"Proceed with step {index}?"}
        if minutes is not None:
            interrupt["expiresAt"] = (since + timedelta(minutes=minutes)).isoformat().replace("+00:00", "Z")
        interrupts.append(interrupt)
    return {
        "type": "RUN_FINISHED",
        "threadId": thread,
        "runId": run,
        "outcome": {"type": "interrupt", "interrupts": interrupts},
    }


def run_poster(agent, ingest) -> Callable[..., Run]:
    """``post(thread, run, *minutes)``: the agent posts an interrupted run; returns it."""

    def post(thread: str, run: str, *expires_in_minutes: float | None) -> Run:
        response = ingest(agent, interrupted(thread, run, *expires_in_minutes))
        assert response.status_code == 201, response.content
        return Run.objects.get(pk=response.json()["id"])

    return post


@pytest.fixture
def clock():
    with time_machine.travel(NOW, tick=False) as traveller:
        yield traveller


@pytest.fixture
def post_run(agent, ingest, clock):
    return run_poster(agent, ingest)


@pytest.fixture
def stored_run(agent, clock) -> Callable[..., Run]:
    """``stored_run(thread, run, *minutes)``: what ``post_run`` stores, built with factories (no HTTP), for
    tests where ingest is not the point."""

    def store(thread: str, run: str, *expires_in_minutes: float | None) -> Run:
        return interrupted_run(agent.agent, thread, run, *expires_in_minutes, now=NOW)

    return store
