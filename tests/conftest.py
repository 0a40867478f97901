"""Shared fixtures: named users (staff, alice and bob in team 'ops', outsider carol), agents with ingest
tokens, an ``ingest`` helper, an in-process ASGI live server (real websockets), a real Celery worker,
and Debian's Chromium driven by Playwright."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from django.contrib.auth.models import Group, User
from django.test import Client

from agents.models import Agent
from tests.factories import PASSWORD, AgentFactory, TeamFactory, UserFactory  # noqa: F401  (PASSWORD: imported from here by tests)
from tests.helpers.browser import sign_in

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared"
FIXTURES = Path(__file__).resolve().parent / "fixtures"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
IN_CI = os.environ.get("CI", "").lower() in {"1", "true", "yes"}
# Real AG-UI agents on loopback (the demo agent, scripted servers) for the resume and started-run tests.
pytest_plugins = ["tests.agent_servers"]


def pytest_configure(config) -> None:
    from django.conf import settings

    # Django's production hasher is slow on purpose; tests create many users.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    # The test agents listen on loopback, also when the suite runs with DATABASE_URL (PostgreSQL), whose
    # default allows no internal address; the workers and servers the tests start inherit the variable.
    # tests/security/test_agent_endpoints.py checks the refusals with the production default.
    os.environ["INBOX_AGENT_ALLOWED_NETWORKS"] = "127.0.0.0/8,::1/128"
    settings.INBOX_AGENT_ALLOWED_NETWORKS = ["127.0.0.0/8", "::1/128"]
    # A decision made on a page is held for undo (INBOX_UNDO_SECONDS) before its resume leaves: tests that are not
    # about undo send at once; tests/inbox/test_undo.py and tests/e2e/test_undo_browser.py turn it on.
    os.environ["INBOX_UNDO_SECONDS"] = "0"
    settings.INBOX_UNDO_SECONDS = 0.0
    _scan_static_files_once()


def _scan_static_files_once() -> None:
    """Django's test Client loads the middleware anew for each client, and WhiteNoise's middleware lists and stats
    every static file each time it is made. They do not change while the suite runs, so each test process lists
    them once; requests are served by WhiteNoise as in production."""
    from whitenoise.middleware import WhiteNoiseMiddleware

    scan = WhiteNoiseMiddleware.add_files_from_finders
    scanned: dict = {}

    def add_files_from_finders(self: WhiteNoiseMiddleware) -> None:
        if scanned:
            self.files.update(scanned)
        else:
            scan(self)
            scanned.update(self.files)

    WhiteNoiseMiddleware.add_files_from_finders = add_files_from_finders  # type: ignore[method-assign]


def load_events(name: str) -> list[dict]:
    """One recorded ag-ui-langgraph stream from tests/fixtures (copied from ../shared)."""
    with open(FIXTURES / "ag-ui-langgraph" / name) as handle:
        return [json.loads(line) for line in handle if line.strip()]


def spec_example(name: str) -> dict:
    """One of the spec's RUN_FINISHED examples (tests/fixtures/spec_examples.json)."""
    with open(FIXTURES / "spec_examples.json") as handle:
        return json.load(handle)[name]


@pytest.fixture(autouse=True)
def _fresh_channel_layer() -> Iterator[None]:
    """Each test gets its own channel layer object. The layer keeps receive state (a lock, the loop that
    receives) that a test whose event loop ended mid-receive would otherwise hand to the next test's loop."""
    from channels.layers import channel_layers

    channel_layers.backends.clear()
    yield
    channel_layers.backends.clear()


@pytest.fixture(autouse=True)
def _database_up() -> Iterator[None]:
    """Each test starts with the database taken as up: a process that noted an outage (config.unavailable)
    answers 503 until a request succeeds, and a test after an outage test may make none."""
    from config import unavailable

    unavailable.note_database(up=True)
    yield


@pytest.fixture(autouse=True)
def _fresh_conformance_memo() -> Iterator[None]:
    """Each test starts with no conformance observation remembered as written: a flushed database may give
    another test's agent the same id."""
    from inbox.conformance.recorder import forget_written

    forget_written()
    yield


@pytest.fixture(autouse=True)
def _fresh_shared_cache() -> Iterator[None]:
    """The shared cache lives in Redis, which outlives a test: each test starts with no failures counted and no
    announcement marked as queued (this process's keys only: its prefix names the xdist worker)."""
    from django.core.cache import caches

    cache = caches["shared"]
    client = cache._cache.get_client(write=True)
    for key in client.scan_iter(match=cache.make_key("*").replace(":1:", ":*:")):
        client.delete(key)
    yield


# --- people and agents ----------------------------------------------------------------------------


@pytest.fixture
def team(db) -> Group:
    return TeamFactory(name="ops")


