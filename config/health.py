"""GET /healthz: the database, Redis, the Celery workers and beat, each ``ok``, ``degraded`` or ``down``.

It answers within about a second whatever is down. 200 when nothing is down, else 503 naming what is; staff
also get the reasons and heartbeat ages. What each check does and when it says ``degraded``: docs/operations.md.
The database probe lives in ``config.unavailable``, so a database found down here also makes this process's
pages answer 503 at once."""

from __future__ import annotations

import json
import math
import time
from dataclasses import dataclass
from typing import Any

import redis
from django.conf import settings
from django.db import DatabaseError, connection
from django.http import HttpRequest, JsonResponse

from config import heartbeat
from config.unavailable import error_text, probe_database

OK, DEGRADED, DOWN = "ok", "degraded", "down"


@dataclass(frozen=True)
class Check:
    status: str
    reason: str | None = None


# kombu's Redis transport keeps a queue's messages in one list per priority step: the name, then name + "\x06\x16" + n.
_PRIORITY_STEPS = (0, 3, 6, 9)


def _queue_keys(name: str) -> list[str]:
    return [name if step == 0 else f"{name}\x06\x16{step}" for step in _PRIORITY_STEPS]


def _sent_at(raw: Any) -> float | None:
    try:
        sent = json.loads(raw)["headers"]["inbox_sent_at"]
    except (TypeError, ValueError, KeyError):
        return None
    # Any sender can publish to Redis: a stamp that is no time (not finite, in the future) is ignored.
    if not isinstance(sent, int | float) or not math.isfinite(sent) or sent > time.time():
        return None
    return float(sent)


def _queue_figures(pipe_results: list[Any], names: list[str], now: float) -> dict[str, dict[str, float | int | None]]:
    """Depth and oldest age per queue from the pipeline's LLEN and LINDEX answers (in ``_queue_keys`` order)."""
    figures: dict[str, dict[str, float | int | None]] = {}
    per_queue = 2 * len(_PRIORITY_STEPS)
    for index, name in enumerate(names):
        answers = pipe_results[index * per_queue : (index + 1) * per_queue]
        depth = sum(answer for answer in answers[0::2] if isinstance(answer, int))
        sent = [at for at in (_sent_at(raw) for raw in answers[1::2] if raw) if at is not None]
        figures[name] = {"depth": depth, "oldest_seconds": round(now - min(sent), 1) if sent else None}
    return figures


def _queues_check(figures: dict[str, dict[str, float | int | None]]) -> Check:
    limit = settings.INBOX_QUEUE_DEGRADED_SECONDS
    behind = [
        f"{name}: {values['depth']} waiting, the oldest for {values['oldest_seconds']:g} s"
        for name, values in figures.items()
        if isinstance(values["oldest_seconds"], float) and values["oldest_seconds"] > limit
    ]
    if behind:
        return Check(DEGRADED, f"delivery is behind (oldest message past {limit:g} s): " + "; ".join(behind))
    return Check(OK)


def _redis_and_heartbeats() -> tuple[dict[str, Check], dict[str, Any]]:
    """The Redis, worker, beat and queue checks, from one round trip; and, for staff, the heartbeat ages and the
    queue figures."""
    stale = heartbeat.stale_after()
    expected_setting = settings.INBOX_EXPECTED_WORKERS
    window = 3600.0 if expected_setting else settings.INBOX_WORKER_EXPECTED_WINDOW_SECONDS
    now = time.time()
    try:
        pipe = heartbeat.client().pipeline(transaction=False)
        pipe.set(heartbeat.key("health-probe"), str(now), px=60_000)
        pipe.zrangebyscore(heartbeat.key("worker"), now - window, "+inf", withscores=True)
        pipe.zrevrange(heartbeat.key("beat"), 0, 0, withscores=True)
        queue_names = [settings.CELERY_TASK_DEFAULT_QUEUE, *settings.INBOX_QUEUES.values()]
        for name in queue_names:
            for queue_key in _queue_keys(name):
                pipe.llen(queue_key)
                pipe.lindex(queue_key, -1)  # kombu pushes on the left and takes from the right: the oldest
        written, workers_seen, beat_newest, *queue_answers = pipe.execute(raise_on_error=False)
    except redis.RedisError as exc:  # cannot talk to Redis at all
        down = Check(DOWN, "Redis is down, so no heartbeat can be read")
        return {"redis": Check(DOWN, error_text(exc)), "worker": down, "beat": down}, {}
    checks: dict[str, Check] = {}
    if isinstance(written, Exception):
        checks["redis"] = Check(DOWN, f"Redis refuses writes, so no message moves: {error_text(written)}")
    elif isinstance(workers_seen, Exception) or isinstance(beat_newest, Exception):
        checks["redis"] = Check(DOWN, error_text(workers_seen if isinstance(workers_seen, Exception) else beat_newest))
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
    figures = _queue_figures(queue_answers, queue_names, now)
    checks["queues"] = _queues_check(figures)
    heartbeats = {
        "worker": ages,
        "beat": {"newest": beat_age} if beat_age is not None else {},
        "queues": figures,
    }
    return checks, heartbeats


def notice_channels() -> Check:
    """``degraded`` while a notice channel (the mail server, a team webhook) has been failing for longer than
    ``INBOX_NOTICE_FAILING_DEGRADED_SECONDS``: its notices are being retried (``inbox.teams.outbox``)."""
    from inbox.teams.outbox import failing_past

    try:
        failing = failing_past(settings.INBOX_NOTICE_FAILING_DEGRADED_SECONDS)
    except DatabaseError as exc:
        return Check(DEGRADED, error_text(exc))
    if failing:
        seconds = settings.INBOX_NOTICE_FAILING_DEGRADED_SECONDS
        return Check(DEGRADED, f"failing for over {seconds:g} s: {', '.join(failing)}")
    return Check(OK)


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
    if database_error is None:
        checks["notices"] = notice_channels()
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
        body["queues"] = heartbeats.pop("queues", {})
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
