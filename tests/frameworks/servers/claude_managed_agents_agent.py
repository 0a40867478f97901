"""A Claude Managed Agents session served by ``ag-ui-claude-managed-agents``, against a fake Managed Agents API.

Managed Agents run on Anthropic's servers: the agent loop, its tools and their permission policy live there,
and nothing of it runs here. So the adapter is given ``FakeManagedAgents``, an object shaped like
``anthropic.AsyncAnthropic`` at the calls the adapter makes (``beta.sessions.create``,
``beta.sessions.events.send`` / ``stream`` / ``list``), whose events are the SDK's own typed models
(``BetaManagedAgentsStreamSessionEvents``). It plays the hosted session deterministically:

- "Email …": the agent calls the MCP tool ``send_email`` of the server ``mail``, whose permission is "ask": the
  session goes idle with ``requires_action``, and the adapter ends the run with an interrupt (``reason:
  tool-approval``, ``toolCallId`` = the tool-use event's id, schema ``{"type": "string", "enum": ["allow",
  "deny"]}``, the call in ``metadata``).
- "Run …": the same with the built-in ``bash`` tool (``agent.tool_use``).
- ``user.tool_confirmation`` ``allow`` runs the tool (``RECORD["sent"]``), posts its result and an
  ``agent.message``, and ends the turn; ``deny`` runs nothing and says so.

Run: ``.venv/frameworks/claude-managed-agents/bin/python -m tests.frameworks.servers.claude_managed_agents_agent
--port N``. The snippet in docs/agents/claude-managed-agents.md is this file's block between the ``docs`` markers.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

from tests.frameworks.servers.common import RECORD, app_with, email_args, record_sent, serve  # isort: skip

from ag_ui_claude_managed_agents import ManagedAgentsAgent, add_managed_agents_fastapi_endpoint
from anthropic.types.beta.sessions import BetaManagedAgentsStreamSessionEvents
from fastapi import FastAPI
from pydantic import TypeAdapter
from starlette.routing import Mount

SESSION_EVENT = TypeAdapter(BetaManagedAgentsStreamSessionEvents)
RECORD["commands"] = []  # bash commands the session ran
RECORD["confirmations"] = []  # user.tool_confirmation events the session received


class _Stream:
    """``client.beta.sessions.events.stream(...)``: the session's events from the moment it is opened."""

    def __init__(self, session: _Session) -> None:
        self.queue: asyncio.Queue[Any] = asyncio.Queue()
        self.session = session
        session.streams.append(self)

    def __aiter__(self) -> AsyncIterator[Any]:
        return self._events()

    async def _events(self) -> AsyncIterator[Any]:
        while True:
            yield await self.queue.get()

    async def close(self) -> None:
        if self in self.session.streams:
            self.session.streams.remove(self)


class _Session:
    def __init__(self, session_id: str) -> None:
        self.id = session_id
        self.history: list[Any] = []
        self.streams: list[_Stream] = []
        self.asked: dict[str, Any] = {}  # tool-use events waiting on a confirmation


class _Events:
    """``client.beta.sessions.events``: the hosted agent loop, scripted."""

    def __init__(self, sessions: dict[str, _Session]) -> None:
        self.sessions = sessions
        self.ids = itertools.count(1)

    def _emit(self, session: _Session, **event: Any) -> Any:
        typed = SESSION_EVENT.validate_python(
            {"id": f"sevt_{next(self.ids):04d}", "processed_at": datetime.now(UTC)} | event
        )
        session.history.append(typed)
        for stream in session.streams:
            stream.queue.put_nowait(typed)
        return typed

    async def stream(self, session_id: str, **_: Any) -> _Stream:
        return _Stream(self.sessions[session_id])

    async def list(self, session_id: str, **_: Any) -> list[Any]:
        return list(self.sessions[session_id].history)

    async def send(self, session_id: str, *, events: list[dict[str, Any]], **_: Any) -> None:
        session = self.sessions[session_id]
        for event in events:
            kind = event["type"]
            if kind == "user.message":
                self._emit(session, type="user.message", content=event["content"])
                self._emit(session, type="session.status_running")
                self._propose(session, " ".join(block.get("text", "") for block in event["content"]))
            elif kind == "user.tool_confirmation":
                RECORD["confirmations"].append({"tool_use_id": event["tool_use_id"], "result": event["result"]})
                self._emit(session, **event)
                self._confirmed(session, session.asked.pop(event["tool_use_id"]), event["result"])
            elif kind == "user.interrupt":
                session.asked.clear()
                self._emit(session, type="session.status_idle", stop_reason={"type": "end_turn"})

    def _propose(self, session: _Session, text: str) -> None:
        if text.lower().startswith("run "):
            call = self._emit(
                session, type="agent.tool_use", name="bash", input={"command": text[4:]}, evaluated_permission="ask"
            )
        else:
            call = self._emit(
                session,
                type="agent.mcp_tool_use",
                mcp_server_name="mail",
                name="send_email",
                input=email_args(text),
                evaluated_permission="ask",
            )
        session.asked[call.id] = call
        self._emit(session, type="session.status_idle", stop_reason={"type": "requires_action", "event_ids": [call.id]})

    def _confirmed(self, session: _Session, call: Any, result: str) -> None:
        self._emit(session, type="session.status_running")
        if result == "allow" and call.type == "agent.mcp_tool_use":
            text = record_sent(call.id, call.input)
            self._emit(
                session, type="agent.mcp_tool_result", mcp_tool_use_id=call.id, content=[{"type": "text", "text": text}]
            )
            self._emit(session, type="agent.message", content=[{"type": "text", "text": "Sent."}])
        elif result == "allow":
            RECORD["commands"].append({"toolCallId": call.id, "command": call.input["command"]})
            self._emit(session, type="agent.tool_result", tool_use_id=call.id, content=[{"type": "text", "text": "ok"}])
            self._emit(session, type="agent.message", content=[{"type": "text", "text": "Ran it."}])
        else:
            self._emit(session, type="agent.message", content=[{"type": "text", "text": "Not done: you said no."}])
        self._emit(session, type="session.status_idle", stop_reason={"type": "end_turn"})


class _Sessions:
    def __init__(self) -> None:
        self.by_id: dict[str, _Session] = {}
        self.events = _Events(self.by_id)

    async def create(self, *, agent: dict[str, Any], environment_id: str, **_: Any) -> _Session:
        session = _Session(f"sesn_{len(self.by_id) + 1:04d}")
        self.by_id[session.id] = session
        return session


class _Beta:
    def __init__(self) -> None:
        self.sessions = _Sessions()


class FakeManagedAgents:
    """Shaped like ``anthropic.AsyncAnthropic`` where the adapter touches it: ``client.beta.sessions``."""

    def __init__(self) -> None:
        self.beta = _Beta()


# --- docs/agents/claude-managed-agents.md ---
agent = ManagedAgentsAgent(
    managed_agent_id="agent_mailer",
    environment_id="env_mailer",
    client=FakeManagedAgents(),  # your AsyncAnthropic(); by default AsyncAnthropic() reads ANTHROPIC_API_KEY
)
api = FastAPI()
add_managed_agents_fastapi_endpoint(app=api, agent=agent, path="/")
# --- end of snippet ---

app = app_with([Mount("/", app=api)])

if __name__ == "__main__":
    serve(app)
