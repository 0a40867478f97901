"""GET /healthz: the database, Redis, the Celery workers and beat, each ``ok`` or ``down``.

It answers at once (well under 100 ms): the database and Redis are each asked one cheap question with short
timeouts, and workers and beat are judged by the heartbeats they record in Redis (``config.heartbeat``),
never by a broadcast ping. Anonymous callers (load balancers, uptime checks) get only ``ok``/``down`` per
component; staff also get the reason, the heartbeat ages and the timing. 200 when everything is up, else
503 naming what is down.
"""

from __future__ import annotations

import time

from django.conf import settings
from django.db import DatabaseError, connection
from django.http import HttpRequest, JsonResponse

from config import heartbeat


def _check_database() -> str | None:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
    except DatabaseError as exc:
        return f"{type(exc).__name__}: {exc}".strip()
    return None


def _check_redis_and_heartbeats() -> tuple[dict[str, str | None], dict[str, object]]:
    """Errors by component (None: up) and, for staff, what the heartbeats say."""
    try:
        seen = heartbeat.alive(["worker", "beat"])
    except Exception as exc:  # any failure to talk to Redis: it is down for us
        reason = f"{type(exc).__name__}: {exc}".strip()
        down = "Redis is down, so no heartbeat can be read"
        return {"redis": reason, "worker": down, "beat": down}, {}
    errors: dict[str, str | None] = {"redis": None}
    details: dict[str, object] = {}
    for kind in ("worker", "beat"):
        if seen[kind]:
            errors[kind] = None
        else:
            last = heartbeat.last_seen(kind)
            since = f"last one {last:g} s ago" if last is not None else "none recorded"
            errors[kind] = f"no {kind} heartbeat within {heartbeat.stale_after():g} s ({since})"
        details[kind] = seen[kind]
    return errors, details


def _is_staff(request: HttpRequest) -> bool:
    try:
        return bool(request.user.is_authenticated and request.user.is_staff)
    except Exception:  # the session or the user could not be loaded (database down): anonymous
        return False


def healthz(request: HttpRequest) -> JsonResponse:
    started = time.monotonic()
    errors: dict[str, str | None] = {"database": _check_database()}
    redis_errors, heartbeats = _check_redis_and_heartbeats()
    errors.update(redis_errors)
    down = [name for name, error in errors.items() if error]
    body: dict[str, object] = {
        "status": "ok" if not down else "down",
        "down": down,
        "checks": {name: "ok" if error is None else "down" for name, error in errors.items()},
    }
    if _is_staff(request):
        body["details"] = {name: error for name, error in errors.items() if error}
        body["heartbeats"] = heartbeats
        body["embedded_redis"] = settings.EMBEDDED_REDIS
        body["database_vendor"] = connection.vendor
        body["elapsed_ms"] = round((time.monotonic() - started) * 1000, 1)
    response = JsonResponse(body, status=200 if not down else 503)
    response["Cache-Control"] = "no-store"
    return response
