"""New items reach the agent's team: immediate email or a periodic digest (per user), and a signed
webhook per team, retried by Celery. Links open the item's page on SITE_URL."""

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
from django.utils import timezone

from inbox.models import AuditEvent, InboxItem, NotificationPreference, Run, TeamWebhook
from inbox.teams.tasks import deliver_webhook, notify_missed_runs, notify_new_runs, send_digests
from inbox.teams.webhooks import sign, webhook_body
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

    assert notify_new_runs(runs_of(items)) == 2

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
    notify_new_runs([Run.objects.get().pk])
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
    notify_new_runs([Run.objects.get().pk])
    html = mailoutbox[0].alternatives[0][0]
    assert "<script>" not in html and "&lt;script&gt;alert(1)&lt;/script&gt; approve?" in html


def test_digest_and_off_users_get_no_immediate_email(agent, ingest, alice, bob, mailoutbox):
    NotificationPreference.objects.create(user=alice, email_mode="digest")
    NotificationPreference.objects.create(user=bob, email_mode="off")
    notify_new_runs(runs_of(ingest_items(agent, ingest)))
    assert mailoutbox == []


def test_items_decided_before_the_task_runs_are_not_announced(agent, ingest, alice, mailoutbox):
    items = ingest_items(agent, ingest)
    InboxItem.objects.filter(pk__in=[item.pk for item in items]).update(status="expired")
    assert notify_new_runs(runs_of(items)) == 0 and mailoutbox == []


def test_an_agent_without_a_team_is_announced_to_staff_as_its_reminders_are(
    make_agent, ingest, alice, staff, mailoutbox
):
    lone = make_agent("lone")
    lone.agent.teams.clear()
    runs = runs_of(ingest_items(lone, ingest))
    assert notify_new_runs(runs) == 1
    assert [message.to for message in mailoutbox] == [["staff@example.com"]]  # not alice: not her team's agent

    NotificationPreference.objects.create(user=staff, email_mode="digest")
    mailoutbox.clear()
    with time_machine.travel(timezone.now() + timedelta(minutes=1)):
        assert send_digests() == 1
    assert mailoutbox[0].to == ["staff@example.com"] and "3 item(s)" in mailoutbox[0].subject


def test_a_run_is_announced_once_however_often_its_task_runs(agent, ingest, alice, mailoutbox):
    runs = runs_of(ingest_items(agent, ingest))
    assert notify_new_runs(runs) == 1
    assert notify_new_runs(runs) == 0 and notify_new_runs(runs + runs) == 0
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


def test_an_ingest_queues_the_announcement_of_its_run_when_it_commits(
    agent, ingest, monkeypatch, django_capture_on_commit_callbacks
):
    queued: list[list[int]] = []
    monkeypatch.setattr(notify_new_runs, "delay", queued.append)
    with django_capture_on_commit_callbacks(execute=True):
        items = ingest_items(agent, ingest)
        assert queued == []  # not before the commit
    assert queued == [runs_of(items)]


@pytest.mark.django_db(transaction=True)
def test_a_broker_that_is_down_fails_no_ingest_and_beat_announces_the_run(
    agent, ingest, alice, mailoutbox, monkeypatch
):
    def down(run_ids: list[int]) -> None:
        raise ConnectionRefusedError("the broker is down")

    monkeypatch.setattr(notify_new_runs, "delay", down)
    ingest_items(agent, ingest)  # answered 201 although the announcement could not be queued
    assert Run.objects.get().notified_at is None
    with time_machine.travel(timezone.now() + timedelta(minutes=5)):
        assert notify_missed_runs() == 1
    assert [message.to for message in mailoutbox] == [["alice@example.com"]]


