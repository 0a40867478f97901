"""The list and item pages with and without what the audit work added to them (first-seen records, the
provenance card), measured in the same run on the same database, with the ratio.

Loads a scratch database with ``bench/fixture.py`` (PostgreSQL ``bench_audit_overhead`` by default, dropped
afterwards unless ``--keep`` or ``--reuse``), then measures the same pages alternately "before" and "today",
``--rounds`` times each, every round in a fresh process on the same database. "Before" is today's code with the
audit additions switched off in that process (``record_seen`` a no-op, the provenance card rendering nothing), so
the figures isolate them. ``--baseline REV`` measures a git revision's code instead (checked out into a temporary
worktree; it only reads, and its models are a subset of today's tables, so it runs on today's schema unchanged):
``--baseline a694be5^`` is the last commit before the audit work.

Each page is timed in-process with Django's test client, for a staff user and a team approver. The item page is
timed twice: shown again (today's code records nothing new) and shown for the first time (today's code inserts the
first-seen row: each request opens an item not opened before, in both codes). Prints the p50 of every page with
each code, the ratio today / before, and today's bare SQL beside it; then the same for the process's own CPU time
per request (``time.process_time``), which a loaded machine disturbs far less than the wall clock. Nothing leaves
127.0.0.1.

    .venv/bin/python bench/audit_overhead.py [--items 1000000] [--open 100000] [--repeat 15] [--rounds 3]
        [--baseline REV] [--keep] [--reuse [--drop]]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import fixture  # noqa: E402

DB_NAME = "bench_audit_overhead"
LIST_PAGES = [
    ("list: open (default)", "/inbox/"),
    ("list: mine", "/inbox/?tab=mine"),
    ("list: decided", "/inbox/?tab=decided"),
    ("list: all, page 100", "/inbox/?tab=all&page=100"),
    ("list: all, search", "/inbox/?tab=all&q=invoice%20424242"),
]


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=1_000_000)
    parser.add_argument("--open", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--rounds", type=int, default=3, help="processes per code, alternating")
    parser.add_argument("--baseline", help="a git revision measured as 'before' (default: today without the additions)")
    parser.add_argument("--name", default=DB_NAME, help="PostgreSQL database name")
    parser.add_argument("--keep", action="store_true")
    parser.add_argument("--reuse", action="store_true")
    parser.add_argument("--drop", action="store_true")
    # Internal: one measuring process.
    parser.add_argument("--measure", metavar="CODE_ROOT", help=argparse.SUPPRESS)
    parser.add_argument("--without-audit", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--first-view-offset", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--var-dir", help=argparse.SUPPRESS)
    return parser.parse_args()


# --- one measuring process, running the code of CODE_ROOT -------------------------------------------------


def _setup(code_root: str, var_dir: str) -> None:
    os.environ["INBOX_VAR_DIR"] = var_dir
    os.environ["DEBUG"] = "0"
    os.environ.setdefault("REDIS_URL", "redis://127.0.0.1:6379/9")
    os.environ.setdefault("CHANNELS_PREFIX", "inbox-bench")
    os.environ.setdefault("CELERY_QUEUE", "inbox-bench")
    os.environ["LOG_LEVEL"] = "WARNING"
    os.environ["DJANGO_SETTINGS_MODULE"] = "config.settings"
    os.chdir(code_root)
    sys.path.insert(0, code_root)
    import django

    django.setup()
    try:
        from config.startup import freeze_loaded_objects
    except ImportError:
        return
    freeze_loaded_objects()


def _switch_audit_off() -> None:
    """Today's code as it was before the audit work reached the pages: no first-seen row, no provenance card."""
    from django import template

    import inbox.web.listing
    import inbox.web.pages
    from inbox.templatetags import audit_tags

    class Nothing(template.Node):
        def render(self, context: template.Context) -> str:
            return ""

    inbox.web.listing.record_seen = inbox.web.pages.record_seen = lambda **_: None  # type: ignore[attr-defined]
    audit_tags.register.tags["item_provenance_card"] = lambda parser, token: Nothing()


def _first_views(client, urls: list[str]) -> list[tuple[float, float]]:
    """(wall ms, CPU ms) of GETting each url once."""
    import time

    timings = []
    for url in urls:
        started, cpu = time.perf_counter(), time.process_time()
        response = client.get(url)
        timings.append(((time.perf_counter() - started) * 1000, (time.process_time() - cpu) * 1000))
        assert response.status_code == 200, (url, response.status_code)
    return timings


def _timed(client, url: str, repeat: int) -> list[tuple[float, float]]:
    _first_views(client, [url])  # warm caches and plans
    return _first_views(client, [url] * repeat)


def measure_here(args: argparse.Namespace) -> None:
    """Print one JSON object: {user: {page: [[wall ms, CPU ms], ...]}} for the code this process runs."""
    _setup(args.measure, args.var_dir)
    if args.without_audit:
        _switch_audit_off()
    from django.contrib.auth.models import User
    from django.test import Client
    from django.utils import timezone

    from inbox.models import InboxItem

    later = timezone.now() + __import__("datetime").timedelta(hours=1)
    result: dict[str, dict[str, list[tuple[float, float]]]] = {}
    for username in ("staff", "approver"):
        user = User.objects.get(username=username)
        client = Client()
        client.force_login(user)
        timings: dict[str, list[tuple[float, float]]] = {}
        for label, url in LIST_PAGES:
            timings[label] = _timed(client, url, args.repeat)
        # The approver sees agents 0 and 5 (team 0): open items of those agents, a slice of its own per process.
        mine = InboxItem.objects.filter(status="open", expires_at__gt=later)
        if username == "approver":
            mine = mine.filter(agent__teams__user=user)
        ids = list(mine.order_by("pk").values_list("pk", flat=True)[: (args.repeat + 1) * 64])
        shown = ids[0]
        timings["item page, shown again"] = _timed(client, f"/inbox/items/{shown}/", args.repeat)
        offset = 1 + args.first_view_offset * args.repeat
        fresh = ids[offset : offset + args.repeat]
        assert len(fresh) == args.repeat, "too few open items for first views: raise --open"
        timings["item page, first view"] = _first_views(client, [f"/inbox/items/{pk}/" for pk in fresh])
        result[username] = timings
    print("RESULT " + json.dumps(result), flush=True)


