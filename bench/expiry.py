"""How long the expiry sweep takes on PostgreSQL: 100,000 stale items, then a sweep with nothing stale.

    .venv/bin/python bench/expiry.py [--items 100000] [--per-run 10] [--fresh 10000]

Creates its own database (``bench_expiry``) on the server of ``BENCH_PG_URL`` (default
``postgres://postgres@127.0.0.1:5432/test``), fills it, times ``inbox.expiry.expire_sweep()``, prints the
figures and drops the database. Targets: one sweep of 100k stale items under 2 s; a sweep with nothing
stale is a single indexed query (its plan is printed). Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from datetime import timedelta
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

DB_NAME = "bench_expiry"


class RolledBack(Exception):
    """Leaves the capturing sweep's transaction without keeping what it did."""


def server_url() -> str:
    return os.environ.get("BENCH_PG_URL", "postgres://postgres@127.0.0.1:5432/test")


def with_database(url: str, name: str) -> str:
    parts = urlsplit(url)
    return urlunsplit(parts._replace(path=f"/{name}"))


def admin(sql: str) -> None:
    import psycopg

    with psycopg.connect(server_url().replace("postgres://", "postgresql://", 1), autocommit=True) as conn:
        conn.execute(sql)


def scratch_environment(db_name: str, var_name: str) -> None:
    """A fresh scratch database ``db_name`` and the settings a bench process runs with: that database, the Redis
    server on loopback (``BENCH_REDIS_URL``, db 9, as the other benches: no embedded Redis left running), and a
    var dir of its own."""
    admin(f'DROP DATABASE IF EXISTS "{db_name}" WITH (FORCE)')
    admin(f'CREATE DATABASE "{db_name}"')
    os.environ["DATABASE_URL"] = with_database(server_url(), db_name)
    os.environ.setdefault("REDIS_URL", os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/9"))
    os.environ.setdefault("CHANNELS_PREFIX", "inbox-bench")
    os.environ.setdefault("CELERY_QUEUE", "inbox-bench")
    os.environ.setdefault("INBOX_VAR_DIR", str(ROOT / "var" / var_name))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ.setdefault("LOG_LEVEL", "WARNING")


def create_schema() -> str:
    from django.core.management import call_command
    from django.db import connection

    try:
        call_command("migrate", verbosity=0, interactive=False)
        return "migrations"
    except Exception as error:  # e.g. two migrations not merged yet: build the tables from the models
        print(
            f"  (migrate failed: {error.__class__.__name__}: {str(error).splitlines()[0]}; "
            "creating the tables from the models instead)"
        )
        from django.apps import apps

        with connection.schema_editor() as editor:
            for model in apps.get_models():
                if model._meta.managed and not model._meta.proxy:
                    editor.create_model(model)
        return "models"


BATCH = 5000


def bulk_runs(agent, count: int, prefix: str, created_at) -> list:
    """``count`` interrupted runs of ``agent``, each on a thread of its own."""
    from inbox.models import Run, Thread

    threads = Thread.objects.bulk_create(
        [Thread(agent=agent, thread_id=f"{prefix}-t{n}") for n in range(count)], batch_size=BATCH
    )
    return Run.objects.bulk_create(
        [
            Run(agent=agent, thread=thread, run_id=f"{prefix}-r{n}", outcome="interrupt", created_at=created_at)
            for n, thread in enumerate(threads)
        ],
        batch_size=BATCH,
    )


def bulk_items(
    agent, runs: list, *, per: int, prefix: str, reason: str, message: str, expires_at, created_at, tool: str = ""
) -> None:
    """``per`` open items on each run, written ``BATCH`` at a time. With ``tool``, each is a tool call to it, as the
    ingest stores one (a tool_call interrupt always names its tool call)."""
    from inbox.models import InboxItem

    rows = []
    for run in runs:
        for position in range(per):
            call_id = f"tc-{run.pk}-{position}"
            rows.append(
                InboxItem(
                    agent=agent,
                    thread_id=run.thread_id,
                    run=run,
                    position=position,
                    interrupt_id=f"{prefix}-{run.pk}-{position}",
                    reason=reason,
                    tool_call_id=call_id if tool else "",
                    tool_call={"id": call_id, "name": tool, "args": {"to": "cfo@example.com"}} if tool else None,
                    message=message,
                    expires_at=expires_at,
                    raw={"id": f"{prefix}-{run.pk}-{position}", "reason": reason},
                    created_at=created_at,
                )
            )
        if len(rows) >= BATCH:
            InboxItem.objects.bulk_create(rows)
            rows = []
    InboxItem.objects.bulk_create(rows)


def fill(*, items: int, per_run: int, fresh: int) -> None:
    from django.utils import timezone

    from agents.models import Agent

    now = timezone.now()
    agent = Agent.objects.create(slug="bench", name="Bench")
    for count, prefix, expires_at in (
        (items, "stale", now - timedelta(minutes=1)),
        (fresh, "fresh", now + timedelta(hours=1)),
    ):
        if count:
            bulk_items(
                agent,
                bulk_runs(agent, count // per_run, prefix, now),
                per=per_run,
                prefix=prefix,
                reason="tool_call",
                message="Send the quarterly report?",
                expires_at=expires_at,
                created_at=now - timedelta(hours=2),
                tool="sendEmail",
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=100_000, help="stale open items")
    parser.add_argument("--per-run", type=int, default=10, help="interrupts per run")
    parser.add_argument("--fresh", type=int, default=10_000, help="open items that are not stale")
    parser.add_argument("--pairs", type=int, default=3, help="rolled-back sweeps alternating with the reference")
    parser.add_argument("--profile", action="store_true", help="print where the stale sweep spends its time")
    parser.add_argument("--fill-only", action="store_true", help="fill the database, keep it, and stop")
    args = parser.parse_args()

    scratch_environment(DB_NAME, "bench-expiry")
    try:
        import django

        django.setup()
        from django.db import connection, connections, reset_queries, transaction
        from django.test.utils import CaptureQueriesContext
        from django.utils import timezone

        from inbox.expiry.services import anything_stale, expire_sweep
        from inbox.models import AuditEvent, InboxItem

        print(f"PostgreSQL {connection.cursor().connection.info.server_version}, database {DB_NAME}")
        started = time.perf_counter()
        schema = create_schema()
        fill(items=args.items, per_run=args.per_run, fresh=args.fresh)
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE")
        print(
            f"schema from {schema}; filled {args.items:,} stale + {args.fresh:,} fresh open items "
            f"({args.per_run} per run) in {time.perf_counter() - started:.1f} s"
        )
        if args.fill_only:
            print(f"kept {DB_NAME} (--fill-only); drop it with: DROP DATABASE {DB_NAME}")
            os._exit(0)

        now = timezone.now()

        # The reference, in this run on this machine: the sweep's own SQL run bare, the statements one sweep of
        # these rows executes (captured in a sweep that is rolled back) replayed through a raw cursor. The sweep and
        # its bare SQL alternate, each rolled back and followed by VACUUM, ``--pairs`` times; medians compare.
        # For context, the same rows closed by one bare UPDATE (no RETURNING, no audit rows, nothing else).
        def vacuum() -> None:
            with connection.cursor() as cursor:
                cursor.execute("VACUUM ANALYZE inbox_inboxitem")
                cursor.execute("VACUUM ANALYZE inbox_auditevent")

        def rolled_back(work) -> float:
            started = time.perf_counter()
            try:
                with transaction.atomic():
                    work()
                    took = time.perf_counter() - started
                    raise RolledBack
            except RolledBack:
                pass
            vacuum()
            return took

        def captured_sweep() -> None:
            with CaptureQueriesContext(connection) as captured:
                expire_sweep(now=now)
            statements.extend(q["sql"] for q in captured.captured_queries)

        statements: list[str] = []
        rolled_back(captured_sweep)
        statements = [sql for sql in statements if not sql.startswith(("SAVEPOINT", "RELEASE"))]

        def bare_sql() -> None:
            with connection.cursor() as cursor:
                for statement in statements:
                    cursor.execute(statement.replace("%", "%%"))

        def bare_update() -> None:
            with connection.cursor() as cursor:
                cursor.execute(
                    "UPDATE inbox_inboxitem SET status = 'expired', outcome = 'expired', status_note = 'x', "
                    "decided_at = %s WHERE status = 'open' AND expires_at <= %s",
                    [now, now],
                )

        sweeps, references = [], []
        for _ in range(args.pairs):
            references.append(rolled_back(bare_sql))
            sweeps.append(rolled_back(lambda: expire_sweep(now=now)))
        own_sql, rolled_sweep = statistics.median(references), statistics.median(sweeps)
        bare = rolled_back(bare_update)
        with CaptureQueriesContext(connection) as queries:
            started = time.perf_counter()
            if args.profile:
                import cProfile
                import pstats

                profiler = cProfile.Profile()
                expired = profiler.runcall(expire_sweep, now=now)
                pstats.Stats(profiler).sort_stats("cumulative").print_stats(45)
            else:
                expired = expire_sweep(now=now)
            sweep = time.perf_counter() - started
        audits = AuditEvent.objects.filter(verb="item.expired").count()
        still_open = InboxItem.objects.filter(status="open", expires_at__lte=now).count()
        print(
            f"sweep of stale items:   {sweep:.3f} s  expired {expired:,} items, {audits:,} audit events, "
            f"{len(queries.captured_queries)} statements, {still_open} stale left  (target < 2 s)"
        )
        print(
            f"sweep rolled back, median of {args.pairs}: {rolled_sweep:.3f} s; reference, the sweep's own "
            f"{len(statements)} statements run bare, median of {args.pairs}: {own_sql:.3f} s; "
            f"ratio {rolled_sweep / own_sql:.2f} (target 1.2)"
        )
        print(
            f"context, a bare UPDATE of the same rows without audit rows (rolled back): {bare:.3f} s; "
            f"sweep / that {rolled_sweep / bare:.2f}"
        )
        for query in sorted(queries.captured_queries, key=lambda q: -float(q["time"]))[:4]:
            print(f"    {float(query['time']):7.3f} s  {query['sql'][:110]}")
        # What autovacuum does after a sweep like this: drop the dead row versions, refresh the statistics.
        with connection.cursor() as cursor:
            cursor.execute("VACUUM ANALYZE")

        timings = []
        for _ in range(20):
            reset_queries()
            with CaptureQueriesContext(connection) as queries:
                started = time.perf_counter()
                assert expire_sweep(now=timezone.now()) == 0
                timings.append(time.perf_counter() - started)
        print(
            f"sweep with nothing stale: p50 {statistics.median(timings) * 1000:.2f} ms, "
            f"max {max(timings) * 1000:.2f} ms over {len(timings)} sweeps, "
            f"{len(queries.captured_queries)} query each, {args.fresh:,} open items not stale"
        )
        sql = queries.captured_queries[0]["sql"]
        with connection.cursor() as cursor:
            cursor.execute("EXPLAIN " + sql)
            plan = "\n".join("    " + row[0] for row in cursor.fetchall())
        print("plan of that query:\n" + plan)
        assert not anything_stale(timezone.now())
        connections.close_all()
    finally:
        admin(f'DROP DATABASE IF EXISTS "{DB_NAME}" WITH (FORCE)')
        print(f"dropped {DB_NAME}")


if __name__ == "__main__":
    main()
