"""Every notice delivered once (issue 45): a notice is a row before it is a message, sent under a lease, retried
from the table and recovered by the sweep; counted here at the sinks (the mail outbox, a webhook receiver)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import timedelta

import pytest
import redis
import time_machine
from django.conf import settings as django_settings
from django.core.mail.backends.base import BaseEmailBackend
from django.utils import timezone

from inbox.models import EscalationRule, Notice, Run, TeamWebhook
from inbox.teams.escalations import escalation_sweep
from inbox.teams.notifications import announce_runs
from inbox.teams.tasks import notify_missed_runs, send_notices, sweep_notices
from tests.agent_servers import wait_for
from tests.conftest import free_port, spec_example
from tests.factories import UserFactory
from tests.helpers.redis_server import RedisServer
from tests.inbox import test_notifications
from tests.inbox.test_notifications import SECRET, ingest_items, runs_of

receiver = test_notifications.receiver  # the loopback webhook receiver fixture


class WorkerKilled(BaseException):  # noqa: N818 - what it simulates
    """The worker dies (SIGKILL) in the middle of a send: nothing after it runs, no handler sees it."""


class DyingMailBackend(BaseEmailBackend):
    """The worker is killed while it hands the first e-mail to the mail server."""

    def send_messages(self, messages) -> int:
        raise WorkerKilled


def later(seconds: float):
    return time_machine.travel(timezone.now() + timedelta(seconds=seconds))


def test_a_worker_killed_between_claiming_and_sending_loses_no_notice(
    agent, ingest, alice, team, receiver, mailoutbox, settings
):
    hook = receiver(200)
    TeamWebhook.objects.create(team=team, url=hook.url, secret=SECRET)
    items = ingest_items(agent, ingest)
    settings.EMAIL_BACKEND = "tests.inbox.test_notices.DyingMailBackend"
    with pytest.raises(WorkerKilled):
        announce_runs(runs_of(items))
    assert mailoutbox == [] and len(hook.bodies) == 1

    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    with later(settings.INBOX_NOTICE_LEASE_SECONDS / 2):
        assert sweep_notices() == 0  # the lease still holds: its worker may be sending
    with later(settings.INBOX_NOTICE_LEASE_SECONDS + 1):
        assert notify_missed_runs() == 0  # the runs were announced: their notices are rows
        assert sweep_notices() == 1
        send_notices("email")
        send_notices("webhook")
    (message,) = mailoutbox
    notice = Notice.objects.get(channel=Notice.Channel.EMAIL)
    assert message.to == ["alice@example.com"] and message.extra_headers["Message-ID"] == f"<{notice.key}@127.0.0.1>"
    assert (notice.state, notice.attempts) == ("sent", 2)
    assert len(hook.bodies) == 1  # sent once, before the kill: never again


def test_a_redis_error_after_the_emails_does_not_send_them_again(
    agent, ingest, alice, team, receiver, mailoutbox, monkeypatch
):
    hook = receiver(503, 200)
    TeamWebhook.objects.create(team=team, url=hook.url, secret=SECRET)
    ingest_items(agent, ingest)

    def broker_down(*args: object, **kwargs: object) -> None:
        raise redis.ConnectionError("Error 111 connecting to 127.0.0.1:6379. Connection refused.")

    with monkeypatch.context() as broken:
        broken.setattr("celery.app.base.Celery.send_task", broker_down)
        broken.setattr("celery.app.task.Task.apply_async", broker_down)
        with later(300):
            notify_missed_runs()  # the e-mail goes, the webhook answers 503 and its retry cannot be queued
        with later(310):
            notify_missed_runs()  # beat again, Redis still down
    assert len(mailoutbox) == 1 and len(hook.bodies) == 1
    with later(400):  # Redis is back: the sweep finds the webhook's retry in its row
        sweep_notices()
        send_notices("webhook")
    assert len(mailoutbox) == 1 and len(hook.bodies) == 2 and hook.bodies[0] == hook.bodies[1]
    assert set(Notice.objects.values_list("state", flat=True)) == {"sent"}


def test_an_escalation_notice_survives_a_worker_kill(stored_run, clock, team, staff, mailoutbox):
    dan = UserFactory(username="dan")
    # dan decides nothing of the team's: a rule that gives him its items is staff's to set.
    EscalationRule.objects.create(team=team, after_minutes=30, to_user=dan, created_by=staff)
    for n in range(3):
        stored_run(f"t{n}", f"r{n}", 120)
    clock.shift(timedelta(minutes=31))
    # The sweep commits the escalations and their notices; the worker dies before its after-commit send (a test's
    # transaction never commits, so the after-commit hook never runs: as if the process had died there).
    assert escalation_sweep() == 3
    assert mailoutbox == []
    clock.shift(timedelta(seconds=django_settings.INBOX_NOTICE_REQUEUE_GRACE_SECONDS + 1))
    assert sweep_notices() == 1  # due and never sent: queued again
    assert send_notices("email") == 1
    (message,) = mailoutbox
    assert message.to == [dan.email] and "Escalated to dan" in message.subject and "3 items" in message.subject


def test_reminder_and_snooze_notices_are_rows_the_sweep_sends_when_their_worker_died(agent, ingest, alice, mailoutbox):
    from inbox.models import Snooze
    from inbox.teams.reminders import reminders_send, snoozes_wake

    items = ingest_items(agent, ingest)
    (item,) = [item for item in items if item.expires_at is not None][:1] or pytest.skip("no item with a deadline")
    # Both commit their notices; their after-commit sends never run (the worker died there).
    assert reminders_send(now=item.expires_at - timedelta(seconds=60)) >= 1
    Snooze.objects.create(user=alice, item=item, until=timezone.now())
    assert snoozes_wake(now=timezone.now() + timedelta(seconds=1)) == 1
    assert mailoutbox == []
    written = Notice.objects.filter(kind__in=[Notice.Kind.REMINDER, Notice.Kind.SNOOZE], state="pending")
    assert set(written.values_list("kind", flat=True)) == {"reminder", "snooze"}
    with later(django_settings.INBOX_NOTICE_REQUEUE_GRACE_SECONDS + 1):
        assert sweep_notices() == written.count()
        send_notices("email")
    assert len(mailoutbox) == Notice.objects.filter(state="sent").count() >= 2
    assert {message.to[0] for message in mailoutbox} == {"alice@example.com"}
    assert any(message.subject.startswith("Back from snooze") for message in mailoutbox)


# --- what a person and staff see ---------------------------------------------------------------------


class RefusingMailBackend(BaseEmailBackend):
    def send_messages(self, messages) -> int:
        raise ConnectionRefusedError("421 try again later")


@pytest.fixture
def failing_mail(agent, ingest, alice, settings) -> Notice:
    """Alice's announcement, its first attempt refused by the mail server."""
    settings.EMAIL_BACKEND = "tests.inbox.test_notices.RefusingMailBackend"
    announce_runs(runs_of(ingest_items(agent, ingest)))
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    return Notice.objects.get(user=alice)


