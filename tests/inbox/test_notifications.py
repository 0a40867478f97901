"""New items reach the agent's team: immediate email or a periodic digest (per user), and a signed
webhook per team, each a notice row retried from the table. Links open the item's page on SITE_URL."""

from __future__ import annotations

import copy
import hashlib
import hmac
import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
import time_machine
from django.contrib.auth.models import Group
from django.core.mail.backends.base import BaseEmailBackend
from django.utils import timezone

from inbox.models import AuditEvent, InboxItem, Notice, NotificationPreference, Run, TeamWebhook
from inbox.teams.notifications import ANNOUNCEMENT_QUEUED, announce_runs
from inbox.teams.signatures import sign
from inbox.teams.tasks import announce_new_runs, deliver_webhook, notify_missed_runs, send_digests, send_notices
from inbox.teams.webhooks import webhook_body
from tests.agent_servers import wait_for
from tests.conftest import spec_example

SECRET = "team-hook-secret"


@dataclass
class Receiver:
    """A chat tool's webhook endpoint on loopback: answers with the scripted statuses, keeps raw bodies."""

    statuses: list[int]
    bodies: list[bytes] = field(default_factory=list)
    headers: list[dict] = field(default_factory=list)
    server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/hook"

    def start(self) -> Receiver:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:
                pass

            def do_POST(self) -> None:
                receiver.bodies.append(self.rfile.read(int(self.headers["Content-Length"])))
                receiver.headers.append(dict(self.headers))
                status = receiver.statuses[min(len(receiver.bodies), len(receiver.statuses)) - 1]
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def signature_ok(self, index: int) -> bool:
        expected = "sha256=" + hmac.new(SECRET.encode(), self.bodies[index], hashlib.sha256).hexdigest()
        return hmac.compare_digest(self.headers[index]["X-Inbox-Signature"], expected)


@pytest.fixture
def receiver() -> Iterator:
    made: list[Receiver] = []

    def make(*statuses: int) -> Receiver:
        made.append(Receiver(list(statuses) or [200]).start())
        return made[-1]

    yield make
    for item in made:
        item.server.shutdown()
        item.server.server_close()


def ingest_items(agent, ingest, name: str = "parallel_interrupts") -> list[InboxItem]:
    assert ingest(agent, copy.deepcopy(spec_example(name))).status_code == 201
    return list(InboxItem.objects.filter(agent=agent.agent).order_by("position"))


def runs_of(items: list[InboxItem]) -> list[int]:
    return sorted({item.run_id for item in items})


# --- email ------------------------------------------------------------------------------------------


def test_team_members_get_one_email_with_links_to_each_item(agent, ingest, alice, bob, carol, mailoutbox, settings):
    settings.SITE_URL = "https://inbox.example.com"
    items = ingest_items(agent, ingest)

    assert announce_runs(runs_of(items)) == 2

    assert sorted(message.to[0] for message in mailoutbox) == ["alice@example.com", "bob@example.com"]
    message = mailoutbox[0]
    assert message.subject == "[Inbox] 3 new items from Mailer"
    for item in items:
        assert f"https://inbox.example.com/inbox/items/{item.pk}/" in message.body
        assert f'href="https://inbox.example.com/inbox/items/{item.pk}/"' in message.alternatives[0][0]
    assert "Approve sendEmail to x@y.com?" in message.body
    assert AuditEvent.objects.filter(verb="item.notified", data__emailed=["alice", "bob"]).exists()


def test_the_email_says_reasons_and_deadlines_in_words_and_marks_a_short_one(agent, ingest, alice, mailoutbox):
    """E-mails showed raw ISO timestamps and raw reason names, and a deadline minutes away looked like any other."""
    body = copy.deepcopy(spec_example("minimal_tool_approval"))
    soon = timezone.now() + timedelta(minutes=20)
    body["outcome"]["interrupts"][0]["expiresAt"] = soon.isoformat()
    ingest(agent, body)
    announce_runs([Run.objects.get().pk])
    (message,) = mailoutbox
    html = message.alternatives[0][0]
    for text in (message.body, html):
        assert soon.isoformat() not in text and "tool_call ·" not in text
        assert f"{soon:%a %-d %b, %H:%M} UTC (in 1" in text  # 19 or 20 minutes, as the clock turns
        assert "Tool call" in text
    assert "DECIDE SOON: expires" in message.body and "Decide soon: expires" in html