def test_a_failed_send_leaves_the_runs_for_the_next_beat_without_double_webhooks(
    make_agent, ingest, alice, team, receiver, mailoutbox, monkeypatch, settings
):
    queued: list[int] = []
    monkeypatch.setattr(deliver_webhook, "delay", lambda webhook_id, body: queued.append(webhook_id))
    TeamWebhook.objects.create(team=team, url=receiver().url, secret=SECRET)
    monkeypatch.setattr("inbox.teams.notifications.ANNOUNCE_BATCH", 1)  # one run per message: beat walks two
    for slug in ("one", "two"):
        ingest_items(make_agent(slug), ingest)
    settings.EMAIL_BACKEND = "tests.inbox.test_notifications.BrokenMailBackend"
    with time_machine.travel(timezone.now() + timedelta(minutes=5)):
        assert notify_missed_runs() == 0  # returns: the released runs wait for the next beat
    assert list(Run.objects.values_list("notified_at", flat=True)) == [None, None]
    assert mailoutbox == [] and queued == []  # no webhook went out for an announcement that failed

    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    with time_machine.travel(timezone.now() + timedelta(minutes=6)):
        assert notify_missed_runs() == 2
    assert len(mailoutbox) == 2 and len(queued) == 2
    assert not Run.objects.filter(notified_at__isnull=True).exists()


class BrokenMailBackend:
    def __init__(self, **kwargs) -> None:
        pass

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


# --- webhooks ---------------------------------------------------------------------------------------


def test_the_webhook_posts_signed_json_a_chat_tool_can_read(agent, ingest, team, receiver, settings):
    settings.SITE_URL = "https://inbox.example.com"
    hook = receiver(200)
    webhook = TeamWebhook.objects.create(team=team, url=hook.url, secret=SECRET)
    items = ingest_items(agent, ingest)
    body = webhook_body(agent=agent.agent, team_name="ops", items=items)

    assert deliver_webhook.apply(args=[webhook.pk, body.decode()]).get() == "delivered"

    assert hook.bodies == [body] and hook.signature_ok(0)
    sent = json.loads(hook.bodies[0])
    assert sent["event"] == "items.created" and sent["team"] == "ops" and sent["agent"]["slug"] == "mailer"
    assert [item["url"] for item in sent["items"]] == [f"https://inbox.example.com/inbox/items/{i.pk}/" for i in items]
    assert "3 new item(s) from Mailer" in sent["text"]


def test_a_failing_receiver_is_retried_with_the_same_signed_bytes(agent, ingest, team, receiver):
    hook = receiver(500, 503, 200)
    webhook = TeamWebhook.objects.create(team=team, url=hook.url, secret=SECRET)
    body = webhook_body(agent=agent.agent, team_name="ops", items=ingest_items(agent, ingest)).decode()
    # Eager apply runs the retries at once (the countdown applies on a real worker).
    assert deliver_webhook.apply(args=[webhook.pk, body]).get() == "delivered"
    assert len(hook.bodies) == 3 and len(set(hook.bodies)) == 1
    assert all(hook.signature_ok(index) for index in range(3))


def test_a_receiver_that_keeps_failing_is_given_up_on_and_recorded(agent, ingest, team, receiver, monkeypatch):
    hook = receiver(500)
    monkeypatch.setattr(deliver_webhook, "max_retries", 2)
    webhook = TeamWebhook.objects.create(team=team, url=hook.url, secret=SECRET)
    assert deliver_webhook.apply(args=[webhook.pk, "{}"]).get() == "failed"
    assert len(hook.bodies) == 3
    event = AuditEvent.objects.get(verb="webhook.failed")
    assert event.data["error"] == "HTTP 500" and event.data["team"] == "ops"


def test_a_4xx_is_not_retried(team, receiver):
    hook = receiver(410)
    webhook = TeamWebhook.objects.create(team=team, url=hook.url, secret=SECRET)
    assert deliver_webhook.apply(args=[webhook.pk, "{}"]).get() == "rejected"
    assert len(hook.bodies) == 1


def test_disabled_webhooks_and_other_teams_webhooks_are_not_called(
    agent, ingest, team, receiver, mailoutbox, monkeypatch
):
    queued: list[int] = []
    monkeypatch.setattr(deliver_webhook, "delay", lambda webhook_id, body: queued.append(webhook_id))
    TeamWebhook.objects.create(team=team, url=receiver().url, secret=SECRET, enabled=False)
    TeamWebhook.objects.create(team=Group.objects.create(name="finance"), url=receiver().url, secret=SECRET)
    enabled = TeamWebhook.objects.create(team=team, url=receiver().url, secret=SECRET)
    notify_new_runs(runs_of(ingest_items(agent, ingest)))
    assert queued == [enabled.pk]


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
