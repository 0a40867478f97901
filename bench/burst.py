"""A burst: agents post ``--runs`` runs while approvers decide them as fast as the API accepts; a loopback agent
receives the resumes.

    .venv/bin/python bench/burst.py [--runs 5000] [--workers 1|2] [--agents 10] [--approvers 8] [--canaries 20]

Creates a scratch PostgreSQL database ``bench_burst`` (dropped afterwards) and starts the processes ``make run``
starts (config/launcher.py: uvicorn with its web processes and the connection pool, a Celery worker of two
processes beside a one-process worker of the deadlines queue — ``--workers`` of each — and beat) on Redis (``BENCH_REDIS_URL``, default db 10, queue and channel
prefixes of its own), and a loopback AG-UI agent that answers every resume with a finished run and counts what it
received. Agent threads post runs of one interrupt each (``POST /api/v1/runs``); approver threads decide each item
as soon as its run is stored (``POST /api/v1/items/<id>/decision``, ``undoable: false``). ``--canaries`` runs of
another agent are left open under the rule "still open after 1 minute: escalate", so escalations fall due during
the burst (beat's escalation sweep every second: what is measured is the wait, not the sweep period).

Prints decisions/s accepted; p50/p99 decision → agent received; last decision → last resume delivered; the deepest
each Celery queue got (LLEN sampled in Redis) beside the most resumes pending; escalation lateness; the most
database connections seen (pg_stat_activity) beside what the pools allow; each resume delivered exactly once;
5xx answers — beside the reference measured in the same run: the bare rate at which the loopback agent accepts
POSTs. Nothing leaves 127.0.0.1.
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import secrets
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter, defaultdict
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(1, str(Path(__file__).resolve().parent.parent))

import fixture  # noqa: E402
from next_page import free_port  # noqa: E402

ROOT = fixture.ROOT
DB_NAME = "bench_burst"
PREFIX = "inbox-bench-burst"
SCHEMA = {"type": "object", "properties": {"approved": {"type": "boolean"}}, "required": ["approved"]}

SETUP = """
from django.contrib.auth.models import Group, User
from agents.models import Agent
from inbox.models import ApiToken, EscalationRule
team = Group.objects.create(name="burst")
leads = Group.objects.create(name="burst leads")
for n in range({approvers}):
    user = User.objects.create_user(f"approver-{{n}}")
    user.groups.add(team)
    print("APPROVER", ApiToken.issue(user, label="burst")[1])
for n in range({agents}):
    agent = Agent.objects.create(slug=f"burst-{{n}}", name=f"Burst {{n}}", endpoint_url="{endpoint}")
    agent.teams.add(team)
    print("AGENT", agent.issue_token(label="burst")[1])
