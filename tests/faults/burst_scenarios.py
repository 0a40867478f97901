"""Fault-suite scenarios under a burst: many decisions at once against a slow agent, so that a backlog of resumes
forms in the queue, and a fault in the middle of it.

``Suite`` (tests/faults/suite.py) inherits these; they use its helpers and its deployment (``self.cluster``).

- **burst-worker-kill**: a worker is SIGKILLed mid-burst (while it sends one resume and may hold others), then
  started again.
- **burst-redis-empty**: Redis is killed mid-burst and restarted empty: every queued message and every mark is gone.

Each checks what the suite checks after every scenario (nothing lost, nothing executed twice, nothing late), and
also that the backlog drains and that the queue never holds more dispatch messages than there are pending resumes
plus a small constant (the recovery sweep adds none for a message that is only waiting). The recovery column
prints sent / lost / doubled / late, the deepest queue (and the most dispatch messages beyond the pending resumes)
and the drain time, from the last decision to the last resume delivered.
"""

from __future__ import annotations

import json
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import redis

from config.queues import KINDS

BURST_RUNS = 60
RESUME_SECONDS = 0.3  # the demo agent's pace over each resume: 2 workers drain ~6 a second, the burst is faster
EXCESS_ALLOWED = 20  # dispatch messages in Redis beyond the pending resumes (a sample's two reads are not atomic)
DRAIN_TIMEOUT = 120


class _QueueWatch:
    """Samples, every 0.2 s, each queue's depth and the dispatch messages in Redis against the pending resumes."""

    def __init__(self, url: str, tag: str, threads: list[str]) -> None:
        self.client = redis.Redis.from_url(url, socket_timeout=1, socket_connect_timeout=1)
        self.names = [tag, *(f"{tag}-{kind}" for kind in KINDS)]
        self.threads = threads
        self.deepest: dict[str, int] = {}
        self.excess = 0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> _QueueWatch:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join(timeout=10)

    def _dispatches(self) -> tuple[dict[str, int], int]:
        depth: dict[str, int] = {}
        dispatches = 0
        for name in self.names:
            messages = self.client.lrange(name, 0, -1)
            depth[name] = len(messages)
            for raw in messages:
                message = json.loads(raw)
                if message["headers"].get("task") == "inbox.tasks.dispatch_resume":
                    dispatches += 1
        # Those a worker holds (received, not yet acknowledged: a countdown or the one it runs) count too.
        for raw in self.client.hvals("unacked"):
            message = json.loads(raw)[0]
            if message["headers"].get("task") == "inbox.tasks.dispatch_resume":
                dispatches += 1
        return depth, dispatches

    def _run(self) -> None:
        from django.db import close_old_connections

        from inbox.models import Resume

        try:
            while not self.stop.wait(0.2):
                try:
                    depth, dispatches = self._dispatches()
                except (redis.RedisError, ValueError, KeyError):
                    continue  # Redis is down (the fault): nothing to sample
                close_old_connections()
                pending = Resume.objects.filter(thread__thread_id__in=self.threads, state="pending").count()
                for name, count in depth.items():
                    self.deepest[name] = max(self.deepest.get(name, 0), count)
                self.excess = max(self.excess, dispatches - pending)
        finally:
            from django.db import connection

            connection.close()


class BurstScenarios:
    """Mixin of ``tests.faults.suite.Suite``."""

    def _decide_until_stored(self: Any, scenario: str, thread_id: str, web: int) -> bool:
        """An approver's client: a 503 or a cut connection (the fault) is tried again, as the API asks."""
        for attempt in range(40):
            response = self.decide(scenario, thread_id, web=(web + attempt) % 2, token=web % 2)
            if response is not None and response.status_code == 201:
                return True
            if response is not None and response.status_code == 409:  # an earlier try that was cut had landed
                return self.item_of(thread_id).status != "open"
            time.sleep(0.5)
        return False

    def _burst(self: Any, row: Any, fault: Any) -> None:
        from django.db import close_old_connections

        from inbox.models import Resume

        threads = self.new_runs(row, BURST_RUNS)
        self.pace(RESUME_SECONDS)
        decided: list[str] = []
        half = threading.Event()
        watch = _QueueWatch(self.cluster.env["REDIS_URL"], self.cluster.env["CELERY_QUEUE"], threads)

        def decide(index_thread: tuple[int, str]) -> None:
            index, thread_id = index_thread
            if self._decide_until_stored(row.scenario, thread_id, index % 2):
                with self.lock:
                    decided.append(thread_id)
                    if len(decided) >= len(threads) // 2:
                        half.set()
            else:
                row.failures.append(f"{thread_id}: the decision was never stored")

        with watch:
            with ThreadPoolExecutor(8) as pool:
                futures = [pool.submit(decide, pair) for pair in enumerate(threads)]
                half.wait(timeout=60)
                fault()
                for future in futures:
                    future.result()
            last_decision = time.monotonic()
            took = self.settle(row, timeout=DRAIN_TIMEOUT)
        self.pace(0)
        drain = time.monotonic() - last_decision
        tag = self.cluster.env["CELERY_QUEUE"]
        deepest = ", ".join(f"{name.removeprefix(tag + '-')} {count}" for name, count in watch.deepest.items() if count)
        close_old_connections()
        states = list(Resume.objects.filter(thread__thread_id__in=threads).values_list("state", flat=True))
        record = self.demo_record()
        sent = sum(1 for request in record["requests"] if request.get("resume") and request["threadId"] in threads)
        row.recovery = (
            f"sent {sent} for {states.count('delivered')} delivered; deepest queue: {deepest}; dispatch messages at "
            f"most pending + {max(watch.excess, 0)}; drained {drain:.0f} s after the last decision"
        )
        row.notes.append(f"settled in {took:.0f} s")
        if watch.excess > EXCESS_ALLOWED:
            row.failures.append(f"{watch.excess} dispatch messages beyond the pending resumes (> {EXCESS_ALLOWED})")

    def scenario_burst_worker_killed(self: Any) -> Any:
        from inbox.models import Resume
        from tests.faults.cluster import wait_until
        from tests.faults.suite import Row

        row = Row(
            "burst-worker-kill",
            f"{BURST_RUNS} decisions at once, a slow agent, a worker SIGKILLed mid-burst: all drain, none doubled",
        )

        def kill() -> None:
            try:
                wait_until(
                    lambda: Resume.objects.filter(thread__thread_id__in=row.threads, state="sending").exists(),
                    timeout=20,
                    what="a resume being sent",
                )
            except TimeoutError as exc:
                row.failures.append(str(exc))
            self.cluster.workers[0].kill()
            time.sleep(2)
            self.cluster.start_worker(0)

        self._burst(row, kill)
        return row

    def scenario_burst_redis_restarted_empty(self: Any) -> Any:
        from tests.faults.suite import Row

        row = Row(
            "burst-redis-empty",
            f"{BURST_RUNS} decisions at once, Redis restarted empty mid-burst: what it lost is queued again, once",
        )

        def restart() -> None:
            self.cluster.redis_kill()
            time.sleep(3)
            self.cluster.redis_start()

        self._burst(row, restart)
        return row