def test_the_api_lists_a_persons_notices_with_their_state_and_last_error(failing_mail, alice, client):
    client.force_login(alice)
    body = client.get("/api/v1/notices").json()
    (notice,) = body["results"]
    assert body["count"] == 1 and notice["id"] == str(failing_mail.key)
    assert notice["status"] == "retrying" and notice["lastError"] == "ConnectionRefusedError: 421 try again later"
    assert notice["kind"] == "announcement" and notice["attempts"] == 1 and notice["to"] == "alice@example.com"
    with later(3600):
        send_notices("email")
    assert client.get("/api/v1/notices").json()["results"][0]["status"] == "sent"
    for page in ("0", "x", "99999", "1" * 400):
        response = client.get("/api/v1/notices", {"page": page})
        assert response.status_code == 404 and response.json()


def test_the_settings_page_shows_each_notice_and_staff_the_failing_channel(failing_mail, alice, staff, client):
    client.force_login(alice)
    page = client.get("/inbox/settings/notifications/").content.decode()
    assert "Retrying (attempt 1 failed" in page and "421 try again later" in page
    assert "Channels failing now" not in page  # staff only
    client.force_login(staff)
    page = client.get("/inbox/settings/notifications/").content.decode()
    assert "Channels failing now" in page and "e-mail (the mail server)" in page
    for page in ("0", "x", "99999"):  # any page number reads a page; a NUL is refused at the door (400)
        assert client.get("/inbox/settings/notifications/", {"notices": page}).status_code == 200
    assert client.get("/inbox/settings/notifications/", {"notices": "\x00"}).status_code == 400