@pytest.fixture
def staff(db) -> User:
    return UserFactory(username="staff", is_staff=True, is_superuser=True)


@pytest.fixture
def alice(team) -> User:
    return UserFactory(username="alice", teams=[team])


@pytest.fixture
def bob(team) -> User:
    return UserFactory(username="bob", teams=[team])


@pytest.fixture
def carol(db) -> User:
    """An approver in no team of the agents under test."""
    return UserFactory(username="carol", teams=[TeamFactory(name="elsewhere")])


@pytest.fixture
def dave(db) -> User:
    """A member of 'finance' only."""
    return UserFactory(username="dave", teams=[TeamFactory(name="finance")])


@dataclass
class AgentWithToken:
    agent: Agent
    token: str

    @property
    def auth(self) -> dict[str, str]:
        return {"HTTP_AUTHORIZATION": f"Bearer {self.token}"}


@pytest.fixture
def make_agent(db, team) -> Callable[..., AgentWithToken]:
    counter = iter(range(1, 10_000))

    def make(slug: str | None = None, *, endpoint: str = "http://127.0.0.1:9/agent", **fields) -> AgentWithToken:
        agent = AgentFactory(slug=slug or f"agent-{next(counter)}", endpoint_url=endpoint, teams=[team], **fields)
        _, raw = agent.issue_token()
        return AgentWithToken(agent, raw)

    return make


@pytest.fixture
def agent(make_agent) -> AgentWithToken:
    return make_agent("mailer")


@pytest.fixture
def ingest(client: Client) -> Callable[..., object]:
    """POST a run to the ingest API as the given agent: ``ingest(agent, body)``.

    ``body`` is a dict (sent as JSON), a list of events (sent as ``{"events": [...]}``) or a str
    (sent as ``text/event-stream``)."""

    def post(agent_token: AgentWithToken, body, **extra):
        if isinstance(body, str):
            return client.post("/api/v1/runs", data=body, content_type="text/event-stream", **agent_token.auth, **extra)
        if isinstance(body, list):
            body = {"events": body}
        return client.post(
            "/api/v1/runs", data=json.dumps(body), content_type="application/json", **agent_token.auth, **extra
        )

    return post


def run_async(coroutine):
    """``asyncio.run`` on a thread of its own: after a browser test, Playwright's sync API leaves a running
    loop on the main thread, where ``asyncio.run`` refuses to start."""
    import asyncio
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coroutine).result()


def as_sse(events: list[dict]) -> str:
    return "".join(f"data: {json.dumps(event)}\n\n" for event in events)


# The tests' own calls to servers on loopback (agents' health and record, the launcher's /healthz, ingest over HTTP)
# share one client: httpx.get() builds a client, and with it an SSL context, on every call of a polling loop. It
# keeps no connection, so a restarted server never gets a dead one.
LOOPBACK = httpx.Client(trust_env=False, limits=httpx.Limits(max_keepalive_connections=0))


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# --- an ASGI live server (HTTP and websockets) in this process ------------------------------------


