"""Click to next item: from clicking Approve to the next item shown, in Chromium, in the list's split view (the
default) or on the item page (``--view page``).

Starts the product as in production (uvicorn, DEBUG=0, PostgreSQL ``bench_click`` + Redis, the connection
pool) on a loopback port, with a Celery worker draining the resume queue, fills one inbox with runs of three
interrupts and logs in through the login form.

The split view (1280×800): the list with the first item beside it; Approve (a click) or the ``a`` / ``d`` keys
(pressed through Playwright's keyboard, alternating) show the next item's pane in place (split.js), which fetched it
ahead during a 300 ms pause before each (a reader's, shorter than any), and send the decision behind it. For each it
reads, in the page, the time from the click or the keydown event to the new pane swapped in (``performance.now()``,
the event's ``timeStamp``, split.js's ``inbox:pane-loaded``), then waits for the decision's answer and reads its
Resource Timing entry (the POST, sent behind the pane). The reference is the pane it will show, fetched by a plain
GET in the same page just before (its Resource Timing entry).

``--load``: the split view is measured quiet, then again with a load generator running (a process of
``--load-threads`` threads logged in as the same user, fetching list pages — tabs, a search, a page of rows — back
to back as fast as the server answers): what an approver sees when the server is busy with other people's lists.

A link to an item (``--view link``, 1280×800): for each item, opens its plain address (``/inbox/items/<id>/``,
as a mail or a notice links it), which on a wide screen replaces itself with the split view's (to_split.js):
wall time from the navigation to the split view's load event. The reference is the split view's address opened
directly (the same wall time): the difference is the item page's request that a link costs.

The item page (``--view page``, the page itself: ``?full=1``): for each item, opens its page and clicks Approve, and reads the Navigation
Timing entry of the page that follows (the POST, its redirect and the page shown): click → load event, the
redirect, the final response's server part (request sent → first byte) and the browser's part (first byte →
load event). The reference is the same page opened by a plain GET in the same run.

Prints p50 / p95 of each and the ratio of the medians. Nothing leaves 127.0.0.1.

    .venv/bin/python bench/next_page.py [--clicks 30] [--db postgres|sqlite] [--view split|page|link]
                                        [--load [--load-threads 4]]
"""

from __future__ import annotations

import argparse
import os
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))

import fixture  # noqa: E402

ROOT = fixture.ROOT
DB_NAME = "bench_click"
QUEUE = "inbox-bench-click"
TARGET_MS = 150.0
READING_MS = 300  # the split view: a pause before each click, as a reader's, in which the next pane is fetched ahead

# Arm the measure of one decision in the split view's pane: from the click, or the key's keydown event, to the next
# item's pane in (split.js's event); then the decision's POST, sent behind it, once its answer is in. The result is
# left in window.__next (a promise), read by NEXT_RESULT.
SPLIT_ARM = """(how) => {
  const pane = document.querySelector('#split-pane [data-pane-item]');
  const before = pane.dataset.itemId;
  performance.clearResourceTimings();
  let start = null;
  window.__next = new Promise((resolve, reject) => {
    if (how === 'key') document.addEventListener('keydown', (event) => { start = event.timeStamp; }, {once: true, capture: true});
    document.addEventListener('inbox:pane-loaded', async (event) => {
      const shown = performance.now() - start;
      const posted = () => performance.getEntriesByType('resource').find(e => e.name.includes('/decide/'));
      while (!posted()) await new Promise((done) => setTimeout(done, 10));
      resolve({before: before, after: event.detail.item, total: shown, request: posted().duration});
    }, {once: true});
    setTimeout(() => reject(new Error('no pane within 10 s')), 10000);
  });
  if (how === 'click') {
    start = performance.now();
    pane.querySelector('button[data-action=approve]').click();
  }
}"""

NEXT_RESULT = "() => window.__next"

NEXT_PANE = "() => new URL(document.querySelector('#split-pane [data-triage-next]').href).pathname"

# The same pane by a plain GET, in the same page: its Resource Timing entry.
SPLIT_REFERENCE = """async (path) => {
  performance.clearResourceTimings();
  const response = await fetch(path, {headers: {'HX-Request': 'true', 'HX-Target': 'split-pane'}});
  await response.text();
  const entry = performance.getEntriesByType('resource').find(e => e.name.endsWith(path));
  return entry.duration;
}"""

