"""The inbox list with snoozes and saved views on a large inbox: the same pages measured before and after the
viewer snoozes items and saves views, in the same run (the "before" is the reference), with the query count and
the plan of the Open tab's rows (the snooze exclusion must be an anti-join probing the snooze index per row).

Loads a scratch database with ``bench/fixture.py`` (PostgreSQL ``bench_snooze_list``, dropped afterwards unless
``--keep`` or ``--reuse``). Nothing leaves 127.0.0.1.

    .venv/bin/python bench/snooze_list.py [--items 1000000] [--open 100000] [--repeat 15] [--keep] [--reuse [--drop]]
"""

from __future__ import annotations

import sys
from datetime import timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import fixture  # noqa: E402

DB_NAME = "bench_snooze_list"
SNOOZES = 500  # per viewer, spread over the open items they see
PAGES = [
    ("open (expires soonest)", "/inbox/"),
    ("open, newest first", "/inbox/?sort=newest"),
    ("open, page 100", "/inbox/?page=100"),
    ("mine", "/inbox/?tab=mine"),
    ("snoozed", "/inbox/?tab=snoozed"),
    ("all", "/inbox/?tab=all"),
    ("open, one agent", "/inbox/?agent=agent-5"),
]
VIEWS = [
    ("Agent 5", "agent=agent-5"),
    ("Oldest open", "sort=oldest"),
    ("Decided", "tab=decided"),
    ("Refunds", "tab=all&q=refundOrder"),
    ("Expired", "tab=expired"),
]


def snooze_and_save(user, snoozes: int) -> None:
    """``user`` snoozes ``snoozes`` of the open items they see (spread over the list) and saves ``VIEWS``."""
    from django.db import connection
    from django.utils import timezone

    from inbox.access import visible_items
    from inbox.models import SavedView, Snooze

    open_ids = list(visible_items(user).filter(status="open").order_by("expires_at").values_list("pk", flat=True))
    step = max(1, len(open_ids) // max(1, snoozes))
    until = timezone.now() + timedelta(hours=1)
    Snooze.objects.bulk_create([Snooze(user=user, item_id=pk, until=until) for pk in open_ids[::step][:snoozes]])
    SavedView.objects.bulk_create([SavedView(owner=user, name=name, query=query) for name, query in VIEWS])
    if connection.vendor == "postgresql":  # what autovacuum does on a live database once rows arrive (fixture.load)
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE inbox_snooze, inbox_savedview")


def measure(user, repeat: int, label: str) -> list[fixture.Figure]:
    from django.test import Client

    client = Client()
    client.force_login(user)
    figures = [fixture.measure_get(client, name, url, repeat) for name, url in PAGES]
    fixture.print_figures(f"{user.username}, {label}: /inbox/ server time over {repeat} requests", figures)
    return figures


def explain_open_rows(user) -> None:
    from django.db import connection

    from inbox.listing.selectors import ListFilters, list_page, tab_counts

    filters = ListFilters()
    page = list_page(user=user, filters=filters, counts=tab_counts(user=user, filters=filters)[0])
    if not page.paginator.count:  # every open item snoozed (a small load): the page reads no rows to plan
        print(f"\n{user.username}: the Open tab is empty, so no statement reads its rows (nothing to plan)")
        return
    sql, params = page.object_list.query.sql_with_params()
    with connection.cursor() as cursor:
        cursor.execute(f"EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) {sql}", params)
        plan = [row[0] for row in cursor.fetchall()]
    print(f"\n{user.username}: the Open tab's page of rows, planned")
    for line in plan:
        if "Snooze" in line or "snooze" in line or "Anti" in line or "Limit" in line or "Index" in line:
            print("  " + line)


def main() -> None:
    parser_args = fixture.arguments(__doc__.splitlines()[0], DB_NAME)
    snoozes = SNOOZES
    with fixture.scratch_database(parser_args) as data:
        print(f"{data.items:,} items, {data.open:,} open; {snoozes} snoozes and {len(VIEWS)} saved views per viewer")
        for user in (data.staff, data.approver):
            before = measure(user, parser_args.repeat, "no snoozes, no saved views (reference)")
            snooze_and_save(user, snoozes)
            after = measure(user, parser_args.repeat, f"{snoozes} snoozes, {len(VIEWS)} saved views")
            print(f"\n  {'page':40} {'before':>7} {'after':>7} {'ratio':>6} {'queries':>9}")
            for first, second in zip(before, after, strict=True):
                print(
                    f"  {first.label:40} {first.p50:7.1f} {second.p50:7.1f} {second.p50 / first.p50:5.2f}x"
                    f" {first.queries:>4} -> {second.queries}"
                )
            explain_open_rows(user)


if __name__ == "__main__":
    main()
