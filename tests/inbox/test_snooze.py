"""Snooze: an item out of one person's Open list until a time (never past its deadline), back at that time with
a reminder through their notification settings; everyone else's list untouched."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest

from inbox.models import AuditEvent, InboxItem, NotificationPreference, Snooze
from inbox.teams.digests import mail_digests
from inbox.teams.reminders import snoozes_wake
from tests.inbox.conftest import NOW


@pytest.fixture(autouse=True)
def lead_time(settings):
    settings.INBOX_REMINDER_LEAD_SECONDS = 600
    settings.SITE_URL = "http://inbox.test"


@pytest.fixture
def wake(django_capture_on_commit_callbacks):
    """The wake sweep with its after-commit work (mail, pushes) run, as in a real worker."""

    def run(now) -> int:
        with django_capture_on_commit_callbacks(execute=True):
            return snoozes_wake(now=now)

    return run


def _open_ids(client, query: str = "") -> list[int]:
    page = client.get(f"/inbox/?{query}").content.decode()
    return [int(pk) for pk in re.findall(r'data-item-row data-item-id="(\d+)"', page)]


def _count(client, tab: str, query: str = "") -> str:
    page = client.get(f"/inbox/?{query}").content.decode()
    return re.search(rf'data-count="{tab}">([^<]*)<', page).group(1)


def test_a_snoozed_item_leaves_my_open_list_only_and_comes_back_with_a_reminder_at_its_time(
    client, post_run, alice, bob, wake, mailoutbox, clock
):
    first, second = post_run("t-1", "r-1", 180, 180).items.order_by("position")
    client.force_login(alice)
    response = client.post(f"/inbox/items/{first.pk}/snooze/", {"until": "1h"})
    assert response.status_code == 302

    assert _open_ids(client) == [second.pk]
    assert _count(client, "open") == "1" and _count(client, "snoozed") == "1"
    assert _open_ids(client, "tab=snoozed") == [first.pk]
    assert first.pk in _open_ids(client, "tab=all")
    page = client.get(first.get_absolute_url()).content.decode()
    assert "Snoozed until" in page and "data-unsnooze" in page
    assert AuditEvent.objects.filter(verb="item.snoozed", object_id=str(first.pk), actor_user=alice).exists()

    client.force_login(bob)  # a colleague's list is untouched
    assert sorted(_open_ids(client)) == sorted([first.pk, second.pk])
    assert _count(client, "snoozed") == "0"

    # Before its time the sweep leaves it; at its time it wakes once and reminds alice, and only her.
    assert wake(NOW + timedelta(minutes=59)) == 0
    assert wake(NOW + timedelta(minutes=60)) == 1
    assert wake(NOW + timedelta(minutes=61)) == 0
    assert [message.to for message in mailoutbox] == [[alice.email]]
    assert "Back from snooze" in mailoutbox[0].subject
    assert first.get_absolute_url() in mailoutbox[0].body
    assert AuditEvent.objects.filter(verb="item.snooze_ended", object_id=str(first.pk)).count() == 1

    client.force_login(alice)
    assert sorted(_open_ids(client)) == sorted([first.pk, second.pk])
    assert _count(client, "snoozed") == "0"


def test_the_item_comes_back_at_its_time_even_before_the_sweep_runs(client, post_run, alice, clock):
    item = post_run("t-1", "r-1", 180).items.get()
    client.force_login(alice)
    client.post(f"/inbox/items/{item.pk}/snooze/", {"until": "1h"})
    assert _open_ids(client) == []
    clock.shift(timedelta(minutes=60))
    assert _open_ids(client) == [item.pk]


def test_the_reminder_follows_my_notification_settings(client, post_run, alice, bob, wake, mailoutbox, clock):
    item = post_run("t-1", "r-1", 180).items.get()
    NotificationPreference.objects.create(user=alice, email_mode=NotificationPreference.Mode.OFF)
    NotificationPreference.objects.create(user=bob, email_mode=NotificationPreference.Mode.DIGEST)
    for person in (alice, bob):
        client.force_login(person)
        assert client.post(f"/inbox/items/{item.pk}/snooze/", {"until": "1h"}).status_code == 302
    assert wake(NOW + timedelta(hours=2)) == 2
    assert mailoutbox == []  # off: the page only; digest: the next digest


def test_a_digest_user_finds_the_items_back_from_snooze_in_their_next_digest(
    client, post_run, bob, wake, mailoutbox, clock
):
    item = post_run("t-1", "r-1", 180).items.get()
    NotificationPreference.objects.create(
        user=bob, email_mode=NotificationPreference.Mode.DIGEST, digest_last_sent_at=NOW
    )
    client.force_login(bob)
    client.post(f"/inbox/items/{item.pk}/snooze/", {"until": "1h"})
    assert wake(NOW + timedelta(minutes=61)) == 1
    assert mailoutbox == []
    clock.move_to(NOW + timedelta(minutes=62))
    assert mail_digests() == 1
    (digest,) = mailoutbox
    assert "Back from snooze" in digest.body and item.get_absolute_url() in digest.body
    assert "arrived since" not in digest.body  # the item arrived before the last digest
    assert mail_digests() == 0  # told once


def test_a_snooze_never_runs_past_the_deadline_and_says_so(client, post_run, alice, clock):
    item = post_run("t-1", "r-1", 30).items.get()  # must be decided within 30 minutes
    client.force_login(alice)
    response = client.post(f"/inbox/items/{item.pk}/snooze/", {"until": "tomorrow"}, follow=True)
    assert "brought forward" in response.content.decode()
    snooze = Snooze.objects.get(item=item, user=alice)
    assert snooze.until == NOW + timedelta(minutes=20) and snooze.clamped
    assert "data-snooze-clamped" in client.get(item.get_absolute_url()).content.decode()

    api = client.post(f"/api/v1/items/{item.pk}/snooze", {"until": "expiry"}, content_type="application/json")
    assert api.status_code == 200
    assert api.json()["until"].startswith("2026-12-01T10:20") and api.json()["clamped"] is False


def test_bad_snooze_times_are_4xx_naming_the_field(client, post_run, alice, carol, clock):
    soon = post_run("t-1", "r-1", 5).items.get()
    later = post_run("t-2", "r-2", 180).items.get()
    client.force_login(alice)
    url = f"/api/v1/items/{later.pk}/snooze"
    for body in ({"until": "next week"}, {"until": "2020-01-01T00:00:00Z"}, {"until": 42}, {}):
        response = client.post(url, body, content_type="application/json")
        assert response.status_code == 400, body
        assert response.json()["field"] == "until"
    response = client.post(f"/api/v1/items/{soon.pk}/snooze", {"until": "1h"}, content_type="application/json")
    assert response.status_code == 400 and response.json()["error"] == "expires_soon"
    page = client.post(f"/inbox/items/{soon.pk}/snooze/", {"until": "1h"})
    assert page.status_code == 400 and "too soon to snooze" in page.content.decode()
    assert not Snooze.objects.exists()

    InboxItem.objects.filter(pk=later.pk).update(status="cancelled")
    assert client.post(url, {"until": "1h"}, content_type="application/json").status_code == 409
    client.force_login(carol)  # cannot see the agent
    assert client.post(f"/inbox/items/{soon.pk}/snooze/", {"until": "1h"}).status_code == 404
    assert client.post(url, {"until": "1h"}, content_type="application/json").status_code == 404


def test_unsnooze_brings_it_back_now_and_is_audited(client, post_run, alice, clock):
    item = post_run("t-1", "r-1", 180).items.get()
    client.force_login(alice)
    client.post(f"/api/v1/items/{item.pk}/snooze", {"until": "1h"}, content_type="application/json")
    assert _open_ids(client) == []
    assert client.delete(f"/api/v1/items/{item.pk}/snooze").status_code == 204
    assert _open_ids(client) == [item.pk]
    assert AuditEvent.objects.filter(verb="item.unsnoozed", object_id=str(item.pk)).exists()
    client.post(f"/inbox/items/{item.pk}/snooze/", {"until": "1h"})
    assert client.post(f"/inbox/items/{item.pk}/unsnooze/").status_code == 302
    assert _open_ids(client) == [item.pk]


def test_a_closed_item_wakes_without_a_reminder(client, post_run, alice, wake, mailoutbox, clock):
    item = post_run("t-1", "r-1", 180).items.get()
    client.force_login(alice)
    client.post(f"/inbox/items/{item.pk}/snooze/", {"until": "1h"})
    InboxItem.objects.filter(pk=item.pk).update(status="resolved")
    assert wake(NOW + timedelta(hours=2)) == 1
    assert mailoutbox == []
    assert Snooze.objects.get().woken_at is not None


def test_a_search_counts_my_snoozed_items_in_their_tab(client, post_run, alice, clock):
    first, _second = post_run("t-1", "r-1", 180, 180).items.order_by("position")
    client.force_login(alice)
    client.post(f"/inbox/items/{first.pk}/snooze/", {"until": "1h"})
    assert _count(client, "open", "q=Proceed") == "1"
    assert _count(client, "snoozed", "q=Proceed") == "1"
    assert _count(client, "all", "q=Proceed") == "2"


def _snooze_marks(page: str) -> dict[int, str]:
    """Each row's snooze marker, as its words read: {item id: "Snoozed until 11:00"}."""
    marks = {}
    for row in re.finditer(r'<tr data-item-row data-item-id="(\d+)"(.*?)</tr>', page, flags=re.S):
        mark = re.search(r"<span [^>]*data-snooze-mark[^>]*>(.*?)</span>", row.group(2), flags=re.S)
        if mark:
            marks[int(row.group(1))] = re.sub(r"<[^>]+>", "", mark.group(1)).strip()
    return marks


