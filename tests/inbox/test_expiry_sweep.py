"""The beat sweep: set-based expiry of stale items and the runs they belong to."""

from __future__ import annotations

from datetime import timedelta

import time_machine
from django.db import connection
from django.test.utils import CaptureQueriesContext

from inbox.expiry.services import (
    RESUME_NOTE,
    RESUME_SENT_NOTE,
    SIBLING_NOTE,
    STALE_NOTE,
    expire_sweep,
    run_expiry_summary,
)
from inbox.models import AuditEvent, InboxItem, Resume, Run
from tests.inbox.conftest import NOW, interrupted


def statuses(run: Run) -> list[str]:
    return list(run.items.order_by("position").values_list("status", flat=True))


def test_the_sweep_expires_open_items_past_expires_at_and_leaves_the_rest(stored_run, clock):
    stale = stored_run("t-1", "r-1", 5)
    fresh = stored_run("t-2", "r-2", 60)
    clock.shift(timedelta(minutes=6))

    assert expire_sweep() == 1

    item = stale.items.get()
    assert item.status == "expired"
    assert item.status_note == STALE_NOTE
    assert item.decided_at == NOW + timedelta(minutes=6)
    assert statuses(fresh) == ["open"]


def test_each_expired_item_gets_one_audit_event(stored_run, clock):
    runs = [stored_run(f"t-{n}", f"r-{n}", 1) for n in range(3)]
    clock.shift(timedelta(minutes=2))

    expire_sweep()
    expire_sweep()  # a second sweep finds nothing more

    events = AuditEvent.objects.filter(verb="item.expired").order_by("object_id")
    assert [event.object_id for event in events] == sorted(str(run.items.get().pk) for run in runs)
    assert {event.actor_type for event in events} == {"system"}
    assert events[0].data["note"] == STALE_NOTE
    assert events[0].created_at == NOW + timedelta(minutes=2)


def test_an_item_is_not_expired_a_moment_before_its_expires_at(stored_run, clock):
    run = stored_run("t-1", "r-1", 5)
    clock.shift(timedelta(minutes=5) - timedelta(microseconds=1))
    assert expire_sweep() == 0
    assert statuses(run) == ["open"]
    clock.shift(timedelta(microseconds=1))
    assert expire_sweep() == 1


def test_a_sweep_with_nothing_stale_is_one_query(stored_run, clock, django_assert_num_queries):
    stored_run("t-1", "r-1", 60)
    with django_assert_num_queries(1) as captured:
        assert expire_sweep() == 0
    sql = captured.captured_queries[0]["sql"]
    assert "\"status\" = 'open'" in sql and '"expires_at" <=' in sql


def test_the_sweep_is_set_based_so_its_query_count_does_not_grow_with_the_stale_items(stored_run, clock):
    stored_run("t-a", "r-a", 1)
    for n in range(40):
        stored_run(f"t-{n}", f"r-{n}", 1)
    # Two sweeps at different times, one with 1 stale item, one with 40: the same number of statements.
    with time_machine.travel(NOW + timedelta(seconds=59), tick=False):
        InboxItem.objects.filter(run__run_id="r-a").update(expires_at=NOW + timedelta(seconds=30))
        with CaptureQueriesContext(connection) as one:
            assert expire_sweep() == 1
    clock.shift(timedelta(minutes=2))
    with CaptureQueriesContext(connection) as forty:
        assert expire_sweep() == 40
    assert len(forty.captured_queries) == len(one.captured_queries)
    assert sum("UPDATE" in query["sql"] and "inbox_inboxitem" in query["sql"] for query in forty.captured_queries) == 2


def test_an_expired_item_closes_the_rest_of_its_run_with_the_reason(stored_run, clock):
    run = stored_run("t-1", "r-1", 5, 60, None)
    clock.shift(timedelta(minutes=6))

    assert expire_sweep() == 3

    items = list(run.items.order_by("position"))
    assert [item.status for item in items] == ["expired", "expired", "expired"]
    assert [item.status_note for item in items] == [STALE_NOTE, SIBLING_NOTE, SIBLING_NOTE]
    assert AuditEvent.objects.filter(verb="item.expired").count() == 3


def test_the_sweep_leaves_decided_items_alone(stored_run, clock, alice):
    run = stored_run("t-1", "r-1", 5, 60)
    first, second = run.items.order_by("position")
    InboxItem.objects.filter(pk=first.pk).update(
        status="resolved", response_payload={"approved": True}, decided_by=alice, decided_at=NOW
    )
    clock.shift(timedelta(minutes=6))

    expire_sweep()

    first.refresh_from_db()
    second.refresh_from_db()
    assert (first.status, first.response_payload) == ("resolved", {"approved": True})
    # The run can no longer be resumed: its open sibling is closed too.
    assert (second.status, second.status_note) == ("expired", SIBLING_NOTE)


