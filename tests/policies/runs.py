"""Runs of tool calls as an agent posts them, for the policy and decision-link tests."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

from django.utils import timezone

from inbox.models import Run


def iso(moment) -> str:
    return moment.isoformat().replace("+00:00", "Z")


def tool_run(thread: str, run: str, *calls: tuple[str, dict], **interrupt_fields: Any) -> list[dict]:
    """A stream proposing each (tool, args) and interrupting for each: ids ``<run>-i<n>``, ``<run>-tc<n>``."""
    events: list[dict] = [{"type": "RUN_STARTED", "threadId": thread, "runId": run}]
    interrupts = []
    for index, (tool, args) in enumerate(calls, start=1):
        call = f"{run}-tc{index}"
        events += [
            {"type": "TOOL_CALL_START", "toolCallId": call, "toolCallName": tool},
            {"type": "TOOL_CALL_ARGS", "toolCallId": call, "delta": json.dumps(args)},
            {"type": "TOOL_CALL_END", "toolCallId": call},
        ]
        interrupt = {
            "id": f"{run}-i{index}",
            "reason": "tool_call",
            "toolCallId": call,
            "message": f"{tool}?",
            "expiresAt": iso(timezone.now() + timedelta(hours=1)),
        }
        interrupt.update(interrupt_fields)
        interrupts.append(interrupt)
    events.append(
        {
            "type": "RUN_FINISHED",
            "threadId": thread,
            "runId": run,
            "outcome": {"type": "interrupt", "interrupts": interrupts},
        }
    )
    return events


def post_tool_run(ingest, agent, thread: str, run: str, *calls: tuple[str, dict], **fields: Any) -> Run:
    response = ingest(agent, tool_run(thread, run, *calls, **fields))
    assert response.status_code == 201, response.content
    return Run.objects.get(pk=response.json()["id"])
