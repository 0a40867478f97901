"""A Claude Agent SDK agent served by ``ag-ui-claude-sdk``, against a fake Claude Code session.

The Claude Agent SDK drives the Claude Code CLI (a Node program, the model behind it on Anthropic's servers);
neither runs here. So the SDK's client is replaced where the adapter reaches it: ``FakeClaudeCode`` is shaped
like ``claude_agent_sdk.ClaudeSDKClient`` at the calls the adapter makes (``connect``, ``query``,
``receive_response``, ``interrupt``, ``disconnect``), and ``get_session_info`` / ``get_session_messages`` read its
sessions as the SDK reads the CLI's transcripts. Its messages are the SDK's own types (``AssistantMessage``,
``ToolUseBlock``, ``ResultMessage`` with ``DeferredToolUse``, ...), and it runs the ``PreToolUse`` hooks the
adapter registers exactly where the CLI runs them, honouring their ``permissionDecision``:

- "Email …": the model calls the MCP tool ``mcp__mail__send_email``; the adapter was told to defer it
  (``defer_tools``), so its hook answers ``defer``: the turn stops with ``stop_reason: tool_deferred`` and the
  adapter ends the run with an interrupt (``reason: tool_approval``, id = ``toolCallId`` = the tool use's id, no
  schema, ``metadata.source: claude-sdk-deferred``).
- The resume's ``{"behavior": "allow"}`` (with ``updatedInput``, the arguments it runs with) runs the tool
  (``RECORD["sent"]``) and posts its result; ``{"behavior": "deny", "message": …}`` runs nothing and the model is
  told why. The adapter refuses any other payload (``RecoveryRun``: "Approval payload requires behavior").

Run: ``.venv/frameworks/claude-sdk/bin/python -m tests.frameworks.servers.claude_sdk_agent --port N``. The
snippet in docs/agents/claude-sdk.md is this file's block between the ``docs`` markers.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import AsyncIterator
from typing import Any

from tests.frameworks.servers.common import RECORD, app_with, email_args, record_sent, serve  # isort: skip

import claude_agent_sdk
from ag_ui_claude_sdk import ClaudeAgentAdapter, add_claude_fastapi_endpoint
from claude_agent_sdk import (
    AssistantMessage,
    ResultMessage,
    SDKSessionInfo,
    SessionMessage,
    SystemMessage,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    UserMessage,
)
from claude_agent_sdk.types import DeferredToolUse
from fastapi import FastAPI
from starlette.routing import Mount

MODEL = "claude-fake-1"
RECORD["hooks"] = []  # every PreToolUse decision the session received: {"tool_use_id", "decision"}


class _Session:
    def __init__(self) -> None:
        self.id = str(uuid.uuid4())
        self.transcript: list[SessionMessage] = []
        self.pending: ToolUseBlock | None = None  # the call the last turn deferred

    def log(self, role: str, content: list[dict[str, Any]]) -> None:
        self.transcript.append(
            SessionMessage(
                type=role,
                uuid=str(uuid.uuid4()),
                session_id=self.id,
                message={"role": role, "content": content},
            )
        )


SESSIONS: dict[str, _Session] = {}


class FakeClaudeCode:
    """``ClaudeSDKClient(options=…)`` where the adapter uses it; one per SDK process (the adapter starts one per
    run it recovers, with ``options.resume`` naming the session)."""

    def __init__(self, options: Any = None, transport: Any = None) -> None:
        self.options = options
        self.session: _Session | None = None
        self.prompt: Any = None

    async def connect(self, prompt: Any = None) -> None:
        resume = getattr(self.options, "resume", None)
        self.session = SESSIONS[resume] if resume else _Session()
        SESSIONS[self.session.id] = self.session

    async def query(self, prompt: Any, session_id: str = "default") -> None:
        if not isinstance(prompt, str):  # a structured prompt: its text blocks
            parts = [block async for block in prompt]
            prompt = " ".join(str(part) for part in parts)
        self.prompt = prompt

    async def interrupt(self) -> None:
        pass

    async def disconnect(self) -> None:
        pass

    async def receive_response(self) -> AsyncIterator[Any]:
        session = self.session
        assert session is not None
        yield SystemMessage(subtype="init", data={"session_id": session.id, "model": MODEL})
        prompt, self.prompt = self.prompt, None
        if prompt is None and session.pending is not None:
            # A resumed session replays the deferred call: its hooks decide it now.
            async for message in self._call(session, session.pending):
                yield message
            return
        session.log("user", [{"type": "text", "text": prompt or ""}])
        call = ToolUseBlock(id=f"toolu_{uuid.uuid4().hex[:20]}", name="mcp__mail__send_email", input=email_args(prompt))
        session.log("assistant", [{"type": "tool_use", "id": call.id, "name": call.name, "input": call.input}])
        yield AssistantMessage(content=[call], model=MODEL, session_id=session.id, stop_reason="tool_use")
        async for message in self._call(session, call):
            yield message

    async def _pre_tool_use(self, session: _Session, call: ToolUseBlock) -> dict[str, Any]:
        """Run the PreToolUse hooks as the CLI does; the last decision given wins."""
        decision: dict[str, Any] = {}
        hook_input = {
            "hook_event_name": "PreToolUse",
            "session_id": session.id,
            "transcript_path": "",
            "cwd": "",
            "tool_name": call.name,
            "tool_input": call.input,
            "tool_use_id": call.id,
        }
        for matcher in (getattr(self.options, "hooks", None) or {}).get("PreToolUse", []):
            for hook in matcher.hooks:
                output = await hook(hook_input, call.id, {"signal": None})
                specific = (output or {}).get("hookSpecificOutput") or {}
                if "permissionDecision" in specific:
                    decision = specific
        RECORD["hooks"].append({"tool_use_id": call.id, "decision": decision.get("permissionDecision")})
        return decision

    async def _call(self, session: _Session, call: ToolUseBlock) -> AsyncIterator[Any]:
        decision = await self._pre_tool_use(session, call)
        verdict = decision.get("permissionDecision")
        if verdict == "defer":
            session.pending = call
            yield self._result(
                session, stop_reason="tool_deferred", deferred=DeferredToolUse(call.id, call.name, call.input)
            )
            return
        session.pending = None
        if verdict == "deny":
            text, is_error = f"Permission denied: {decision.get('permissionDecisionReason') or 'no reason'}", True
        else:
            text, is_error = record_sent(call.id, decision.get("updatedInput") or call.input), False
        session.log("user", [{"type": "tool_result", "tool_use_id": call.id, "content": text, "is_error": is_error}])
        yield UserMessage(content=[ToolResultBlock(tool_use_id=call.id, content=text, is_error=is_error)])
        answer = "Not sent: you said no." if is_error else "Sent."
        session.log("assistant", [{"type": "text", "text": answer}])
        yield AssistantMessage(content=[TextBlock(answer)], model=MODEL, session_id=session.id, stop_reason="end_turn")
        yield self._result(session, stop_reason="end_turn", result=answer)

    def _result(self, session: _Session, *, stop_reason: str, deferred: Any = None, result: str = "") -> ResultMessage:
        return ResultMessage(
            subtype="success",
            duration_ms=1,
            duration_api_ms=1,
            is_error=False,
            num_turns=1,
            session_id=session.id,
            stop_reason=stop_reason,
            result=result or None,
            deferred_tool_use=deferred,
        )


def get_session_info(session_id: str, directory: str | None = None) -> SDKSessionInfo | None:
    if session_id not in SESSIONS:
        return None
    return SDKSessionInfo(session_id=session_id, summary="", last_modified=int(time.time() * 1000))


def get_session_messages(session_id: str, directory: str | None = None, **_: Any) -> list[SessionMessage]:
    return list(SESSIONS[session_id].transcript) if session_id in SESSIONS else []


# The SDK's boundary with the CLI, replaced (the adapter imports these from claude_agent_sdk when it runs).
claude_agent_sdk.ClaudeSDKClient = FakeClaudeCode  # type: ignore[misc]
claude_agent_sdk.get_session_info = get_session_info  # type: ignore[assignment]
claude_agent_sdk.get_session_messages = get_session_messages  # type: ignore[assignment]

# --- docs/agents/claude-sdk.md ---
adapter = ClaudeAgentAdapter(
    name="mailer",
    options={"mcp_servers": {"mail": {"type": "stdio", "command": "mail-mcp"}}},
    # Ask a person before these run: the run ends with a tool_approval interrupt.
    defer_tools=("mcp__mail__send_email",),
)
api = FastAPI()
add_claude_fastapi_endpoint(app=api, adapter=adapter, path="/")
# --- end of snippet ---

app = app_with([Mount("/", app=api)])

if __name__ == "__main__":
    serve(app)
