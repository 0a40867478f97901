"""How long the escalation sweep takes on PostgreSQL: 100,000 open items due, then a sweep with nothing due.

    .venv/bin/python bench/escalation.py [--items 100000] [--per-run 10] [--fresh 10000]

Creates its own database (``bench_escalation``) on the server of ``BENCH_PG_URL`` (default
``postgres://postgres@127.0.0.1:5432/test``): one agent of the team Billing with ``--items`` open items that
arrived two hours ago and ``--fresh`` that arrived just now, and Billing's rule "still open after 30 min: add
Finance leads". Times ``inbox.teams.escalations.escalation_sweep()`` beside the reference measured in the same
run: the same rows' bare ``INSERT ... SELECT`` into the escalation table (no audit rows, no RETURNING), rolled
back. Then times the sweeps that find nothing left to fire. Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from datetime import timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.expiry import admin, bulk_items, bulk_runs, create_schema, scratch_environment  # noqa: E402

DB_NAME = "bench_escalation"


def fill(*, items: int, per_run: int, fresh: int):
    from django.contrib.auth.models import Group, User
    from django.utils import timezone

    from agents.models import Agent
    from inbox.models import EscalationRule

    now = timezone.now()
    billing = Group.objects.create(name="Billing")
    finance = Group.objects.create(name="Finance leads")
    agent = Agent.objects.create(slug="bench", name="Bench")
    agent.teams.add(billing)
    for count, prefix, arrived in ((items, "due", now - timedelta(hours=2)), (fresh, "fresh", now)):
        if count:
            bulk_items(
                agent,
                bulk_runs(agent, count // per_run, prefix, arrived),
                per=per_run,
                prefix=prefix,
                reason="confirmation",
                message="Refund order 4242?",
                expires_at=now + timedelta(days=1),
                created_at=arrived,
            )
    granter = User.objects.create(username="bench-staff", is_staff=True)  # a grant of access is staff's
    return EscalationRule.objects.create(team=billing, after_minutes=30, to_team=finance, created_by=granter)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=100_000, help="open items due for escalation")
    parser.add_argument("--per-run", type=int, default=10, help="interrupts per run")
    parser.add_argument("--fresh", type=int, default=10_000, help="open items not due yet")
    args = parser.parse_args()

    scratch_environment(DB_NAME, "bench-escalation")
    os.environ.setdefault("EMAIL_BACKEND", "django.core.mail.backends.locmem.EmailBackend")
    try:
        import django

        django.setup()
        from django.db import connection, connections
        from django.test.utils import CaptureQueriesContext
        from django.utils import timezone

        from inbox.models import AuditEvent, Escalation
        from inbox.teams.escalations import escalation_sweep

        print(f"PostgreSQL {connection.cursor().connection.info.server_version}, database {DB_NAME}")
        started = time.perf_counter()
        schema = create_schema()
        rule = fill(items=args.items, per_run=args.per_run, fresh=args.fresh)
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE")
        print(
            f"schema from {schema}; filled {args.items:,} due + {args.fresh:,} fresh open items "
            f"({args.per_run} per run) in {time.perf_counter() - started:.1f} s"
        )

        now = timezone.now()
        # The reference, in this run on this machine: the same rows inserted by one bare INSERT ... SELECT (no
        # audit rows, no RETURNING, no claim), rolled back; VACUUM then clears what it left behind.
        with connection.cursor() as cursor:
            started = time.perf_counter()
            cursor.execute("BEGIN")
            cursor.execute(
                "INSERT INTO inbox_escalation (item_id, rule_id, step, to_team_id, target_label, why, fired_at) "
                "SELECT id, %s, 1, %s, 'Finance leads', 'x', %s FROM inbox_inboxitem "
                "WHERE status = 'open' AND agent_id = ANY(%s) AND created_at <= %s",
                [rule.pk, rule.to_team_id, now, [rule.team.agents.get().pk], now - timedelta(minutes=30)],
            )
            bare = time.perf_counter() - started
            cursor.execute("ROLLBACK")
            cursor.execute("VACUUM ANALYZE inbox_escalation")
        with CaptureQueriesContext(connection) as queries:
            started = time.perf_counter()
            fired = escalation_sweep(now=now)
            sweep = time.perf_counter() - started
        audits = AuditEvent.objects.filter(verb="item.escalated").count()
        rows = Escalation.objects.count()
        print(
            f"sweep of due items:   {sweep:.3f} s  fired {fired:,} escalations ({rows:,} rows, {audits:,} audit "
            f"events), {len(queries.captured_queries)} statements"
        )
        print(
            f"reference, bare INSERT ... SELECT of the same rows (rolled back): {bare:.3f} s; "
            f"sweep / reference {sweep / bare:.2f}"
        )
        for query in sorted(queries.captured_queries, key=lambda q: -float(q["time"]))[:3]:
            print(f"    {float(query['time']):7.3f} s  {query['sql'][:110]}")
        with connection.cursor() as cursor:
            cursor.execute("VACUUM ANALYZE")

        timings = []
        for _ in range(10):
            with CaptureQueriesContext(connection) as queries:
                started = time.perf_counter()
                assert escalation_sweep(now=timezone.now()) == 0
                timings.append(time.perf_counter() - started)
        print(
            f"sweep with nothing left to fire: p50 {statistics.median(timings) * 1000:.1f} ms, "
            f"max {max(timings) * 1000:.1f} ms over {len(timings)} sweeps, {len(queries.captured_queries)} "
            f"queries each, {args.items + args.fresh:,} open items"
        )
        connections.close_all()
    finally:
        admin(f'DROP DATABASE IF EXISTS "{DB_NAME}" WITH (FORCE)')
        print(f"dropped {DB_NAME}")


if __name__ == "__main__":
    main()
