"""Latency of the outbox: from the closing decision to the agent receiving the resume (p50, p99).

Runs the real pieces on loopback: the demo agent and a Celery worker in subprocesses, Redis and the
database of the embedded default in a temporary directory (or DATABASE_URL / REDIS_URL if set).
Each round starts a run on the demo agent, approves its one interrupt with the decision service, and
reads from the agent's own record when the resume arrived. Bounded: ROUNDS rounds, 30 s per round. Beside the p50,
the reference measured in the same run: the p50 of a GET of the agent's /healthz from this process (the loopback
round trip a send cannot beat), and the ratio.
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ROUNDS = int(os.environ.get("BENCH_ROUNDS", "40"))
sys.path.insert(0, str(ROOT))


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(fraction * (len(ordered) - 1))))
    return ordered[index]


def main() -> None:
    var_dir = Path(tempfile.mkdtemp(prefix="bench-resume-"))
    os.environ["INBOX_VAR_DIR"] = str(var_dir)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ.setdefault("CELERY_QUEUE", f"bench-resume-{os.getpid()}")
    os.environ.setdefault("INBOX_AGENT_ALLOWED_NETWORKS", "127.0.0.0/8")  # its agent listens on loopback
    processes: list[subprocess.Popen] = []
    try:
        import django

        django.setup()
        import httpx
        from django.conf import settings
        from django.contrib.auth.models import User
        from django.core.management import call_command

        from config import queues

        call_command("migrate", verbosity=0)
        from agents.models import Agent
        from inbox.decisions.services import decision_submit
        from inbox.ingest.start import run_start
        from inbox.models import Resume

        port = free_port()
        log = open(var_dir / "processes.log", "w")
        processes.append(
            subprocess.Popen(
                [sys.executable, "-m", "agents.demo", "--port", str(port)],
                cwd=ROOT,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        )
        processes.append(
            subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "celery",
                    "-A",
                    "config",
                    "worker",
                    "--pool=solo",
                    "--loglevel=WARNING",
                    "-Q",
                    ",".join(queues.every()),  # every queue, as make run's worker
                    "-n",
                    f"bench-{os.getpid()}@%h",
                ],
                cwd=ROOT,
                env=os.environ.copy(),
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        )
        agent_url = f"http://127.0.0.1:{port}/"
        deadline = time.monotonic() + 30
        while True:
            try:
                httpx.get(agent_url + "healthz", timeout=1, trust_env=False)
                break
            except httpx.TransportError:
                if time.monotonic() > deadline:
                    raise SystemExit("the demo agent did not start") from None
                time.sleep(0.05)
        agent = Agent.objects.create(slug="bench", name="Bench", endpoint_url=agent_url)
        user = User.objects.create_user("bench", is_staff=True)

        latencies: list[float] = []
        for round_number in range(ROUNDS + 1):
            run = run_start(agent=agent, user=user, message="email").run
            item = run.items.get()
            decided_at = time.time()
            decision_submit(item_id=item.pk, user=user, status="resolved", payload={"approved": True})
            round_deadline = time.monotonic() + 30
            while not Resume.objects.filter(run=run, state="delivered").exists():
                if time.monotonic() > round_deadline:
                    raise SystemExit(f"round {round_number}: the resume was not delivered within 30 s")
                time.sleep(0.005)
            record = httpx.get(agent_url + "record", timeout=5, trust_env=False).json()
            received = next(
                r["receivedAt"] for r in record["requests"] if r["resume"] and r["threadId"] == run.thread.thread_id
            )
            if round_number:  # the first round warms the worker up
                latencies.append((received - decided_at) * 1000)
        with httpx.Client(timeout=5, trust_env=False) as http:
            trips = []
            for _ in range(ROUNDS):
                started = time.perf_counter()
                http.get(agent_url + "healthz")
                trips.append((time.perf_counter() - started) * 1000)
        reference = percentile(trips, 0.50)
        database = "PostgreSQL" if settings.DATABASES["default"]["ENGINE"].endswith("postgresql") else "SQLite"
        redis = "embedded Redis" if settings.EMBEDDED_REDIS else "Redis server"
        print(f"closing decision → agent receives the resume ({ROUNDS} rounds, Celery worker, {redis}, {database})")
        p50 = percentile(latencies, 0.50)
        print(
            f"  p50 {p50:7.1f} ms   reference {reference:.1f} ms (the agent's /healthz from here), ratio {p50 / reference:.0f}x"
        )
        print(f"  p99 {percentile(latencies, 0.99):7.1f} ms")
        print(f"  mean {statistics.mean(latencies):6.1f} ms, max {max(latencies):.1f} ms")
    finally:
        for process in processes:
            process.terminate()
        for process in processes:
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
        from config import embedded_redis

        embedded_redis.stop(var_dir)
        shutil.rmtree(var_dir, ignore_errors=True)


if __name__ == "__main__":
    main()
