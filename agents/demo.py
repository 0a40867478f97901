"""A deterministic demo AG-UI agent (no LLM), as a plain ASGI app: ``agents.demo:app``.

``python -m agents.demo --port 8001`` runs it; ``make run`` starts it and registers it as the agent ``demo``.
The last user message picks a scenario (``email``, ``parallel``, ``filing``, ``chain``; see ``SCENARIOS``), and
it answers resumes as the AG-UI interrupts spec says. What it does, and its controls for tests (``/record``,
``/reset``, ``/pace``, ``--state-file``): docs/agents/README.md."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import pickle
import re
import time
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import jsonschema
from ag_ui.core import (
    PROTOCOL_VERSION,
    AssistantMessage,
    BaseEvent,
    FunctionCall,
    Interrupt,
    MessagesSnapshotEvent,
    RunAgentInput,
    RunErrorEvent,
    RunFinishedEvent,
    RunFinishedInterruptOutcome,
    RunFinishedSuccessOutcome,
    RunStartedEvent,
    StateSnapshotEvent,
    TextMessageContentEvent,
    TextMessageEndEvent,
    TextMessageStartEvent,
    ToolCall,
    ToolCallArgsEvent,
    ToolCallEndEvent,
    ToolCallResultEvent,
    ToolCallStartEvent,
    ToolMessage,
)
from ag_ui.encoder import EventEncoder
from pydantic import ValidationError

EMAIL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "approved": {"type": "boolean"},
        "editedArgs": {
            "type": "object",
            "description": "Full replacement of the tool args. Not merged.",
            "properties": {"to": {"type": "string"}, "subject": {"type": "string"}, "body": {"type": "string"}},
            "required": ["to", "subject", "body"],
        },
    },
    "required": ["approved"],
}
APPROVE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"approved": {"type": "boolean"}},
    "required": ["approved"],
}
FILING_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "quarter": {"type": "string", "enum": ["Q1", "Q2", "Q3", "Q4"]},
        "year": {"type": "integer", "minimum": 2000},
        "revenue": {"type": "number"},
    },
    "required": ["quarter", "year", "revenue"],
}
SCENARIOS = {
    "email": "one email to approve, with edits allowed",
    "parallel": "three emails in one run, each approved, denied or cancelled on its own",
    "filing": "the quarterly filing form (input_required)",
    "chain": "an invoice to approve, then a confirmation to send it: two interrupts in a row",
}
EMAIL_RE = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")


def _id(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:12]}"


def _iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")


def _started(thread_id: str, run_id: str) -> RunStartedEvent:
    """RUN_STARTED declaring the AG-UI version this agent speaks (1.0: a producer of it must declare it)."""
    return RunStartedEvent(thread_id=thread_id, run_id=run_id, protocol_version=PROTOCOL_VERSION)


class DemoAgent:
    """The agent's brain: one ``RunAgentInput`` in, a list of SDK events out."""

    def __init__(self, state_file: str = "") -> None:
        self.state_file = state_file
        self.threads: dict[str, dict[str, Any]] = {}
        self.record: dict[str, list] = {"requests": [], "runs": [], "executed": []}
        if state_file and os.path.exists(state_file):
            with open(state_file, "rb") as handle:
                self.threads, self.record = pickle.load(handle)

    def reset(self) -> None:
        self.threads = {}
        self.record = {"requests": [], "runs": [], "executed": []}
        self.save()

    def save(self) -> None:
        """With a state file, the agent survives restarts like a checkpointer would (it wrote the file itself)."""
        if not self.state_file:
            return
        temporary = f"{self.state_file}.tmp"
        with open(temporary, "wb") as handle:
            pickle.dump((self.threads, self.record), handle)
        os.replace(temporary, self.state_file)

    # --- entry point -----------------------------------------------------------------------------

    def handle(self, body: Any) -> list[BaseEvent]:
        try:
            return self._handle(body)
        finally:
            self.save()

    def _handle(self, body: Any) -> list[BaseEvent]:
        received = time.time()
        try:
            run_input = RunAgentInput.model_validate(body)
        except ValidationError as exc:
            thread_id = body.get("threadId", "") if isinstance(body, dict) else ""
            run_id = body.get("runId", "") if isinstance(body, dict) else ""
            self.record["requests"].append(
                {"threadId": thread_id, "runId": run_id, "receivedAt": received, "invalid": True}
            )
            return self._error(thread_id, run_id, f"Invalid RunAgentInput: {exc.errors()[0]['msg']}", "invalid_input")
        self.record["requests"].append(
            {
                "threadId": run_input.thread_id,
                "runId": run_input.run_id,
                "receivedAt": received,
                "resume": [entry.model_dump(mode="json", by_alias=True) for entry in run_input.resume or []],
                "input": run_input.model_dump(mode="json", by_alias=True),
            }
        )
        if run_input.resume:
            return self._resume(run_input)
        return self._start(run_input)

    # --- new input -------------------------------------------------------------------------------

    def _start(self, run_input: RunAgentInput) -> list[BaseEvent]:
        thread_id, run_id = run_input.thread_id, run_input.run_id
        thread = self.threads.setdefault(thread_id, {"open": {}, "messages": [], "completed": {}})
        if thread["open"]:
            ids = ", ".join(thread["open"])
            return self._error(
                thread_id,
                run_id,
                f"Thread {thread_id} has open interrupts ({ids}): new input must carry a resume addressing them.",
                "pending_interrupts",
            )
        text = ""
        for message in reversed(run_input.messages):
            if message.role == "user":
                text = message.content if isinstance(message.content, str) else ""
                thread["messages"].append(message)
                break
        ttl = None
        props = run_input.forwarded_props if isinstance(run_input.forwarded_props, dict) else {}
        if isinstance(props.get("ttlSeconds"), int | float):
            ttl = float(props["ttlSeconds"])
        lowered = text.lower()
        scenario = next((name for name in ("parallel", "filing", "chain", "email") if name in lowered), None)
        if scenario is None and "quarter" in lowered:
            scenario = "filing"
        self.record["runs"].append({"threadId": thread_id, "runId": run_id, "kind": "start", "scenario": scenario})
        if scenario is None:
            listing = "; ".join(f"'{name}': {what}" for name, what in SCENARIOS.items())
            return self._success(
                thread, thread_id, run_id, [], f"Hello! Say one of these to try a scenario — {listing}."
            )
        thread["scenario"] = scenario
        if scenario == "email":
            to = (EMAIL_RE.findall(text) or ["bob@example.com"])[0]
            calls = [("sendEmail", {"to": to, "subject": "Lunch", "body": "Are we still on for noon?"})]
            return self._propose(thread, thread_id, run_id, calls, "I'd like to send this email.", ttl)
        if scenario == "parallel":
            people = EMAIL_RE.findall(text) or ["alice@example.com", "bob@example.com", "carol@example.com"]
            calls = [("sendEmail", {"to": to, "subject": "Launch", "body": "We ship Monday."}) for to in people[:3]]
            return self._propose(thread, thread_id, run_id, calls, "Three launch notes are ready to go.", ttl)
        if scenario == "chain":
            calls = [("createInvoice", {"customer": "ACME Corp", "amount": 1200, "currency": "EUR"})]
            return self._propose(
                thread, thread_id, run_id, calls, "Step 1 of 2: create the invoice.", ttl, step="chain-1"
            )
        return self._ask_filing(thread, thread_id, run_id, ttl)

    def _expiry(self, ttl: float | None, default: timedelta | None) -> datetime | None:
        if ttl is not None:
            return datetime.now(UTC) + timedelta(seconds=ttl)
        return datetime.now(UTC) + default if default else None

    def _propose(
        self,
        thread: dict,
        thread_id: str,
        run_id: str,
        calls: list[tuple[str, dict]],
        text: str,
        ttl: float | None,
        *,
        step: str = "email",
        prefix: list[BaseEvent] | None = None,
    ) -> list[BaseEvent]:
        events: list[BaseEvent] = [_started(thread_id, run_id), *(prefix or [])]
        message_id = _id("msg")
        events += self._text(message_id, text)
        tool_calls = []
        expires_at = self._expiry(ttl, None)
        for name, args in calls:
            call_id = _id("call")
            arguments = json.dumps(args)
            events += [
                ToolCallStartEvent(tool_call_id=call_id, tool_call_name=name, parent_message_id=message_id),
                ToolCallArgsEvent(tool_call_id=call_id, delta=arguments),
                ToolCallEndEvent(tool_call_id=call_id),
            ]
            tool_calls.append(
                ToolCall(id=call_id, type="function", function=FunctionCall(name=name, arguments=arguments))
            )
            interrupt = Interrupt(
                id=_id("int"),
                reason="tool_call",
                tool_call_id=call_id,
                message=self._describe(name, args),
                response_schema=EMAIL_SCHEMA if name == "sendEmail" else APPROVE_SCHEMA,
                expires_at=_iso(expires_at) if expires_at else None,
                metadata={"demo": {"step": step}},
            )
            thread["open"][interrupt.id] = {
                "interrupt": interrupt,
                "call": {"id": call_id, "name": name, "args": args},
                "expiresAt": expires_at,
                "step": step,
            }
        thread["messages"].append(
            AssistantMessage(id=message_id, role="assistant", content=text, tool_calls=tool_calls)
        )
        return events + self._interrupt_finish(thread, thread_id, run_id)

    @staticmethod
    def _describe(name: str, args: dict) -> str:
        if name == "sendEmail":
            return f"Send email to {args.get('to')} with subject '{args.get('subject')}'?"
        if name == "createInvoice":
            return f"Create an invoice of {args.get('amount')} {args.get('currency')} for {args.get('customer')}?"
        return f"Run {name}?"

    def _ask_filing(self, thread: dict, thread_id: str, run_id: str, ttl: float | None) -> list[BaseEvent]:
        message_id = _id("msg")
        text = "I need the quarterly filing details before I can file."
        events: list[BaseEvent] = [_started(thread_id, run_id), *self._text(message_id, text)]
        expires_at = self._expiry(ttl, timedelta(hours=1))
        interrupt = Interrupt(
            id=_id("int"),
            reason="input_required",
            message="Please provide the quarterly filing details.",
            response_schema=FILING_SCHEMA,
            expires_at=_iso(expires_at) if expires_at else None,
        )
        thread["open"][interrupt.id] = {"interrupt": interrupt, "call": None, "expiresAt": expires_at, "step": "filing"}
        thread["messages"].append(AssistantMessage(id=message_id, role="assistant", content=text))
        return events + self._interrupt_finish(thread, thread_id, run_id)

    def _interrupt_finish(self, thread: dict, thread_id: str, run_id: str) -> list[BaseEvent]:
        # The spec: emit whatever a resume needs as snapshots *before* the interrupt RUN_FINISHED.
        interrupts = [entry["interrupt"] for entry in thread["open"].values()]
        return [
            StateSnapshotEvent(snapshot=self._state(thread)),
            MessagesSnapshotEvent(messages=list(thread["messages"])),
            RunFinishedEvent(
                thread_id=thread_id,
                run_id=run_id,
                outcome=RunFinishedInterruptOutcome(type="interrupt", interrupts=interrupts),
            ),
        ]

    @staticmethod
    def _state(thread: dict) -> dict:
        return {
            "scenario": thread.get("scenario"),
            "open": [
                {"interruptId": key, "step": entry["step"], "call": entry["call"]}
                for key, entry in thread["open"].items()
            ],
        }

    @staticmethod
    def _text(message_id: str, text: str) -> list[BaseEvent]:
        return [
            TextMessageStartEvent(message_id=message_id, role="assistant"),
            TextMessageContentEvent(message_id=message_id, delta=text),
            TextMessageEndEvent(message_id=message_id),
        ]

    def _success(
        self, thread: dict, thread_id: str, run_id: str, prefix: list[BaseEvent], text: str, result: Any = None
    ) -> list[BaseEvent]:
        message_id = _id("msg")
        thread["messages"].append(AssistantMessage(id=message_id, role="assistant", content=text))
        return [
            _started(thread_id, run_id),
            *prefix,
            *self._text(message_id, text),
            StateSnapshotEvent(snapshot=self._state(thread)),
            MessagesSnapshotEvent(messages=list(thread["messages"])),
            RunFinishedEvent(
                thread_id=thread_id, run_id=run_id, outcome=RunFinishedSuccessOutcome(type="success"), result=result
            ),
        ]

    def _error(self, thread_id: str, run_id: str, message: str, code: str) -> list[BaseEvent]:
        self.record["runs"].append(
            {"threadId": thread_id, "runId": run_id, "kind": "error", "code": code, "message": message}
        )
        events: list[BaseEvent] = []
        if thread_id and run_id:
            events.append(_started(thread_id, run_id))
        return [*events, RunErrorEvent(message=message, code=code)]

    # --- resumes ---------------------------------------------------------------------------------

    def _resume(self, run_input: RunAgentInput) -> list[BaseEvent]:
        thread_id, run_id = run_input.thread_id, run_input.run_id
        entries = run_input.resume or []
        thread = self.threads.get(thread_id)
        key = json.dumps([entry.model_dump(mode="json", by_alias=True) for entry in entries], sort_keys=True)
        if thread is not None and key in thread["completed"]:
            # Rule 5: the same (threadId, interruptId, status, payload) again is a replay, not new work.
            self.record["runs"].append({"threadId": thread_id, "runId": run_id, "kind": "replay"})
            return [self._rerun(event, run_id) for event in thread["completed"][key]]
        if thread is None or not thread["open"]:
            return self._error(
                thread_id,
                run_id,
                f"Cannot correlate the resume: thread {thread_id} has no open "
                "interrupts (stale or unknown interruptId).",
                "uncorrelated_resume",
            )
        ids = [entry.interrupt_id for entry in entries]
        unknown = [i for i in ids if i not in thread["open"]]
        if unknown or len(set(ids)) != len(ids):
            return self._error(
                thread_id,
                run_id,
                f"Cannot correlate interruptId(s) {', '.join(unknown) or ids} with the open interrupts of this thread.",
                "uncorrelated_resume",
            )
        missing = [i for i in thread["open"] if i not in ids]
        if missing:
            return self._error(
                thread_id,
                run_id,
                f"Partial resume: open interrupt(s) {', '.join(missing)} not "
                "addressed; a resume must cover every open interrupt.",
                "partial_resume",
            )
        now = datetime.now(UTC)
        for interrupt_id in ids:
            expires_at = thread["open"][interrupt_id]["expiresAt"]
            if expires_at is not None and expires_at <= now:
                return self._error(
                    thread_id,
                    run_id,
                    f"Stale resume: interrupt {interrupt_id} expired at {_iso(expires_at)}.",
                    "stale_resume",
                )
        for entry in entries:
            if entry.status != "resolved":
                continue
            schema = thread["open"][entry.interrupt_id]["interrupt"].response_schema
            if entry.payload is None:
                return self._error(
                    thread_id,
                    run_id,
                    f"Resume for {entry.interrupt_id} is resolved without a payload.",
                    "invalid_payload",
                )
            if schema:
                try:
                    jsonschema.validate(entry.payload, schema)
                except jsonschema.ValidationError as exc:
                    return self._error(
                        thread_id,
                        run_id,
                        f"Payload for {entry.interrupt_id} does not match its responseSchema: {exc.message}",
                        "invalid_payload",
                    )
        events = self._continue(thread, run_input)
        thread["completed"][key] = events
        return events

    @staticmethod
    def _rerun(event: BaseEvent, run_id: str) -> BaseEvent:
        if isinstance(event, RunStartedEvent | RunFinishedEvent):
            return event.model_copy(update={"run_id": run_id})
        return event

    def _continue(self, thread: dict, run_input: RunAgentInput) -> list[BaseEvent]:
        thread_id, run_id = run_input.thread_id, run_input.run_id
        opened = thread["open"]
        thread["open"] = {}
        self.record["runs"].append({"threadId": thread_id, "runId": run_id, "kind": "resume"})
        prefix: list[BaseEvent] = []
        done: list[str] = []
        skipped: list[str] = []
        chain_next = False
        for entry in run_input.resume or []:
            pending = opened[entry.interrupt_id]
            call = pending["call"]
            payload = entry.payload if isinstance(entry.payload, dict) else {}
            if pending["step"] == "filing":
                if entry.status == "resolved":
                    self._execute(thread_id, run_id, "fileQuarterlyReport", payload, None, entry.interrupt_id)
                    done.append(f"filed {payload['quarter']} {payload['year']} (revenue {payload['revenue']})")
                else:
                    skipped.append("filing cancelled")
                continue
            if pending["step"] == "chain-2":
                if entry.status == "resolved" and payload.get("approved") is True:
                    self._execute(thread_id, run_id, "sendInvoice", pending["args"], None, entry.interrupt_id)
                    done.append(f"invoice sent to {pending['args']['customer']}")
                else:
                    skipped.append("invoice not sent")
                continue
            approved = entry.status == "resolved" and payload.get("approved") is True
            if approved:
                args = payload["editedArgs"] if isinstance(payload.get("editedArgs"), dict) else call["args"]
                self._execute(thread_id, run_id, call["name"], args, call["id"], entry.interrupt_id)
                content = {"status": "done", "executed": True, "args": args, "edited": "editedArgs" in payload}
                done.append(f"{call['name']} {args.get('to') or args.get('customer')}")
                chain_next = chain_next or pending["step"] == "chain-1"
            elif entry.status == "resolved":
                content = {"status": "denied", "executed": False}
                skipped.append(f"{call['name']} {call['args'].get('to') or call['args'].get('customer')} denied")
            else:
                # The spec's parallel example: a cancelled call is treated as not executed, with no result.
                skipped.append(f"{call['name']} {call['args'].get('to') or call['args'].get('customer')} cancelled")
                continue
            message_id = _id("result")
            prefix.append(
                ToolCallResultEvent(
                    message_id=message_id, tool_call_id=call["id"], content=json.dumps(content), role="tool"
                )
            )
            thread["messages"].append(
                ToolMessage(id=message_id, role="tool", content=json.dumps(content), tool_call_id=call["id"])
            )
        if chain_next:
            return self._ask_send_invoice(thread, thread_id, run_id, prefix, opened)
        summary = "Done: " + "; ".join(done) if done else "Nothing was executed"
        if skipped:
            summary += ". Skipped: " + "; ".join(skipped)
        return self._success(thread, thread_id, run_id, prefix, summary + ".", {"executed": done, "skipped": skipped})

    def _ask_send_invoice(
        self, thread: dict, thread_id: str, run_id: str, prefix: list[BaseEvent], opened: dict
    ) -> list[BaseEvent]:
        first = next(entry for entry in opened.values() if entry["step"] == "chain-1")
        args = {"customer": first["call"]["args"]["customer"], "invoiceFor": first["call"]["id"]}
        expires_at = first["expiresAt"]
        message_id = _id("msg")
        text = "Step 2 of 2: the invoice exists. Shall I email it to the customer?"
        interrupt = Interrupt(
            id=_id("int"),
            reason="confirmation",
            message=f"Email the new invoice to {args['customer']}?",
            response_schema=APPROVE_SCHEMA,
            expires_at=_iso(expires_at) if expires_at else None,
            metadata={"demo": {"step": "chain-2"}},
        )
        thread["open"][interrupt.id] = {
            "interrupt": interrupt,
            "call": None,
            "args": args,
            "expiresAt": expires_at,
            "step": "chain-2",
        }
        thread["messages"].append(AssistantMessage(id=message_id, role="assistant", content=text))
        return [
            _started(thread_id, run_id),
            *prefix,
            *self._text(message_id, text),
            *self._interrupt_finish(thread, thread_id, run_id),
        ]

    def _execute(
        self, thread_id: str, run_id: str, name: str, args: dict, call_id: str | None, interrupt_id: str
    ) -> None:
        self.record["executed"].append(
            {
                "threadId": thread_id,
                "runId": run_id,
                "toolCallId": call_id,
                "name": name,
                "args": args,
                "interruptId": interrupt_id,
            }
        )


