"""Delivery reads as it is, everywhere: one state from one source (the resume row, through
``inbox.resumes.states``) on the item page, the list's marker, the run page's header, the thread's timeline,
the agent list and page, the API's items and runs, and the e-mail of a failed delivery.

The agent's endpoint is a real loopback port nothing listens on: every attempt is refused."""

from __future__ import annotations

import copy
import json
import re

from django.core import mail
from django.utils import timezone

from inbox.models import InboxItem, Resume
from inbox.resumes.services import resume_dispatch
from inbox.teams.failures import notify_delivery_failed
from tests.conftest import free_port, spec_example

RETRYING = "Retrying (attempt 3)"
IN_WORDS = "nothing accepts connections at the agent"


def decided_against_a_dead_endpoint(client, make_agent, ingest, alice) -> tuple[InboxItem, Resume]:
    dead = make_agent("deadend", endpoint=f"http://127.0.0.1:{free_port()}/")
    body = copy.deepcopy(spec_example("minimal_tool_approval"))
    assert ingest(dead, body).status_code == 201
    item = InboxItem.objects.get()
    client.force_login(alice)
    decided = client.post(
        f"/api/v1/items/{item.pk}/decision",
        data=json.dumps({"status": "resolved", "payload": {"approved": True}}),
        content_type="application/json",
    )
    assert decided.status_code == 201
    resume = Resume.objects.get()
    for _ in range(2):  # two refused attempts, as the worker makes them
        Resume.objects.filter(pk=resume.pk).update(next_attempt_at=timezone.now())
        assert resume_dispatch(resume_id=resume.pk) == "retry scheduled"
    resume.refresh_from_db()
    assert (resume.state, resume.attempts) == ("pending", 2)
    return item, resume


def marker(page: str) -> str:
    """The one delivery marker of a page (the list's row, the run's header, an agent's row)."""
    found = re.findall(
        r'<span class="delivery-mark delivery-([a-z-]+)" data-delivery="\1" title="([^"]*)">([^<]*)</span>', page
    )
    assert found, "no delivery marker on the page"
    return found[0][2]


def test_a_dead_endpoint_reads_retrying_with_the_attempt_the_error_and_the_next_try_everywhere(
    client, make_agent, ingest, alice
):
    item, resume = decided_against_a_dead_endpoint(client, make_agent, ingest, alice)

    page = client.get(item.get_absolute_url()).content.decode()
    assert 'data-delivery="retrying"' in page and RETRYING in page
    assert "Attempt 2 did not reach the agent: " + IN_WORDS in page
    assert "Queued" not in page and "is queued to go back" not in page

    listing = client.get("/inbox/?tab=decided").content.decode()
    assert marker(listing) == RETRYING

    run_page = client.get(item.run.get_absolute_url()).content.decode()
    header = run_page[run_page.index("data-run-status") :]
    assert marker(header) == RETRYING
    assert f'data-delivery="retrying" title="Attempt 2 did not reach the agent: {IN_WORDS}' in header
    assert re.search(r'data-resume-state="pending" data-delivery="retrying"[^>]*>Retrying \(attempt 3\)<', run_page)

    thread = client.get(f"/audit/threads/{item.thread_id}/").content.decode()
    assert marker(thread) == RETRYING

    agents = client.get("/agents/").content.decode()
    row = agents[agents.index('data-agent-row="deadend"') :]
    assert marker(row) == RETRYING and "never answered yet" in row
    agent_page = client.get("/agents/deadend/").content.decode()
    assert marker(agent_page[agent_page.index("data-agent-delivery") :]) == RETRYING

    api_item = client.get(f"/api/v1/items/{item.pk}").json()["delivery"]
    assert api_item["state"] == "retrying" and api_item["label"] == RETRYING
    assert api_item["attempts"] == 2 and "Connection refused" in api_item["lastError"]
    assert api_item["nextTryAt"] == resume.next_attempt_at.isoformat()
    listed = client.get("/api/v1/items?status=resolved").json()["results"]
    assert [entry["delivery"]["label"] for entry in listed] == [RETRYING]
    api_run = client.get(f"/api/v1/runs/{item.run_id}").json()["delivery"]
    assert api_run == api_item


