"""503, not 500, while the database or Redis is unreachable.

``DependencyDownMiddleware`` answers what a view raised, ``server_error`` (``handler500``) what a middleware
raised, as a 503 with ``Retry-After`` (JSON for the API, HTML for pages); ``DatabaseOutageMiddleware`` probes a
database this process found down before each request and answers the 503 at once until it is back
(docs/operations.md). A pool with every connection lent out is not an outage: that request gets its 503, and the
pool stays."""

from __future__ import annotations

import logging
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.db import DatabaseError, InterfaceError, OperationalError, connection
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.template.loader import render_to_string
from django.views.defaults import server_error as django_server_error

log = logging.getLogger(__name__)


def _dependency_errors() -> tuple[type[BaseException], ...]:
    import kombu.exceptions
    import redis.exceptions

    return (
        OperationalError,
        InterfaceError,
        redis.exceptions.ConnectionError,
        redis.exceptions.TimeoutError,
        kombu.exceptions.OperationalError,
    )


def which_dependency(exc: BaseException) -> str | None:
    """``"database"`` or ``"redis"`` when ``exc`` says that dependency is unreachable, else None."""
    if not isinstance(exc, _dependency_errors()):
        return None
    return "database" if isinstance(exc, OperationalError | InterfaceError) else "redis"


# When this web process last found the database unreachable (time.monotonic()); None: it was reachable since.
# The process's own view of a dependency, like the connection pool it guards, not a cache of data.
_database_down_at: float | None = None
_database_lock = threading.Lock()


def database_seen_down() -> bool:
    return _database_down_at is not None


def note_database(*, up: bool) -> None:
    """Record what a probe or a request found; back up after an outage, the pool starts afresh."""
    global _database_down_at
    with _database_lock:
        was_down, _database_down_at = _database_down_at is not None, None if up else time.monotonic()
    if up and was_down:
        log.warning("the database is reachable again")
        _restart_pool()
    elif not up and not was_down:
        log.warning("the database is unreachable: requests answer 503 until a probe reaches it")


def _restart_pool() -> None:
    """The pool kept retrying with a growing backoff during the outage; a new one connects now.

    The old pool leaves the registry before it is closed, so every thread asks the new one from then on (none
    meets a closed pool and takes it for another outage), and it is closed whichever thread recovers: its idle
    connections at once, those still lent out as they come back."""
    from django.db import connections

    for alias in connections:
        connection = connections[alias]
        pools = getattr(connection, "_connection_pools", None)  # PostgreSQL's wrapper only
        if pools is None:
            continue
        old = pools.pop(alias, None)
        connection.close()  # this thread's connection goes back to the old pool, which closes it below
        if old is not None:
            old.close()


def database_error_is_outage(exc: BaseException) -> bool:
    """Whether a request's database error means the server is unreachable. Not when only this process's pool
    had no connection to give: every one lent out (``PoolTimeout``) while the server still answers a
    connection of its own, or the pool was being replaced (``PoolClosed``). Taking that for an outage would
    replace a busy pool with a new one while the old one's connections are still in use: more connections
    than the pool allows. Nor a transaction the server rolled back (a deadlock, a serialization failure): the
    server answered."""
    try:
        from psycopg_pool import PoolClosed, PoolTimeout
    except ImportError:  # SQLite: no pool
        return True
    cause = exc.__cause__ if exc.__cause__ is not None else exc
    if isinstance(cause, PoolClosed) or str(getattr(cause, "sqlstate", "") or "").startswith("40"):
        return False  # SQLSTATE class 40: transaction rollback
    if not isinstance(cause, PoolTimeout):
        return True
    if not _probe_lock.acquire(blocking=False):  # another request is asking already: one probe at a time
        return False
    try:
        return _probe_direct() is not None
    finally:
        _probe_lock.release()


_probe_lock = threading.Lock()


def error_text(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}".strip()


def probe_database() -> str | None:
    """None when the database answers ``SELECT 1`` in time, else why not; remembers which for the middleware below.

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
            error = error_text(exc)
    elif database_seen_down():
        error = _probe_direct()
    else:
        error = _probe_pool(pool)
    note_database(up=error is None)
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
        return error_text(exc)
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
            error = error_text(exc)
        if time.monotonic() >= deadline:
            break
    return error


class DatabaseOutageMiddleware:
    """Early in the chain: while this process has found the database down, probe it and answer 503 at once."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if _database_down_at is not None and request.path != "/healthz":  # /healthz probes on its own
            if probe_database() is not None:
                return unavailable_response(request, "database")
        return self.get_response(request)


def unavailable_response(request: HttpRequest, component: str) -> HttpResponse:
    retry_after = str(settings.INBOX_UNAVAILABLE_RETRY_AFTER)
    detail = f"The inbox cannot reach its {component} right now; nothing was changed. Try again shortly."
    if wants_json(request):
        response: HttpResponse = JsonResponse(
            {"error": "service_unavailable", "detail": detail, "component": component, "retryAfter": int(retry_after)},
            status=503,
        )
    else:
        html = render_to_string("503.html", {"detail": detail, "retry_after": retry_after})
        response = HttpResponse(html, status=503, content_type="text/html; charset=utf-8")
    response["Retry-After"] = retry_after
    response["Cache-Control"] = "no-store"
    return response


def wants_json(request: HttpRequest) -> bool:
    path = request.path
    if path.startswith("/api/") or path == "/healthz":
        return True
    accept = request.headers.get("Accept", "")
    return "application/json" in accept and "text/html" not in accept


class DependencyDownMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exc: Exception) -> HttpResponse | None:
        component = which_dependency(exc)
        if component is None:
            return None
        log.warning("%s %s: %s unreachable (%s: %s)", request.method, request.path, component, type(exc).__name__, exc)
        if component == "database" and database_error_is_outage(exc):
            note_database(up=False)
        return unavailable_response(request, component)


def server_error(request: HttpRequest, *args: object, **kwargs: object) -> HttpResponse:
    """``handler500``: a dependency outage raised outside a view is still a 503."""
    exc = sys.exc_info()[1]
    component = which_dependency(exc) if exc is not None else None
    if component is not None:
        if component == "database" and exc is not None and database_error_is_outage(exc):
            note_database(up=False)
        return unavailable_response(request, component)
    if wants_json(request):
        return JsonResponse(
            {"error": "server_error", "detail": "The inbox failed to answer this request; the error is in its log."},
            status=500,
        )
    return django_server_error(request)


UNAVAILABLE_SCHEMA = {
    "type": "object",
    "properties": {
        "error": {"type": "string", "enum": ["service_unavailable"]},
        "detail": {"type": "string"},
        "component": {"type": "string", "enum": ["database", "redis"]},
        "retryAfter": {"type": "integer", "description": "Seconds; also in the Retry-After header."},
    },
    "required": ["error", "detail", "component"],
}


def document_503(result: dict, generator: object, request: object, public: bool) -> dict:
    """drf-spectacular postprocessing hook: every operation may answer the documented 503."""
    for operations in result.get("paths", {}).values():
        for operation in operations.values():
            if not isinstance(operation, dict) or "responses" not in operation:
                continue
            operation["responses"].setdefault(
                "503",
                {
                    "description": "The database or Redis is unreachable; nothing was changed. Retry after the "
                    "number of seconds in the Retry-After header.",
                    "headers": {"Retry-After": {"schema": {"type": "integer"}}},
                    "content": {"application/json": {"schema": UNAVAILABLE_SCHEMA}},
                },
            )
    return result
