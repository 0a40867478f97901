"""A scratch database filled like a year of use, for the page benchmarks (``inbox_list.py``, ``pages.py``).

Set-based inserts (``INSERT … SELECT`` over ``generate_series`` on PostgreSQL, a recursive series on SQLite),
so a million items load in a minute or two, not hours. The layout:

- 10 agents in 5 teams (agent *k* belongs to team *k* mod 5); a staff user, and an approver in team 0 (who
  therefore sees 2 of the 10 agents: a fifth of everything);
- ``items / 5`` runs of 5 interrupts on ``items / 10`` threads (two runs per thread), oldest first;
- the newest ``open`` items are open, expiring over the next days; the rest are resolved, cancelled or
  expired in turn, each resolved or cancelled one with its Decision, and one audit event per item;
- item messages like ``Approve invoice 4242 for customer 17?``, tool calls named ``payInvoice`` /
 ``sendEmail`` / ``refundOrder`` (and one in a thousand ``wipeDatabase``).

Nothing leaves 127.0.0.1. PostgreSQL databases are created on the server of ``BENCH_PG_ADMIN_URL``
(default ``postgres://postgres@127.0.0.1:5432/postgres``) and dropped by the caller unless ``--keep``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PG_ADMIN = os.environ.get("BENCH_PG_ADMIN_URL", "postgres://postgres@127.0.0.1:5432/postgres")
AGENTS = 10
TEAMS = 5
PER_RUN = 5
RUNS_PER_THREAD = 2


def psql(sql: str) -> None:
    subprocess.run(["psql", PG_ADMIN, "-q", "-c", sql], check=True, capture_output=True)


def pg_url(name: str) -> str:
    return PG_ADMIN.rsplit("/", 1)[0] + f"/{name}"


def database_exists(name: str) -> bool:
    out = subprocess.run(
        ["psql", PG_ADMIN, "-Atc", f"SELECT 1 FROM pg_database WHERE datname = '{name}'"],
        check=True,
        capture_output=True,
        text=True,
    )
    return out.stdout.strip() == "1"


def setup_django(*, db: str, name: str, var_dir: str, fresh: bool) -> None:
    """Point Django at the scratch database (creating it when ``fresh``) and migrate it."""
    os.environ["INBOX_VAR_DIR"] = var_dir
    os.environ["DEBUG"] = "0"
    os.environ.setdefault("REDIS_URL", "redis://127.0.0.1:6379/9")  # pushes go to a db of its own
    os.environ.setdefault("CHANNELS_PREFIX", "inbox-bench")
    os.environ.setdefault("CELERY_QUEUE", "inbox-bench")
    os.environ["LOG_LEVEL"] = "WARNING"
    if db == "postgres":
        if fresh:
            psql(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
            psql(f"CREATE DATABASE {name}")
        os.environ["DATABASE_URL"] = pg_url(name)
    else:
        os.environ.pop("DATABASE_URL", None)
    os.environ["DJANGO_SETTINGS_MODULE"] = "config.settings"
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    from config.startup import freeze_loaded_objects

    freeze_loaded_objects()  # as a web process does once loaded (config/asgi.py)


def drop(name: str) -> None:
    from django.db import connections

    for connection in connections.all():
        connection.close()
        if getattr(connection, "pool", None):
            connection.close_pool()
    psql(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


@dataclass
class Dataset:
    staff: object
    approver: object
    items: int
    open: int


def _dialect(vendor: str, count: int) -> dict[str, str]:
    if vendor == "postgresql":
        return {
            "series": f"generate_series(0, {count - 1}) AS s(n)",
            "with": "",
            "json": "::jsonb",
            "ts": "(now() + ({}) * interval '1 second')",
        }
    return {
        "series": "s",
        "with": f"WITH RECURSIVE s(n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM s WHERE n + 1 < {count}) ",
        "json": "",
        "ts": "strftime('%Y-%m-%d %H:%M:%f', 'now', ({}) || ' seconds')",
    }


def load(*, items: int, open_count: int) -> Dataset:
    """Fill the (empty, migrated) database; returns the two users the benchmarks log in as."""
    from django.contrib.auth.models import Group, User
    from django.db import connection, transaction

    from agents.models import Agent

    started = time.perf_counter()
    items = max(PER_RUN * RUNS_PER_THREAD, items - items % (PER_RUN * RUNS_PER_THREAD))
    open_count = min(open_count, items)
    runs, threads = items // PER_RUN, items // PER_RUN // RUNS_PER_THREAD
    staff = User.objects.create_user("staff", is_staff=True)
    approver = User.objects.create_user("approver")
    teams = [Group.objects.create(name=f"team-{k}") for k in range(TEAMS)]
    approver.groups.add(teams[0])
    agents = [Agent.objects.create(slug=f"agent-{k}", name=f"Agent {k}") for k in range(AGENTS)]
    for k, agent in enumerate(agents):
        agent.teams.add(teams[k % TEAMS])
    first_agent = agents[0].pk
    assert [a.pk for a in agents] == list(range(first_agent, first_agent + AGENTS)), "agent ids must be contiguous"
    vendor = connection.vendor
    closed = items - open_count
    # Seconds from now: runs are spread over the past year, one every `step` seconds, oldest first.
    step = max(1, 365 * 24 * 3600 // max(1, runs))

    statements = _statements(vendor, items, open_count, runs, threads, step, first_agent, approver.pk)
    with transaction.atomic(), connection.cursor() as cursor:
        for statement in statements:
            cursor.execute(statement)
    if vendor == "postgresql":
        with connection.cursor() as cursor:
            for table in ("inbox_thread", "inbox_run", "inbox_inboxitem", "inbox_decision", "inbox_auditevent"):
                cursor.execute(f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), (SELECT max(id) FROM {table}))")
            # What autovacuum keeps up to date on a live database: statistics and the visibility map.
            cursor.execute("VACUUM ANALYZE")
    print(
        f"loaded {items:,} items ({open_count:,} open, {closed:,} closed), {runs:,} runs, {threads:,} threads, "
        f"{AGENTS} agents in {TEAMS} teams on {vendor} in {time.perf_counter() - started:.1f} s",
        flush=True,
    )
    return Dataset(staff=staff, approver=approver, items=items, open=open_count)


def existing() -> Dataset:
    """The users and sizes of a database loaded by an earlier ``load`` (``--keep`` then ``--reuse``)."""
    from django.contrib.auth.models import User

    from inbox.models import InboxItem

    items = InboxItem.objects.order_by("-pk").values_list("pk", flat=True).first() or 0
    open_count = InboxItem.objects.filter(status="open").count()
    return Dataset(User.objects.get(username="staff"), User.objects.get(username="approver"), items, open_count)


def _statements(
    vendor: str, items: int, open_count: int, runs: int, threads: int, step: int, first_agent: int, approver: int
) -> list[str]:
    def d(count: int) -> dict[str, str]:
        return _dialect(vendor, count)

    def ts(vendor_dialect: dict[str, str], seconds: str) -> str:
        return vendor_dialect["ts"].format(seconds)

    t, r, i = d(threads), d(runs), d(items)
    thread_age = f"-{step * RUNS_PER_THREAD} * ({threads} - n)"
    run_age = f"-{step} * ({runs} - n)"
    # Item n belongs to run n / 5 (so to thread n / 10, agent (n / 10) % 10); the newest are open.
    item_age = f"-{step} * ({runs} - n / {PER_RUN})"
    is_open = f"n >= {items - open_count}"
    status = f"CASE WHEN {is_open} THEN 'open' WHEN n % 3 = 0 THEN 'resolved' WHEN n % 3 = 1 THEN 'cancelled' ELSE 'expired' END"
    reason = "CASE n % 4 WHEN 3 THEN 'input_required' ELSE 'tool_call' END"
    tool = "CASE WHEN n % 1000 = 6 THEN 'wipeDatabase' WHEN n % 3 = 0 THEN 'payInvoice' WHEN n % 3 = 1 THEN 'sendEmail' ELSE 'refundOrder' END"
    decided = f"NOT ({is_open}) AND n % 3 <> 2"
    j = i["json"]
    return [
        t["with"] + "INSERT INTO inbox_thread (id, thread_id, created_at, updated_at, agent_id) "
        f"SELECT n + 1, 'thread-' || n, {ts(t, thread_age)}, {ts(t, thread_age)}, {first_agent} + n % {AGENTS} "
        f"FROM {t['series']}",
        r["with"]
        + "INSERT INTO inbox_run (id, run_id, parent_run_id, source, outcome, outcome_omitted, error_message, "
        "messages_snapshot, tool_calls, tool_results, events, content_hash, created_at, agent_id, thread_id, "
        "requested_by, notified_at, pending_tool_call_ids) "
        f"SELECT n + 1, 'run-' || n, '', 'ingest', 'interrupt', {_false(vendor)}, '', "
        f"""('[{{"id": "m' || n || '", "role": "user", "content": "please pay the invoices"}}]'){r["json"]}, """
        f"('[]'){r['json']}, ('[]'){r['json']}, ('[]'){r['json']}, '', {ts(r, run_age)}, "
        f"{first_agent} + (n / {RUNS_PER_THREAD}) % {AGENTS}, n / {RUNS_PER_THREAD} + 1, '', {ts(r, run_age)}, "
        f"('[]'){r['json']} "
        f"FROM {r['series']}",
        i["with"] + "INSERT INTO inbox_inboxitem (id, position, interrupt_id, reason, message, tool_call_id, "
        "response_schema, expires_at, expires_at_defaulted, metadata, raw, tool_call, status, status_note, "
        "response_payload, decided_at, decision_comment, created_at, agent_id, claimed_by_id, decided_by_id, run_id, "
        "thread_id, outcome) "
        f"SELECT n + 1, n % {PER_RUN}, 'i-' || n, {reason}, "
        f"'Approve invoice ' || n || ' for customer ' || (n % 977) || '?', "
        f"CASE WHEN n % 4 = 3 THEN '' ELSE 'tc-' || n END, "
        f"""('{{"type": "object", "properties": {{"approved": {{"type": "boolean"}}}}, "required": ["approved"]}}'){j}, """
        f"CASE WHEN {is_open} THEN {ts(i, '300 + (n % 20000) * 30')} ELSE {ts(i, item_age + ' + 3600')} END, "
        f"{_false(vendor)}, "
        f"""('{{"customer": ' || (n % 977) || '}}'){j}, """
        f"""('{{"id": "i-' || n || '", "reason": "tool_call"}}'){j}, """
        f"""CASE WHEN n % 4 = 3 THEN NULL ELSE ('{{"id": "tc-' || n || '", "name": "' || {tool} || '", """
        f""""args": {{"invoice": ' || n || ', "amount": ' || (n % 5000) || '}}}}'){j} END, """
        f"{status}, CASE WHEN {is_open} OR n % 3 <> 2 THEN '' ELSE 'expired unanswered' END, "
        f"""CASE WHEN {decided} THEN ('{{"approved": true}}'){j} ELSE NULL END, """
        f"CASE WHEN {decided} THEN {ts(i, item_age + ' + 300')} ELSE NULL END, '', {ts(i, item_age)}, "
        f"{first_agent} + (n / {PER_RUN * RUNS_PER_THREAD}) % {AGENTS}, NULL, "
        f"CASE WHEN {decided} THEN {approver} ELSE NULL END, n / {PER_RUN} + 1, n / {PER_RUN * RUNS_PER_THREAD} + 1, "
        f"CASE WHEN {decided} THEN 'approved' WHEN {is_open} THEN '' ELSE 'expired' END "
        f"FROM {i['series']}",
        # The row the ingest writes beside each item (ItemSearchText.text_of): what text search and the tool-call
        # trail read. Without it a search would find nothing, fast.
        "INSERT INTO inbox_itemsearchtext (item_id, agent_id, text, tool_call_id) "
        f"SELECT item.id, item.agent_id, {_search_text(vendor)}, item.tool_call_id FROM inbox_inboxitem item "
        "JOIN inbox_thread thread ON thread.id = item.thread_id",
        # One decision per decided item (ids follow the items').
        "INSERT INTO inbox_decision (id, status, payload, comment, final, counts, created_at, user_id, item_id) "
        "SELECT id, status, response_payload, '', "
        f"{_true(vendor)}, {_true(vendor)}, decided_at, decided_by_id, id FROM inbox_inboxitem "
        "WHERE decided_by_id IS NOT NULL",
        # One audit event per item: who created or decided it.
        "INSERT INTO inbox_auditevent (id, actor_type, actor_label, verb, object_type, object_id, data, created_at, "
        "actor_agent_id, actor_user_id, agent_id, thread_id) "
        "SELECT item.id, CASE WHEN item.decided_by_id IS NULL THEN 'agent' ELSE 'user' END, "
        "CASE WHEN item.decided_by_id IS NULL THEN agent.slug ELSE 'approver' END, "
        "CASE WHEN item.decided_by_id IS NULL THEN 'item.created' ELSE 'item.decided' END, 'item', "
        f"CAST(item.id AS TEXT), ('{{}}'){j}, COALESCE(item.decided_at, item.created_at), "
        "CASE WHEN item.decided_by_id IS NULL THEN item.agent_id ELSE NULL END, item.decided_by_id, item.agent_id, "
        "item.thread_id FROM inbox_inboxitem item JOIN agents_agent agent ON agent.id = item.agent_id",
    ]