def test_agent_text_is_escaped_in_the_html_email(agent, ingest, alice, mailoutbox):
    body = copy.deepcopy(spec_example("minimal_tool_approval"))
    body["outcome"]["interrupts"][0]["message"] = "<script>alert(1)</script> approve?"
    ingest(agent, body)
    announce_runs([Run.objects.get().pk])
    html = mailoutbox[0].alternatives[0][0]
    assert "<script>" not in html and "&lt;script&gt;alert(1)&lt;/script&gt; approve?" in html


def test_digest_and_off_users_get_no_immediate_email(agent, ingest, alice, bob, mailoutbox):
    NotificationPreference.objects.create(user=alice, email_mode="digest")
    NotificationPreference.objects.create(user=bob, email_mode="off")
    announce_runs(runs_of(ingest_items(agent, ingest)))
    assert mailoutbox == []


def test_items_decided_before_the_task_runs_are_not_announced(agent, ingest, alice, mailoutbox):
    items = ingest_items(agent, ingest)
    InboxItem.objects.filter(pk__in=[item.pk for item in items]).update(status="expired")
    assert announce_runs(runs_of(items)) == 0 and mailoutbox == []


def test_an_agent_without_a_team_is_announced_to_staff_as_its_reminders_are(
    make_agent, ingest, alice, staff, mailoutbox
):
    lone = make_agent("lone")
    lone.agent.teams.clear()
    runs = runs_of(ingest_items(lone, ingest))
    assert announce_runs(runs) == 1
    assert [message.to for message in mailoutbox] == [["staff@example.com"]]  # not alice: not her team's agent

    NotificationPreference.objects.create(user=staff, email_mode="digest")
    mailoutbox.clear()
    with time_machine.travel(timezone.now() + timedelta(minutes=1)):
        assert send_digests() == 1
    assert mailoutbox[0].to == ["staff@example.com"] and "3 item(s)" in mailoutbox[0].subject


def test_a_run_is_announced_once_however_often_its_task_runs(agent, ingest, alice, mailoutbox):
    runs = runs_of(ingest_items(agent, ingest))
    assert announce_runs(runs) == 1
    assert announce_runs(runs) == 0 and announce_runs(runs + runs) == 0
    assert len(mailoutbox) == 1 and AuditEvent.objects.filter(verb="item.notified").count() == 1
    assert Run.objects.get().notified_at is not None


def test_a_run_without_open_items_is_never_announced(agent, ingest, alice, mailoutbox):
    body = copy.deepcopy(spec_example("minimal_tool_approval"))
    body["outcome"]["interrupts"][0]["expiresAt"] = "2020-01-01T00:00:00Z"  # already stale when posted
    assert ingest(agent, body).status_code == 201
    run = Run.objects.get()
    assert run.notified_at == run.created_at
    with time_machine.travel(timezone.now() + timedelta(hours=1)):
        assert notify_missed_runs() == 0
    assert mailoutbox == []


def test_beat_announces_a_run_whose_task_was_lost_after_the_grace_time(agent, ingest, alice, mailoutbox, settings):
    settings.INBOX_ANNOUNCE_GRACE_SECONDS = 60
    ingest_items(agent, ingest)  # no worker here: the queued task never runs
    assert notify_missed_runs() == 0 and mailoutbox == []  # too young: its task may still be on the way
    with time_machine.travel(timezone.now() + timedelta(seconds=61)):
        assert notify_missed_runs() == 1
        assert notify_missed_runs() == 0
    assert [message.to for message in mailoutbox] == [["alice@example.com"]]


