"""Real AG-UI agents on loopback for the resume and started-run tests.

- ``AgentProcess``: the demo agent (``python -m agents.demo``) in a uvicorn subprocess; ``record()`` reads
  what it received and executed, ``reset()`` makes it forget its threads as a restart would.
- ``ScriptedServer``: a tiny HTTP server in a thread that answers each POST from a script (an SSE body, an
  HTTP status, or hanging without answering), recording the bodies it received.

Import the fixtures into a test module: ``from tests.agent_servers import demo_server, demo  # noqa: F401``.
"""

from __future__ import annotations

import json
import os
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

from tests.conftest import ROOT, AgentWithToken, free_port


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
    ):
        self.port = port or free_port()
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
        command = [self.python, "-m", self.module, "--port", str(self.port)]
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
                if httpx.get(f"{self.url}healthz", timeout=1, trust_env=False).status_code == 200:
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
        return httpx.get(f"{self.url}record", timeout=5, trust_env=False).json()

    def reset(self) -> None:
        httpx.post(f"{self.url}reset", timeout=5, trust_env=False)

    def post(self, body: dict) -> list[dict]:
        """Talk to the agent directly, as any AG-UI client would."""
        response = httpx.post(self.url, json=body, timeout=10, trust_env=False, headers=self._auth())
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


@dataclass
class ScriptedServer:
    replies: list[Reply]
    received: list[dict] = field(default_factory=list)
    headers: list[dict] = field(default_factory=list)
    release: threading.Event = field(default_factory=threading.Event)
    server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        assert self.server is not None
        return f"http://127.0.0.1:{self.server.server_address[1]}/"

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

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        self.release.set()
        if self.server:
            self.server.shutdown()
            self.server.server_close()


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
