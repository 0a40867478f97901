"""A realistic mixed load: Locust (``bench/locustfile.py``) against the product deployed as in production.

Creates a scratch PostgreSQL database ``bench_mixed`` (dropped afterwards), starts on loopback ports: the demo
agent (``agents/demo.py``), the web server (uvicorn with ``--web`` worker processes, the connection pool on),
``--workers`` Celery worker processes and Celery beat (Redis: ``BENCH_REDIS_URL``, default db 9, with queue and
channel prefixes of its own). It registers 20 agents pointing at the demo agent and 50 approvers in their team,
then runs Locust headless for ``--seconds`` with 20 agent users posting runs and 50 approvers working the inbox
(websockets open). Prints per-endpoint p50 / p95, failures, the sustained decisions per second and what became
of the resumes the decisions queued. Nothing leaves 127.0.0.1.

    .venv/bin/python bench/mixed_load.py [--seconds 60] [--web 2] [--workers 2] [--agents 20] [--approvers 50]
"""

from __future__ import annotations

import argparse
import csv
import os
import secrets
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))

import fixture  # noqa: E402
from next_page import free_port  # noqa: E402

ROOT = fixture.ROOT
DB_NAME = "bench_mixed"
PREFIX = "inbox-bench-mixed"
PASSWORD = "load-load-load-1"

SETUP = """
from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY
from django.contrib.auth.models import Group, User
from django.contrib.sessions.backends.db import SessionStore
from agents.models import Agent
from inbox.teams.backends import PasswordBackend
team = Group.objects.create(name="load")
for n in range({approvers}):
    user = User.objects.create_user(f"approver-{{n}}", password="{password}")
    user.groups.add(team)
    # Logged in ahead of the run: 50 password hashes at once would spend the load's first seconds on PBKDF2.
    session = SessionStore()
    backend = f"{{PasswordBackend.__module__}}.{{PasswordBackend.__qualname__}}"  # the password login's, as a login sets
    session[SESSION_KEY], session[BACKEND_SESSION_KEY] = str(user.pk), backend
    session[HASH_SESSION_KEY] = user.get_session_auth_hash()
    session.create()
    print("SESSION", session.session_key)
for n in range({agents}):
    agent = Agent.objects.create(slug=f"load-{{n}}", name=f"Load {{n}}", endpoint_url="{endpoint}")
    agent.teams.add(team)
    print("TOKEN", agent.issue_token(label="mixed load")[1])
"""

