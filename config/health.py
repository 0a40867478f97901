"""GET /healthz: the database, Redis, the Celery workers and beat, each ``ok``, ``degraded`` or ``down``.

It answers within about a second whatever is down, and at once when nothing is:

- **database**: ``SELECT 1`` on a connection the web process would use. With the PostgreSQL pool
  (``DB_POOL``) it waits at most ``INBOX_HEALTH_DATABASE_TIMEOUT`` for one (requests wait
  ``DB_POOL_TIMEOUT``): no connection in that time is ``down``.
- **redis**: one round trip that also *writes* a short-lived key. A Redis that answers reads but refuses
  writes (out of memory under ``noeviction``, a read-only replica) moves no message: ``down``, with its error.
- **worker**: per-worker heartbeats (``config.heartbeat``), never a broadcast ping. None alive is ``down``;
  fewer alive than expected is ``degraded``, naming the silent ones. Expected: ``INBOX_EXPECTED_WORKERS``
  when set, else every worker heard from within ``INBOX_WORKER_EXPECTED_WINDOW_SECONDS`` (a worker that
  stops cleanly removes its heartbeat, so only one that died is missed).
- **beat**: its heartbeat; there is exactly one beat, so ``ok`` or ``down``.

Anonymous callers (load balancers, uptime checks) get only the status per component; staff also get the
reasons, the heartbeat ages and the timing. 200 when nothing is down (``degraded`` included: the web process
serves), else 503 naming what is down. A database found down here also makes this web process's pages answer
their 503 at once (``config.unavailable``).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import redis
from django.conf import settings
from django.db import DatabaseError, connection
from django.http import HttpRequest, JsonResponse

from config import heartbeat, unavailable

OK, DEGRADED, DOWN = "ok", "degraded", "down"


@dataclass(frozen=True)
class Check:
    status: str
    reason: str | None = None


def _error(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}".strip()


def probe_database() -> str | None:
    """None when the database answers ``SELECT 1`` in time, else why not; tells ``config.unavailable`` which.

    With the pool it waits at most ``INBOX_HEALTH_DATABASE_TIMEOUT`` for a pooled connection. Once this process
    has found the database down, it asks the server on a connection of its own instead (the pool retries with
    a growing backoff and would notice the server's return late); when that succeeds the pool is started afresh.
    """
    pool = getattr(connection, "pool", None)  # PostgreSQL with DB_POOL; None for SQLite or without a pool
    if pool is None:
        try:
            with connection.cursor() as cursor:
                cursor.execute("SELECT 1")
            error = None
        except DatabaseError as exc:
            error = _error(exc)
    elif unavailable.database_seen_down():
        error = _probe_direct()
    else:
        error = _probe_pool(pool)
    unavailable.note_database(up=error is None)
    return error


def _probe_direct() -> str | None:
    import psycopg

    params = connection.settings_dict
    try:
        with psycopg.connect(
            dbname=params["NAME"],
            user=params.get("USER") or None,
            password=params.get("PASSWORD") or None,
            host=params.get("HOST") or None,
            port=params.get("PORT") or None,
            connect_timeout=2,  # libpq's least; a refused connection fails at once
            autocommit=True,
        ) as conn:
            conn.execute("SELECT 1")
    except psycopg.Error as exc:
        return _error(exc)
    return None


def _probe_pool(pool: Any) -> str | None:
    import psycopg
    from psycopg_pool import PoolTimeout

    timeout = settings.INBOX_HEALTH_DATABASE_TIMEOUT
    deadline = time.monotonic() + timeout
    error = "no attempt"
    # Twice: a pooled connection broken by a server restart fails once and is dropped by the pool.
    for _ in range(2):
        try:
            pool.open()  # Django opens its pool lazily; a no-op once open
            with pool.connection(timeout=max(0.05, deadline - time.monotonic())) as conn:
                conn.execute("SELECT 1")
            return None
        except PoolTimeout:
            return f"no database connection within {timeout:g} s (the server is unreachable or every one is busy)"
        except psycopg.Error as exc:
            error = _error(exc)
        if time.monotonic() >= deadline:
            break
    return error


def _redis_and_heartbeats() -> tuple[dict[str, Check], dict[str, dict[str, float]]]:
    """The Redis, worker and beat checks, from one round trip; and, for staff, the heartbeat ages."""
    stale = heartbeat.stale_after()
    expected_setting = settings.INBOX_EXPECTED_WORKERS
    window = 3600.0 if expected_setting else settings.INBOX_WORKER_EXPECTED_WINDOW_SECONDS
    now = time.time()
    try:
        pipe = heartbeat.client().pipeline(transaction=False)
        pipe.set(heartbeat.key("health-probe"), str(now), px=60_000)
        pipe.zrangebyscore(heartbeat.key("worker"), now - window, "+inf", withscores=True)
        pipe.zrevrange(heartbeat.key("beat"), 0, 0, withscores=True)
        written, workers_seen, beat_newest = pipe.execute(raise_on_error=False)
    except redis.RedisError as exc:  # cannot talk to Redis at all
        down = Check(DOWN, "Redis is down, so no heartbeat can be read")
        return {"redis": Check(DOWN, _error(exc)), "worker": down, "beat": down}, {}
    checks: dict[str, Check] = {}
    if isinstance(written, Exception):
        checks["redis"] = Check(DOWN, f"Redis refuses writes, so no message moves: {_error(written)}")
    elif isinstance(workers_seen, Exception) or isinstance(beat_newest, Exception):
        checks["redis"] = Check(DOWN, _error(workers_seen if isinstance(workers_seen, Exception) else beat_newest))
        unread = Check(DOWN, "no heartbeat could be read")
        return checks | {"worker": unread, "beat": unread}, {}
    else:
        checks["redis"] = Check(OK)

    ages = {member.decode(): round(now - score, 1) for member, score in workers_seen}
    alive = sorted(name for name, age in ages.items() if age <= stale)
    expected = expected_setting or len(ages)
    if not alive:
        newest = min(ages.values(), default=None)
        since = f"last one {newest:g} s ago" if newest is not None else "none recorded"
        checks["worker"] = Check(DOWN, f"no worker heartbeat within {stale:g} s ({since})")
    elif len(alive) < expected:
        silent = ", ".join(f"{name} (last heartbeat {age:.0f} s ago)" for name, age in ages.items() if age > stale)
        checks["worker"] = Check(DEGRADED, f"{len(alive)} of {expected} workers alive; silent: {silent or 'unknown'}")
    else:
        checks["worker"] = Check(OK)

    beat_age = round(now - float(beat_newest[0][1]), 1) if beat_newest else None
    if beat_age is not None and beat_age <= stale:
        checks["beat"] = Check(OK)
    else:
        since = f"last one {beat_age:g} s ago" if beat_age is not None else "none recorded"
        checks["beat"] = Check(DOWN, f"no beat heartbeat within {stale:g} s ({since})")
    heartbeats = {
        "worker": ages,
        "beat": {"newest": beat_age} if beat_age is not None else {},
    }
    return checks, heartbeats


def _is_staff(request: HttpRequest) -> bool:
    try:
        return bool(request.user.is_authenticated and request.user.is_staff)
    except Exception:  # the session or the user could not be loaded (database down): anonymous
        return False


def healthz(request: HttpRequest) -> JsonResponse:
    started = time.monotonic()
    database_error = probe_database()
    checks = {"database": Check(OK) if database_error is None else Check(DOWN, database_error)}
    redis_checks, heartbeats = _redis_and_heartbeats()
    checks.update(redis_checks)
    down = [name for name, check in checks.items() if check.status == DOWN]
    degraded = [name for name, check in checks.items() if check.status == DEGRADED]
    body: dict[str, object] = {
        "status": DOWN if down else DEGRADED if degraded else OK,
        "down": down,
        "degraded": degraded,
        "checks": {name: check.status for name, check in checks.items()},
    }
    if database_error is None and _is_staff(request):
        body["details"] = {name: check.reason for name, check in checks.items() if check.reason}
        body["heartbeats"] = heartbeats
        body["expected_workers"] = settings.INBOX_EXPECTED_WORKERS or len(heartbeats.get("worker", {}))
        body["embedded_redis"] = settings.EMBEDDED_REDIS
        body["database_vendor"] = connection.vendor
        body["elapsed_ms"] = round((time.monotonic() - started) * 1000, 1)
    response = JsonResponse(body, status=503 if down else 200)
    response["Cache-Control"] = "no-store"
    if down:
        response["Retry-After"] = str(settings.INBOX_UNAVAILABLE_RETRY_AFTER)
    return response
