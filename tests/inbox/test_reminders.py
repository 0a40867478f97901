"""Reminders: one email per item to the people who can decide it, a lead time before it expires."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.utils import timezone

from inbox.models import AuditEvent, InboxItem, NotificationPreference
from inbox.teams.reminders import reminders_send
from tests.conftest import PASSWORD
from tests.inbox.conftest import NOW, interrupted


@pytest.fixture(autouse=True)
def lead_time(settings):
    settings.INBOX_REMINDER_LEAD_SECONDS = 600
    settings.SITE_URL = "http://inbox.test"


@pytest.fixture
def remind(django_capture_on_commit_callbacks):
    """``reminders_send`` with its after-commit work (emails, pushes) run, as in a real worker."""

    def run() -> int:
        with django_capture_on_commit_callbacks(execute=True):
            return reminders_send()

    return run


def test_one_reminder_reaches_each_approver_ten_minutes_before_expiry(
    remind, stored_run, clock, alice, bob, carol, staff, mailoutbox
):
    item = stored_run("t-1", "r-1", 30).items.get()
    clock.shift(timedelta(minutes=19))
    assert remind() == 0
    assert mailoutbox == []

    clock.shift(timedelta(minutes=1))
    assert remind() == 1

    assert sorted(message.to[0] for message in mailoutbox) == ["alice@example.com", "bob@example.com"]
    message = mailoutbox[0]
    assert message.subject == "Reminder: confirmation for Mailer expires in 10 minutes"
    assert "Proceed with step 1?" in message.body
    assert f"http://inbox.test/inbox/items/{item.pk}/" in message.body
    item.refresh_from_db()
    assert item.reminder_sent_at == NOW + timedelta(minutes=20)
    event = AuditEvent.objects.get(verb="item.reminder_sent")
    assert (event.object_id, event.data["recipients"]) == (str(item.pk), ["alice", "bob"])


def test_an_item_is_never_reminded_twice(remind, stored_run, clock, alice, mailoutbox):
    stored_run("t-1", "r-1", 30)
    clock.shift(timedelta(minutes=21))
    assert remind() == 1
    clock.shift(timedelta(minutes=5))
    assert remind() == 0
    assert len(mailoutbox) == 1


def test_an_agent_without_a_team_reminds_staff(remind, stored_run, agent, clock, alice, staff, mailoutbox):
    agent.agent.teams.clear()
    stored_run("t-1", "r-1", 5)
    assert remind() == 1
    assert [message.to for message in mailoutbox] == [["staff@example.com"]]


def test_no_reminder_for_decided_or_expired_items(remind, stored_run, clock, alice, mailoutbox):
    decided = stored_run("t-1", "r-1", 5).items.get()
    InboxItem.objects.filter(pk=decided.pk).update(status="resolved", decided_at=NOW)
    stored_run("t-2", "r-2", -1)  # already past expiresAt when posted
    assert remind() == 0
    assert mailoutbox == []


def test_an_approver_who_turned_email_off_gets_no_reminder_email(remind, stored_run, clock, alice, bob, mailoutbox):
    NotificationPreference.objects.create(user=bob, email_mode=NotificationPreference.Mode.OFF)
    User.objects.create_user("dave", "", PASSWORD).groups.add(*alice.groups.all())  # no address to write to
    stored_run("t-1", "r-1", 5)
    assert remind() == 1
    assert [message.to for message in mailoutbox] == [["alice@example.com"]]


@pytest.mark.django_db(transaction=True)
def test_two_workers_sending_reminders_at_once_send_each_reminder_once(agent, ingest, alice, bob, mailoutbox):
    for n in range(5):
        response = ingest(agent, interrupted(f"t-{n}", f"r-{n}", 5, since=timezone.now()))
        assert response.status_code == 201
    # Real threads, real time: every item expires 5 minutes after it was posted, and both workers look
    # at the moment of posting, so all five are within the lead time for both.
    InboxItem.objects.update(expires_at=InboxItem.objects.first().created_at + timedelta(minutes=5))
    results: list[int] = []
    start = threading.Barrier(2)

    def worker() -> None:
        try:
            start.wait()
            results.append(reminders_send(now=InboxItem.objects.first().created_at))
        finally:
            connection.close()

    threads = [threading.Thread(target=worker) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)

    assert sorted(results) == [0, 5]
    assert len(mailoutbox) == 10  # 5 items × alice and bob
    assert AuditEvent.objects.filter(verb="item.reminder_sent").count() == 5
