"""Click to next page: from clicking Approve on an item to the page after it, in Chromium (navigation timing).

Starts the product as in production (uvicorn, DEBUG=0, PostgreSQL ``bench_click`` + Redis, the connection
pool) on a loopback port, with a Celery worker draining the resume queue, fills one inbox with runs of three
interrupts, logs in through the login form and then, for each item, opens its page and clicks Approve. For each
click it reads the Navigation Timing entry of the page that follows (the POST, its redirect and the page
shown) and prints p50 / p95 of: click → load event (what the user waits for), the redirect, the final
response's server part (request sent → first byte) and the browser's part (first byte → load event). The
reference is the same page opened by a plain GET in the same run. Nothing leaves 127.0.0.1.

    .venv/bin/python bench/next_page.py [--clicks 30] [--db postgres|sqlite]
"""

from __future__ import annotations

import argparse
import os
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
    args = parser.parse_args()
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
    }
    if args.db == "postgres":
        fixture.psql(f"DROP DATABASE IF EXISTS {DB_NAME}")
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
                [py, "-m", "uvicorn", "config.asgi:application", "--host", "127.0.0.1", "--port", str(port)]
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
            runs = (args.clicks + 2) // 3 + 1
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
        ids = _open_item_ids(env)[: args.clicks + 1]

        clicks: dict[str, list[float]] = {"total": [], "redirect": [], "server": [], "browser": [], "wall": []}
        reference: dict[str, list[float]] = {"total": [], "server": [], "browser": []}
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox"])
            page = browser.new_page()
            page.goto(f"{base}/accounts/login/")
            page.fill("input[name=username]", "clicker")
            page.fill("input[name=password]", "click-click-1")
            page.click("button[type=submit], input[type=submit]")
            page.wait_for_load_state("load")
            for pk in ids[1:]:
                page.goto(f"{base}/inbox/items/{pk}/")
                started = time.perf_counter()
                with page.expect_navigation(wait_until="load"):
                    page.click("button[data-action=approve]")
                clicks["wall"].append((time.perf_counter() - started) * 1000)
                timing = page.evaluate(NAV_TIMING)
                for key in ("total", "redirect", "server", "browser"):
                    clicks[key].append(timing[key])
                page.goto(f"{base}/inbox/items/{pk}/")  # the same page, by a plain GET
                timing = page.evaluate(NAV_TIMING)
                for key in ("total", "server", "browser"):
                    reference[key].append(timing[key])
            browser.close()
    finally:
        fixture.stop(processes)
        _empty_queue(env["REDIS_URL"])
        if args.db == "postgres":
            fixture.psql(f"DROP DATABASE IF EXISTS {DB_NAME}")

    print(f"click to next page: {len(clicks['total'])} clicks on Approve, Chromium, uvicorn + {args.db} + Redis")
    print(f"  click → next page loaded (wall, Playwright)   {summary(clicks['wall'])}")
    print(f"  navigation start → load event (timing)        {summary(clicks['total'])}   target < {TARGET_MS:.0f} ms")
    print(f"    POST + redirect                             {summary(clicks['redirect'])}")
    print(f"    page after it: request → first byte         {summary(clicks['server'])}")
    print(f"    page after it: first byte → load event      {summary(clicks['browser'])}")
    print(f"  reference: the same page by a plain GET       {summary(reference['total'])}")
    ratio = statistics.median(clicks["total"]) / statistics.median(reference["total"])
    print(f"  ratio click / plain GET: {ratio:.2f}")
    return 0


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