@pytest.fixture
def live_asgi(transactional_db) -> Iterator[str]:
    """The whole product (config.asgi) served by uvicorn on loopback, in a thread of the test process,
    so it sees the test database. Yields its base URL."""
    import uvicorn

    from config.asgi import application

    port = free_port()
    config = uvicorn.Config(
        application,
        host="127.0.0.1",
        port=port,
        log_level="warning",
        lifespan="off",
        ws="websockets-sansio",
        proxy_headers=False,  # as the project starts uvicorn (Procfile, config/launcher.py)
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 15
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the ASGI live server did not start")
        time.sleep(0.02)
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(timeout=10)


# --- a real Celery worker against the test database -------------------------------------------------


def _test_database_url() -> str:
    from django.db import connection

    settings = connection.settings_dict
    if connection.vendor == "sqlite":
        return f"sqlite:///{settings['NAME']}"
    user = settings.get("USER") or ""
    password = f":{settings['PASSWORD']}" if settings.get("PASSWORD") else ""
    auth = f"{user}{password}@" if user else ""
    port = f":{settings['PORT']}" if settings.get("PORT") else ""
    return f"postgres://{auth}{settings.get('HOST') or '127.0.0.1'}{port}/{settings['NAME']}"


@dataclass
class WorkerProcess:
    process: subprocess.Popen
    log_path: Path

    def log(self) -> str:
        return self.log_path.read_text() if self.log_path.exists() else ""

    def kill(self) -> None:
        """SIGKILL, as a crash would."""
        self.process.kill()
        self.process.wait(timeout=10)


@pytest.fixture
def start_worker(transactional_db, tmp_path) -> Iterator[Callable[..., WorkerProcess]]:
    """Start real Celery worker processes (optionally with beat) on the test database and Redis, consuming every
    queue of the inbox or the ``queues`` given."""
    from django.conf import settings

    started: list[WorkerProcess] = []

    # Tests without a worker still queue tasks (on commit). Drop them before this test's body runs, so its
    # workers see only what this test queues (possibly before starting them), not other tests' stale ids.
    from config.celery import app

    app.control.purge()

    def start(
        *, beat: bool = False, extra_env: dict[str, str] | None = None, queues: list[str] | None = None
    ) -> WorkerProcess:
        env = {**os.environ, "DATABASE_URL": _test_database_url(), "INBOX_VAR_DIR": str(settings.VAR_DIR)}
        # Tests read what a worker e-mailed from its log: Django's console backend prints each message whole
        # (the default, config.devmail, writes it to a file; tests/inbox/test_dev_mail.py asks for that one).
        env.setdefault("EMAIL_BACKEND", "django.core.mail.backends.console.EmailBackend")
        if not settings.EMBEDDED_REDIS:
            env["REDIS_URL"] = settings.REDIS_URL
        env.update(extra_env or {})
        log_path = tmp_path / f"worker-{len(started)}.log"
        command = [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "config",
            "worker",
            "--pool=solo",
            "--loglevel=INFO",
            "-Q",
            ",".join(queues or [queue.name for queue in settings.CELERY_TASK_QUEUES]),
            "-n",
            f"test-{os.getpid()}-{len(started)}@%h",
        ]
        if beat:
            command += ["--beat", "--schedule", str(tmp_path / "beat-schedule")]
        with open(log_path, "w") as log:
            process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
        worker = WorkerProcess(process, log_path)
        started.append(worker)
        deadline = time.monotonic() + 60
        while "ready." not in worker.log():
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the Celery worker did not start:\n{worker.log()[-3000:]}")
            time.sleep(0.1)
        return worker

    yield start
    for worker in started:
        if worker.process.poll() is None:
            worker.process.terminate()
            try:
                worker.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                worker.process.kill()


# --- Debian's Chromium through Playwright ---------------------------------------------------------


@pytest.fixture(scope="session")
def browser() -> Iterator[object]:
    if not Path(CHROMIUM).exists() or shutil.which("chromium") is None:
        message = f"Chromium is not installed at {CHROMIUM}: browser tests need `apt-get install -y chromium`."
        if IN_CI:
            pytest.fail(message)
        pytest.skip(message)
    from playwright.sync_api import sync_playwright

    # Playwright's sync API leaves an asyncio loop on the main thread for the rest of the session, which makes
    # Django refuse sync ORM calls in every later test ("async context"); there is no real async code here.
    previous = os.environ.get("DJANGO_ALLOW_ASYNC_UNSAFE")
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    try:
        with sync_playwright() as playwright:
            chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
            yield chromium
            chromium.close()
    finally:
        if previous is None:
            os.environ.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
        else:
            os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = previous


@pytest.fixture
def login(browser, live_asgi) -> Callable[..., object]:
    """A new browser context logged in as ``user``: ``page = login(alice)``."""
    contexts = []

    def open_as(user: User):
        context = browser.new_context(base_url=live_asgi, viewport={"width": 1360, "height": 900})
        contexts.append(context)
        return sign_in(context, user)

    yield open_as
    for context in contexts:
        context.close()


# What each marker stands for, by the fixtures that bring the real part in. `make test-fast` deselects the three
# markers, so a test that uses one of these fixtures is marked even where its module forgot to say so.
MARKER_FIXTURES = {
    "browser": {"browser", "login"},
    "worker": {"start_worker"},
    "integration": {"demo_server", "scripted"},
}


def pytest_collection_modifyitems(config, items) -> None:
    # CI runs the suite twice. The SQLite run leaves PostgreSQL-only tests to the other; the PostgreSQL run leaves
    # out the tests marked ``once``, whose outcome no server changes (docs/testing.md): they ran on the first.
    other_run = "once" if os.environ.get("DATABASE_URL") else "postgresql"
    kept = [item for item in items if item.get_closest_marker(other_run) is None]
    if len(kept) != len(items):
        config.hook.pytest_deselected(items=[item for item in items if item not in kept])
        items[:] = kept
    for item in items:
        fixtures = set(getattr(item, "fixturenames", ()))
        for marker, needs in MARKER_FIXTURES.items():
            if fixtures & needs and item.get_closest_marker(marker) is None:
                item.add_marker(marker)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """With CI=true a skip is a failure: CI must have everything the suite needs (docs/testing.md)."""
    outcome = yield
    report = outcome.get_result()
    if IN_CI and report.skipped and not hasattr(report, "wasxfail"):
        report.outcome = "failed"
        report.longrepr = f"skipped in CI, which counts as a failure: {report.longrepr}"