# --- ASGI -------------------------------------------------------------------------------------------


def create_app(*, token: str = "", state_file: str = "", resume_seconds: float = 0.0) -> Any:
    """The ASGI app around one ``DemoAgent``. With ``token``, POSTs need ``Authorization: Bearer <token>``;
    with ``state_file``, threads and the record survive a restart; ``resume_seconds`` paces resume replies."""
    agent = DemoAgent(state_file)
    encoder = EventEncoder()
    # Pace of resume replies by threadId prefix ("" for every thread): seconds, and silent (no headers) or not.
    paces: dict[str, dict[str, Any]] = {"": {"resumeSeconds": resume_seconds, "silent": False}}

    async def app(scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                elif message["type"] == "lifespan.shutdown":
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        if scope["type"] != "http":
            return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        method, path = scope["method"], scope["path"].rstrip("/") or "/"
        if method == "GET" and path == "/record":
            return await _respond(send, 200, "application/json", json.dumps(agent.record).encode())
        if method == "GET" and path == "/healthz":
            return await _respond(send, 200, "text/plain", b"ok")
        if method == "POST" and path == "/reset":
            agent.reset()
            return await _respond(send, 204, "text/plain", b"")
        if method == "POST" and path == "/pace":
            wanted = _read_pace(body)
            if wanted is None:
                return await _respond(send, 400, "application/json", b'{"error": "send {\\"resumeSeconds\\": N}"}')
            paces[wanted[0]] = wanted[1]
            return await _respond(send, 200, "application/json", json.dumps(paces).encode())
        if method != "POST" or path not in ("/", "/agent"):
            return await _respond(send, 404, "text/plain", b"not found")
        headers = {key.decode().lower(): value.decode() for key, value in scope["headers"]}
        if token and headers.get("authorization") != f"Bearer {token}":
            return await _respond(send, 401, "application/json", b'{"error": "unauthorized"}')
        try:
            data = json.loads(body)
        except (json.JSONDecodeError, UnicodeDecodeError):
            return await _respond(send, 400, "application/json", b'{"error": "body is not JSON"}')
        events = agent.handle(data)
        delay, silent = _pace_for(paces, data)
        if silent:
            await asyncio.sleep(delay)  # executed already; says nothing, not even its headers
            delay = 0.0
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [(b"content-type", b"text/event-stream"), (b"cache-control", b"no-store")],
            }
        )
        for index, event in enumerate(events):
            await send({"type": "http.response.body", "body": encoder.encode(event).encode(), "more_body": True})
            while index == 0 and delay > 0:
                await asyncio.sleep(min(0.5, delay))
                delay -= 0.5
                await send({"type": "http.response.body", "body": b": keep-alive\n\n", "more_body": True})
        await send({"type": "http.response.body", "body": b""})

    app.agent = agent  # type: ignore[attr-defined]
    return app


