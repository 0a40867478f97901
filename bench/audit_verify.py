"""How fast ``audit_verify`` walks the audit chain, and in how much memory: a million events on PostgreSQL.

    .venv/bin/python bench/audit_verify.py [--events 1000000]

Creates its own database (``bench_audit``) on the server of ``BENCH_PG_URL``, writes the events with set-based
SQL, seals them (``inbox.audit.chain.seal_pending``, timed), verifies the chain and prints events/s with the peak
memory the walk added, beside the reference measured in the same run: reading the same rows bare (the events and
their seals, keyset-paginated through a raw cursor, nothing computed). Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import tracemalloc
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.expiry import admin, create_schema, scratch_environment  # noqa: E402

DB_NAME = "bench_audit"


def fill(events: int) -> None:
    """``events`` audit events of a few shapes, written by the database itself."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            """
            INSERT INTO inbox_auditevent (actor_type, actor_label, verb, object_type, object_id, data, created_at)
            SELECT 'user', 'approver-' || (n %% 50), (ARRAY['item.decided', 'run.ingested', 'resume.delivered'])[n %% 3 + 1],
                   'inboxitem', n::text,
                   jsonb_build_object('status', 'resolved', 'payload', jsonb_build_object('approved', n %% 4 <> 0),
                                      'comment', repeat('x', n %% 40)),
                   now() - make_interval(secs => %s - n)
            FROM generate_series(1, %s) AS n
            """,
            [events, events],
        )
        cursor.execute("ANALYZE")


def bare_read() -> tuple[int, float]:
    """The reference: every event and its seal read in seal order, a batch at a time, through a raw cursor."""
    from django.db import connection

    started, count, after = time.perf_counter(), 0, 0
    with connection.cursor() as cursor:
        while True:
            cursor.execute(
                "SELECT seq, event_id, hash, refs FROM inbox_auditseal WHERE seq > %s ORDER BY seq LIMIT 5000", [after]
            )
            seals = cursor.fetchall()
            if not seals:
                break
            cursor.execute(
                "SELECT id, actor_type, actor_label, verb, object_type, object_id, data, created_at, actor_user_id, "
                "actor_agent_id, agent_id, thread_id FROM inbox_auditevent WHERE id = ANY(%s)",
                [[seal[1] for seal in seals]],
            )
            count += len(cursor.fetchall())
            after = seals[-1][0]
    return count, time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    args = parser.parse_args()

    scratch_environment(DB_NAME, "bench-audit")
    try:
        import django

        django.setup()
        from django.db import connection

        from inbox.audit.chain import seal_pending, verify

        print(f"PostgreSQL {connection.cursor().connection.info.server_version}, database {DB_NAME}")
        create_schema()
        started = time.perf_counter()
        fill(args.events)
        print(f"wrote {args.events:,} audit events in {time.perf_counter() - started:.1f} s")

        started = time.perf_counter()
        sealed = seal_pending()
        seconds = time.perf_counter() - started
        print(f"seal_pending: {sealed:,} events in {seconds:.1f} s ({sealed / seconds:,.0f} events/s)")

        count, bare_seconds = bare_read()
        tracemalloc.start()
        verdict = verify()
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        assert verdict.ok, verdict.problem
        rate, bare_rate = verdict.events_checked / verdict.seconds, count / bare_seconds
        print(
            f"audit_verify: {verdict.events_checked:,} events in {verdict.seconds:.1f} s = {rate:,.0f} events/s, "
            f"peak Python memory {peak / 2**20:.1f} MiB"
        )
        print(f"reference, the same rows read bare: {count:,} in {bare_seconds:.1f} s = {bare_rate:,.0f} rows/s")
        print(f"ratio verify / bare read: {verdict.seconds / bare_seconds:.1f}x the time")
    finally:
        from django.db import connections

        connections.close_all()
        admin(f'DROP DATABASE IF EXISTS "{DB_NAME}" WITH (FORCE)')


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    main()
