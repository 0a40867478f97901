"""Server time of the approver's other pages on a large inbox: item page, run page, a decision (API and form),
the audit log with filters, and the expiry sweep with nothing stale.

Loads a scratch database with ``bench/fixture.py`` (PostgreSQL ``bench_pages`` by default, dropped afterwards
unless ``--keep`` or ``--reuse``; ``--db sqlite`` uses a temporary SQLite file) and requests each page in-process
with Django's test client, as a staff user and as a team approver. Prints p50 / p95 milliseconds and the SQL
query count per page, beside a reference measured in the same run and their ratio: for a GET the page's own
queries run straight on the connection (its bare SQL); for a decision its statements replayed in a transaction
that is rolled back. Every decision decides a different open item. Nothing leaves 127.0.0.1 (the resumes the
decisions queue go to a Redis queue of the benchmark's own, emptied at the end).

    .venv/bin/python bench/pages.py [--db postgres|sqlite] [--items 1000000] [--open 100000] [--repeat 15]
        [--keep] [--reuse [--drop]]
"""

from __future__ import annotations

import json
import os
import sys
import time
from datetime import timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import fixture  # noqa: E402

DB_NAME = "bench_pages"
QUEUE = "inbox-bench-pages"
TARGETS = {"page": 30.0, "decision": 30.0, "audit": 50.0, "sweep": 2000.0}


def replay_ms(queries: list[dict], repeat: int) -> float:
    """p50 of a request's statements replayed straight on the connection, rolled back each time."""
    from django.db import connection, transaction

    statements = [
        q["sql"]
        for q in queries
        if not q["sql"].lstrip().upper().startswith(("SAVEPOINT", "RELEASE", "ROLLBACK", "BEGIN", "COMMIT"))
    ]
    timings = []
    for _ in range(repeat):
        with transaction.atomic():
            started = time.perf_counter()
            with connection.cursor() as cursor:
                for sql in statements:
                    cursor.execute(sql)
            timings.append((time.perf_counter() - started) * 1000)
            transaction.set_rollback(True)
    return fixture.percentiles(timings)[0]


def measure_posts(client, label: str, requests: list[tuple[str, dict, str]], expect: int) -> fixture.Figure:
    """Time one POST per (url, data, content_type); the last one's queries make the reference."""
    from django.db import connection, transaction
    from django.test.utils import CaptureQueriesContext

    timings = []
    *timed, last = requests
    for url, data, content_type in timed:
        started = time.perf_counter()
        response = client.post(url, data=data, content_type=content_type)
        timings.append((time.perf_counter() - started) * 1000)
        assert response.status_code == expect, (url, response.status_code, response.content[:300])
    # The last request is undone (rolled back) once its statements are captured, so that replaying them meets
    # the data as it was before it: a decision that closed its run created a resume, which a replay after the
    # request had committed would create a second time (unique per run).
    with transaction.atomic(), CaptureQueriesContext(connection) as captured:
        response = client.post(last[0], data=last[1], content_type=last[2])
        transaction.set_rollback(True)
    assert response.status_code == expect, (last[0], response.status_code)
    p50, p95 = fixture.percentiles(timings[1:] or timings)  # the first warms caches
    queries = list(captured.captured_queries)
    try:
        reference = replay_ms(queries, len(timed))
    except Exception as error:  # a statement Django printed with its parameters inlined that reads differently
        print(f"  ({label}: its statements could not be replayed: {type(error).__name__}: {error})", file=sys.stderr)
        reference = float("nan")
    return fixture.Figure(label, p50, p95, len(queries), reference, "its statements, rolled back")


