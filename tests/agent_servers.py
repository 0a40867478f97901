"""Real AG-UI agents on loopback for the resume and started-run tests.

- ``AgentProcess``: the demo agent (``python -m agents.demo``) in a uvicorn subprocess; ``record()`` reads
  what it received and executed, ``reset()`` makes it forget its threads as a restart would.
- ``ScriptedServer``: a tiny HTTP server in a thread that answers each POST from a script (an SSE body, an
  HTTP status, or hanging without answering), recording the bodies it received.
- ``FaultyAgent``: a small stateful AG-UI agent in a thread that follows the interrupts spec except for the one
  deliberate fault its ``mode`` names (``FAULTS``); with no mode it conforms. The conformance tests hold the
  report to each fault.

Import the fixtures into a test module: ``from tests.agent_servers import demo_server, demo  # noqa: F401``.
"""

from __future__ import annotations

import json
import os
import ssl
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest

from tests.conftest import LOOPBACK, ROOT, AgentWithToken, free_port


class AgentProcess:
    def __init__(
        self,
        port: int | None = None,
        *,
        token: str = "",
        module: str = "agents.demo",
        log_dir: Path | None = None,
        state_file: Path | None = None,
        python: str | None = None,
        env: dict[str, str] | None = None,
        command: list[str] | None = None,
    ):
        self.port = port or free_port()
        # A server that is not a Python module (a Node agent, tests/frameworks/servers/node): its argv, to
        # which ``--port N`` is added.
        self.command = command
        # Another interpreter (a framework's own venv, tests/frameworks) and extra environment, if given.
        self.python = python or sys.executable
        self.env = env
        self.token = token
        self.state_file = state_file
        self.module = module
        self.process: subprocess.Popen | None = None
        self.log_path = (log_dir or Path(os.environ.get("TMPDIR", "/tmp"))) / f"agent-{self.port}.log"

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/"

    def start(self, timeout: float = 30) -> AgentProcess:
        command = [*(self.command or [self.python, "-m", self.module]), "--port", str(self.port)]
        if self.token:
            command += ["--token", self.token]
        if self.state_file:
            command += ["--state-file", str(self.state_file)]
        with open(self.log_path, "w") as log:
            self.process = subprocess.Popen(
                command, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, env={**os.environ, **(self.env or {})}
            )
        deadline = time.monotonic() + timeout
        while True:
            try:
                if LOOPBACK.get(f"{self.url}healthz", timeout=1).status_code == 200:
                    return self
            except httpx.TransportError:
                pass
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the agent did not start:\n{self.log_path.read_text()[-3000:]}")
            time.sleep(0.05)

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)
        self.process = None

    def record(self) -> dict:
        return LOOPBACK.get(f"{self.url}record", timeout=5).json()

    def reset(self) -> None:
        LOOPBACK.post(f"{self.url}reset", timeout=5)

    def post(self, body: dict) -> list[dict]:
        """Talk to the agent directly, as any AG-UI client would."""
        response = LOOPBACK.post(self.url, json=body, timeout=10, headers=self._auth())
        return [json.loads(line[5:]) for line in response.text.splitlines() if line.startswith("data:")]

    def _auth(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"} if self.token else {}


@pytest.fixture(scope="session")
def demo_server() -> Iterator[AgentProcess]:
    server = AgentProcess().start()
    yield server
    server.stop()


@pytest.fixture
def demo_agent(demo_server: AgentProcess) -> AgentProcess:
    demo_server.reset()
    return demo_server


@pytest.fixture
def demo(make_agent, demo_agent: AgentProcess) -> AgentWithToken:
    """The demo agent registered in the inbox, its endpoint the running demo process."""
    return make_agent("demo", endpoint=demo_agent.url)


# --- a scripted HTTP server ---------------------------------------------------------------------------


@dataclass
class Reply:
    status: int = 200
    sse: list[dict] | None = None
    body: bytes = b""
    content_type: str = "text/event-stream"
    hang: bool = False
    # Sent piece by piece without Content-Length: bytes are written and flushed, a float sleeps that long.
    stream: list[bytes | float] | None = None
    # The reply waits (up to 30 s) until the test sets this: the request is in, the answer comes when the test says.
    gate: threading.Event | None = None


class LoopbackServer:
    """A threaded HTTP server on a free loopback port, serving a handler class until ``stop`` (which also releases
    any reply held on ``release``). Subclasses are dataclasses with ``release`` and ``server`` fields; ``tls``, a
    server-side SSL context, serves https instead."""

    release: threading.Event
    server: ThreadingHTTPServer | None
    tls: ssl.SSLContext | None = None

    @property
    def url(self) -> str:
        assert self.server is not None
        return f"{'https' if self.tls else 'http'}://127.0.0.1:{self.server.server_address[1]}/"

    def _serve(self, handler: type[BaseHTTPRequestHandler]) -> None:
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.server.daemon_threads = True
        if self.tls is not None:
            self.server.socket = self.tls.wrap_socket(self.server.socket, server_side=True)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        self.release.set()
        if self.server:
            self.server.shutdown()
            self.server.server_close()


@dataclass
class ScriptedServer(LoopbackServer):
    replies: list[Reply]
    received: list[dict] = field(default_factory=list)
    headers: list[dict] = field(default_factory=list)
    release: threading.Event = field(default_factory=threading.Event)
    server: ThreadingHTTPServer | None = None
    tls: ssl.SSLContext | None = None

    def start(self) -> ScriptedServer:
        script = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                script.received.append(json.loads(self.rfile.read(length) or b"null"))
                script.headers.append(dict(self.headers))
                reply = script.replies[min(len(script.received), len(script.replies)) - 1]
                if reply.gate is not None:
                    reply.gate.wait(30)
                if reply.hang:
                    script.release.wait(60)
                    return
                if reply.stream is not None:
                    self.send_response(reply.status)
                    self.send_header("Content-Type", reply.content_type)
                    self.send_header("Connection", "close")
                    self.end_headers()
                    try:
                        for piece in reply.stream:
                            if isinstance(piece, float):
                                if script.release.wait(piece):
                                    return
                            else:
                                self.wfile.write(piece)
                                self.wfile.flush()
                    except (BrokenPipeError, ConnectionResetError):
                        pass  # the client gave up reading, as it should
                    return
                body = reply.body
                if reply.sse is not None:
                    body = "".join(f"data: {json.dumps(event)}\n\n" for event in reply.sse).encode()
                self.send_response(reply.status)
                self.send_header("Content-Type", reply.content_type)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self._serve(Handler)
        return self


@pytest.fixture
def scripted() -> Iterator[Callable[..., ScriptedServer]]:
    servers: list[ScriptedServer] = []

    def make(*replies: Reply) -> ScriptedServer:
        server = ScriptedServer(list(replies)).start()
        servers.append(server)
        return server

    yield make
    for server in servers:
        server.stop()


def wait_for(condition: Callable[[], object], *, timeout: float = 30, what: str = "condition") -> object:
    """Poll until ``condition()`` is truthy (work done by another process); fail after ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


# --- a deliberately faulty AG-UI agent ------------------------------------------------------------------

APPROVAL_SCHEMA = {"type": "object", "properties": {"approved": {"type": "boolean"}}, "required": ["approved"]}

# One deliberate fault per mode; "" is the conformant agent the faults are measured against.
FAULTS = {
    "": "none: follows the spec",
    "duplicate_ids": "two interrupts of one run share an id",
    "missing_id": "an interrupt without id",
    "empty_id": "an interrupt with id ''",
    "error_outcome": "RUN_FINISHED with outcome {type: error}",
    "empty_interrupts": "an interrupt outcome with interrupts: []",
    "other_thread": "answers the resume on another threadId",
    "invalid_event": "the resume's reply holds an event the SDK rejects",
    "hang": "the resume's reply stops after RUN_STARTED and never finishes (silent)",
    "trickle": "the resume's reply sends keep-alive comments for ever after RUN_STARTED",
    "start_fresh": "ignores the resume and starts over: proposes the same call again, asks again",
    "unknown_result": "answers the resume with a TOOL_CALL_RESULT for a toolCallId nobody named",
    "cut_after_execute": "executes the approved call, then closes its reply before RUN_FINISHED",
    "silent_after_execute": "executes the approved call, then answers nothing at all (no headers)",
    # As Pydantic AI does, these two 1.0 outcomes go only to a client that declared AG-UI 1.0 (protocolVersion).
    "cancelled": "ends the resumed run with outcome {type: cancelled}",
    "pending_calls": "ends the resumed run with success naming pendingToolCallIds",
    "subagent": "raises the interrupt from a subagent (subagentRunId)",
    "proof": "issues a proof in metadata.ag2.proof and refuses a resume that does not echo it",
    "expired": "an interrupt whose expiresAt is already past when it arrives",
    "thread_id_as_id": "uses the threadId as the interrupt id",
    "unmatched_call": "a tool_call interrupt whose toolCallId names no call it proposed",
    "no_snapshots": "sends neither STATE_SNAPSHOT nor MESSAGES_SNAPSHOT before its interrupt",
    "reemit": "re-emits the original TOOL_CALL_START/ARGS/END in the resumed run",
    "no_result": "executes the approved call and sends no TOOL_CALL_RESULT for it",
    "bare_error": "answers the resume with a bare RUN_ERROR, no RUN_STARTED (and executes nothing)",
    "reply_duplicate_ids": "executes the approved call, sends its result, then pauses with two interrupts sharing an id",
    "reused_id": "executes the approved call, sends its result, then pauses again with the first interrupt's id",
}


@dataclass
class FaultyAgent(LoopbackServer):
    mode: str = ""
    received: list[dict] = field(default_factory=list)
    executed: list[dict] = field(default_factory=list)
    threads: dict[str, dict] = field(default_factory=dict)
    release: threading.Event = field(default_factory=threading.Event)
    server: ThreadingHTTPServer | None = None
    counter: int = 0

    def _id(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}-{self.counter}"

    # --- the agent ---------------------------------------------------------------------------------

    def answer(self, body: dict) -> tuple[list[dict], str]:
        """The reply's events, and what to do after them: "" (finish), "close" (end the stream there), "hang",
        "trickle", or "silent" (send nothing, not even headers)."""
        self.received.append(body)
        thread_id, run_id = body.get("threadId", ""), body.get("runId", "")
        if body.get("resume"):
            return self._resume(body, thread_id, run_id)
        return self._start(body, thread_id, run_id), ""

    def _start(self, body: dict, thread_id: str, run_id: str) -> list[dict]:
        thread = self.threads.setdefault(thread_id, {"open": {}, "done": set(), "messages": []})
        if thread["open"]:
            return self._error(thread_id, run_id, "open interrupts: new input must resume them")
        user = next((m for m in reversed(body.get("messages") or []) if m.get("role") == "user"), None)
        thread["messages"] = list(body.get("messages") or [])[-1:] if user else []
        return self._propose(thread, thread_id, run_id, {"to": "bob@example.com", "subject": "Lunch"})

    def _propose(self, thread: dict, thread_id: str, run_id: str, args: dict) -> list[dict]:
        call_id, message_id = self._id("tc"), self._id("msg")
        interrupt: dict = {
            "id": self._id("int"),
            "reason": "tool_call",
            "toolCallId": call_id,
            "message": "Send the lunch email to bob@example.com?",
            "responseSchema": APPROVAL_SCHEMA,
        }
        if self.mode == "subagent":
            interrupt["subagentRunId"] = "sub-run-7"
        if self.mode == "expired":
            interrupt["expiresAt"] = "2000-01-01T00:00:00Z"
        if self.mode == "thread_id_as_id":
            interrupt["id"] = thread_id
        if self.mode == "unmatched_call":
            interrupt["toolCallId"] = "tc-never-proposed"
        if self.mode == "proof":
            interrupt["metadata"] = {"ag2": {"proof": f"proof-{interrupt['id']}"}}
        interrupts = [interrupt]
        if self.mode == "duplicate_ids":
            interrupts = [interrupt, {**interrupt, "message": "And again?"}]
        elif self.mode == "missing_id":
            interrupts = [{key: value for key, value in interrupt.items() if key != "id"}]
        elif self.mode == "empty_id":
            interrupts = [{**interrupt, "id": ""}]
        elif self.mode == "empty_interrupts":
            interrupts = []
        thread["open"] = {interrupt["id"]: {"interrupt": interrupt, "args": args}}
        assistant = {
            "id": message_id,
            "role": "assistant",
            "content": "I'd like to send this.",
            "toolCalls": [
                {"id": call_id, "type": "function", "function": {"name": "sendEmail", "arguments": json.dumps(args)}}
            ],
        }
        thread["messages"].append(assistant)
        outcome: dict = {"type": "interrupt", "interrupts": interrupts}
        if self.mode == "error_outcome":
            outcome = {"type": "error", "message": "the model is down"}
        snapshots = [
            {"type": "STATE_SNAPSHOT", "snapshot": {"open": list(thread["open"])}},
            {"type": "MESSAGES_SNAPSHOT", "messages": list(thread["messages"])},
        ]
        return [
            {"type": "RUN_STARTED", "threadId": thread_id, "runId": run_id},
            *self._call_events(call_id, args, message_id),
            *(snapshots if self.mode != "no_snapshots" else []),
            {"type": "RUN_FINISHED", "threadId": thread_id, "runId": run_id, "outcome": outcome},
        ]

    @staticmethod
    def _call_events(call_id: str, args: dict, message_id: str) -> list[dict]:
        return [
            {
                "type": "TOOL_CALL_START",
                "toolCallId": call_id,
                "toolCallName": "sendEmail",
                "parentMessageId": message_id,
            },
            {"type": "TOOL_CALL_ARGS", "toolCallId": call_id, "delta": json.dumps(args)},
            {"type": "TOOL_CALL_END", "toolCallId": call_id},
        ]

    def _resume(self, body: dict, thread_id: str, run_id: str) -> tuple[list[dict], str]:
        thread = self.threads.get(thread_id) or {"open": {}, "done": set(), "messages": []}
        entries = body["resume"]
        ids = [entry.get("interruptId") for entry in entries]
        if self.mode == "start_fresh":
            # Ignores resume[]: as if the input were new, it proposes the same call again.
            thread["open"] = {}
            return self._propose(thread, thread_id, run_id, {"to": "bob@example.com", "subject": "Lunch"}), ""
        if not thread["open"] or sorted(ids) != sorted(thread["open"]):
            # Rule 5 and the spec's error handling: an id it cannot correlate (a replay included) is a RUN_ERROR.
            return self._error(thread_id, run_id, f"cannot correlate interruptId(s) {', '.join(map(str, ids))}"), ""
        if self.mode == "proof":
            for entry in entries:
                issued = thread["open"][entry["interruptId"]]["interrupt"]["metadata"]["ag2"]["proof"]
                if ((entry.get("metadata") or {}).get("ag2") or {}).get("proof") != issued:
                    return self._error(thread_id, run_id, "INTERRUPT_NOT_PROVEN: the resume carries no proof"), ""
        if self.mode == "bare_error":
            return [{"type": "RUN_ERROR", "message": "the model is down", "code": "model_down"}], ""
        opened, thread["open"] = thread["open"], {}
        events: list[dict] = [{"type": "RUN_STARTED", "threadId": thread_id, "runId": run_id}]
        for entry in entries:
            interrupt = opened[entry["interruptId"]]["interrupt"]
            call_id = interrupt["toolCallId"]
            approved = entry.get("status") == "resolved" and (entry.get("payload") or {}).get("approved") is True
            if self.mode == "reemit":
                events += self._call_events(call_id, opened[entry["interruptId"]]["args"], self._id("msg"))
            if approved:
                self.executed.append({"toolCallId": call_id, "args": opened[entry["interruptId"]]["args"]})
            if self.mode == "unknown_result":
                call_id = "tc-nobody-named"
            if entry.get("status") == "resolved" and self.mode != "no_result":
                content = json.dumps({"sent": approved})
                result_id = self._id("result")
                events.append(
                    {"type": "TOOL_CALL_RESULT", "messageId": result_id, "toolCallId": call_id, "content": content}
                )
                thread["messages"].append({"id": result_id, "role": "tool", "toolCallId": call_id, "content": content})
        if self.mode == "cut_after_execute":
            return events, "close"
        if self.mode == "silent_after_execute":
            return [], "silent"
        if self.mode == "hang":
            return events[:1], "hang"
        if self.mode == "trickle":
            return events[:1], "trickle"
        if self.mode == "invalid_event":
            events.append({"type": "TOOL_CALL_RESULT", "toolCallId": "tc-1"})  # no messageId, no content
        finished: dict = {
            "type": "RUN_FINISHED",
            "threadId": thread_id,
            "runId": run_id,
            "outcome": {"type": "success"},
        }
        declares_1_0 = body.get("protocolVersion") == "1.0"
        if self.mode == "cancelled" and declares_1_0:
            finished["outcome"] = {"type": "cancelled"}
        if self.mode == "pending_calls" and declares_1_0:
            events += [
                {"type": "TOOL_CALL_START", "toolCallId": "tc-front-1", "toolCallName": "showChart"},
                {"type": "TOOL_CALL_ARGS", "toolCallId": "tc-front-1", "delta": "{}"},
                {"type": "TOOL_CALL_END", "toolCallId": "tc-front-1"},
            ]
            finished["outcome"] = {"type": "success", "pendingToolCallIds": ["tc-front-1"]}
        if self.mode == "other_thread":
            events[0]["threadId"] = finished["threadId"] = "some-other-thread"
        if self.mode in ("reply_duplicate_ids", "reused_id"):
            # It pauses again, asking for input: under an id used twice, or under the id it used before.
            again = {
                "id": ids[0] if self.mode == "reused_id" else self._id("int"),
                "reason": "input_required",
                "message": "Anything else to send?",
                "responseSchema": {"type": "object", "properties": {"text": {"type": "string"}}},
            }
            thread["open"] = {again["id"]: {"interrupt": again, "args": {}}}
            twice = [again, {**again, "message": "And again?"}] if self.mode == "reply_duplicate_ids" else [again]
            finished["outcome"] = {"type": "interrupt", "interrupts": twice}
            events.append({"type": "STATE_SNAPSHOT", "snapshot": {"open": list(thread["open"])}})
        # The history again, as a replay-style agent sends it: the original assistant message and its toolCalls.
        events += [{"type": "MESSAGES_SNAPSHOT", "messages": list(thread["messages"])}, finished]
        return events, ""

    @staticmethod
    def _error(thread_id: str, run_id: str, message: str) -> list[dict]:
        return [
            {"type": "RUN_STARTED", "threadId": thread_id, "runId": run_id},
            {"type": "RUN_ERROR", "message": message, "code": "uncorrelated_resume"},
        ]

    # --- HTTP ---------------------------------------------------------------------------------------

    def start(self) -> FaultyAgent:
        agent = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                events, then = agent.answer(json.loads(self.rfile.read(length) or b"null"))
                if then == "silent":
                    agent.release.wait(60)
                    return
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Connection", "close")
                self.end_headers()
                try:
                    for event in events:
                        self.wfile.write(f"data: {json.dumps(event)}\n\n".encode())
                    self.wfile.flush()
                    if then == "hang":
                        agent.release.wait(60)
                    while then == "trickle" and not agent.release.wait(0.2):
                        self.wfile.write(b": still thinking\n\n")
                        self.wfile.flush()
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the inbox cut the reply, as it should

        self._serve(Handler)
        return self


@pytest.fixture
def faulty() -> Iterator[Callable[[str], FaultyAgent]]:
    """``faulty(mode)``: a running ``FaultyAgent`` with that fault (``FAULTS``), stopped after the test."""
    agents: list[FaultyAgent] = []

    def make(mode: str = "") -> FaultyAgent:
        assert mode in FAULTS, mode
        agent = FaultyAgent(mode).start()
        agents.append(agent)
        return agent

    yield make
    for agent in agents:
        agent.stop()