def test_an_ingest_queues_one_announcement_for_the_runs_that_arrive_until_it_starts(
    make_agent, ingest, alice, monkeypatch, mailoutbox, settings, django_capture_on_commit_callbacks
):
    settings.INBOX_ANNOUNCE_DELAY_SECONDS = 1.5
    queued: list[dict] = []
    monkeypatch.setattr(announce_new_runs, "apply_async", lambda **options: queued.append(options))
    with django_capture_on_commit_callbacks(execute=True):
        first = ingest_items(make_agent("one"), ingest)
        assert queued == []  # not before the commit
    assert queued == [{"countdown": 1.5}]
    with django_capture_on_commit_callbacks(execute=True):
        ingest_items(make_agent("two"), ingest)
        ingest_items(make_agent("three"), ingest, "minimal_tool_approval")
    assert len(queued) == 1  # the queued task has not started: it will announce these runs too

    assert announce_new_runs() == 3  # the task, as the worker runs it: one e-mail per agent for alice
    assert not Run.objects.filter(notified_at__isnull=True).exists()
    assert sorted(message.subject for message in mailoutbox)[0].startswith("[Inbox] 3 new items from")
    assert {message.to[0] for message in mailoutbox} == {"alice@example.com"}
    # Once it has started, the next run queues the next announcement.
    with django_capture_on_commit_callbacks(execute=True):
        ingest_items(make_agent("four"), ingest)
    assert len(queued) == 2 and announce_new_runs() == 1 and len(mailoutbox) == 4
    assert announce_runs(runs_of(first)) == 0  # each run is announced once


def test_the_announcement_leaves_runs_older_than_the_grace_time_to_beat(agent, ingest, alice, mailoutbox, settings):
    settings.INBOX_ANNOUNCE_GRACE_SECONDS = 60
    ingest_items(agent, ingest)
    with time_machine.travel(timezone.now() + timedelta(seconds=61)):
        assert announce_new_runs() == 0 and mailoutbox == []
        assert notify_missed_runs() == 1
    assert [message.to for message in mailoutbox] == [["alice@example.com"]]


def test_a_burst_is_one_email_that_lists_the_first_items_and_links_to_the_rest(
    make_agent, ingest, alice, mailoutbox, settings, monkeypatch
):
    settings.SITE_URL = "https://inbox.example.com"
    monkeypatch.setattr("inbox.teams.notifications.ANNOUNCE_LISTED", 2)
    items = ingest_items(make_agent("mailer"), ingest)  # three interrupts
    assert announce_runs(runs_of(items)) == 1
    (message,) = mailoutbox
    assert "waiting for a decision on 3 items" in message.body
    assert f"/inbox/items/{items[1].pk}/" in message.body and f"/inbox/items/{items[2].pk}/" not in message.body
    assert "…and 1 more: https://inbox.example.com/inbox/?agent=mailer" in message.body
    html = message.alternatives[0][0]
    assert "…and 1 more." in html and 'href="https://inbox.example.com/inbox/?agent=mailer"' in html


def test_a_webhook_call_counts_every_item_and_carries_at_most_its_limit(agent, ingest, monkeypatch):
    monkeypatch.setattr("inbox.teams.webhooks.WEBHOOK_ITEMS", 2)
    monkeypatch.setattr("inbox.teams.webhooks.WEBHOOK_TEXT_LINES", 1)
    items = ingest_items(agent, ingest)  # three interrupts
    body = json.loads(webhook_body(agent=agent.agent, team_name="ops", items=items))
    assert body["count"] == 3 and [entry["id"] for entry in body["items"]] == [items[0].pk, items[1].pk]
    lines = body["text"].splitlines()
    assert len(lines) == 3 and lines[1].endswith(body["items"][0]["url"]) and lines[2] == "…and 2 more"


@pytest.mark.django_db(transaction=True)
def test_redis_down_at_the_commit_fails_no_ingest_and_beat_announces_the_run(
    agent, ingest, alice, mailoutbox, monkeypatch
):
    def down(**options: object) -> None:
        raise ConnectionRefusedError("the broker is down")

    monkeypatch.setattr(announce_new_runs, "apply_async", down)
    ingest_items(agent, ingest)  # answered 201 although the announcement could not be queued
    assert Run.objects.get().notified_at is None
    from django.core.cache import caches

    assert caches["shared"].get(ANNOUNCEMENT_QUEUED) is None  # not marked as queued: the next run tries again
    with time_machine.travel(timezone.now() + timedelta(minutes=5)):
        assert notify_missed_runs() == 1
    assert [message.to for message in mailoutbox] == [["alice@example.com"]]


