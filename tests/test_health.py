"""GET /healthz: the database, Redis, workers and beat, judged from heartbeats; only ok/down for anonymous
callers, the reasons for staff; 503 naming what is down."""

from __future__ import annotations

import pytest

from tests.agent_servers import wait_for


@pytest.mark.django_db
def test_it_answers_503_naming_the_worker_and_beat_when_none_runs(client):
    # Workers started by other tests are stopped (and forget their heartbeat) when those tests end.
    response = client.get("/healthz")
    body = response.json()
    assert response.status_code == 503
    assert body["down"] == ["worker", "beat"]
    assert body["checks"] == {"database": "ok", "redis": "ok", "worker": "down", "beat": "down"}
    assert "details" not in body and "heartbeats" not in body  # nothing more for anonymous callers


@pytest.mark.django_db
def test_staff_see_why(client, staff):
    client.force_login(staff)
    body = client.get("/healthz").json()
    assert body["details"]["worker"].startswith("no worker heartbeat within 15 s")
    assert body["database_vendor"] and "elapsed_ms" in body


@pytest.mark.django_db
def test_it_names_redis_without_echoing_the_error_to_anonymous_callers(client, settings, staff):
    settings.REDIS_URL = "redis://127.0.0.1:1/0"
    response = client.get("/healthz")
    assert response.status_code == 503
    body = response.json()
    assert body["checks"]["redis"] == "down" and "redis" in body["down"]
    assert "127.0.0.1:1" not in response.content.decode() and "Error" not in response.content.decode()
    client.force_login(staff)
    assert "Connection" in client.get("/healthz").json()["details"]["redis"]


@pytest.mark.worker
def test_it_answers_200_with_a_live_worker_and_beat(start_worker, client):
    worker = start_worker(beat=True)
    response = wait_for(lambda: (r := client.get("/healthz")).status_code == 200 and r, what="a healthy inbox")
    assert response.json() == {
        "status": "ok",
        "down": [],
        "checks": {"database": "ok", "redis": "ok", "worker": "ok", "beat": "ok"},
    }
    worker.process.terminate()
    worker.process.wait(timeout=15)
    # A worker stopping cleanly removes its heartbeat at once.
    assert "worker" in client.get("/healthz").json()["down"]