def _search_text(vendor: str) -> str:
    """``ItemSearchText.text_of`` in SQL: message, tool name and thread id, the empty ones left out."""
    tool_name = "item.tool_call ->> 'name'" if vendor == "postgresql" else "json_extract(item.tool_call, '$.name')"
    parts = ["NULLIF(item.message, '')", f"NULLIF({tool_name}, '')", "NULLIF(thread.thread_id, '')"]
    if vendor == "postgresql":
        return f"concat_ws(' ', {', '.join(parts)})"
    return "TRIM(" + " || ' ' || ".join(f"COALESCE({part}, '')" for part in parts) + ")"


def _true(vendor: str) -> str:
    return "true" if vendor == "postgresql" else "1"


def _false(vendor: str) -> str:
    return "false" if vendor == "postgresql" else "0"


# --- measuring a page -------------------------------------------------------------------------------------


@dataclass
class Figure:
    label: str
    p50: float
    p95: float
    queries: int
    reference: float  # ms, p50 of the reference measured in the same run
    reference_name: str
    rows: int | None = None  # list rows on the page (a search that matched nothing is fast for no merit)

    @property
    def ratio(self) -> float:
        return self.p50 / self.reference if self.reference else float("nan")


def percentiles(timings: list[float]) -> tuple[float, float]:
    ordered = sorted(timings)
    return statistics.median(ordered), ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))]