NAV_TIMING = """() => {
  const n = performance.getEntriesByType('navigation')[0];
  return {type: n.type, redirect: n.redirectEnd - n.redirectStart, server: n.responseStart - n.requestStart,
          browser: n.loadEventEnd - n.responseStart, total: n.loadEventEnd, redirects: n.redirectCount};
}"""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def summary(values: list[float]) -> str:
    ordered = sorted(values)
    p95 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))]
    return f"p50 {statistics.median(ordered):6.1f} ms   p95 {p95:6.1f} ms"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clicks", type=int, default=30)
    parser.add_argument("--db", choices=["postgres", "sqlite"], default="postgres")
    parser.add_argument("--view", choices=["split", "page", "link"], default="split")
    parser.add_argument("--load", action="store_true", help="split view: measure again with a load generator running")
    parser.add_argument("--load-threads", type=int, default=4)
    args = parser.parse_args()
    phases = ["quiet", "loaded"] if args.load and args.view == "split" else ["quiet"]
    from playwright.sync_api import sync_playwright

    port = free_port()
    var_dir = tempfile.mkdtemp(prefix="bench-click-")
    env = {
        **os.environ,
        "INBOX_VAR_DIR": var_dir,
        "DEBUG": "0",
        "LOG_LEVEL": "WARNING",
        "REDIS_URL": os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/9"),
        "CELERY_QUEUE": QUEUE,
        "CHANNELS_PREFIX": "inbox-bench-click",
        "SITE_URL": f"http://127.0.0.1:{port}",
        "INBOX_AGENT_ALLOWED_NETWORKS": "127.0.0.0/8",  # its agent's endpoint is on loopback
    }
    if args.db == "postgres":
        fixture.psql(f"DROP DATABASE IF EXISTS {DB_NAME} WITH (FORCE)")
        fixture.psql(f"CREATE DATABASE {DB_NAME}")
        env["DATABASE_URL"] = fixture.pg_url(DB_NAME)
    py = sys.executable
    processes: list[subprocess.Popen] = []
    try:
        subprocess.run([py, "manage.py", "migrate", "-v", "0"], cwd=ROOT, env=env, check=True)
        setup = "from django.contrib.auth.models import User; User.objects.create_user('clicker', password='click-click-1', is_staff=True)"
        subprocess.run([py, "manage.py", "shell", "-c", setup], cwd=ROOT, env=env, check=True)
        created = subprocess.run(
            [py, "manage.py", "agent_create", "clicks", "--endpoint", "http://127.0.0.1:9/agent"],
            cwd=ROOT,
            env=env,
            check=True,
            capture_output=True,
            text=True,
        )
        secret = created.stdout.strip().splitlines()[-1]
        processes.append(
            subprocess.Popen(
                [
                    py,
                    "-m",
                    "uvicorn",
                    "config.asgi:application",
                    "--host",
                    "127.0.0.1",
                    "--port",
                    str(port),
                    "--no-proxy-headers",
                ]
                + ["--no-access-log", "--log-level", "warning"],
                cwd=ROOT,
                env=env,
            )
        )
        processes.append(
            subprocess.Popen(
                [py, "-m", "celery", "-A", "config", "worker", "-Q", QUEUE, "-c", "1", "--loglevel", "WARNING"],
                cwd=ROOT,
                env=env,
                stdout=subprocess.DEVNULL,
            )
        )
        base = f"http://127.0.0.1:{port}"
        with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {secret}"}, timeout=30) as http:
            for _ in range(300):
                try:
                    if http.get("/api/v1/agent").status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                time.sleep(0.1)
            # The split view decides 2 × clicks items a phase (clicks and keys), the others one per click.
            wanted = args.clicks * (2 * len(phases) if args.view == "split" else 1) + 1
            runs = (wanted + 2) // 3 + 1
            for n in range(runs):
                body = {
                    "type": "RUN_FINISHED",
                    "threadId": f"click-thread-{n}",
                    "runId": f"click-run-{n}",
                    "outcome": {
                        "type": "interrupt",
                        "interrupts": [
                            {
                                "id": f"i-{k}",
                                "reason": "confirmation",
                                "message": f"Approve step {k} of run {n}?",
                                "responseSchema": {
                                    "type": "object",
                                    "properties": {"approved": {"type": "boolean"}},
                                    "required": ["approved"],
                                },
                            }
                            for k in range(3)
                        ],
                    },
                }
                assert http.post("/api/v1/runs", json=body).status_code == 201
        ids = _open_item_ids(env)[:wanted]

        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox"])
            page = browser.new_page(viewport={"width": 1280, "height": 800})
            page.goto(f"{base}/accounts/login/")
            page.fill("input[name=username]", "clicker")
            page.fill("input[name=password]", "click-click-1")
            page.click("button[type=submit], input[type=submit]")
            page.wait_for_load_state("load")
            if args.view == "split":
                results = _split_phases(page, base, ids, phases, args.clicks, args.load_threads)
            else:
                measure = {"page": _page_clicks, "link": _link_opens}[args.view]
                clicks, reference = measure(page, base, ids)
            browser.close()
    finally:
        fixture.stop(processes)
        _empty_queue(env["REDIS_URL"])
        if args.db == "postgres":
            fixture.psql(f"DROP DATABASE IF EXISTS {DB_NAME} WITH (FORCE)")

    if args.view == "split":
        print(
            f"decision to next item in the split view: {args.clicks} clicks on Approve and {args.clicks} presses of a/d "
            f"a phase, Chromium 1280×800, uvicorn + {args.db} + Redis, {os.cpu_count()} cores"
        )
        for phase, (measured, load) in results.items():
            head = phase if load is None else f"{phase} ({args.load_threads} threads fetching list pages: {load})"
            print(f"  {head}")
            for how, words in (("click", "Approve (click) → next pane"), ("key", "a / d (key) → next pane    ")):
                times, reference = measured[how]
                ratio = statistics.median(times["total"]) / statistics.median(reference)
                print(f"    {words}           {summary(times['total'])}   target < {TARGET_MS:.0f} ms")
                print(f"      the decision's POST, sent behind      {summary(times['request'])}")
                print(f"      reference: the same pane, plain GET   {summary(reference)}   ratio {ratio:.2f}")
        return 0
    if args.view == "link":
        print(f"a link to an item: {len(clicks['total'])} items, Chromium 1280×800, uvicorn + {args.db} + Redis")
        print(f"  item link → split view loaded (wall, Playwright) {summary(clicks['total'])}")
        print(f"  reference: the split view's address opened       {summary(reference['total'])}")
        print(
            f"  the link's cost (difference of the medians)      {statistics.median(clicks['total']) - statistics.median(reference['total']):.1f} ms"
        )
    else:
        print(f"click to next page: {len(clicks['total'])} clicks on Approve, Chromium, uvicorn + {args.db} + Redis")
        print(f"  click → next page loaded (wall, Playwright)   {summary(clicks['wall'])}")
        print(
            f"  navigation start → load event (timing)        {summary(clicks['total'])}   target < {TARGET_MS:.0f} ms"
        )
        print(f"    POST + redirect                             {summary(clicks['redirect'])}")
        print(f"    page after it: request → first byte         {summary(clicks['server'])}")
        print(f"    page after it: first byte → load event      {summary(clicks['browser'])}")
        print(f"  reference: the same page by a plain GET       {summary(reference['total'])}")
    ratio = statistics.median(clicks["total"]) / statistics.median(reference["total"])
    print(f"  ratio click / plain GET: {ratio:.2f}")
    return 0