def test_a_refused_mail_server_holds_back_no_webhook_and_its_emails_are_retried_from_their_rows(
    make_agent, ingest, alice, team, receiver, mailoutbox, settings
):
    hook = receiver(200)
    TeamWebhook.objects.create(team=team, url=hook.url, secret=SECRET)
    for slug in ("one", "two"):
        ingest_items(make_agent(slug), ingest)
    settings.EMAIL_BACKEND = "tests.inbox.test_notifications.BrokenMailBackend"
    with time_machine.travel(timezone.now() + timedelta(minutes=5)):
        assert notify_missed_runs() == 0  # no e-mail went out
    assert not Run.objects.filter(notified_at__isnull=True).exists()
    assert len(hook.bodies) == 2 and mailoutbox == []  # the webhook calls went out all the same
    emails = Notice.objects.filter(channel=Notice.Channel.EMAIL)
    assert [(n.status, n.last_error) for n in emails] == [("retrying", "ConnectionRefusedError: smtp is down")] * 2

    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    with time_machine.travel(timezone.now() + timedelta(hours=1)):
        assert notify_missed_runs() == 0  # the runs are announced: nothing is announced twice
        send_notices("email")
    assert len(mailoutbox) == 2 and len(hook.bodies) == 2
    assert set(emails.values_list("state", flat=True)) == {"sent"}


class BrokenMailBackend(BaseEmailBackend):
    """A mail server that refuses every message."""

    def send_messages(self, messages) -> int:
        raise ConnectionRefusedError("smtp is down")


def test_the_digest_mails_what_arrived_since_the_last_one_once(agent, ingest, make_agent, alice, bob, mailoutbox):
    NotificationPreference.objects.create(user=bob, email_mode="digest")
    start = timezone.now()
    with time_machine.travel(start, tick=False):
        ingest_items(agent, ingest)
        other = make_agent("ledger")
        other.agent.teams.set([Group.objects.create(name="finance")])
        ingest(other, copy.deepcopy(spec_example("minimal_tool_approval")))  # not bob's team
    with time_machine.travel(start + timedelta(minutes=5), tick=False):
        assert send_digests() == 1
        assert send_digests() == 0  # nothing new since
    (message,) = mailoutbox
    assert message.to == ["bob@example.com"] and message.subject == "[Inbox] Digest: 3 item(s) waiting for a decision"
    assert "Approve sendEmail to y@z.com?" in message.body and "Send email to a@b.com" not in message.body
    with time_machine.travel(start + timedelta(minutes=10), tick=False):
        ingest(agent, copy.deepcopy(spec_example("minimal_tool_approval")))
    with time_machine.travel(start + timedelta(minutes=15), tick=False):
        assert send_digests() == 1
    assert "1 item arrived" in mailoutbox[1].body and "x@y.com" not in mailoutbox[1].body


def test_a_digest_lists_its_first_items_and_counts_the_rest(agent, ingest, bob, mailoutbox, monkeypatch, settings):
    settings.SITE_URL = "https://inbox.example.com"
    monkeypatch.setattr("inbox.teams.digests.DIGEST_LISTED", 2)
    NotificationPreference.objects.create(user=bob, email_mode="digest")
    start = timezone.now()
    with time_machine.travel(start, tick=False):
        items = ingest_items(agent, ingest)  # three interrupts
    with time_machine.travel(start + timedelta(minutes=5), tick=False):
        assert send_digests() == 1
    (message,) = mailoutbox
    assert message.subject == "[Inbox] Digest: 3 item(s) waiting for a decision"
    assert "3 items arrived" in message.body
    assert sum(f"/inbox/items/{item.pk}/" in message.body for item in items) == 2
    assert "…and 1 more: https://inbox.example.com/inbox/" in message.body
    assert "…and 1 more." in message.alternatives[0][0]


# --- webhooks ---------------------------------------------------------------------------------------