def test_the_all_tab_marks_my_snoozed_items_with_their_time_in_words_without_a_query_per_row(
    client, post_run, alice, bob, clock, django_assert_num_queries
):
    first, second, third = post_run("t-1", "r-1", 3 * 24 * 60, 3 * 24 * 60, 3 * 24 * 60).items.order_by("position")
    client.force_login(alice)
    client.post(f"/inbox/items/{first.pk}/snooze/", {"until": "1h"})
    client.post(f"/inbox/items/{second.pk}/snooze/", {"until": "tomorrow"})

    page = client.get("/inbox/?tab=all").content.decode()
    assert _snooze_marks(page) == {first.pk: "Snoozed until 11:00", second.pk: "Snoozed until tomorrow 09:00"}
    assert 'datetime="2026-12-01T11:00:00+00:00"' in page
    # The Snoozed tab says until when too; the rows the live list asks for carry the same marker.
    assert _snooze_marks(client.get("/inbox/?tab=snoozed").content.decode()) == _snooze_marks(page)
    rows = client.get(f"/inbox/rows/?tab=all&ids={first.pk},{third.pk}").content.decode()
    assert _snooze_marks(rows) == {first.pk: "Snoozed until 11:00"}

    client.force_login(bob)  # my snooze, not a colleague's
    assert _snooze_marks(client.get("/inbox/?tab=all").content.decode()) == {}

    # One snoozed row or three: the list runs the same queries (the marker is read in the rows' own query).
    client.force_login(alice)
    client.get("/inbox/?tab=all")  # warm: the session's first read
    with django_assert_num_queries(7):  # as test_saved_views counts them: the list's own, no more
        client.get("/inbox/?tab=all").content  # noqa: B018
    client.post(f"/inbox/items/{third.pk}/snooze/", {"until": "1h"})
    with django_assert_num_queries(7):
        marks = _snooze_marks(client.get("/inbox/?tab=all").content.decode())
    assert len(marks) == 3

    # Woken (its time come), the marker is gone with the snooze.
    clock.move_to(NOW + timedelta(hours=2))
    assert _snooze_marks(client.get("/inbox/?tab=all").content.decode()) == {second.pk: "Snoozed until tomorrow 09:00"}
