"""GET /healthz: the database, Redis, workers and beat, each ok / degraded / down; only the statuses for
anonymous callers, the reasons for staff; 503 naming what is down.

Heartbeats are written here as the workers write them (``config.heartbeat``), under a queue name of the test's
own, so workers of other tests running alongside do not count."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator

import pytest
import redis

from config import heartbeat
from tests.agent_servers import wait_for
from tests.conftest import free_port
from tests.helpers.redis_server import RedisServer


@pytest.fixture
def own_heartbeats(settings) -> Iterator[None]:
    settings.CELERY_TASK_DEFAULT_QUEUE = f"health-{uuid.uuid4().hex[:8]}"
    # Queues of its own too: what other tests left queued is not this test's backlog.
    settings.INBOX_QUEUES = {kind: f"{settings.CELERY_TASK_DEFAULT_QUEUE}-{kind}" for kind in ("a", "b")}
    yield
    heartbeat.client().delete(heartbeat.key("worker"), heartbeat.key("beat"), heartbeat.key("health-probe"))
    heartbeat.client().delete(*settings.INBOX_QUEUES.values())


def _beat(kind: str, name: str, seconds_ago: float = 0) -> None:
    heartbeat.client().zadd(heartbeat.key(kind), {name: time.time() - seconds_ago})


@pytest.mark.django_db
def test_it_answers_503_naming_the_worker_and_beat_when_none_runs(client, own_heartbeats):
    response = client.get("/healthz")
    body = response.json()
    assert response.status_code == 503 and response["Retry-After"]
    assert body["down"] == ["worker", "beat"] and body["status"] == "down"
    assert body["checks"] == {
        "database": "ok",
        "redis": "ok",
        "worker": "down",
        "beat": "down",
        "queues": "ok",
        "notices": "ok",
    }
    assert set(body) == {"status", "down", "degraded", "checks"}  # nothing more for anonymous callers


@pytest.mark.django_db
def test_a_503_is_not_logged_once_per_probe(client, own_heartbeats, caplog):
    """A probe asks every few seconds; `make run` printed 189 "Service Unavailable: /healthz" lines before its
    ready banner while the workers started. The answer's body says what is down; the log keeps other requests'."""
    with caplog.at_level("INFO", logger="django.request"):
        assert client.get("/healthz").status_code == 503
        assert client.get("/healthz").status_code == 503
        assert client.get("/no-such-page").status_code == 404
    logged = [record.getMessage() for record in caplog.records if record.name == "django.request"]
    assert logged == ["Not Found: /no-such-page"]


@pytest.mark.django_db
def test_staff_see_why(client, staff, own_heartbeats):
    client.force_login(staff)
    body = client.get("/healthz").json()
    assert body["details"]["worker"].startswith("no worker heartbeat within 15 s")
    assert body["database_vendor"] and "elapsed_ms" in body


@pytest.mark.django_db
def test_one_of_two_workers_dead_is_degraded_naming_it(client, staff, own_heartbeats):
    _beat("worker", "alive@host")
    _beat("worker", "dead@host", seconds_ago=60)  # killed: it never removed its heartbeat
    _beat("beat", "beat@host")
    response = client.get("/healthz")
    body = response.json()
    assert response.status_code == 200  # the web process serves; a load balancer keeps it
    assert body["status"] == "degraded" and body["degraded"] == ["worker"] and body["down"] == []
    assert body["checks"]["worker"] == "degraded"
    client.force_login(staff)
    body = client.get("/healthz").json()
    assert body["details"]["worker"].startswith("1 of 2 workers alive; silent: dead@host (last heartbeat 6")
    assert body["expected_workers"] == 2 and set(body["heartbeats"]["worker"]) == {"alive@host", "dead@host"}


@pytest.mark.django_db
def test_a_worker_gone_longer_than_the_window_is_no_longer_expected(client, settings, own_heartbeats):
    settings.INBOX_WORKER_EXPECTED_WINDOW_SECONDS = 30
    _beat("worker", "alive@host")
    _beat("worker", "scaled-down@host", seconds_ago=60)
    _beat("beat", "beat@host")
    assert client.get("/healthz").json()["status"] == "ok"


@pytest.mark.django_db
def test_the_expected_number_of_workers_can_be_set(client, settings, own_heartbeats):
    settings.INBOX_EXPECTED_WORKERS = 3
    _beat("worker", "one@host")
    _beat("worker", "two@host")
    _beat("beat", "beat@host")
    body = client.get("/healthz").json()
    assert body["checks"]["worker"] == "degraded"


@pytest.mark.django_db
def test_it_reports_each_queues_depth_and_age_and_a_backlog_past_the_setting_is_degraded(
    client, settings, staff, own_heartbeats
):
    from config.celery import app

    _beat("worker", "alive@host")
    _beat("beat", "beat@host")
    waiting, idle = settings.INBOX_QUEUES.values()
    for resume_id in range(3):
        app.send_task("inbox.tasks.dispatch_resume", args=[resume_id], queue=waiting)
    body = client.get("/healthz").json()
    assert body["status"] == "ok" and body["checks"]["queues"] == "ok"  # 3 waiting for under a minute: not behind

    settings.INBOX_QUEUE_DEGRADED_SECONDS = 0.05
    time.sleep(0.1)
    response = client.get("/healthz")
    assert response.status_code == 200  # behind is not down: the web process serves
    assert response.json()["degraded"] == ["queues"] and "queues" not in response.json()
    client.force_login(staff)
    body = client.get("/healthz").json()
    assert body["queues"][waiting]["depth"] == 3 and body["queues"][waiting]["oldest_seconds"] >= 0.1
    assert body["queues"][idle] == {"depth": 0, "oldest_seconds": None}
    assert body["details"]["queues"].startswith(
        f"delivery is behind (oldest message past 0.05 s): {waiting}: 3 waiting"
    )


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


@pytest.fixture
def redis_out_of_memory(settings, tmp_path) -> Iterator[redis.Redis]:
    """A redis-server of this test's own, full under ``noeviction``: it answers reads and refuses writes."""
    server = RedisServer(free_port(), tmp_path).start()
    try:
        direct = server.client()
        settings.REDIS_URL = server.url
        settings.CELERY_TASK_DEFAULT_QUEUE = "oom"
        direct.zadd(heartbeat.key("worker"), {"w@host": time.time()})
        direct.zadd(heartbeat.key("beat"), {"b@host": time.time()})
        direct.config_set("maxmemory-policy", "noeviction")
        direct.config_set("maxmemory", "1")  # below what it holds already: every write that may grow is refused
        with pytest.raises(redis.ResponseError) as refused:
            direct.set("anything", "x")
        assert "OOM" in str(refused.value) or "maxmemory" in str(refused.value), refused.value
        yield direct
    finally:
        server.stop()


@pytest.mark.django_db
def test_a_redis_that_refuses_writes_is_down(client, staff, redis_out_of_memory):
    response = client.get("/healthz")
    assert response.status_code == 503
    body = response.json()
    assert body["checks"]["redis"] == "down" and "redis" in body["down"]
    client.force_login(staff)
    assert "refuses writes" in client.get("/healthz").json()["details"]["redis"]


@pytest.mark.worker
def test_it_answers_200_with_a_live_worker_and_beat(start_worker, client):
    worker = start_worker(beat=True)
    response = wait_for(lambda: (r := client.get("/healthz")).status_code == 200 and r, what="a healthy inbox")
    assert response.json()["checks"] == {
        "database": "ok",
        "redis": "ok",
        "worker": "ok",
        "beat": "ok",
        "queues": "ok",
        "notices": "ok",
    }
    worker.process.terminate()
    worker.process.wait(timeout=15)
    # A worker stopping cleanly removes its heartbeat at once: not expected any more, so down, not degraded.
    assert "worker" in client.get("/healthz").json()["down"]