def test_the_webhook_posts_signed_json_a_chat_tool_can_read(agent, ingest, team, receiver, settings):
    settings.SITE_URL = "https://inbox.example.com"
    hook = receiver(200)
    webhook = TeamWebhook.objects.create(team=team, url=hook.url, secret=SECRET)
    items = ingest_items(agent, ingest)
    body = webhook_body(agent=agent.agent, team_name="ops", items=items)

    # A message of the earlier release's task is stored as a notice and sent from its row.
    assert deliver_webhook.apply(args=[webhook.pk, body.decode()]).get() == "delivered"

    assert hook.bodies == [body] and hook.signature_ok(0)
    assert Notice.objects.get().state == "sent"
    sent = json.loads(hook.bodies[0])
    assert sent["event"] == "items.created" and sent["team"] == "ops" and sent["agent"]["slug"] == "mailer"
    assert [item["url"] for item in sent["items"]] == [f"https://inbox.example.com/inbox/items/{i.pk}/" for i in items]
    assert "3 new item(s) from Mailer" in sent["text"]


def test_a_failing_receiver_is_retried_with_the_same_signed_bytes_and_key(agent, ingest, team, receiver):
    hook = receiver(500, 503, 200)
    TeamWebhook.objects.create(team=team, url=hook.url, secret=SECRET)
    announce_runs(runs_of(ingest_items(agent, ingest)))
    notice = Notice.objects.get(channel=Notice.Channel.WEBHOOK)
    assert (notice.status, notice.last_error, notice.attempts) == ("retrying", "HTTP 500", 1)
    for minutes in (10, 20):  # each retry once its backoff has passed
        with time_machine.travel(timezone.now() + timedelta(minutes=minutes)):
            send_notices("webhook")
    notice.refresh_from_db()
    assert (notice.state, notice.attempts, notice.last_error) == ("sent", 3, "")
    assert len(hook.bodies) == 3 and len(set(hook.bodies)) == 1
    assert all(hook.signature_ok(index) for index in range(3))
    assert {headers["Idempotency-Key"] for headers in hook.headers} == {str(notice.key)}
    assert json.loads(hook.bodies[0])["deliveryId"] == str(notice.key)


def test_a_receiver_that_keeps_failing_is_given_up_on_at_the_deadline_and_recorded(
    agent, ingest, team, receiver, settings
):
    hook = receiver(500)
    TeamWebhook.objects.create(team=team, url=hook.url, secret=SECRET)
    announce_runs(runs_of(ingest_items(agent, ingest)))
    with time_machine.travel(timezone.now() + timedelta(seconds=settings.INBOX_NOTICE_RETRY_WINDOW_SECONDS + 1)):
        send_notices("webhook")
    notice = Notice.objects.get(channel=Notice.Channel.WEBHOOK)
    assert notice.status == "failed" and notice.last_error.startswith("HTTP 500 (gave up")
    assert len(hook.bodies) == 2
    event = AuditEvent.objects.get(verb="webhook.failed")
    assert event.data["error"].startswith("HTTP 500") and event.data["team"] == "ops"


def test_a_4xx_is_not_retried(team, receiver):
    hook = receiver(410)
    webhook = TeamWebhook.objects.create(team=team, url=hook.url, secret=SECRET)
    assert deliver_webhook.apply(args=[webhook.pk, "{}"]).get() == "rejected"
    assert len(hook.bodies) == 1


def test_disabled_webhooks_and_other_teams_webhooks_are_not_called(agent, ingest, team, receiver):
    disabled, other, enabled = receiver(), receiver(), receiver()
    TeamWebhook.objects.create(team=team, url=disabled.url, secret=SECRET, enabled=False)
    TeamWebhook.objects.create(team=Group.objects.create(name="finance"), url=other.url, secret=SECRET)
    webhook = TeamWebhook.objects.create(team=team, url=enabled.url, secret=SECRET)
    announce_runs(runs_of(ingest_items(agent, ingest)))
    assert list(Notice.objects.filter(channel="webhook").values_list("webhook", flat=True)) == [webhook.pk]
    assert len(enabled.bodies) == 1 and disabled.bodies == [] and other.bodies == []


def test_the_signature_is_an_hmac_sha256_of_the_body():
    assert sign("k", b"{}") == "sha256=" + hmac.new(b"k", b"{}", hashlib.sha256).hexdigest()