def test_healthz_is_degraded_while_a_channel_fails_past_the_setting(failing_mail, client, settings):
    assert client.get("/healthz").json()["checks"]["notices"] == "ok"  # failing, not for long yet
    with later(settings.INBOX_NOTICE_FAILING_DEGRADED_SECONDS + 1):
        body = client.get("/healthz").json()
        assert body["checks"]["notices"] == "degraded" and "notices" in body["degraded"]
        send_notices("email")
        assert client.get("/healthz").json()["checks"]["notices"] == "ok"


def test_a_webhook_notice_carries_its_id_as_idempotency_key_on_every_attempt(agent, ingest, team, receiver):
    hook = receiver(500, 200)
    TeamWebhook.objects.create(team=team, url=hook.url, secret=SECRET)
    announce_runs(runs_of(ingest_items(agent, ingest)))
    with later(600):
        send_notices("webhook")
    notice = Notice.objects.get()
    assert [headers["Idempotency-Key"] for headers in hook.headers] == [str(notice.key)] * 2
    assert {headers["webhook-id"] for headers in hook.headers} == {f"msg_{notice.key.hex}"}
    assert json.loads(hook.bodies[1])["deliveryId"] == str(notice.key)


# --- with a real worker -------------------------------------------------------------------------------


@pytest.fixture
def own_redis(tmp_path) -> Iterator[RedisServer]:
    server = RedisServer(free_port(), tmp_path).start()
    yield server
    server.stop()


FAST = {
    "INBOX_RECOVERY_SWEEP_SECONDS": "1",
    "INBOX_NOTICE_REQUEUE_GRACE_SECONDS": "1",
    "INBOX_ANNOUNCE_GRACE_SECONDS": "1",
    "INBOX_ANNOUNCE_DELAY_SECONDS": "0",
}


@pytest.mark.worker
def test_a_redis_restart_with_a_webhook_retrying_still_delivers_it(
    agent, team, alice, receiver, client, start_worker, own_redis
):
    hook = receiver(503, 200)
    TeamWebhook.objects.create(team=team, url=hook.url, secret=SECRET)
    # The worker and beat on a Redis of the test's own; the retry waits 4-8 s, long enough to lose its message.
    backoff = {"INBOX_NOTICE_BACKOFF_BASE": "8", "INBOX_WEBHOOK_BACKOFF_BASE": "8"}
    start_worker(beat=True, extra_env={"REDIS_URL": own_redis.url, **FAST, **backoff})
    response = client.post(
        "/api/v1/runs",
        data=json.dumps(spec_example("minimal_tool_approval")),
        content_type="application/json",
        **agent.auth,
    )
    assert response.status_code == 201
    wait_for(lambda: hook.bodies, what="the first webhook call (answered 503)")
    own_redis.stop()  # Redis restarted empty while the webhook's retry waits
    own_redis.start()
    wait_for(lambda: len(hook.bodies) >= 2, timeout=90, what="the webhook's retry after the Redis restart")
    assert hook.bodies[1] == hook.bodies[0] and hook.headers[1]["Idempotency-Key"] == hook.headers[0]["Idempotency-Key"]
    assert not Run.objects.filter(notified_at__isnull=True).exists()


@pytest.mark.worker
def test_a_refused_mail_server_does_not_hold_back_the_webhook(agent, team, alice, receiver, client, start_worker):
    hook = receiver(200)
    TeamWebhook.objects.create(team=team, url=hook.url, secret=SECRET)
    start_worker(beat=True, extra_env={"EMAIL_BACKEND": "tests.inbox.test_notices.RefusingMailBackend", **FAST})
    response = client.post(
        "/api/v1/runs",
        data=json.dumps(spec_example("minimal_tool_approval")),
        content_type="application/json",
        **agent.auth,
    )
    assert response.status_code == 201
    item_id = response.json()["items"][0]["id"]
    wait_for(lambda: hook.bodies, what="the webhook call while the mail server refuses")
    assert json.loads(hook.bodies[0])["items"][0]["id"] == item_id
    email = wait_for(
        lambda: Notice.objects.filter(channel=Notice.Channel.EMAIL, last_error__contains="421").first(),
        what="alice's e-mail, refused and waiting for its retry",
    )
    assert email.status in ("retrying", "sending") and email.to == "alice@example.com"
