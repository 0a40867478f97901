"""While the database is unreachable the API answers a JSON 503 with Retry-After and pages an HTML 503 —
never a 500 page, never the driver's error text. The outage here is real: the connection is pointed at a
database that cannot be opened (PostgreSQL: a port nobody listens on), so the driver itself fails."""

from __future__ import annotations

import copy
import time
from collections.abc import Callable, Iterator

import pytest
from django.conf import settings
from django.db import connection

from config import unavailable
from tests.conftest import free_port


def _close(connection) -> None:
    connection.close()
    if getattr(connection, "_connection_pools", None) and connection.alias in connection._connection_pools:
        connection.close_pool()  # the web processes' pool (DB_POOL) holds connections to the old address


@pytest.fixture
def database_down(transactional_db) -> Iterator[None]:
    saved = copy.deepcopy(connection.settings_dict)
    _close(connection)
    if connection.vendor == "sqlite":
        connection.settings_dict["NAME"] = "/nonexistent/inbox/db.sqlite3"
    else:
        connection.settings_dict["PORT"] = free_port()
        # No pool for the outage: a pool would wait DB_POOL_TIMEOUT for a connection; a plain connect fails at once.
        connection.settings_dict["OPTIONS"] = {
            k: v for k, v in connection.settings_dict["OPTIONS"].items() if k != "pool"
        }
    try:
        yield
    finally:
        _close(connection)
        connection.settings_dict.clear()
        connection.settings_dict.update(saved)


def test_the_api_answers_json_503_with_retry_after(client, database_down):
    response = client.get("/api/v1/items", HTTP_AUTHORIZATION="Token whatever")
    assert response.status_code == 503
    assert response["Content-Type"] == "application/json"
    assert response["Retry-After"] == "5"
    body = response.json()
    assert body["error"] == "service_unavailable" and body["component"] == "database"
    assert "nonexistent" not in response.content.decode()


@pytest.fixture
def signed_in(transactional_db, client, alice):
    client.force_login(alice)
    return client


def test_a_signed_in_approver_gets_503_not_500(signed_in, database_down):
    api = signed_in.post("/api/v1/items/1/decision", {"status": "cancelled"}, content_type="application/json")
    assert api.status_code == 503 and api.json()["component"] == "database"
    page = signed_in.get("/inbox/")
    assert page.status_code == 503 and page["Content-Type"].startswith("text/html")
    assert page["Retry-After"] == "5" and "Temporarily unavailable" in page.content.decode()


def test_healthz_names_the_database_and_nothing_more(client, database_down):
    response = client.get("/healthz")
    assert response.status_code == 503
    assert response.json()["checks"]["database"] == "down"
    assert "nonexistent" not in response.content.decode()


def test_the_openapi_schema_documents_the_503(client, db):
    schema = client.get("/api/schema/", HTTP_ACCEPT="application/json").json()
    decision = schema["paths"]["/api/v1/items/{id}/decision"]["post"]["responses"]["503"]
    assert "Retry-After" in decision["headers"]
    body = decision["content"]["application/json"]["schema"]
    assert body["properties"]["component"]["enum"] == ["database", "redis"]


@pytest.fixture
def database_down_behind_the_pool(transactional_db) -> Iterator[Callable[[], None]]:
    """The outage a long-running web process sees: its pool (DB_POOL) cannot reach the server, and a request
    waiting for a pooled connection would wait DB_POOL_TIMEOUT (10 s). Yields a function that brings the
    server back (the settings point at it again; the pool made during the outage still points elsewhere)."""
    if connection.vendor != "postgresql" or not connection.settings_dict["OPTIONS"].get("pool"):
        pytest.skip("the pool is PostgreSQL's (DB_POOL)")
    saved = copy.deepcopy(connection.settings_dict)
    _close(connection)
    connection.settings_dict["PORT"] = free_port()

    def back() -> None:
        connection.settings_dict["PORT"] = saved["PORT"]

    try:
        yield back
    finally:
        _close(connection)
        connection.settings_dict.clear()
        connection.settings_dict.update(saved)
        unavailable.note_database(up=True)


# "At once" against what the request would otherwise wait for: the pool's DB_POOL_TIMEOUT (10 s). Half of it, so a
# busy machine (CI runs other work beside the suite) does not pass for a wait on the pool.
AT_ONCE = settings.DB_POOL_TIMEOUT / 2


def _timed(call) -> tuple[object, float]:
    started = time.monotonic()
    return call(), time.monotonic() - started


@pytest.mark.postgresql
def test_healthz_and_pages_answer_at_once_behind_the_pool(signed_in, database_down_behind_the_pool):
    health, took = _timed(lambda: signed_in.get("/healthz"))
    assert health.status_code == 503 and health.json()["checks"]["database"] == "down"
    assert took < AT_ONCE, f"/healthz took {took:.1f} s"
    assert health["Retry-After"] == "5"
    for path in ("/inbox/", "/api/v1/items"):
        page, took = _timed(lambda path=path: signed_in.get(path))
        assert page.status_code == 503 and page["Retry-After"] == "5", path
        assert took < AT_ONCE, f"{path} took {took:.1f} s"


@pytest.mark.postgresql
def test_once_the_database_is_back_pages_are_served_at_once(signed_in, database_down_behind_the_pool):
    assert signed_in.get("/healthz").json()["checks"]["database"] == "down"
    assert signed_in.get("/inbox/").status_code == 503
    database_down_behind_the_pool()
    page, took = _timed(lambda: signed_in.get("/inbox/"))
    assert page.status_code == 200 and took < AT_ONCE, (page.status_code, took)
    assert signed_in.get("/healthz").json()["checks"]["database"] == "ok"