def _pace_for(paces: dict[str, dict[str, Any]], data: Any) -> tuple[float, bool]:
    """(seconds, silent) for the reply to ``data``: a resume's pace by the longest matching threadId prefix."""
    if not isinstance(data, dict) or not data.get("resume"):
        return 0.0, False
    thread_id = str(data.get("threadId", ""))
    pace = paces[max((prefix for prefix in paces if thread_id.startswith(prefix)), key=len)]
    return pace["resumeSeconds"], pace["silent"]


def _read_pace(body: bytes) -> tuple[str, dict[str, Any]] | None:
    """``POST /pace``'s body as (threadPrefix, pace), or None when it is not ``{"resumeSeconds": N, ...}``."""
    try:
        wanted = json.loads(body)
        seconds = max(0.0, float(wanted["resumeSeconds"]))
        return str(wanted.get("threadPrefix", "")), {"resumeSeconds": seconds, "silent": bool(wanted.get("silent"))}
    except (ValueError, KeyError, TypeError, AttributeError):
        return None


async def _respond(send: Any, status: int, content_type: str, body: bytes) -> None:
    await send({"type": "http.response.start", "status": status, "headers": [(b"content-type", content_type.encode())]})
    await send({"type": "http.response.body", "body": body})


app = create_app()


def main() -> None:
    import uvicorn

    parser = argparse.ArgumentParser(description="The Approval Inbox demo AG-UI agent (no LLM).")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8001)
    parser.add_argument(
        "--token",
        default=os.environ.get("DEMO_AGENT_TOKEN", ""),
        help="Require 'Authorization: Bearer <token>' on runs.",
    )
    parser.add_argument("--state-file", default="", help="Keep threads and the record in this file across restarts.")
    parser.add_argument("--log-level", default="warning")
    parser.add_argument("--resume-seconds", type=float, default=0.0, help="Take this long over each resume reply.")
    options = parser.parse_args()
    uvicorn.run(
        create_app(token=options.token, state_file=options.state_file, resume_seconds=options.resume_seconds),
        host=options.host,
        port=options.port,
        log_level=options.log_level,
        lifespan="on",
    )


if __name__ == "__main__":
    main()
