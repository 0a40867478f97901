"""The outbox row: created by the decision that closes a run's last open item, holding the exact input."""

from __future__ import annotations

from datetime import timedelta

import pytest
from ag_ui.core import RunAgentInput
from django.utils import timezone

from inbox.decisions.rules import DecisionError
from inbox.decisions.services import decision_submit
from inbox.models import AuditEvent, InboxItem, Resume, Run
from tests.conftest import load_events


@pytest.fixture
def parallel_run(agent, ingest) -> Run:
    response = ingest(agent, load_events("parallel-interrupted-run.jsonl"))
    assert response.status_code == 201, response.content
    return Run.objects.get(pk=response.json()["id"])


def items_of(run: Run) -> list[InboxItem]:
    return list(run.items.order_by("position"))


def test_no_resume_is_created_while_an_item_of_the_run_is_open(parallel_run, alice):
    first, second, _third = items_of(parallel_run)
    decision_submit(item_id=first.pk, user=alice, status="resolved", payload={"approved": True})
    decision_submit(item_id=second.pk, user=alice, status="cancelled")
    assert not Resume.objects.exists()


def test_the_closing_decision_creates_one_resume_covering_every_interrupt_in_order(
    parallel_run, alice, django_capture_on_commit_callbacks
):
    first, second, third = items_of(parallel_run)
    decision_submit(item_id=third.pk, user=alice, status="cancelled")
    decision_submit(
        item_id=first.pk,
        user=alice,
        status="resolved",
        payload={"approved": True, "editedArgs": {"to": "x@example.com", "subject": "S", "body": "B"}},
    )
    with django_capture_on_commit_callbacks() as callbacks:
        decision_submit(item_id=second.pk, user=alice, status="resolved", payload={"approved": False})

    resume = Resume.objects.get(run=parallel_run)
    assert resume.state == "pending"
    assert resume.attempts == 0
    sent = resume.input
    assert sent["threadId"] == parallel_run.thread.thread_id == "pstock-all-a3780245"
    assert sent["runId"] == resume.next_run_id != parallel_run.run_id
    assert sent["resume"] == [
        {
            "interruptId": first.interrupt_id,
            "status": "resolved",
            "payload": {"approved": True, "editedArgs": {"to": "x@example.com", "subject": "S", "body": "B"}},
        },
        {"interruptId": second.interrupt_id, "status": "resolved", "payload": {"approved": False}},
        {"interruptId": third.interrupt_id, "status": "cancelled"},
    ]
    # Replay-style continuation: the snapshots the agent emitted before the interrupt.
    assert sent["messages"] == parallel_run.messages_snapshot
    assert sent["state"] == parallel_run.state_snapshot
    assert sent["tools"] == [] and sent["context"] == [] and sent["forwardedProps"] == {}
    # Exactly what the SDK produces for the same input.
    assert RunAgentInput.model_validate(sent).model_dump(mode="json", by_alias=True) == sent
    assert AuditEvent.objects.filter(verb="resume.created", object_id=str(resume.pk)).exists()
    assert len(callbacks) >= 2  # the live pushes and the dispatch task, all after commit


def test_a_run_with_an_expired_item_gets_no_resume(parallel_run, alice):
    first, second, third = items_of(parallel_run)
    decision_submit(item_id=first.pk, user=alice, status="resolved", payload={"approved": True})
    decision_submit(item_id=second.pk, user=alice, status="resolved", payload={"approved": True})
    InboxItem.objects.filter(pk=first.pk).update(status="expired")
    decision_submit(item_id=third.pk, user=alice, status="cancelled")
    assert not Resume.objects.exists()


def test_an_item_decided_after_its_expiry_creates_no_resume(agent, ingest, alice):
    body = load_events("email-interrupted-run.jsonl")
    run = Run.objects.get(pk=ingest(agent, body).json()["id"])
    InboxItem.objects.filter(run=run).update(expires_at=timezone.now() - timedelta(seconds=1))
    with pytest.raises(DecisionError, match="expired"):
        decision_submit(item_id=run.items.get().pk, user=alice, status="resolved", payload={"approved": True})
    assert not Resume.objects.exists()


def test_calling_it_again_returns_the_same_resume(parallel_run, alice):
    from inbox.resumes.services import resume_create_if_complete

    for item in items_of(parallel_run):
        decision_submit(item_id=item.pk, user=alice, status="resolved", payload={"approved": True})
    first = Resume.objects.get()
    assert resume_create_if_complete(run=parallel_run) == first
    assert Resume.objects.count() == 1