# --- the orchestrating process ------------------------------------------------------------------------------


Timings = dict[str, dict[str, list[list[float]]]]  # user -> page -> [[wall ms, CPU ms], ...]


def _run(code_root: str, args: argparse.Namespace, var_dir: str, offset: int, *, without_audit: bool) -> Timings:
    env = {**os.environ, "DATABASE_URL": fixture.pg_url(args.name)}
    command = [sys.executable, str(Path(__file__).resolve()), "--measure", code_root, "--var-dir", var_dir]
    command += ["--repeat", str(args.repeat), "--first-view-offset", str(offset), "--name", args.name]
    command += ["--without-audit"] if without_audit else []
    out = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    lines = [line for line in out.stdout.splitlines() if line.startswith("RESULT ")]
    if out.returncode or not lines:
        sys.exit(f"measuring {code_root} failed:\n{out.stdout}\n{out.stderr}")
    return json.loads(lines[-1].removeprefix("RESULT "))


def _bare_sql(repeat: int) -> dict[str, dict[str, float]]:
    """Today's bare SQL of each page (the floor both codes stand on), in this process."""
    from django.contrib.auth.models import User
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    from inbox.models import InboxItem

    reference: dict[str, dict[str, float]] = {}
    for username in ("staff", "approver"):
        client = Client()
        client.force_login(User.objects.get(username=username))
        urls = dict(LIST_PAGES)
        some = InboxItem.objects.filter(status="open").order_by("pk").values_list("pk", flat=True).first()
        urls["item page, shown again"] = urls["item page, first view"] = f"/inbox/items/{some}/"
        reference[username] = {}
        for label, url in urls.items():
            client.get(url)
            with CaptureQueriesContext(connection) as captured:
                client.get(url)
            reference[username][label] = fixture.bare_sql_ms(list(captured.captured_queries), repeat)
    return reference


@contextmanager
def _before_code(args: argparse.Namespace) -> Iterator[tuple[str, bool, str]]:
    """(code root, switch the audit additions off, description) of what "before" runs."""
    root = fixture.ROOT
    if not args.baseline:
        yield str(root), True, "today's code with the audit additions switched off"
        return
    revision = subprocess.run(
        ["git", "-C", str(root), "rev-parse", "--short", args.baseline], capture_output=True, text=True, check=True
    ).stdout.strip()
    with tempfile.TemporaryDirectory(prefix="bench-baseline-") as tree:
        subprocess.run(["git", "-C", str(root), "worktree", "add", "--detach", tree, revision], check=True)
        try:
            yield tree, False, f"the code of {revision} ({args.baseline})"
        finally:
            subprocess.run(["git", "-C", str(root), "worktree", "remove", "--force", tree], check=False)


def main() -> None:
    args = arguments()
    if args.measure:
        measure_here(args)
        return
    data_args = argparse.Namespace(
        db="postgres",
        items=args.items,
        open=args.open,
        name=args.name,
        keep=args.keep,
        reuse=args.reuse,
        drop=args.drop,
    )
    with _before_code(args) as (before_root, switch_off, described), tempfile.TemporaryDirectory() as var_dir:
        with fixture.scratch_database(data_args) as data:
            print(
                f"{data.items:,} items, {data.open:,} open; before: {described}; {args.rounds} processes each, "
                f"alternating, {args.repeat} requests per page per process"
            )
            reference = _bare_sql(args.repeat)
            pooled: dict[str, Timings] = {"before": {}, "today": {}}
            codes = (("before", before_root, switch_off), ("today", str(fixture.ROOT), False))
            for round_ in range(args.rounds):
                for which, code_root, without_audit in codes:
                    offset = 2 * round_ + (which == "today")
                    measured = _run(code_root, args, var_dir, offset, without_audit=without_audit)
                    for user, pages in measured.items():
                        for label, timings in pages.items():
                            pooled[which].setdefault(user, {}).setdefault(label, []).extend(timings)
            _print(pooled, reference)


def _print(pooled: dict[str, Timings], reference: dict[str, dict[str, float]]) -> None:
    worst = {"wall": 0.0, "CPU": 0.0}
    for column, name in ((0, "wall"), (1, "CPU")):
        for user, pages in pooled["today"].items():
            print(f"\n{user}: {name} time p50 ms per request, before and today, same database, same run")
            print(f"  {'page':32} {'before':>7} {'today':>7} {'ratio':>6}   {'bare SQL':>8}  {'today/SQL':>9}")
            for label, timings in pages.items():
                before = statistics.median(t[column] for t in pooled["before"][user][label])
                today = statistics.median(t[column] for t in timings)
                sql = reference[user][label]
                worst[name] = max(worst[name], today / before)
                print(
                    f"  {label:32} {before:7.1f} {today:7.1f} {today / before:5.2f}x   {sql:6.1f} ms  "
                    f"{today / sql:8.1f}x"
                )
    print(f"\nworst ratio today / before: {worst['wall']:.2f}x wall, {worst['CPU']:.2f}x CPU", flush=True)


if __name__ == "__main__":
    main()