REPORT = """
from django.db.models import Count
from inbox.models import InboxItem, Resume
print("items", dict(InboxItem.objects.values_list("status").annotate(n=Count("pk")).order_by()))
print("resumes", dict(Resume.objects.values_list("state").annotate(n=Count("pk")).order_by()))
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=int, default=60)
    parser.add_argument("--web", type=int, default=2, help="uvicorn worker processes")
    parser.add_argument("--workers", type=int, default=2, help="Celery worker processes")
    parser.add_argument("--agents", type=int, default=20)
    parser.add_argument("--approvers", type=int, default=50)
    parser.add_argument("--db", choices=["postgres", "sqlite"], default="postgres")
    args = parser.parse_args()
    port, demo_port = free_port(), free_port()
    var_dir = tempfile.mkdtemp(prefix="bench-mixed-")
    redis_url = os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/9")
    env = {
        **os.environ,
        "INBOX_VAR_DIR": var_dir,
        "DEBUG": "0",
        "LOG_LEVEL": "WARNING",
        "REDIS_URL": redis_url,
        "CELERY_QUEUE": PREFIX,
        "CHANNELS_PREFIX": PREFIX,
        "SITE_URL": f"http://127.0.0.1:{port}",
        "INBOX_EXPIRE_SWEEP_SECONDS": "5",
        "INBOX_AGENT_ALLOWED_NETWORKS": "127.0.0.0/8",  # the demo agent listens on loopback
        # One key for every process: the sessions made beforehand must be valid in the web processes (with no
        # SECRET_KEY and no var/secret_key file, each process would sign with a key of its own).
        "SECRET_KEY": os.environ.get("SECRET_KEY") or secrets.token_urlsafe(50),
    }
    if args.db == "postgres":
        fixture.psql(f"DROP DATABASE IF EXISTS {DB_NAME} WITH (FORCE)")
        fixture.psql(f"CREATE DATABASE {DB_NAME}")
        env["DATABASE_URL"] = fixture.pg_url(DB_NAME)
    py = sys.executable
    processes: list[subprocess.Popen] = []
    csv_prefix = os.path.join(var_dir, "locust")
    try:
        subprocess.run([py, "manage.py", "migrate", "-v", "0"], cwd=ROOT, env=env, check=True)
        setup = SETUP.format(
            approvers=args.approvers, agents=args.agents, password=PASSWORD, endpoint=f"http://127.0.0.1:{demo_port}/"
        )
        out = subprocess.run(
            [py, "manage.py", "shell", "-c", setup], cwd=ROOT, env=env, check=True, capture_output=True, text=True
        )
        tokens = [line.split()[1] for line in out.stdout.splitlines() if line.startswith("TOKEN ")]
        sessions = [line.split()[1] for line in out.stdout.splitlines() if line.startswith("SESSION ")]

        def start(*command: str) -> None:
            processes.append(subprocess.Popen(list(command), cwd=ROOT, env=env, stdout=subprocess.DEVNULL))

        start(py, "-m", "agents.demo", "--port", str(demo_port))
        # Options without spaces are written as one string each; paths stay separate arguments.
        uvicorn = f"--host 127.0.0.1 --port {port} --workers {args.web} --no-proxy-headers --no-access-log --log-level warning"
        start(py, "-m", "uvicorn", "config.asgi:application", *uvicorn.split())
        for n in range(args.workers):
            worker = f"worker -Q {PREFIX} -c 1 -n load-{n}@%h --loglevel WARNING"
            start(py, "-m", "celery", "-A", "config", *worker.split())
        schedule = os.path.join(var_dir, "celerybeat-schedule")
        start(py, "-m", "celery", "-A", "config", "beat", "--loglevel", "WARNING", "-s", schedule)
        _wait_for(f"http://127.0.0.1:{port}/accounts/login/")
        load_env = {
            **env,
            "INBOX_LOAD_TOKENS": ",".join(tokens),
            "INBOX_LOAD_SESSIONS": ",".join(sessions),
            "INBOX_LOAD_DEMO_URL": f"http://127.0.0.1:{demo_port}/",
        }
        users = args.agents + args.approvers
        locust = subprocess.run(
            [
                str(Path(py).parent / "locust"),
                "-f",
                str(ROOT / "bench" / "locustfile.py"),
                "--csv",
                csv_prefix,
                *(
                    f"--headless --host http://127.0.0.1:{port} --users {users} --spawn-rate {max(10, users // 5)} "
                    f"--run-time {args.seconds}s --only-summary --stop-timeout 10 --loglevel WARNING"
                ).split(),
            ],
            cwd=ROOT,
            env=load_env,
            capture_output=True,
            text=True,
        )
        decisions = [line for line in locust.stdout.splitlines() + locust.stderr.splitlines() if "decisions" in line]
        time.sleep(5)  # let the workers deliver the last resumes
        report = subprocess.run(
            [py, "manage.py", "shell", "-c", REPORT], cwd=ROOT, env=env, check=True, capture_output=True, text=True
        ).stdout
    finally:
        fixture.stop(processes)
        import redis

        connection = redis.Redis.from_url(redis_url)
        connection.delete(PREFIX)
        for key in connection.scan_iter(f"{PREFIX}*"):
            connection.delete(key)
        if args.db == "postgres":
            fixture.psql(f"DROP DATABASE IF EXISTS {DB_NAME} WITH (FORCE)")

    print(
        f"mixed load: {args.agents} agents posting runs, {args.approvers} approvers (websockets open), "
        f"{args.seconds} s; uvicorn x{args.web}, {args.workers} Celery workers + beat, {args.db} + Redis, demo agent"
    )
    print(f"  {'endpoint':44} {'requests':>8} {'failures':>8} {'p50 ms':>7} {'p95 ms':>7} {'req/s':>6}")
    with open(f"{csv_prefix}_stats.csv") as stats:
        for row in csv.DictReader(stats):
            name = row["Name"] if row["Name"] != "Aggregated" else "all"
            print(
                f"  {name[:44]:44} {row['Request Count']:>8} {row['Failure Count']:>8} {row['50%']:>7} "
                f"{row['95%']:>7} {float(row['Requests/s']):6.1f}"
            )
    failures_file = f"{csv_prefix}_failures.csv"
    if os.path.exists(failures_file):
        with open(failures_file) as failures:
            for row in csv.DictReader(failures):
                print(f"  failure: {row['Method']} {row['Name']}: {row['Error'][:160]} x{row['Occurrences']}")
    for line in decisions:
        print(f"  {line.strip()}")
    for line in report.splitlines():
        print(f"  {line}")
    return locust.returncode


def _wait_for(url: str) -> None:
    for _ in range(600):
        try:
            if httpx.get(url, timeout=2).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.1)
    raise RuntimeError(f"{url} did not come up")


if __name__ == "__main__":
    sys.exit(main())
