"""Streaming the decisions export: 100,000 decisions as CSV and as JSON, with flat memory.

Creates a scratch database (a temporary SQLite file by default; ``--db postgres`` uses a PostgreSQL
database ``bench_export``, dropped afterwards), bulk-loads items and decisions, then reads the export
response chunk by chunk — the WSGI path (sync iterator) and the ASGI path (async iterator) — and prints
rows, bytes, seconds and the peak Python memory (tracemalloc) while streaming. For contrast it prints the
peak of materialising the same rows in one list. Nothing leaves 127.0.0.1.

    .venv/bin/python bench/export.py [--db sqlite|postgres] [--decisions 100000]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PG_ADMIN = os.environ.get("BENCH_PG_ADMIN_URL", "postgres://postgres@127.0.0.1:5432/test")
DB_NAME = "bench_export"


def psql(sql: str) -> None:
    subprocess.run(["psql", PG_ADMIN, "-q", "-c", sql], check=True, capture_output=True)


def setup_django(db: str, var_dir: str) -> None:
    os.environ["INBOX_VAR_DIR"] = var_dir
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    if db == "postgres":
        psql(f"DROP DATABASE IF EXISTS {DB_NAME} WITH (FORCE)")
        psql(f"CREATE DATABASE {DB_NAME}")
        os.environ["DATABASE_URL"] = PG_ADMIN.rsplit("/", 1)[0] + f"/{DB_NAME}"
    else:
        os.environ.pop("DATABASE_URL", None)
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def load(count: int) -> object:
    from datetime import timedelta

    from django.contrib.auth.models import Group, User
    from django.utils import timezone

    from agents.models import Agent
    from inbox.models import Decision, InboxItem, Run, Thread

    team = Group.objects.create(name="ops")
    staff = User.objects.create_user("staff", is_staff=True, is_superuser=True)
    approver = User.objects.create_user("approver")
    approver.groups.add(team)
    agent = Agent.objects.create(slug="mailer", name="Mailer")
    agent.teams.add(team)
    now = timezone.now()
    batch = 5000
    for start in range(0, count, batch):
        size = min(batch, count - start)
        threads = Thread.objects.bulk_create(
            [Thread(agent=agent, thread_id=f"thread-{start + n}") for n in range(size)]
        )
        runs = Run.objects.bulk_create(
            [
                Run(agent=agent, thread=thread, run_id=f"run-{thread.thread_id}", outcome="interrupt")
                for thread in threads
            ]
        )
        items = InboxItem.objects.bulk_create(
            [
                InboxItem(
                    agent=agent,
                    thread=run.thread,
                    run=run,
                    position=0,
                    interrupt_id=f"int-{run.pk}",
                    reason="tool_call",
                    message="Send the weekly report to the whole team?",
                    tool_call_id=f"tc-{run.pk}",
                    tool_call={
                        "id": f"tc-{run.pk}",
                        "name": "sendEmail",
                        "args": {"to": "team@example.com", "subject": "Weekly", "body": "x" * 200},
                    },
                    expires_at=now + timedelta(days=1),
                    status="resolved",
                    response_payload={"approved": True, "editedArgs": {"to": "team@example.com", "body": "y" * 200}},
                    decided_by=approver,
                    decided_at=now,
                )
                for run in runs
            ]
        )
        Decision.objects.bulk_create(
            [
                Decision(
                    item=item,
                    user=approver,
                    status="resolved",
                    payload=item.response_payload,
                    comment="Looks right; shortened the body.",
                    final=True,
                    outcome="approved_with_edits",
                )
                for item in items
            ]
        )
    return staff


def measure(label: str, consume: Callable[[], tuple[int, int]]) -> None:
    tracemalloc.start()
    started = time.perf_counter()
    rows, size = consume()
    elapsed = time.perf_counter() - started
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    print(f"  {label:<38} {rows:>8} rows  {size / 1e6:>7.1f} MB out  {elapsed:>6.2f} s  peak {peak / 1e6:>6.1f} MB")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", choices=["sqlite", "postgres"], default="sqlite")
    parser.add_argument("--decisions", type=int, default=100_000)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="bench-export-") as var_dir:
        setup_django(args.db, var_dir)
        try:
            run(args)
        finally:
            from django.db import connections

            connections.close_all()
            from config import embedded_redis

            embedded_redis.stop(Path(var_dir))
            if args.db == "postgres":
                psql(f"DROP DATABASE IF EXISTS {DB_NAME} WITH (FORCE)")


def run(args: argparse.Namespace) -> None:
    from asgiref.sync import async_to_sync
    from django.test import AsyncRequestFactory, RequestFactory

    from inbox.audit.exports import DECISION_FIELDS, AuditFilterForm, decision_row, export_response

    started = time.perf_counter()
    staff = load(args.decisions)
    print(f"export of {args.decisions} decisions on {args.db} (loaded in {time.perf_counter() - started:.1f} s)")

    def form() -> AuditFilterForm:
        bound = AuditFilterForm({}, user=staff)
        assert bound.is_valid()
        return bound

    def wsgi(fmt: str) -> Callable[[], tuple[int, int]]:
        def consume() -> tuple[int, int]:
            request = RequestFactory().get(f"/audit/export/decisions.{fmt}")
            request.user = staff
            response = export_response(request=request, form=form(), kind="decisions", fmt=fmt)
            size = rows = 0
            for chunk in response.streaming_content:
                size += len(chunk)
                rows += chunk.count(b"\n")
            return rows, size

        return consume

    def asgi(fmt: str) -> Callable[[], tuple[int, int]]:
        def consume() -> tuple[int, int]:
            request = AsyncRequestFactory().get(f"/audit/export/decisions.{fmt}")
            request.user = staff
            response = export_response(request=request, form=form(), kind="decisions", fmt=fmt)

            async def drain() -> tuple[int, int]:
                size = rows = 0
                async for chunk in response:
                    size += len(chunk)
                    rows += chunk.count(b"\n")
                return rows, size

            return async_to_sync(drain)()

        return consume

    def in_one_list() -> tuple[int, int]:
        rows = [
            decision_row(dict(zip(DECISION_FIELDS, values, strict=True)))
            for values in form().decisions().values_list(*DECISION_FIELDS.values())
        ]
        return len(rows), 0

    measure("CSV, streamed (WSGI, sync iterator)", wsgi("csv"))
    measure("JSON, streamed (WSGI, sync iterator)", wsgi("json"))
    measure("CSV, streamed (ASGI, async iterator)", asgi("csv"))
    measure("JSON, streamed (ASGI, async iterator)", asgi("json"))
    measure("for contrast: all rows in one list", in_one_list)
    print("  (rows counted as lines: CSV has a header line, JSON its opening and closing lines; seconds are measured")
    print("   under tracemalloc, which slows Python several-fold: read them relative to each other)")


if __name__ == "__main__":
    main()
