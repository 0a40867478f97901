"""GET /healthz: the database, Redis and a live Celery worker, each reported by name."""

from __future__ import annotations

import time

import redis
from django.conf import settings
from django.db import connection
from django.http import HttpRequest, JsonResponse


def _check_database() -> str | None:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
    except Exception as exc:
        return str(exc) or exc.__class__.__name__
    return None


def _check_redis() -> str | None:
    try:
        redis.Redis.from_url(settings.REDIS_URL, socket_connect_timeout=1, socket_timeout=1).ping()
    except Exception as exc:
        return str(exc) or exc.__class__.__name__
    return None


def _check_worker() -> str | None:
    from config.celery import app

    try:
        replies = app.control.ping(timeout=1.0)
    except Exception as exc:
        return str(exc) or exc.__class__.__name__
    if not replies:
        return "no Celery worker answered a ping within 1 s"
    return None


def healthz(request: HttpRequest) -> JsonResponse:
    started = time.monotonic()
    checks = {"database": _check_database(), "redis": _check_redis()}
    # Asking the workers goes through Redis: pointless (and slow) when Redis is down.
    checks["worker"] = _check_worker() if checks["redis"] is None else "Redis is down"
    down = [name for name, error in checks.items() if error]
    body = {
        "status": "ok" if not down else "down",
        "down": down,
        "checks": {
            name: ({"ok": True} if error is None else {"ok": False, "error": error}) for name, error in checks.items()
        },
        "embedded_redis": settings.EMBEDDED_REDIS,
        "database_vendor": connection.vendor,
        "elapsed_ms": round((time.monotonic() - started) * 1000, 1),
    }
    return JsonResponse(body, status=200 if not down else 503)