def bare_sql_ms(queries: list[dict], repeat: int) -> float:
    """p50 of running a page's own SELECTs straight on the connection: the floor the page stands on."""
    from django.db import connection

    # A search's ids are read by one "SET enable_seqscan = off; WITH ...; RESET ..." (inbox.listing.selectors).
    selects = [q["sql"] for q in queries if q["sql"].lstrip().upper().startswith(("SELECT", "WITH", "SET ENABLE_"))]
    timings = []
    with connection.cursor() as cursor:
        for _ in range(repeat):
            started = time.perf_counter()
            for sql in selects:
                cursor.execute(sql)
                while cursor.description is None and cursor.nextset():
                    pass
                cursor.fetchall()
            timings.append((time.perf_counter() - started) * 1000)
    return percentiles(timings)[0]


TRIVIAL_URL = "/bench-trivial/"


def signed_in_floor(client, repeat: int) -> tuple[float, int]:
    """The p50 (ms) and the queries of a signed-in request that does nothing (``login_required``, an empty 200): the middleware, the
    session and the user, what any page of the product pays before its own work. The view is mounted for the
    benchmark only, in front of the project's URLs; nothing the product serves changes."""
    import types

    from django.conf import settings
    from django.contrib.auth.decorators import login_required
    from django.http import HttpResponse
    from django.test.utils import override_settings
    from django.urls import path
    from django.utils.module_loading import import_module

    @login_required
    def trivial(request):
        return HttpResponse(b"")

    urls = types.ModuleType("bench_trivial_urls")
    urls.urlpatterns = [path(TRIVIAL_URL.strip("/") + "/", trivial), *import_module(settings.ROOT_URLCONF).urlpatterns]
    sys.modules[urls.__name__] = urls
    with override_settings(ROOT_URLCONF=urls.__name__):
        p50, _p95, queries, _body = time_get(client, TRIVIAL_URL, repeat)
    return p50, len(queries)