def test_a_failed_delivery_reads_needs_a_person_everywhere_and_in_the_email(
    client, make_agent, ingest, alice, settings
):
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    item, resume = decided_against_a_dead_endpoint(client, make_agent, ingest, alice)
    # The retry window ends: the next refused attempt gives up.
    Resume.objects.filter(pk=resume.pk).update(next_attempt_at=timezone.now(), retry_until=timezone.now())
    mail.outbox.clear()
    assert resume_dispatch(resume_id=resume.pk) == "failed"
    notify_delivery_failed(resume.pk)

    label = "Failed: needs a person"
    assert marker(client.get("/inbox/?tab=decided").content.decode()) == label
    run_page = client.get(item.run.get_absolute_url()).content.decode()
    assert marker(run_page[run_page.index("data-run-status") :]) == label
    agents = client.get("/agents/").content.decode()
    assert marker(agents[agents.index('data-agent-row="deadend"') :]) == label
    assert client.get(f"/api/v1/items/{item.pk}").json()["delivery"]["needsPerson"] is True
    body = mail.outbox[0].body
    assert f"{label}: The answer did not reach the agent after 3 attempts: " in body
    assert "nothing accepts connections at the agent's address" in body


def test_the_agent_list_and_page_say_when_the_agent_last_answered(client, make_agent, alice, scripted):
    from inbox.decisions.services import decision_submit
    from inbox.ingest.start import run_start
    from tests.agent_servers import Reply
    from tests.conftest import load_events

    server = scripted(Reply(sse=load_events("email-interrupted-run.jsonl")))
    agent = make_agent("answers", endpoint=server.url).agent
    run = run_start(agent=agent, user=alice, message="email", thread_id="email-edit-148e0c3b").run
    decision_submit(item_id=run.items.get().pk, user=alice, status="resolved", payload={"approved": True})
    client.force_login(alice)
    agents = client.get("/agents/").content.decode()
    row = agents[agents.index('data-agent-row="answers"') :]
    assert marker(row) == "Queued"
    assert re.search(r"data-last-answered>last answered <time datetime=\"[^\"]+\"", row)


def test_each_state_of_the_row_reads_as_one_delivery_state():
    from datetime import UTC, datetime

    from inbox.resumes.states import delivery_from

    due = datetime(2030, 1, 1, 12, 0, tzinfo=UTC)
    cases = [
        (delivery_from(None, run_has_open=True), "waiting", "Waiting for the run"),
        (delivery_from(None), "none", "Not sent"),
        (delivery_from("pending"), "queued", "Queued"),
        (delivery_from("sending", attempts=1), "sending", "Sending"),
        (delivery_from("sending", attempts=4), "sending", "Sending (attempt 4)"),
        (
            delivery_from("pending", attempts=3, last_error="HTTP 503", next_attempt_at=due),
            "retrying",
            "Retrying (attempt 4)",
        ),
        (delivery_from("delivered"), "delivered", "Delivered"),
        (delivery_from("accepted", last_error="cut"), "delivered-result-unknown", "Delivered, result unknown"),
        (delivery_from("failed", attempts=2, last_error="x"), "failed", "Failed: needs a person"),
        (delivery_from("expired"), "expired", "Expired before sending"),
    ]
    assert [(d.state, d.label) for d, _, _ in cases] == [(state, label) for _, state, label in cases]
    retrying = cases[5][0]
    assert retrying.sentence.startswith("Attempt 3 did not reach the agent: the agent's server answered with an error")
    assert retrying.as_api()["nextTryAt"] == due.isoformat()
    noted = delivery_from("delivered", last_error="Delivered by attempt 1 (the agent took it; its reply was cut).")
    assert (
        noted.sentence
        == "The agent received the answer: Delivered by attempt 1 (the agent took it; its reply was cut)."
    )
