"""Fault-suite scenarios for the processes themselves: make killed, Redis restarting while messages are
restored, a live page through a Redis outage.

``Suite`` (tests/faults/suite.py) inherits these; they use its helpers and its deployment (``self.cluster``).

- **redis-restarts**: Redis killed and restarted empty three times while both workers are sending resumes
  (a slow agent: every running task is an unacknowledged message they restore). Both workers stay up — no
  ``Unrecoverable error`` (config/broker.py) — and every resume is delivered.
- **make-killed**: ``make run`` (its own var dir and ports, the embedded default) is SIGKILLed: every process
  under it stops and the port is free within seconds.
- **live-redis-outage**: a signed-in page (Chromium) open while Redis is down for 15 s: its reconnect attempts
  are counted (capped backoff: a handful, not dozens), the web processes log the outage once and no traceback,
  and the page is live again within seconds of Redis's return.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import httpx

from tests.faults.cluster import ROOT, free_port, wait_until

REDIS_RESTARTS = 3
LIVE_OUTAGE_SECONDS = 15


def _descendants(root: int) -> set[int]:
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            parents[int(entry.name)] = int(stat[stat.rindex(")") + 2 :].split()[1])
    found: set[int] = set()
    frontier = [root]
    while frontier:
        parent = frontier.pop()
        for pid, ppid in parents.items():
            if ppid == parent and pid not in found:
                found.add(pid)
                frontier.append(pid)
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return state[state.rindex(")") + 2] != "Z"


class ProcessScenarios:
    """Mixin of ``tests.faults.suite.Suite``."""

    def scenario_redis_restarts_while_restoring(self: Any) -> Any:
        from inbox.models import Resume
        from tests.faults.suite import Row

        row = Row(
            "redis-restarts",
            f"Redis restarted empty {REDIS_RESTARTS}x while both workers hold unacknowledged messages: both stay up",
        )
        offsets = [worker.log.stat().st_size for worker in self.cluster.workers]
        self.pace(2)
        started = time.monotonic()
        for _ in range(REDIS_RESTARTS):
            threads = self.new_runs(row, 4)
            for thread_id in threads:
                self.decide(row.scenario, thread_id)
            try:
                wait_until(
                    lambda threads=threads: Resume.objects.filter(
                        thread__thread_id__in=threads, state="sending"
                    ).exists(),
                    timeout=20,
                    what="a resume being sent",
                )
            except TimeoutError as exc:
                row.failures.append(str(exc))
            self.cluster.redis_kill()
            time.sleep(2)
            self.cluster.redis_start()
            time.sleep(3)
        took = self.settle(row, timeout=90)
        self.pace(0)
        for worker, offset in zip(self.cluster.workers, offsets, strict=True):
            log = worker.log.read_text(errors="replace")[offset:]
            if not worker.alive():
                row.failures.append(f"{worker.name} died: {worker.tail(5)}")
            if "Unrecoverable error" in log:
                row.failures.append(f"{worker.name} logged an unrecoverable error")
        alive = sum(worker.alive() for worker in self.cluster.workers)
        row.recovery = f"{REDIS_RESTARTS} restarts; workers up {alive}/2; {time.monotonic() - started:.0f} s in all"
        row.notes.append(f"settled in {took:.0f} s")
        return row

    def scenario_make_killed(self: Any) -> Any:
        from tests.faults.suite import Row

        row = Row("make-killed", "SIGKILL of `make run`: every process under it stops and its port is free")
        port, demo_port = free_port(), free_port()
        cluster_only = {"DATABASE_URL", "REDIS_URL", "CELERY_QUEUE", "CHANNELS_PREFIX", "SECRET_KEY", "SITE_URL"}
        env = {k: v for k, v in os.environ.items() if k not in cluster_only and not k.startswith("MAKE")}
        env.update(INBOX_VAR_DIR=str(self.cluster.root / "make-var"), DEMO_AGENT_PORT=str(demo_port))
        log = open(self.cluster.logs / "make.log", "w")
        make = subprocess.Popen(
            ["make", "--no-print-directory", "run", "-o", ".venv/.installed", f"PORT={port}"],
            cwd=ROOT,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        log.close()
        children: set[int] = set()
        try:
            wait_until(
                lambda: httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=2).status_code == 200,
                timeout=180,
                what="make run to be healthy",
                interval=1,
            )
            children = _descendants(make.pid)
            make.kill()
            make.wait(timeout=10)
            killed = time.monotonic()
            try:
                wait_until(lambda: not any(_alive(pid) for pid in children), timeout=30, what="its processes to stop")
            except TimeoutError as exc:
                row.failures.append(f"{exc}: {sorted(pid for pid in children if _alive(pid))}")
            stopped = time.monotonic() - killed
            with httpx.Client(timeout=1) as client:
                try:
                    client.get(f"http://127.0.0.1:{port}/healthz")
                    row.failures.append("the port still answers after make was killed")
                except httpx.TransportError:
                    pass
            row.recovery = f"{len(children)} processes under make; all gone {stopped:.1f} s after its SIGKILL"
        except TimeoutError as exc:
            row.failures.append(f"{exc}: {(self.cluster.logs / 'make.log').read_text()[-1500:]}")
        finally:
            if make.poll() is None:
                make.kill()
                make.wait()
            for pid in children:
                if _alive(pid):
                    os.kill(pid, signal.SIGKILL)
        return row

    def scenario_live_page_through_redis_outage(self: Any) -> Any:
        from playwright.sync_api import sync_playwright

        from tests.faults.suite import Row

        row = Row(
            "live-outage",
            f"a live page through a {LIVE_OUTAGE_SECONDS} s Redis outage: a few reconnects, one log line, back soon",
        )
        offsets = [0, 0]
        os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"  # Playwright's loop on this thread; the ORM is still safe
        try:
            with sync_playwright() as playwright:
                browser = playwright.chromium.launch(
                    executable_path="/usr/bin/chromium", args=["--no-sandbox", "--disable-gpu"], headless=True
                )
                try:
                    page = browser.new_context(base_url=self.cluster.web_url(0)).new_page()
                    page.set_default_timeout(20_000)
                    page.goto("/accounts/login/")
                    page.fill("input[name=username]", "ann")
                    page.fill("input[name=password]", "correct-horse-battery")
                    page.click("button[type=submit], input[type=submit]")
                    page.wait_for_url(lambda url: "/accounts/login/" not in url)
                    page.goto("/inbox/")
                    page.wait_for_selector("body[data-live=open]")
                    # From here: what an earlier Redis restart left (a stale pooled connection) is not this outage.
                    offsets = [web.log.stat().st_size for web in self.cluster.webs]
                    self.cluster.redis_kill()
                    page.wait_for_selector("body[data-live=closed]")
                    before = int(page.get_attribute("body", "data-live-attempts") or 0)
                    time.sleep(LIVE_OUTAGE_SECONDS)
                    attempts = int(page.get_attribute("body", "data-live-attempts") or 0) - before
                    self.cluster.redis_start()
                    back = time.monotonic()
                    page.wait_for_selector("body[data-live=open]", timeout=20_000)
                    took = time.monotonic() - back
                finally:
                    browser.close()
        finally:
            os.environ.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
        logs = [
            web.log.read_text(errors="replace")[offset:] for web, offset in zip(self.cluster.webs, offsets, strict=True)
        ]
        tracebacks = sum(log.count("Exception in ASGI application") for log in logs)
        lines = max(log.count("channel layer (Redis) is unreachable") for log in logs)
        if attempts > 10:
            row.failures.append(f"{attempts} reconnect attempts in {LIVE_OUTAGE_SECONDS} s")
        if took > 10:
            row.failures.append(f"the page was live again {took:.1f} s after Redis returned")
        if tracebacks:
            row.failures.append(f"{tracebacks} ASGI tracebacks in the web logs")
        if lines > 1:
            row.failures.append(f"the outage was logged {lines} times by one web process")
        row.recovery = (
            f"{attempts} reconnects in {LIVE_OUTAGE_SECONDS} s; live {took:.1f} s after Redis returned; "
            f"{lines} outage line(s), {tracebacks} tracebacks"
        )
        return row
