"""Time of a policy's backtest at a million items, 100,000 of them decided by people in the last 30 days.

Loads ``bench/fixture.py``'s database (PostgreSQL ``bench_backtest``, dropped afterwards unless ``--keep`` or
``--reuse``), then makes its newest ``--decided`` decided items a month of decisions: decided over the last 30
days, approved, denied, approved with edits or cancelled, each first run of a thread resumed by its second (so a
denial there is an approval found wrong). Every agent joins one team, and a team policy (approve tool calls whose
``amount`` is at most 2,500) is backtested over 30 days as a worker runs it (``backtest_start`` reading every
candidate: a tenth of them ``--repeat`` times). Beside it, in the same run, the reference: the bare SQL of the
rows the backtest reads (the same SELECT, fetched 2,000 rows at a time from a server-side cursor), and the ratio.

    .venv/bin/python bench/backtest.py [--items 1000000] [--open 100000] [--decided 100000] [--repeat 3]
        [--keep] [--reuse [--drop]]
"""

from __future__ import annotations

import argparse
import resource
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import fixture  # noqa: E402

DB_NAME = "bench_backtest"
TARGET_S = 60.0
MONTH_S = 30 * 24 * 3600


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=1_000_000)
    parser.add_argument("--open", type=int, default=100_000)
    parser.add_argument("--decided", type=int, default=100_000, help="decided items moved into the last 30 days")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--name", default=DB_NAME, help="PostgreSQL database name")
    parser.add_argument("--keep", action="store_true", help="keep the database for a later --reuse")
    parser.add_argument("--reuse", action="store_true", help="measure a database kept by an earlier --keep")
    parser.add_argument("--drop", action="store_true", help="drop the database at the end, even a reused one")
    args = parser.parse_args()
    args.db = "postgres"  # the month of decisions is written in PostgreSQL's SQL
    return args


def a_month_of_decisions(decided: int) -> int:
    """Move the newest ``decided`` decided items into the last 30 days, vary what people decided, and resume each
    first run of their threads with the second. Returns how many items it moved."""
    from django.db import connection

    step = max(1, (MONTH_S - 3600) // max(1, decided))
    with connection.cursor() as cursor:
        cursor.execute(
            """
            WITH recent AS (
                SELECT id, row_number() OVER (ORDER BY id DESC) AS k FROM inbox_inboxitem
                WHERE decided_by_id IS NOT NULL ORDER BY id DESC LIMIT %s
            )
            UPDATE inbox_inboxitem item SET
                decided_at = now() - (recent.k * %s) * interval '1 second',
                outcome = CASE WHEN item.status = 'cancelled' THEN 'cancelled'
                               WHEN item.id %% 10 < 6 THEN 'approved'
                               WHEN item.id %% 10 < 8 THEN 'denied' ELSE 'approved_with_edits' END,
                response_payload = CASE WHEN item.status = 'cancelled' THEN NULL
                               WHEN item.id %% 10 < 6 THEN '{"approved": true}'::jsonb
                               WHEN item.id %% 10 < 8 THEN '{"approved": false}'::jsonb
                               ELSE '{"approved": true, "editedArgs": {"amount": 1}}'::jsonb END
            FROM recent WHERE item.id = recent.id
            """,
            [decided, step],
        )
        moved = cursor.rowcount
        cursor.execute(
            """
            INSERT INTO inbox_resume (run_id, thread_id, agent_id, next_run_id, input, state, attempts, last_error,
                                      resumed_run_id, created_at, updated_at)
            SELECT run.id, run.thread_id, run.agent_id, 'resumed-' || run.id, '{}'::jsonb, 'delivered', 1, '',
                   run.id + 1, now(), now()
            FROM inbox_run run
            WHERE run.id % 2 = 1 AND run.id IN (
                SELECT run_id FROM inbox_inboxitem WHERE decided_at > now() - interval '30 days')
            ON CONFLICT DO NOTHING
            """
        )
        cursor.execute("ANALYZE")
    return moved


def team_policy():
    from django.contrib.auth.models import Group, User

    from agents.models import Agent
    from inbox.models.policies import Policy
    from inbox.policies.services import policy_create

    everyone, _ = Group.objects.get_or_create(name="everyone")
    for agent in Agent.objects.all():
        agent.teams.add(everyone)
    existing = Policy.objects.filter(name="Small amounts").first()
    if existing:
        return existing
    return policy_create(
        user=User.objects.get(username="staff"),
        fields={
            "name": "Small amounts",
            "team": everyone,
            "match_schema": {
                "type": "object",
                "properties": {"amount": {"type": "integer", "maximum": 2500}, "invoice": {"type": "integer"}},
                "required": ["amount"],
            },
            "action": "approve",
        },
    )


def bare_sql_s(policy, days: int) -> tuple[float, int]:
    """The reference: the SELECT the backtest streams, read 2,000 rows at a time from a server-side cursor."""
    from datetime import timedelta

    from django.db import connection, transaction
    from django.utils import timezone

    from inbox import limits
    from inbox.policies.backtest import backtest_rows

    until = timezone.now()
    sql, params = backtest_rows(policy, until - timedelta(days=days), until).query.sql_with_params()
    rows = 0
    started = time.perf_counter()
    with transaction.atomic(), connection.connection.cursor(name="bench_reference") as cursor:
        cursor.execute(sql, params)
        while chunk := cursor.fetchmany(limits.BACKTEST_CHUNK):
            rows += len(chunk)
    return time.perf_counter() - started, rows


def main() -> None:
    args = arguments()
    with fixture.scratch_database(args) as data:
        from inbox import limits
        from inbox.models.policies import PolicyBacktest
        from inbox.policies.backtest import backtest_start

        moved = args.decided if args.reuse else a_month_of_decisions(args.decided)
        policy = team_policy()
        limits.BACKTEST_INLINE_ITEMS = 10**9  # read here, as the worker would, rather than queued
        timings, references = [], []
        rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        for _ in range(args.repeat):
            reference, rows = bare_sql_s(policy, 30)
            references.append(reference)
            started = time.perf_counter()
            backtest = backtest_start(user=data.staff, policy=policy, days=30)
            timings.append(time.perf_counter() - started)
            assert backtest.state == PolicyBacktest.State.DONE, backtest.error
            assert backtest.scanned == rows, (backtest.scanned, rows)
        grown_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss_before) / 1024
        took, floor = statistics.median(timings), statistics.median(references)
        print(
            f"\n{data.items:,} items; {moved:,} decided in the last 30 days; backtest read {backtest.scanned:,}, "
            f"matched {backtest.matched:,}, agreed {backtest.agreed:,} of {backtest.compared:,}, "
            f"{backtest.disagreed:,} disagreements, {backtest.found_wrong:,} found wrong"
        )
        print(
            f"backtest p50 of {args.repeat}: {took:.2f} s (target < {TARGET_S:.0f} s)   reference (bare SQL of its "
            f"rows): {floor:.2f} s   ratio {took / floor if floor else float('nan'):.1f}x   "
            f"peak RSS grew {grown_mb:.0f} MB"
        )


if __name__ == "__main__":
    main()