def time_get(client, url: str, repeat: int, *, expect: int = 200) -> tuple[float, float, list[dict], bytes]:
    """p50, p95 (ms) of GETting ``url`` in-process, and the queries and body of one more request."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    response = client.get(url)  # warm caches and plans
    assert response.status_code == expect, (url, response.status_code)
    timings = []
    for _ in range(repeat):
        started = time.perf_counter()
        response = client.get(url)
        timings.append((time.perf_counter() - started) * 1000)
        assert response.status_code == expect, (url, response.status_code)
        if hasattr(response, "streaming_content"):
            for _chunk in response.streaming_content:
                pass
    with CaptureQueriesContext(connection) as captured:
        last = client.get(url)
    p50, p95 = percentiles(timings)
    body = b"" if hasattr(last, "streaming_content") else last.content
    return p50, p95, list(captured.captured_queries), body


def measure_get(client, label: str, url: str, repeat: int) -> Figure:
    p50, p95, queries, body = time_get(client, url, repeat)
    try:
        reference = bare_sql_ms(queries, repeat)
    except Exception:  # a query Django printed with its parameters inlined that the database reads differently
        reference = float("nan")
    rows = body.count(b"<tr data-item-row ") if b'id="item-rows"' in body else None
    return Figure(label, p50, p95, len(queries), reference, "bare SQL", rows)


def print_figures(title: str, figures: list[Figure]) -> None:
    print(f"\n{title}")
    print(f"  {'page':40} {'p50 ms':>7} {'p95 ms':>7} {'queries':>7} {'rows':>5}   {'reference':>9}  {'ratio':>6}")
    for f in figures:
        rows = "" if f.rows is None else str(f.rows)
        print(
            f"  {f.label:40} {f.p50:7.1f} {f.p95:7.1f} {f.queries:7} {rows:>5}   {f.reference:7.1f} ms  {f.ratio:5.1f}x"
            f"  ({f.reference_name})",
            flush=True,
        )


# --- a benchmark's command line and scratch database -----------------------------------------------------


def arguments(description: str, default_name: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--db", choices=["postgres", "sqlite"], default="postgres")
    parser.add_argument("--items", type=int, default=1_000_000)
    parser.add_argument("--open", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--name", default=default_name, help="PostgreSQL database name")
    parser.add_argument("--keep", action="store_true", help="keep the database for a later --reuse")
    parser.add_argument(
        "--reuse", action="store_true", help="measure a database kept by an earlier --keep (it stays kept)"
    )
    parser.add_argument("--drop", action="store_true", help="drop the database at the end, even a reused one")
    return parser.parse_args()


@contextmanager
def scratch_database(args: argparse.Namespace) -> Iterator[Dataset]:
    """The loaded database the arguments ask for (a kept one with ``--reuse``), dropped at the end unless
    ``--keep`` or ``--reuse`` (a database kept to be measured again is not lost by measuring it once more;
    ``--drop`` drops it all the same)."""
    with tempfile.TemporaryDirectory(prefix="bench-") as var_dir:
        reuse = args.reuse and args.db == "postgres" and database_exists(args.name)
        try:
            setup_django(db=args.db, name=args.name, var_dir=var_dir, fresh=not reuse)
            yield existing() if reuse else load(items=args.items, open_count=args.open)
        finally:
            if args.db == "postgres" and (args.drop or not (args.keep or args.reuse)):
                drop(args.name)


def stop(processes: list) -> None:
    """Terminate the benchmark's own subprocesses (and kill any that do not stop within 20 s)."""
    for process in processes:
        process.terminate()
    for process in processes:
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