def _split_phases(page, base: str, ids: list[int], phases: list[str], count: int, threads: int) -> dict:
    """Each phase: ``count`` clicks on Approve and ``count`` presses of a / d, alternating, in the split view;
    the loaded phase with the load generator running. {phase: ({"click"|"key": (times, reference)}, load words)}."""
    page.goto(f"{base}/inbox/?item={ids[0]}")
    page.wait_for_selector(f'#split-pane [data-pane-item][data-item-id="{ids[0]}"]')
    results = {}
    for phase in phases:
        generator = None
        if phase == "loaded":
            cookies = {cookie["name"]: cookie["value"] for cookie in page.context.cookies()}
            generator = LoadGenerator(base, cookies, threads)
            generator.start()
        try:
            measured = _split_decisions(page, count)
        finally:
            load = generator.stop() if generator is not None else None
        results[phase] = (measured, load)
    return results


def _split_decisions(page, count: int) -> dict:
    measured: dict = {how: ({"total": [], "request": []}, []) for how in ("click", "key")}
    for n in range(2 * count):
        how = "click" if n % 2 == 0 else "key"
        times, reference = measured[how]
        page.wait_for_timeout(READING_MS)
        # The reference first, once the page is quiet (the pane fetched ahead, the socket reconnected): the pane
        # the decision will show, by a plain GET.
        following = page.evaluate(NEXT_PANE)
        reference.append(page.evaluate(SPLIT_REFERENCE, following))
        page.evaluate(SPLIT_ARM, how)
        if how == "key":
            page.keyboard.press("a" if n % 4 == 1 else "d")
        timing = page.evaluate(NEXT_RESULT)
        assert timing["after"] != timing["before"] and following.endswith(f"/{timing['after']}/"), timing
        for key in ("total", "request"):
            times[key].append(timing[key])
    return measured