canary = Agent.objects.create(slug="canary", name="Canary", endpoint_url="{endpoint}")
canary.teams.add(team)
print("CANARY", canary.issue_token(label="burst")[1])
# Set by staff, as a rule that hands items to a team that does not decide them must be (a rule nobody may grant
# is skipped by the sweep).
admin = User.objects.create_user("burst-admin", is_staff=True)
EscalationRule.objects.create(agent=canary, after_minutes=1, to_team=leads, created_by=admin)
"""

REPORT = """
import json
from datetime import timedelta
from django.db.models import Count
from inbox.models import Escalation, Resume
late = [
    (e.fired_at - e.item.created_at - timedelta(minutes=1)).total_seconds()
    for e in Escalation.objects.select_related("item")
]
resumes = dict(Resume.objects.values_list("state").annotate(n=Count("pk")).order_by())
# Why a resume was sent more than once: every resume that took a second attempt, with its audit trail's verbs and notes.
from inbox.models import AuditEvent
again = {{
    r.thread.thread_id: [
        (e.verb, (e.data or {{}}).get("note") or (e.data or {{}}).get("error") or "")
        for e in AuditEvent.objects.filter(object_type="resume", object_id=str(r.pk)).order_by("pk")
    ]
    for r in Resume.objects.filter(attempts__gt=1).select_related("thread")[:20]
}}
print(json.dumps({{"late": late, "resumes": resumes, "again": again}}))
"""


# --- the loopback agent --------------------------------------------------------------------------------------


def serve_agent(port: int) -> None:
    """``--serve-agent PORT``: answer every POST with a finished AG-UI run; GET /record says what arrived when."""
    received: dict[str, list[float]] = defaultdict(list)
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True  # headers and body leave as written, not after a delayed ACK

        def log_message(self, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
            thread_id, run_id = body.get("threadId", "t"), body.get("runId", "r")
            if not self.path.startswith("/reference"):
                with lock:
                    received[thread_id].append(time.time())
            events = [
                {"type": "RUN_STARTED", "threadId": thread_id, "runId": run_id},
                {"type": "RUN_FINISHED", "threadId": thread_id, "runId": run_id, "outcome": {"type": "success"}},
            ]
            payload = "".join(f"data: {json.dumps(event)}\n\n" for event in events).encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def do_GET(self) -> None:
            with lock:
                payload = json.dumps(received).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    server.daemon_threads = True
    server.serve_forever()


def reference_rate(agent_url: str, posts: int, concurrency: int) -> float:
    """POSTs/s the loopback agent accepts, bare: resume-sized bodies, ``concurrency`` at a time, a new client and
    connection each with one certificate context for all (as the inbox's client: agents.endpoints.tls_context)."""
    from agents.endpoints import tls_context

    body = {"threadId": "reference", "runId": "reference", "messages": [], "state": {}, "tools": [], "context": []}
    context = tls_context()

    def one(_: int) -> None:
        with httpx.Client(trust_env=False, timeout=10, verify=context) as client:
            client.post(agent_url + "reference", json=body).raise_for_status()

    started = time.perf_counter()
    with ThreadPoolExecutor(concurrency) as pool:
        list(pool.map(one, range(posts)))
    return posts / (time.perf_counter() - started)


# --- sampling queues and connections -------------------------------------------------------------------------


class Sampler(threading.Thread):
    """Every half second: each Celery queue's length in Redis, the pending resumes, the database's sessions."""

    def __init__(self, redis_url: str, database_url: str) -> None:
        super().__init__(daemon=True)
        import psycopg
        import redis

        self.redis = redis.Redis.from_url(redis_url)
        self.db = psycopg.connect(database_url, autocommit=True)
        self.stop = threading.Event()
        self.deepest: Counter[str] = Counter()
        self.most_pending = 0
        self.most_connections = 0
        self.worst_excess = -(10**9)  # messages in all queues less pending resumes, at its highest

    def run(self) -> None:
        while not self.stop.wait(0.5):
            try:
                self.sample()
            except Exception as exc:  # a sample lost is not the run lost
                print(f"  (a sample failed: {exc})", file=sys.stderr)

    def sample(self) -> None:
        lengths = {}
        for key in self.redis.scan_iter(f"{PREFIX}*", count=1000):
            if self.redis.type(key) == b"list":
                lengths[key.decode(errors="replace")] = self.redis.llen(key)
        for name, length in lengths.items():
            self.deepest[name] = max(self.deepest[name], length)
        row = self.db.execute(
            "SELECT (SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND pid <> "
            "pg_backend_pid()), (SELECT count(*) FROM inbox_resume WHERE state = 'pending')"
        ).fetchone()
        connections, pending = int(row[0]), int(row[1])
        self.most_connections = max(self.most_connections, connections)
        self.most_pending = max(self.most_pending, pending)
        self.worst_excess = max(self.worst_excess, sum(lengths.values()) - pending)


# --- the burst -----------------------------------------------------------------------------------------------


def run_body(thread_id: str) -> dict[str, Any]:
    interrupt: dict[str, Any] = {
        "id": f"int-{thread_id}",
        "reason": "tool_call",
        "message": f"Pay invoice {thread_id}?",
        "toolCallId": f"tc-{thread_id}",
        "responseSchema": SCHEMA,
    }
    events = [
        {"type": "RUN_STARTED", "threadId": thread_id, "runId": f"run-{thread_id}"},
        {"type": "TOOL_CALL_START", "toolCallId": f"tc-{thread_id}", "toolCallName": "payInvoice"},
        {"type": "TOOL_CALL_ARGS", "toolCallId": f"tc-{thread_id}", "delta": '{"invoice": 1}'},
        {"type": "TOOL_CALL_END", "toolCallId": f"tc-{thread_id}"},
        {
            "type": "RUN_FINISHED",
            "threadId": thread_id,
            "runId": f"run-{thread_id}",
            "outcome": {"type": "interrupt", "interrupts": [interrupt]},
        },
    ]
    return {"events": events}


class Burst:
    def __init__(self, base: str, agents: list[str], approvers: list[str]) -> None:
        self.base = base
        self.agents = agents
        self.approvers = approvers
        self.items: queue.Queue[tuple[int, str] | None] = queue.Queue()
        self.decided_at: dict[str, float] = {}
        self.statuses: Counter[int] = Counter()
        self.failures: list[str] = []  # the first 5xx answers: which request, what the body said
        self.lock = threading.Lock()
        self.first_decision = self.last_decision = 0.0

    def _count(self, status: int, response: httpx.Response | None = None) -> None:
        with self.lock:
            self.statuses[status] += 1
            if status >= 500 and response is not None and len(self.failures) < 10:
                self.failures.append(
                    f"{status} {response.request.method} {response.request.url.path}: {response.text[:200]}"
                )

    def post_runs(self, index: int, threads: list[str]) -> None:
        token = self.agents[index % len(self.agents)]
        with httpx.Client(base_url=self.base, trust_env=False, timeout=60) as client:
            for thread_id in threads:
                response = client.post(
                    "/api/v1/runs", json=run_body(thread_id), headers={"Authorization": f"Bearer {token}"}
                )
                self._count(response.status_code, response)
                if response.status_code in (200, 201):
                    self.items.put((response.json()["items"][0]["id"], thread_id))

    def decide(self, index: int) -> None:
        token = self.approvers[index % len(self.approvers)]
        body = {"status": "resolved", "payload": {"approved": True}, "undoable": False}
        with httpx.Client(base_url=self.base, trust_env=False, timeout=60) as client:
            while (taken := self.items.get()) is not None:
                item_id, thread_id = taken
                response = client.post(
                    f"/api/v1/items/{item_id}/decision", json=body, headers={"Authorization": f"Token {token}"}
                )
                now = time.time()
                self._count(response.status_code, response)
                if response.status_code in (200, 201):
                    with self.lock:
                        self.decided_at[thread_id] = now
                        self.first_decision = self.first_decision or now
                        self.last_decision = max(self.last_decision, now)


def percentile(values: list[float], fraction: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(fraction * (len(ordered) - 1))))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5000)
    parser.add_argument("--workers", type=int, choices=[1, 2], default=1, help="Celery workers as make run starts")
    parser.add_argument("--agents", type=int, default=10, help="agents posting, one thread each")
    parser.add_argument("--approvers", type=int, default=8, help="approvers deciding, one thread each")
    parser.add_argument("--canaries", type=int, default=20, help="runs left open to escalate (0: none)")
    parser.add_argument("--drain-timeout", type=float, default=600.0, help="seconds to wait for the last resume")
    parser.add_argument("--serve-agent", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve_agent:
        serve_agent(args.serve_agent)
        return 0

    port, agent_port = free_port(), free_port()
    agent_url = f"http://127.0.0.1:{agent_port}/"
    var_dir = tempfile.mkdtemp(prefix="bench-burst-")
    redis_url = os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/10")
    database_url = fixture.pg_url(DB_NAME)
    env = {
        **os.environ,
        "INBOX_VAR_DIR": var_dir,
        "DEBUG": "0",
        "LOG_LEVEL": "WARNING",
        "DATABASE_URL": database_url,
        "REDIS_URL": redis_url,
        "CELERY_QUEUE": PREFIX,
        "CHANNELS_PREFIX": PREFIX,
        "SITE_URL": f"http://127.0.0.1:{port}",
        "INBOX_AGENT_ALLOWED_NETWORKS": "127.0.0.0/8",  # the agent listens on loopback
        "INBOX_ESCALATION_SWEEP_SECONDS": "1",
        "EMAIL_BACKEND": "django.core.mail.backends.locmem.EmailBackend",
        "SECRET_KEY": os.environ.get("SECRET_KEY") or secrets.token_urlsafe(50),
    }
    env.pop("INBOX_AGENT_STREAM_DEADLINE", None)
    os.environ["DATABASE_URL"] = database_url  # for web_processes() below: PostgreSQL's default
    os.environ["CELERY_QUEUE"] = PREFIX  # for the workers' -Q lists (config.queues)
    from config import queues
    from config.launcher import celery_worker, web_processes

    web = web_processes()
    py = sys.executable
    processes: list[subprocess.Popen] = []
    log = open(os.path.join(var_dir, "processes.log"), "w")
    fixture.psql(f"DROP DATABASE IF EXISTS {DB_NAME} WITH (FORCE)")
    fixture.psql(f"CREATE DATABASE {DB_NAME}")
    sampler: Sampler | None = None
    try:
        subprocess.run([py, "manage.py", "migrate", "-v", "0"], cwd=ROOT, env=env, check=True)
        setup = SETUP.format(approvers=args.approvers, agents=args.agents, endpoint=agent_url)
        out = subprocess.run(
            [py, "manage.py", "shell", "-c", setup], cwd=ROOT, env=env, check=True, capture_output=True, text=True
        ).stdout.splitlines()
        approvers = [line.split()[1] for line in out if line.startswith("APPROVER ")]
        agents = [line.split()[1] for line in out if line.startswith("AGENT ")]
        canary = next(line.split()[1] for line in out if line.startswith("CANARY "))

        def start(*command: str) -> None:
            processes.append(subprocess.Popen(list(command), cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT))

        start(py, str(Path(__file__).resolve()), "--serve-agent", str(agent_port))
        uvicorn = (
            f"--host 127.0.0.1 --port {port} --workers {web} --no-proxy-headers --no-access-log --log-level warning"
        )
        start(py, "-m", "uvicorn", "config.asgi:application", *uvicorn.split())
        for n in range(args.workers):  # as config/launcher.py starts its workers: every queue, and the deadlines alone
            start(*celery_worker(f"burst-{n}", "WARNING", queues.every(), "--concurrency=2"))
            start(*celery_worker(f"burst-deadlines-{n}", "WARNING", [queues.name("deadlines")], "--pool=solo"))
        schedule = os.path.join(var_dir, "celerybeat-schedule")
        start(py, "-m", "celery", "-A", "config", "beat", "--loglevel", "WARNING", "--schedule", schedule)
        _wait_for(f"http://127.0.0.1:{port}/accounts/login/")
        _wait_for(agent_url + "record")

        reference = reference_rate(agent_url, min(args.runs, 1000), 2 * args.workers)
        sampler = Sampler(redis_url, database_url)
        sampler.start()
        base = f"http://127.0.0.1:{port}"
        burst = Burst(base, agents, approvers)
        threads = [f"burst-{n}" for n in range(args.runs)]
        shares = [threads[k :: args.agents] for k in range(args.agents)]
        canaries = [f"canary-{n}" for n in range(args.canaries)]
        started = time.time()
        with httpx.Client(base_url=base, trust_env=False, timeout=60) as client:  # canaries first: due mid-burst
            for thread_id in canaries:
                response = client.post(
                    "/api/v1/runs", json=run_body(thread_id), headers={"Authorization": f"Bearer {canary}"}
                )
                burst._count(response.status_code)
        with ThreadPoolExecutor(args.agents + args.approvers) as pool:
            deciders = [pool.submit(burst.decide, n) for n in range(args.approvers)]
            posters = [pool.submit(burst.post_runs, k, share) for k, share in enumerate(shares)]
            for future in posters:
                future.result()
            posted_at = time.time()
            for _ in deciders:
                burst.items.put(None)
            for future in deciders:
                future.result()
        decided = dict(burst.decided_at)
        deadline = time.monotonic() + args.drain_timeout
        record: dict[str, list[float]] = {}
        while time.monotonic() < deadline:
            record = httpx.get(agent_url + "record", timeout=10, trust_env=False).json()
            if sum(1 for thread_id in decided if thread_id in record) >= len(decided):
                break
            time.sleep(0.5)
        if canaries:  # the last canary falls due a minute after it arrived; the sweep fires it within seconds
            time.sleep(max(0.0, started + 60 + 15 - time.time()))
        time.sleep(2)  # any second copy in flight arrives
        record = httpx.get(agent_url + "record", timeout=10, trust_env=False).json()
        sampler.stop.set()
        sampler.join(timeout=5)
        report = json.loads(
            subprocess.run(
                [py, "manage.py", "shell", "-c", REPORT.format()],
                cwd=ROOT,
                env=env,
                check=True,
                capture_output=True,
                text=True,
            )
            .stdout.strip()
            .splitlines()[-1]
        )
    finally:
        if sampler is not None:
            sampler.stop.set()
            sampler.join(timeout=5)
            sampler.db.close()
        fixture.stop(processes)
        import redis

        connection = redis.Redis.from_url(redis_url)
        for key in connection.scan_iter(f"{PREFIX}*"):
            connection.delete(key)
        fixture.psql(f"DROP DATABASE IF EXISTS {DB_NAME} WITH (FORCE)")

    latencies = [(record[t][0] - decided[t]) * 1000 for t in decided if t in record]
    lost = [t for t in decided if t not in record]
    doubled = [t for t, times in record.items() if len(times) > 1]
    unasked = [t for t in record if t not in decided]
    last_delivery = max((times[-1] for t, times in record.items() if t in decided), default=float("nan"))
    span = burst.last_decision - burst.first_decision
    rate = len(decided) / span if span > 0 else float("nan")
    delivery_span = last_delivery - burst.first_decision
    delivery_rate = len(decided) / delivery_span if delivery_span > 0 else float("nan")
    late = report["late"]
    errors = sum(n for status, n in burst.statuses.items() if status >= 500)
    pool_max = int(os.environ.get("DB_POOL_MAX", "16"))
    allowed = web * pool_max + args.workers * 2 * 2 + 2  # each worker process and its lease thread; beat; sampler
    print(
        f"burst: {args.runs:,} runs of one interrupt from {args.agents} agents, {args.approvers} approvers deciding "
        f"through the API; uvicorn x{web}, {args.workers} Celery worker(s) of 2 processes and as many deadlines workers + beat; PostgreSQL + Redis; "
        f"a loopback agent receives the resumes ({args.canaries} canary runs left open to escalate)"
    )
    print(f"  reference: the loopback agent accepts {reference:,.0f} POSTs/s (bare, {2 * args.workers} at a time)")
    print(
        f"  decisions accepted        {rate:8.1f} /s   ({len(decided):,} in {span:.1f} s; ratio to the reference "
        f"{rate / reference:.3f})"
    )
    print(
        f"  resumes delivered         {delivery_rate:8.1f} /s   (first decision → last delivery; ratio to the reference "
        f"{delivery_rate / reference:.3f})"
    )
    print(
        f"  decision → agent received p50 {percentile(latencies, 0.5):,.0f} ms, p99 {percentile(latencies, 0.99):,.0f} "
        f"ms, max {max(latencies, default=float('nan')):,.0f} ms"
    )
    print(f"  last decision → last resume delivered {last_delivery - burst.last_decision:.1f} s")
    print(f"  posting took {posted_at - started:.1f} s; statuses {dict(sorted(burst.statuses.items()))}")
    print(
        f"  each resume delivered exactly once: {'yes' if not lost and not doubled and not unasked else 'NO'} "
        f"(decided {len(decided):,}, received {len(record):,}, not received by the end {len(lost)}, doubled "
        f"{len(doubled)}, received undecided {len(unasked)})"
    )
    print(f"  no 5xx: {'yes' if not errors else f'NO ({errors})'}")
    for failure in burst.failures:
        print(f"    {failure}")
    for thread_id, trail in report.get("again", {}).items():
        print(f"  sent more than once? {thread_id} ({len(record.get(thread_id, []))} received): {trail}")
    deepest = ", ".join(f"{name}: {depth:,}" for name, depth in sampler.deepest.most_common()) or "none sampled"
    print(f"  deepest queues: {deepest}; most resumes pending {sampler.most_pending:,}")
    print(f"  queued messages less pending resumes, at most: {sampler.worst_excess:,} (target: at most 100)")
    if late:
        print(
            f"  escalation lateness: p50 {percentile(late, 0.5):.1f} s, p99 {percentile(late, 0.99):.1f} s, "
            f"max {max(late):.1f} s over {len(late)} escalations (sweep every 1 s; target p99 under 5 s)"
        )
    missing = args.canaries - len(late)
    if missing > 0:
        print(f"  escalation: NO, {missing} of {args.canaries} canaries never escalated (each fell due a minute in)")
    elif not late:
        print("  escalation lateness: no escalation fell due (--canaries 0)")
    print(
        f"  most database connections seen: {sampler.most_connections} (the pools allow {allowed}: "
        f"{web} web x DB_POOL_MAX {pool_max}, {args.workers} worker(s) x 2 processes x 2, beat, the sampler)"
    )
    print(f"  resumes by state: {report['resumes']}")
    return 0 if not errors and not lost and not doubled and missing <= 0 else 1


def _wait_for(url: str) -> None:
    for _ in range(600):
        try:
            if httpx.get(url, timeout=2, trust_env=False).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.1)
    raise RuntimeError(f"{url} did not come up")


if __name__ == "__main__":
    sys.exit(main())
