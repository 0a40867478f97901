"""A real Celery worker with beat, on the test database and Redis, expires an item and tells the pages."""

from __future__ import annotations

import time
from datetime import timedelta

import pytest
from asgiref.sync import sync_to_async
from django.utils import timezone

from inbox.models import AuditEvent, InboxItem
from tests.helpers.websockets import confirmation_run, connected, run_scenario, session_cookie

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]


@pytest.fixture(scope="module", autouse=True)
def orm_beside_playwright():
    """When browser tests ran earlier in the session, Playwright's event loop is still registered on the
    main thread and Django's async guard would refuse this test's (synchronous, safe) ORM calls."""
    # Module scope: set before the database fixtures of every test here, unset after their teardown.
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
        yield


def test_beat_expires_a_stale_item_and_the_push_reaches_an_open_socket(start_worker, agent, ingest, alice):
    worker = start_worker(beat=True, extra_env={"INBOX_EXPIRE_SWEEP_SECONDS": "0.5"})
    posted = ingest(agent, confirmation_run("t-1", "r-1", minutes=60)).json()
    item_id = posted["items"][0]["id"]
    cookie = session_cookie(alice)

    async def scenario() -> None:
        socket = await connected(cookie)
        # The item's time runs out (moved into the past instead of waiting an hour): nothing but the
        # beat sweep in the worker process notices it.
        stale = InboxItem.objects.filter(pk=item_id)
        await sync_to_async(stale.update)(expires_at=timezone.now() - timedelta(seconds=1))
        message = await socket.receive_json_from(timeout=30)
        assert message["event"] == "item.expired"
        assert message["payload"]["item"] == item_id
        assert message["payload"]["status"] == "expired"
        await socket.disconnect()

    run_scenario(scenario)

    item = InboxItem.objects.get(pk=item_id)
    assert item.status == "expired"
    assert item.status_note == "expiresAt passed before it was decided"
    assert AuditEvent.objects.filter(verb="item.expired", object_id=str(item_id), actor_label="expiry").count() == 1
    # The sweep ran as a beat-scheduled task, in the worker.
    deadline = time.monotonic() + 10
    while "inbox.tasks.expire_stale_items" not in worker.log() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert "Task inbox.tasks.expire_stale_items" in worker.log()
