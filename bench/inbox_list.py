"""Server time of the inbox list page with 100,000 stored items (10,000 open).

Creates a scratch database (PostgreSQL ``bench_inbox_list`` by default, dropped afterwards; ``--db sqlite``
uses a temporary SQLite file), bulk-loads agents, threads, runs and items, then renders ``/inbox/`` in-process
with Django's test client for a staff user (sees everything) and a team approver (sees their teams' agents),
across the tabs, a filter, a text search and a deep page. Prints p50 / p95 / max milliseconds and the number
of SQL queries per page. Nothing leaves 127.0.0.1.

    .venv/bin/python bench/inbox_list.py [--db postgres|sqlite] [--items 100000] [--open 10000] [--repeat 15]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PG_ADMIN = os.environ.get("BENCH_PG_ADMIN_URL", "postgres://postgres@127.0.0.1:5432/test")
DB_NAME = "bench_inbox_list"
PAGES = [
    ("open (default: expires soonest)", "/inbox/"),
    ("decided", "/inbox/?tab=decided"),
    ("all, newest", "/inbox/?tab=all"),
    ("all, page 100", "/inbox/?tab=all&page=100"),
    ("open, one agent", "/inbox/?agent=agent-1"),
    ("open, reason filter", "/inbox/?reason=input_required"),
    ("all, text search", "/inbox/?tab=all&q=invoice%2042"),
]


def psql(sql: str) -> None:
    subprocess.run(["psql", PG_ADMIN, "-q", "-c", sql], check=True, capture_output=True)


def setup_django(db: str, var_dir: str) -> None:
    os.environ["INBOX_VAR_DIR"] = var_dir
    os.environ["DEBUG"] = "0"
    os.environ.setdefault("REDIS_URL", "redis://127.0.0.1:6379/9")  # never used: nothing is pushed
    os.environ["LOG_LEVEL"] = "WARNING"
    if db == "postgres":
        base = PG_ADMIN.rsplit("/", 1)[0]
        os.environ["DATABASE_URL"] = f"{base}/{DB_NAME}"
    else:
        os.environ.pop("DATABASE_URL", None)
    os.environ["DJANGO_SETTINGS_MODULE"] = "config.settings"
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def load(total: int, open_count: int) -> tuple[object, object]:
    from django.contrib.auth.models import Group, User
    from django.db import transaction
    from django.utils import timezone

    from agents.models import Agent
    from inbox.models import InboxItem, Run, Thread

    started = time.perf_counter()
    now = timezone.now()
    staff = User.objects.create_user("staff", is_staff=True)
    approver = User.objects.create_user("approver")
    team, other_team = Group.objects.create(name="ops"), Group.objects.create(name="finance")
    approver.groups.add(team)
    agents = []
    for index in range(8):
        agent = Agent.objects.create(slug=f"agent-{index}", name=f"Agent {index}")
        agent.teams.add(team if index % 2 else other_team)
        agents.append(agent)
    reasons = ["tool_call", "tool_call", "input_required", "confirmation", "acme:db_migration"]
    per_run = 10
    runs_needed = total // per_run
    with transaction.atomic():
        threads = Thread.objects.bulk_create(
            [Thread(agent=agents[n % 8], thread_id=f"thread-{n}") for n in range(runs_needed)], batch_size=5000
        )
        runs = Run.objects.bulk_create(
            [
                Run(
                    agent=thread.agent,
                    thread=thread,
                    run_id=f"run-{n}",
                    outcome="interrupt",
                    messages_snapshot=[{"id": "m", "role": "user", "content": "please"}],
                    created_at=now - timedelta(minutes=runs_needed - n),
                )
                for n, thread in enumerate(threads)
            ],
            batch_size=5000,
        )
        statuses = ["resolved", "cancelled", "expired"]
        batch: list[InboxItem] = []
        for n in range(total):
            run = runs[n // per_run]
            is_open = n >= total - open_count  # the newest runs are the open ones
            reason = reasons[n % len(reasons)]
            batch.append(
                InboxItem(
                    agent_id=run.agent_id,
                    thread_id=run.thread_id,
                    run=run,
                    position=n % per_run,
                    interrupt_id=f"i-{n}",
                    reason=reason,
                    message=f"Approve invoice {n} for customer {n % 977}?",
                    tool_call_id=f"tc-{n}" if reason == "tool_call" else "",
                    tool_call={"id": f"tc-{n}", "name": "payInvoice", "args": {"invoice": n, "amount": n % 5000}}
                    if reason == "tool_call"
                    else None,
                    response_schema={"type": "object", "properties": {"approved": {"type": "boolean"}}},
                    raw={"id": f"i-{n}", "reason": reason},
                    metadata={"customer": n % 977},
                    status="open" if is_open else statuses[n % 3],
                    decided_by=None if is_open or n % 3 == 2 else approver,
                    decided_at=None if is_open else run.created_at + timedelta(minutes=5),
                    expires_at=now + timedelta(minutes=5 + n % 2000)
                    if is_open
                    else run.created_at + timedelta(hours=1),
                    created_at=run.created_at,
                )
            )
            if len(batch) == 5000:
                InboxItem.objects.bulk_create(batch)
                batch = []
        if batch:
            InboxItem.objects.bulk_create(batch)
    from django.db import connection

    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            # What autovacuum keeps up to date on a live database: statistics and the visibility map.
            cursor.execute("VACUUM ANALYZE")
    print(f"loaded {InboxItem.objects.count():,} items ({open_count:,} open) in {time.perf_counter() - started:.1f} s")
    return staff, approver


def measure(user, repeat: int) -> None:
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    client = Client()
    client.force_login(user)
    print(f"\n{user.username}: /inbox/ server time over {repeat} requests (ms)")
    print(f"  {'page':34} {'p50':>7} {'p95':>7} {'max':>7} {'queries':>8} {'rows':>5}")
    for label, url in PAGES:
        client.get(url)  # warm caches
        timings = []
        for _ in range(repeat):
            started = time.perf_counter()
            response = client.get(url)
            timings.append((time.perf_counter() - started) * 1000)
            assert response.status_code == 200, (url, response.status_code)
        with CaptureQueriesContext(connection) as queries:
            response = client.get(url)
        rows = response.content.count(b"<tr data-item-row")
        timings.sort()
        p95 = timings[min(len(timings) - 1, int(len(timings) * 0.95))]
        print(f"  {label:34} {statistics.median(timings):7.1f} {p95:7.1f} {timings[-1]:7.1f} {len(queries):8} {rows:5}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", choices=["postgres", "sqlite"], default="postgres")
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--open", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-inbox-list-") as var_dir:
        if args.db == "postgres":
            psql(f"DROP DATABASE IF EXISTS {DB_NAME}")
            psql(f"CREATE DATABASE {DB_NAME}")
        try:
            setup_django(args.db, var_dir)
            from django.db import connection

            print(f"database: {connection.vendor}")
            staff, approver = load(args.items, args.open)
            measure(staff, args.repeat)
            measure(approver, args.repeat)
        finally:
            if args.db == "postgres":
                from django.db import connections

                connections.close_all()
                psql(f"DROP DATABASE IF EXISTS {DB_NAME}")


if __name__ == "__main__":
    main()
