"""GET /healthz reports the database, Redis and a live Celery worker, and 503 naming what is down."""

from __future__ import annotations

import pytest


@pytest.mark.django_db
def test_it_answers_503_naming_the_worker_when_no_worker_runs(client):
    # Workers started by other tests are stopped when those tests end, so none answers here.
    response = client.get("/healthz")
    body = response.json()
    assert response.status_code == 503
    assert body["down"] == ["worker"]
    assert body["checks"]["database"] == {"ok": True} and body["checks"]["redis"] == {"ok": True}


@pytest.mark.django_db
def test_it_names_redis_when_redis_is_down(client, settings):
    settings.REDIS_URL = "redis://127.0.0.1:1/0"
    response = client.get("/healthz")
    assert response.status_code == 503
    assert "redis" in response.json()["down"]


@pytest.mark.worker
def test_it_answers_200_with_a_live_worker(start_worker, client):
    start_worker()
    response = client.get("/healthz")
    assert response.status_code == 200, response.json()
    assert response.json()["status"] == "ok"