def measure(user, repeat: int) -> list[fixture.Figure]:
    from django.test import Client
    from django.utils import timezone

    from inbox.access import visible_items
    from inbox.models import InboxItem

    client = Client()
    client.force_login(user)
    mine = visible_items(user)
    later = timezone.now() + timedelta(hours=1)  # items that will not lapse while the benchmark runs
    open_items = list(
        mine.filter(status="open", expires_at__gt=later).order_by("pk").values_list("pk", "run_id")[: 4 * (repeat + 2)]
    )
    decided = mine.filter(status="resolved").order_by("-pk").values_list("pk", "run_id").first()
    old = mine.filter(status="expired").order_by("pk").values_list("pk", "run_id").first()
    agent = mine.values_list("agent__slug", flat=True).first()
    figures = [
        fixture.measure_get(client, "item page (open)", f"/inbox/items/{open_items[-1][0]}/", repeat),
        fixture.measure_get(client, "item page (decided)", f"/inbox/items/{decided[0]}/", repeat),
        fixture.measure_get(client, "item page (a year old, expired)", f"/inbox/items/{old[0]}/", repeat),
        fixture.measure_get(client, "run page (open)", f"/inbox/runs/{open_items[-1][1]}/", repeat),
        fixture.measure_get(client, "run page (decided)", f"/inbox/runs/{decided[1]}/", repeat),
        fixture.measure_get(client, "audit log", "/audit/", repeat),
        fixture.measure_get(client, "audit log, page 100", "/audit/?page=100", repeat),
        fixture.measure_get(client, "audit log, one agent", f"/audit/?agent={agent}", repeat),
        fixture.measure_get(client, "audit log, verb", "/audit/?verb=item.decided", repeat),
        fixture.measure_get(client, "audit log, actor", "/audit/?actor=approver", repeat),
        fixture.measure_get(client, "audit log, agent + dates", f"/audit/?agent={agent}&since=2026-01-01", repeat),
    ]
    if len(open_items) < 2 * (repeat + 1):
        fixture.print_figures(
            f"{user.username}: server time over {repeat} requests (too few open items to decide)", figures
        )
        return figures
    api, form = open_items[: repeat + 1], open_items[repeat + 1 : 2 * (repeat + 1)]
    body = json.dumps({"status": "resolved", "payload": {"approved": True}})
    figures.append(
        measure_posts(
            client,
            "POST decision (API)",
            [(f"/api/v1/items/{pk}/decision", body, "application/json") for pk, _ in api],
            201,
        )
    )
    figures.append(
        measure_posts(
            client,
            "POST decision (form)",
            [(f"/inbox/items/{pk}/decide/", "action=approve", "application/x-www-form-urlencoded") for pk, _ in form],
            302,
        )
    )
    # Every timed decision was stored; the last of each set (the reference's) was rolled back.
    timed = [pk for pk, _ in api[:-1] + form[:-1]]
    assert InboxItem.objects.filter(pk__in=timed, status="open").count() == 0
    fixture.print_figures(f"{user.username}: server time over {repeat} requests", figures)
    return figures


def sweep_with_nothing_stale(repeat: int) -> None:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from inbox.expiry.services import expire_sweep

    expire_sweep()  # whatever lapsed while loading
    timings = []
    for _ in range(repeat):
        with CaptureQueriesContext(connection) as captured:
            started = time.perf_counter()
            expire_sweep()
            timings.append((time.perf_counter() - started) * 1000)
    p50, p95 = fixture.percentiles(timings)
    reference = replay_ms(list(captured.captured_queries), repeat)
    fixture.print_figures(
        "expiry sweep with nothing stale (bench/expiry.py times 100,000 stale)",
        [fixture.Figure("expire_sweep()", p50, p95, len(captured), reference, "its statement, rolled back")],
    )


def main() -> None:
    args = fixture.arguments(__doc__.splitlines()[0], DB_NAME)
    os.environ["CELERY_QUEUE"] = QUEUE
    with fixture.scratch_database(args) as data:
        try:
            print(
                f"{data.items:,} items, {data.open:,} open; targets p50: item and run pages < 30 ms, decisions "
                "< 30 ms, audit log < 50 ms; the sweep with nothing stale: one indexed query"
            )
            measure(data.staff, args.repeat)
            measure(data.approver, args.repeat)
            sweep_with_nothing_stale(args.repeat)
        finally:
            _empty_queue()


def _empty_queue() -> None:
    from django.conf import settings

    if settings.EMBEDDED_REDIS:
        return
    import redis

    redis.Redis.from_url(settings.REDIS_URL).delete(QUEUE)


if __name__ == "__main__":
    main()