class LoadGenerator:
    """Another process, ``threads`` threads logged in with the page's session, fetching list pages back to back."""

    PATHS = (
        "/inbox/",
        "/inbox/?tab=all",
        "/inbox/?tab=decided",
        "/inbox/?tab=mine",
        "/inbox/?q=step",
        "/inbox/?page=2",
    )

    def __init__(self, base: str, cookies: dict[str, str], threads: int) -> None:
        import multiprocessing

        self.stopping = multiprocessing.Event()
        self.count = multiprocessing.Value("i", 0)
        self.process = multiprocessing.Process(
            target=LoadGenerator._run, args=(base, cookies, threads, self.stopping, self.count), daemon=True
        )
        self.started = 0.0

    def start(self) -> None:
        self.process.start()
        self.started = time.perf_counter()

    def stop(self) -> str:
        self.stopping.set()
        self.process.join(timeout=30)
        seconds = time.perf_counter() - self.started
        return f"{self.count.value} pages in {seconds:.0f} s, {self.count.value / seconds:.1f}/s"

    @staticmethod
    def _run(base: str, cookies: dict[str, str], threads: int, stopping, count) -> None:
        import threading

        def hammer(offset: int) -> None:
            with httpx.Client(base_url=base, cookies=cookies, timeout=30) as http:
                n = offset
                while not stopping.is_set():
                    http.get(LoadGenerator.PATHS[n % len(LoadGenerator.PATHS)])
                    n += 1
                    with count.get_lock():
                        count.value += 1

        workers = [threading.Thread(target=hammer, args=(n,)) for n in range(threads)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()


def _page_clicks(page, base: str, ids: list[int]) -> tuple[dict, dict]:
    clicks: dict[str, list[float]] = {"total": [], "redirect": [], "server": [], "browser": [], "wall": []}
    reference: dict[str, list[float]] = {"total": [], "server": [], "browser": []}
    for pk in ids[1:]:
        page.goto(f"{base}/inbox/items/{pk}/?full=1")
        started = time.perf_counter()
        with page.expect_navigation(wait_until="load"):
            page.click("button[data-action=approve]")
        clicks["wall"].append((time.perf_counter() - started) * 1000)
        timing = page.evaluate(NAV_TIMING)
        for key in ("total", "redirect", "server", "browser"):
            clicks[key].append(timing[key])
        page.goto(f"{base}/inbox/items/{pk}/?full=1")  # the same page, by a plain GET
        timing = page.evaluate(NAV_TIMING)
        for key in ("total", "server", "browser"):
            reference[key].append(timing[key])
    return clicks, reference


def _link_opens(page, base: str, ids: list[int]) -> tuple[dict, dict]:
    opens: dict[str, list[float]] = {"total": []}
    reference: dict[str, list[float]] = {"total": []}
    for pk in ids[1:]:
        started = time.perf_counter()
        page.goto(f"{base}/inbox/items/{pk}/", wait_until="commit")
        page.wait_for_url(re.compile(rf"/inbox/\?(.*&)?item={pk}$"), wait_until="load")
        opens["total"].append((time.perf_counter() - started) * 1000)
        split = page.url
        started = time.perf_counter()
        page.goto(split, wait_until="load")
        reference["total"].append((time.perf_counter() - started) * 1000)
    return opens, reference


def _open_item_ids(env: dict) -> list[int]:
    out = subprocess.run(
        [
            sys.executable,
            "manage.py",
            "shell",
            "-c",
            "from inbox.models import InboxItem; "
            "print(','.join(str(pk) for pk in InboxItem.objects.filter(status='open').order_by('pk')"
            ".values_list('pk', flat=True)))",
        ],
        cwd=ROOT,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    return [int(pk) for pk in out.stdout.strip().splitlines()[-1].split(",")]


def _empty_queue(url: str) -> None:
    import redis

    redis.Redis.from_url(url).delete(QUEUE)


if __name__ == "__main__":
    sys.exit(main())