# --- the whole path, with a real worker ---------------------------------------------------------------


@pytest.mark.worker
def test_an_ingested_run_reaches_the_team_by_email_and_by_a_retried_webhook(
    agent, team, alice, receiver, client, start_worker
):
    hook = receiver(502, 200)
    TeamWebhook.objects.create(team=team, url=hook.url, secret=SECRET)
    worker = start_worker(extra_env={"INBOX_WEBHOOK_BACKOFF_BASE": "0.2"})

    response = client.post(
        "/api/v1/runs",
        data=json.dumps(spec_example("minimal_tool_approval")),
        content_type="application/json",
        **agent.auth,
    )
    assert response.status_code == 201
    item_id = response.json()["items"][0]["id"]

    wait_for(lambda: len(hook.bodies) >= 2, what="the webhook to be retried")
    assert hook.bodies[0] == hook.bodies[1] and hook.signature_ok(1)
    assert json.loads(hook.bodies[1])["items"][0]["id"] == item_id
    # The worker's email backend is the console: the message is in its log.
    wait_for(lambda: "To: alice@example.com" in worker.log(), what="the email to alice")
    assert f"/inbox/items/{item_id}/" in worker.log()


@pytest.mark.worker
def test_a_burst_of_runs_is_one_email_and_one_webhook_call_from_a_real_worker(
    agent, team, alice, receiver, client, start_worker, settings
):
    settings.INBOX_ANNOUNCE_DELAY_SECONDS = 5  # the first run's commit queues the announcement this far ahead
    hook = receiver(200)
    TeamWebhook.objects.create(team=team, url=hook.url, secret=SECRET)
    worker = start_worker()
    item_ids = []
    for n in range(4):
        body = copy.deepcopy(spec_example("minimal_tool_approval"))
        body["threadId"] = f"burst-{n}"
        response = client.post("/api/v1/runs", data=json.dumps(body), content_type="application/json", **agent.auth)
        assert response.status_code == 201
        item_ids.append(response.json()["items"][0]["id"])

    wait_for(lambda: hook.bodies, what="the announcement's webhook call")
    wait_for(lambda: "To: alice@example.com" in worker.log(), what="the email to alice")
    assert not Run.objects.filter(notified_at__isnull=True).exists()
    (call,) = [json.loads(body) for body in hook.bodies]
    assert call["count"] == 4 and sorted(entry["id"] for entry in call["items"]) == sorted(item_ids)
    log = worker.log()
    assert log.count("To: alice@example.com") == 1 and "4 new items from" in log
    assert all(f"/inbox/items/{item_id}/" in log for item_id in item_ids)


# --- the preferences page -----------------------------------------------------------------------------


def test_a_user_switches_to_the_digest_on_the_preferences_page(alice, client):
    client.force_login(alice)
    page = client.get("/inbox/settings/notifications/").content.decode()
    assert "Email me at once" in page and "alice@example.com" in page and "ops" in page
    response = client.post("/inbox/settings/notifications/", {"email_mode": "digest"}, follow=True)
    assert "Notification preferences saved." in response.content.decode()
    assert NotificationPreference.objects.get(user=alice).email_mode == "digest"
    event = AuditEvent.objects.get(verb="preferences.changed")
    assert event.actor_label == "alice" and event.data == {"email_mode": {"from": "immediate", "to": "digest"}}
    client.post("/inbox/settings/notifications/", {"email_mode": "digest"})  # saved again, unchanged
    assert AuditEvent.objects.filter(verb="preferences.changed").count() == 1
    alice.is_staff = True
    alice.save()
    log = client.get("/audit/?verb=preferences.changed")
    assert log.status_code == 200 and "preferences.changed" in log.content.decode()


def test_an_unknown_mode_is_refused_with_the_field_named(alice, client):
    client.force_login(alice)
    response = client.post("/inbox/settings/notifications/", {"email_mode": "sms"})
    assert response.status_code == 400 and "email_mode" in response.content.decode()
    assert NotificationPreference.objects.get(user=alice).email_mode == "immediate"


def test_the_preferences_page_needs_a_login(client):
    response = client.get("/inbox/settings/notifications/")
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]
