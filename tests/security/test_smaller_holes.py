"""Smaller holes: line breaks in email subjects, who retries a failed resume, links rendered from a schema,
and webhook signatures a receiver can check for replays."""

from __future__ import annotations

import base64
import json
import secrets
import threading
import time
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from django.utils import timezone
from standardwebhooks import Webhook, WebhookVerificationError

from inbox.decisions.services import decision_submit
from inbox.models import InboxItem, Resume, Run, TeamWebhook
from inbox.teams.notifications import announce_runs
from inbox.teams.reminders import reminders_send
from inbox.teams.tasks import deliver_webhook, send_notices


def post(agent, ingest, interrupt: dict, *, thread: str = "t-1") -> InboxItem:
    body = {
        "type": "RUN_FINISHED",
        "threadId": thread,
        "runId": f"r-{thread}",
        "outcome": {"type": "interrupt", "interrupts": [{"id": "i-1", "reason": "confirmation"} | interrupt]},
    }
    assert ingest(agent, body).status_code == 201
    return InboxItem.objects.get(thread__thread_id=thread)


# --- email subjects ---------------------------------------------------------------------------------------
def test_a_line_break_in_a_message_does_not_stop_the_announcement(agent, ingest, alice, mailoutbox):
    item = post(agent, ingest, {"message": "Pay invoice\r\nBcc: everyone@example.com\u2028now"})
    assert announce_runs([item.run_id]) == 1
    [email] = mailoutbox
    assert email.subject == "[Inbox] confirmation: Pay invoice Bcc: everyone@example.com now"
    assert email.bcc == [] and "everyone@example.com" not in email.message().get("Bcc", "")


def test_a_line_break_in_a_reason_does_not_stop_the_reminder(
    agent, ingest, alice, mailoutbox, settings, django_capture_on_commit_callbacks
):
    settings.INBOX_REMINDER_LEAD_SECONDS = 600
    expires = (timezone.now() + timedelta(minutes=5)).isoformat()
    post(agent, ingest, {"reason": "acme:pay\nX-Evil: 1", "expiresAt": expires})
    with django_capture_on_commit_callbacks(execute=True):
        assert reminders_send() == 1
    subjects = [email.subject for email in mailoutbox]
    assert subjects and all("\n" not in subject and "acme:pay X-Evil: 1" in subject for subject in subjects)


# --- retrying a failed resume is staff's ----------------------------------------------------------------
@pytest.fixture
def failed_run(agent, ingest, alice) -> Run:
    item = post(agent, ingest, {})
    decision_submit(item_id=item.pk, user=alice, status="resolved", payload={"approved": True})
    Resume.objects.filter(run=item.run).update(state=Resume.State.FAILED, last_error="HTTP 500")
    return item.run


def test_only_staff_retry_a_failed_resume(client, alice, staff, failed_run):
    client.force_login(alice)
    refused = client.post(f"/api/v1/runs/{failed_run.pk}/resume/retry")
    assert refused.status_code == 403 and refused.json()["error"] == "staff_only"
    assert Resume.objects.get(run=failed_run).state == "failed"
    assert b"data-resume-retry" not in client.get(f"/inbox/runs/{failed_run.pk}/").content

    client.force_login(staff)
    assert b"data-resume-retry" in client.get(f"/inbox/runs/{failed_run.pk}/").content
    assert client.post(f"/api/v1/runs/{failed_run.pk}/resume/retry").status_code == 202
    assert Resume.objects.get(run=failed_run).state in ("pending", "sending", "failed")


# --- links from a schema ------------------------------------------------------------------------------------
@pytest.mark.browser
def test_only_http_and_mailto_defaults_render_as_links(agent, ingest, alice, login):
    schema = {
        "type": "object",
        "properties": {
            "evil": {"type": "string", "format": "uri", "default": "javascript:alert(document.cookie)"},
            "data": {"type": "string", "format": "uri-reference", "default": "data:text/html,<script>1</script>"},
            "home": {"type": "string", "format": "uri", "default": "https://example.com/docs"},
        },
    }
    item = post(agent, ingest, {"reason": "input_required", "responseSchema": schema})
    page = login(alice)
    page.goto(f"/inbox/items/{item.pk}/")
    page.wait_for_selector("a.rjf-url-field-link")
    hrefs = page.eval_on_selector_all("a[href]", "links => links.map(a => a.getAttribute('href'))")
    assert "https://example.com/docs" in hrefs
    assert not [href for href in hrefs if href.lower().startswith(("javascript:", "data:"))]


# --- Standard Webhooks signatures ---------------------------------------------------------------------------
class Receiver:
    def __init__(self, statuses: list[int]) -> None:
        self.statuses, self.deliveries = statuses, []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802
                body = self.rfile.read(int(self.headers["Content-Length"]))
                receiver.deliveries.append((dict(self.headers), body))
                self.send_response(receiver.statuses[min(len(receiver.deliveries), len(receiver.statuses)) - 1])
                self.send_header("Content-Length", "0")
                self.end_headers()

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"


@pytest.mark.parametrize("kind", ["whsec", "plain"])
def test_webhooks_are_signed_the_standard_webhooks_way(kind, team, settings):
    settings.INBOX_NOTICE_BACKOFF_BASE = 0  # the retry is due at once
    if kind == "whsec":
        secret = "whsec_" + base64.b64encode(secrets.token_bytes(24)).decode()
        verifier = Webhook(secret)  # the spec's library takes the secret as configured
    else:
        secret = "a plain shared secret"
        verifier = Webhook(secret.encode())  # any other secret: its UTF-8 bytes are the key
    receiver = Receiver([503, 200])
    webhook = TeamWebhook.objects.create(team=team, url=receiver.url, secret=secret)
    body = json.dumps({"event": "items.created", "text": "hi"})

    assert deliver_webhook.apply(args=[webhook.pk, body]).get() == "retrying"
    assert send_notices("webhook") == 1  # the retry, from the notice's row

    (first_headers, first_body), (headers, delivered) = receiver.deliveries
    assert verifier.verify(delivered, headers) == {"event": "items.created", "text": "hi"}
    assert abs(int(headers["webhook-timestamp"]) - time.time()) < 300
    assert first_headers["webhook-id"] == headers["webhook-id"]  # a retry is the same message: deduplicable
    with pytest.raises(WebhookVerificationError):
        verifier.verify(delivered.replace(b"hi", b"ho"), headers)
    stale = headers | {"webhook-timestamp": str(int(time.time()) - 3600)}
    with pytest.raises(WebhookVerificationError):  # a captured delivery replayed an hour later
        verifier.verify(delivered, stale)
    receiver.server.shutdown()
