"""Fault-suite scenarios for what ``/healthz`` and the 503s say: a degraded or down status that is true, and
503s with Retry-After.

``Suite`` (tests/faults/suite.py) inherits these; they use its helpers (``new_runs``, ``decide``, ``settle``,
``call``) and its deployment (``self.cluster``).

- **redis-oom**: Redis full under ``noeviction`` (it answers reads, refuses writes). ``/healthz`` says
  ``redis: down`` within seconds; decisions made meanwhile answer 201 (the decision is in PostgreSQL); once
  memory is freed the sweeps send every resume.
- **worker-dead**: one of the two workers SIGKILLed. ``/healthz`` says ``degraded`` (worker) with 200, the
  surviving worker delivers what is decided meanwhile, and once the worker is back ``/healthz`` is ``ok``.
- **postgres-40s**: PostgreSQL stopped for 40 s. ``/healthz`` and the API on both web processes answer 503 with
  ``Retry-After`` within about a second for the whole outage (the pool waits 10 s), and answer 200 again within
  seconds of its return; the recovery column prints the 503 latencies and the time to the first 200.
"""

from __future__ import annotations

import time
from typing import Any

import redis

from tests.faults.cluster import wait_until

PG_DOWN_SECONDS = 40


class HealthScenarios:
    """Mixin of ``tests.faults.suite.Suite``."""

    def _health(self: Any, web: int = 0) -> tuple[int, dict, float]:
        started = time.monotonic()
        response = self.http.get(self.cluster.web_url(web) + "/healthz", timeout=10)
        return response.status_code, response.json(), time.monotonic() - started

    def scenario_redis_out_of_memory(self: Any) -> Any:
        from tests.faults.suite import Row

        row = Row("redis-oom", "Redis full (noeviction): /healthz says redis down; nothing is lost once it has room")
        threads = self.new_runs(row, 3)
        direct = redis.Redis(port=self.cluster.redis_port)
        direct.config_set("maxmemory-policy", "noeviction")
        direct.config_set("maxmemory", "1")
        full = time.monotonic()
        try:
            wait_until(
                lambda: (h := self._health())[0] == 503 and h[1]["checks"]["redis"] == "down",
                timeout=10,
                what="/healthz to say redis: down",
            )
            seen = time.monotonic() - full
            for thread_id in threads:
                response = self.decide(row.scenario, thread_id)
                if response is None or response.status_code != 201:
                    row.failures.append(f"deciding while Redis is full answered {response and response.status_code}")
            time.sleep(3)
        except TimeoutError as exc:
            seen = -1.0
            row.failures.append(f"{exc}: {self._health()[1]}")
        finally:
            direct.config_set("maxmemory", "0")
        freed = time.monotonic()
        self.settle(row, timeout=60)
        row.recovery = (
            f"redis down in /healthz after {seen:.1f} s; all delivered {time.monotonic() - freed:.0f} s after"
        )
        return row

    def scenario_worker_dead(self: Any) -> Any:
        from tests.faults.suite import Row

        row = Row("worker-dead", "one of two workers SIGKILLed: /healthz says degraded (200), the other delivers")
        self.cluster.workers[1].kill()
        killed = time.monotonic()
        try:
            status, body, _ = wait_until(
                lambda: (h := self._health())[1].get("status") == "degraded" and h,
                timeout=15,
                what="/healthz to say degraded",
            )
            if status != 200 or body["degraded"] != ["worker"] or body["down"]:
                row.failures.append(f"/healthz with one worker dead answered {status} {body}")
        except TimeoutError as exc:
            row.failures.append(f"{exc}: {self._health()[1]}")
        seen = time.monotonic() - killed
        threads = self.new_runs(row, 3)
        for thread_id in threads:
            self.decide(row.scenario, thread_id)
        took = self.settle(row)
        self.cluster.start_worker(1)
        try:
            wait_until(lambda: self._health()[1].get("status") == "ok", timeout=20, what="/healthz ok again")
        except TimeoutError as exc:
            row.failures.append(str(exc))
        row.recovery = f"degraded after {seen:.1f} s; {took:.0f} s to all delivered by one worker; ok once it is back"
        return row

    def scenario_postgres_down_40s(self: Any) -> Any:
        from django.db import close_old_connections, connections

        from tests.faults.suite import Row

        row = Row(
            "postgres-40s",
            f"PostgreSQL down {PG_DOWN_SECONDS} s: /healthz and the API answer 503 + Retry-After within ~1 s, "
            "200 within seconds of its return",
        )
        threads = self.new_runs(row, 2)
        for thread_id in threads:
            self.decide(row.scenario, thread_id)
        self.settle(row)
        connections.close_all()
        token = f"Token {self.tokens[0]}"
        self.cluster.pg_stop("fast")
        stopped = time.monotonic()
        latencies: dict[str, list[float]] = {"healthz": [], "api": []}
        while time.monotonic() - stopped < PG_DOWN_SECONDS:
            for web in (0, 1):
                status, body, took = self._health(web)
                latencies["healthz"].append(took)
                if status != 503 or body["checks"].get("database") != "down":
                    row.failures.append(f"/healthz on web{web} answered {status} {body} while PostgreSQL was down")
                started = time.monotonic()
                response = self.call(row.scenario, "GET", web, "/api/v1/items", token=token)
                latencies["api"].append(time.monotonic() - started)
                if response is None or response.status_code != 503:
                    row.failures.append(f"the API on web{web} answered {response and response.status_code}")
            time.sleep(0.5)
        self.cluster.pg_start()
        back = time.monotonic()
        first_ok: dict[int, float] = {}
        while len(first_ok) < 2 and time.monotonic() - back < 60:
            for web in (0, 1):
                if web not in first_ok:
                    response = self.call(row.scenario, "GET", web, "/api/v1/items", token=token)
                    if response is not None and response.status_code == 200:
                        first_ok[web] = time.monotonic() - back
            time.sleep(0.2)
        connections.close_all()
        close_old_connections()
        worst = {name: max(values) for name, values in latencies.items()}
        if worst["healthz"] > 1.5:
            row.failures.append(f"/healthz took up to {worst['healthz']:.1f} s during the outage")
        if worst["api"] > 1.5:
            row.failures.append(f"the API's 503 took up to {worst['api']:.1f} s during the outage")
        if len(first_ok) < 2 or max(first_ok.values()) > 10:
            row.failures.append(f"first 200 after PostgreSQL returned: {first_ok}")
        row.recovery = (
            f"503 in ≤ {worst['healthz']:.2f} s (/healthz), ≤ {worst['api']:.2f} s (API); "
            f"first 200 {max(first_ok.values(), default=-1):.1f} s after its return"
        )
        return row