def test_the_thread_accepts_a_new_run_after_its_open_items_expired(stored_run, agent, ingest, clock):
    stored_run("t-1", "r-1", 5, 60)
    refused = ingest(agent, interrupted("t-1", "r-2", 120))
    assert refused.status_code == 409
    clock.shift(timedelta(minutes=6))

    expire_sweep()

    accepted = ingest(agent, interrupted("t-1", "r-2", 120))
    assert accepted.status_code == 201, accepted.content


def _resume_for(run: Run, *, state: str, last_error: str = "") -> Resume:
    run.items.update(status="resolved", response_payload={"approved": True}, decided_at=NOW)
    return Resume.objects.create(
        run=run,
        thread=run.thread,
        agent=run.agent,
        next_run_id="next-1",
        input={},
        state=state,
        last_error=last_error,
        next_attempt_at=NOW,
    )


def test_a_pending_resume_is_expired_once_an_item_of_its_run_is_past_expires_at(stored_run, clock):
    run = stored_run("t-1", "r-1", 5, 60)
    resume = _resume_for(run, state="pending")
    clock.shift(timedelta(minutes=6))

    assert expire_sweep() == 0  # no item was open; the resume is what expired

    resume.refresh_from_db()
    assert resume.state == "expired"
    assert resume.last_error == RESUME_NOTE
    assert resume.next_attempt_at is None
    assert statuses(run) == ["resolved", "resolved"]
    assert AuditEvent.objects.filter(verb="resume.expired", object_id=str(resume.pk)).count() == 1


def test_a_failed_resume_keeps_its_error_when_it_expires(stored_run, clock):
    run = stored_run("t-1", "r-1", 5)
    resume = _resume_for(run, state="failed", last_error="RUN_ERROR: mailbox full")
    clock.shift(timedelta(minutes=6))

    expire_sweep()

    resume.refresh_from_db()
    assert resume.state == "expired"
    assert resume.last_error == f"{RESUME_NOTE}; it had failed: RUN_ERROR: mailbox full"


def test_a_delivered_or_sending_resume_is_left_alone(stored_run, clock):
    delivered = _resume_for(stored_run("t-1", "r-1", 5), state="delivered")
    sending = _resume_for(stored_run("t-2", "r-2", 5), state="sending")
    clock.shift(timedelta(minutes=6))

    expire_sweep()

    assert Resume.objects.get(pk=delivered.pk).state == "delivered"
    # The dispatcher that holds the claim re-checks expiry itself before it sends.
    assert Resume.objects.get(pk=sending.pk).state == "sending"


def test_the_run_explains_why_no_resume_was_sent(stored_run, clock):
    run = stored_run("t-1", "r-1", 5, 60)
    assert run_expiry_summary(run) is None
    clock.shift(timedelta(minutes=6))

    expire_sweep()

    summary = run_expiry_summary(run)
    assert summary.startswith(
        "This run can no longer be resumed: interrupt r-1-i1 expired at 2026-12-01T10:05:00+00:00."
    )
    assert "1 other interrupt(s) of this run were closed as expired with it." in summary
    assert "No resume was sent to the agent" in summary
    assert summary.endswith("The thread accepts new runs.")


def test_the_run_explains_an_expired_resume(stored_run, clock):
    run = stored_run("t-1", "r-1", 5)
    _resume_for(run, state="pending")
    clock.shift(timedelta(minutes=6))

    expire_sweep()

    assert f"The resume was not sent to the agent: {RESUME_NOTE}." in run_expiry_summary(run)


def test_a_resume_that_was_sent_and_awaits_a_retry_is_not_called_unsent(post_run, clock):
    run = post_run("t-1", "r-1", 5, 60)
    resume = _resume_for(run, state="pending")
    Resume.objects.filter(pk=resume.pk).update(attempts=1, last_sent_at=NOW)
    clock.shift(timedelta(minutes=6))

    expire_sweep()

    resume.refresh_from_db()
    assert (resume.state, resume.last_error) == ("expired", RESUME_SENT_NOTE)
    summary = run_expiry_summary(run)
    assert f"The resume was sent to the agent at {NOW.isoformat()}" in summary and "not sent" not in summary
