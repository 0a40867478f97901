"""The web processes' connection pool: it never reaches a Celery worker or beat (they fork), a pool with every
connection lent out is not taken for an outage, and recovering from a real one closes the pool it replaces."""

from __future__ import annotations

import copy
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from django.conf import settings
from django.db import connections

from config.celery import drop_connection_pool
from tests.agent_servers import wait_for


def test_a_worker_drops_the_pool_before_it_forks_and_keeps_every_other_option():
    saved = copy.deepcopy(settings.DATABASES["default"])
    connection = connections["default"]
    saved_options = dict(connection.settings_dict.get("OPTIONS", {}))
    options = settings.DATABASES["default"].setdefault("OPTIONS", {})
    try:
        options["pool"] = {"min_size": 1, "max_size": 2}
        connection.settings_dict.setdefault("OPTIONS", {})["pool"] = options["pool"]
        drop_connection_pool()
        assert "pool" not in settings.DATABASES["default"]["OPTIONS"]
        assert "pool" not in connection.settings_dict["OPTIONS"]
        assert {k: v for k, v in settings.DATABASES["default"]["OPTIONS"].items()} == {
            k: v for k, v in saved.get("OPTIONS", {}).items() if k != "pool"
        }
    finally:
        settings.DATABASES["default"].clear()
        settings.DATABASES["default"].update(saved)
        connection.settings_dict["OPTIONS"] = saved_options


def _connections_to_this_database() -> int:
    """PostgreSQL's own count of the sessions on the test database, asked on a connection outside the pool."""
    import psycopg

    params = connections["default"].settings_dict
    with psycopg.connect(
        dbname=params["NAME"],
        user=params.get("USER") or None,
        host=params.get("HOST") or None,
        port=params.get("PORT") or None,
        autocommit=True,
    ) as conn:
        row = conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()"
        ).fetchone()
    return int(row[0]) if row else 0


@pytest.fixture
def small_pool(transactional_db) -> Iterator[Any]:
    """This process's pool made anew with two connections at most and half a second's wait for one."""
    from config import unavailable

    connection = connections["default"]
    if connection.vendor != "postgresql" or not connection.settings_dict["OPTIONS"].get("pool"):
        pytest.skip("the pool is PostgreSQL's (DB_POOL)")
    saved = copy.deepcopy(connection.settings_dict["OPTIONS"]["pool"])

    def drop_pool() -> None:
        connection.close()
        pool = connection._connection_pools.pop(connection.alias, None)
        if pool is not None:
            pool.close()

    drop_pool()
    connection.settings_dict["OPTIONS"]["pool"] = {"min_size": 1, "max_size": 2, "timeout": 0.5}
    pool = connection.pool
    pool.open(wait=True)
    try:
        yield pool
    finally:
        drop_pool()
        connection.settings_dict["OPTIONS"]["pool"] = saved
        unavailable.note_database(up=True)


@pytest.mark.postgresql
def test_a_pool_with_every_connection_lent_out_is_not_an_outage(small_pool, client):
    from config import unavailable

    held = [small_pool.getconn(), small_pool.getconn()]  # two requests that take long
    try:
        for _ in range(2):
            busy = client.get("/api/v1/items", HTTP_AUTHORIZATION="Token whatever")
            assert busy.status_code == 503 and busy.json()["component"] == "database"
            assert not unavailable.database_seen_down()
            assert connections["default"].pool is small_pool  # kept, not replaced while its connections are out
            assert _connections_to_this_database() <= 2
    finally:
        for conn in held:
            small_pool.putconn(conn)
    assert client.get("/api/v1/items", HTTP_AUTHORIZATION="Token whatever").status_code == 401  # served again
    assert _connections_to_this_database() <= 2


@pytest.mark.postgresql
def test_recovering_from_an_outage_closes_the_pool_it_replaces(small_pool):
    from config import unavailable

    unavailable.note_database(up=False)
    recovery = threading.Thread(target=unavailable.note_database, kwargs={"up": True})
    recovery.start()  # whichever thread finds the database back: here one that never touched a connection
    recovery.join(timeout=30)
    assert small_pool.closed
    assert connections["default"]._connection_pools.get("default") is not small_pool
    # The old pool's idle connections are gone. PostgreSQL lists a session until its backend process exits, a moment
    # after the client closed it: on a busy machine the count is read before that.
    wait_for(lambda: _connections_to_this_database() == 0, timeout=10, what="the old pool's sessions to end")
    with connections["default"].cursor() as cursor:  # and the next query takes one from a new pool
        cursor.execute("SELECT 1")
    assert connections["default"].pool is not small_pool and not connections["default"].pool.closed


def test_a_deadlock_or_a_busy_pool_is_not_an_outage_but_a_refused_connection_is():
    import psycopg
    from django.db import OperationalError
    from psycopg.errors import DeadlockDetected
    from psycopg_pool import PoolClosed

    from config.unavailable import database_error_is_outage

    def raised(cause: Exception) -> OperationalError:
        error = OperationalError(str(cause))
        error.__cause__ = cause  # as Django's wrap_database_errors raises it
        return error

    assert not database_error_is_outage(raised(DeadlockDetected("deadlock detected")))
    assert not database_error_is_outage(raised(PoolClosed("the pool is closed")))
    assert database_error_is_outage(raised(psycopg.OperationalError("connection refused")))
