"""Delivery says what the agent received (issue 47, point 5). An agent that took the resume, ran the approved call
and reported its result, then broke the protocol in its reply (a reply on another thread, two interrupts under one
id, an event the SDK rejects) had the answer: the item reads "Delivered; the agent's reply broke the protocol",
never "Failed: needs a person -- the answer did not reach the agent" (a person told that may send it again and
have it run twice), and the result it reported is filed. Results sent before a cut stream are kept too."""

from __future__ import annotations

import html
import json

import pytest
from django.core import mail
from django.utils import timezone

from inbox.decisions.services import decision_submit
from inbox.models import InboxItem, Resume, Run
from inbox.resumes.services import ResumeRetryRefused, resume_dispatch, resume_retry
from tests.agent_servers import faulty  # noqa: F401
from tests.helpers.starts import start_run

pytestmark = pytest.mark.integration

BROKE = "Delivered; the agent's reply broke the protocol"


def approved_and_sent(client, alice, make_agent, server, slug: str) -> tuple[InboxItem, Resume, str]:
    make_agent(slug, endpoint=server.url)
    client.force_login(alice)
    response = start_run(client, slug, {"message": "email bob", "threadId": "t-1"})
    assert response.status_code == 201, response.content
    item = Run.objects.get(pk=response.json()["id"]).items.get()
    decision_submit(item_id=item.pk, user=alice, status="resolved", payload={"approved": True})
    resume = Resume.objects.get(run=item.run)
    mail.outbox.clear()
    outcome = resume_dispatch(resume_id=resume.pk)
    item.refresh_from_db()
    resume.refresh_from_db()
    return item, resume, outcome


@pytest.mark.parametrize(
    ("mode", "why"),
    [
        ("other_thread", "The agent answered on thread 'some-other-thread'"),
        ("reply_duplicate_ids", "is used twice in this run"),
        ("invalid_event", "is not an AG-UI event"),
    ],
)
def test_a_reply_that_breaks_the_protocol_after_the_agent_acted_reads_delivered_with_its_result_filed(
    mode,
    why,
    make_agent,
    faulty,  # noqa: F811
    alice,
    staff,
    client,
):
    server = faulty(mode)
    item, resume, outcome = approved_and_sent(client, alice, make_agent, server, mode.replace("_", "-"))
    assert len(server.executed) == 1  # the agent ran it

    assert outcome == "delivered" and resume.state == Resume.State.DELIVERED
    assert resume.delivered_at is not None and why in resume.last_error
    # The result it reported, filed against the call the person approved.
    assert item.tool_result is not None and json.loads(item.tool_result["content"]) == {"sent": True}
    assert item.tool_result["toolCallId"] == item.tool_call_id

    page = html.unescape(client.get(item.get_absolute_url()).content.decode())
    assert 'data-delivery="delivered-reply-broke-protocol"' in page and BROKE in page
    assert why in page and "did not reach the agent" not in page and "Failed: needs a person" not in page
    assert "data-tool-result" in page
    run_page = client.get(item.run.get_absolute_url())
    assert run_page.status_code == 200 and BROKE in html.unescape(run_page.content.decode())
    delivery = client.get(f"/api/v1/items/{item.pk}").json()["delivery"]
    assert (delivery["state"], delivery["label"], delivery["needsPerson"]) == (
        "delivered-reply-broke-protocol",
        BROKE,
        False,
    )
    assert "It is not sent again" in delivery["sentence"]
    # Nobody is told their answer is stuck, and it cannot be sent a second time.
    assert mail.outbox == []
    with pytest.raises(ResumeRetryRefused):
        resume_retry(resume=resume, user=staff)
    assert len(server.executed) == 1


def test_a_result_sent_before_the_stream_was_cut_is_kept(make_agent, faulty, alice, client):  # noqa: F811
    """The agent ran the call, reported the result, and its stream closed before RUN_FINISHED: the result is filed
    at once; the resend (same runId) is refused with RUN_ERROR, and the result stays."""
    server = faulty("cut_after_execute")
    item, resume, outcome = approved_and_sent(client, alice, make_agent, server, "cutter")
    assert outcome == "retry scheduled"
    assert item.tool_result is not None and json.loads(item.tool_result["content"]) == {"sent": True}
    assert item.tool_result["runId"] == resume.next_run_id
    assert "tool result(s) it reported before the cut are filed" in resume.last_error

    Resume.objects.filter(pk=resume.pk).update(next_attempt_at=timezone.now())
    assert resume_dispatch(resume_id=resume.pk) == "accepted"
    item.refresh_from_db()
    assert json.loads(item.tool_result["content"]) == {"sent": True}
    assert len(server.executed) == 1
    page = client.get(item.get_absolute_url()).content.decode()
    assert "data-tool-result" in page and "sent" in page.split("data-tool-result", 1)[1]


def test_a_reply_over_the_inbox_caps_is_delivered_result_unknown_with_what_it_reported(
    make_agent,
    faulty,  # noqa: F811
    alice,
    client,
    settings,  # noqa: F811
):
    """The agent took the input and answered; the inbox stopped reading at its event cap. It had the answer (not
    "did not reach the agent"), and the result it reported before the cap is kept."""
    server = faulty("")
    make_agent("chatty", endpoint=server.url)
    client.force_login(alice)
    response = start_run(client, "chatty", {"message": "email bob", "threadId": "t-1"})
    item = Run.objects.get(pk=response.json()["id"]).items.get()
    decision_submit(item_id=item.pk, user=alice, status="resolved", payload={"approved": True})
    settings.INBOX_AGENT_REPLY_MAX_EVENTS = 2  # RUN_STARTED, TOOL_CALL_RESULT, then the cap
    resume = Resume.objects.get(run=item.run)
    assert resume_dispatch(resume_id=resume.pk) == "accepted"
    item.refresh_from_db()
    assert json.loads(item.tool_result["content"]) == {"sent": True}
    delivery = client.get(f"/api/v1/items/{item.pk}").json()["delivery"]
    assert delivery["state"] == "delivered-result-unknown" and not delivery["needsPerson"]
