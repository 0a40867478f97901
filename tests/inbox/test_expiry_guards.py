"""Expiry is checked where it matters, at the moment of deciding and of sending; the sweep only tidies up."""

from __future__ import annotations

from datetime import timedelta

import pytest

from inbox.decisions.rules import DecisionError
from inbox.decisions.services import decision_submit
from inbox.expiry.services import SIBLING_NOTE, run_is_past_expiry
from inbox.models import AuditEvent, Decision, InboxItem, Resume
from inbox.resumes.services import resume_dispatch
from tests.inbox.conftest import NOW


def test_deciding_an_item_past_its_expires_at_is_refused_before_any_sweep_ran(post_run, clock, alice):
    run = post_run("t-1", "r-1", 5, 60)
    first, second = run.items.order_by("position")
    clock.shift(timedelta(minutes=5))

    with pytest.raises(DecisionError) as refused:
        decision_submit(item_id=first.pk, user=alice, status="resolved", payload={"approved": True})

    assert (refused.value.status, refused.value.code) == (409, "expired")
    assert not Decision.objects.exists()
    first.refresh_from_db()
    second.refresh_from_db()
    assert first.status == "expired"
    # The run can no longer be resumed, so its other item is closed at once, with the reason.
    assert (second.status, second.status_note) == ("expired", SIBLING_NOTE)
    assert AuditEvent.objects.filter(verb="item.expired").count() == 2


def test_deciding_a_sibling_of_an_expired_item_is_refused_as_not_open(post_run, clock, alice):
    run = post_run("t-1", "r-1", 5, 60)
    first, second = run.items.order_by("position")
    clock.shift(timedelta(minutes=6))
    with pytest.raises(DecisionError):
        decision_submit(item_id=first.pk, user=alice, status="cancelled")

    with pytest.raises(DecisionError) as refused:
        decision_submit(item_id=second.pk, user=alice, status="resolved", payload={"approved": True})

    assert refused.value.status == 409
    assert not Resume.objects.exists()


def test_a_resume_is_not_sent_once_an_item_of_its_run_passed_expires_at(post_run, clock, alice):
    run = post_run("t-1", "r-1", 5, 60)
    first, second = run.items.order_by("position")
    decision_submit(item_id=first.pk, user=alice, status="resolved", payload={"approved": True})
    decision_submit(item_id=second.pk, user=alice, status="resolved", payload={"approved": False})
    resume = Resume.objects.get(run=run)
    assert resume.state == "pending"
    clock.shift(timedelta(minutes=5))

    # The agent's endpoint (127.0.0.1:9) refuses connections: had the resume been sent, it would be
    # waiting for a retry, not expired.
    assert resume_dispatch(resume_id=resume.pk) == "expired"

    resume.refresh_from_db()
    assert resume.state == "expired"
    assert "not sent" in resume.last_error and "the resume was never sent" in resume.last_error
    assert list(InboxItem.objects.filter(run=run).values_list("status", flat=True)) == ["resolved", "resolved"]


def test_a_run_is_past_expiry_once_any_of_its_items_is_even_a_decided_one(post_run, clock, alice):
    run = post_run("t-1", "r-1", 5, 60)
    first = run.items.order_by("position").first()
    decision_submit(item_id=first.pk, user=alice, status="resolved", payload={"approved": True})
    assert not run_is_past_expiry(run_id=run.pk, now=NOW + timedelta(minutes=4))
    assert run_is_past_expiry(run_id=run.pk, now=NOW + timedelta(minutes=5))
