"""The conformance report held to every fault of the faulty agent (``tests.agent_servers.FAULTS``) at once: each
fault, driven through the inbox as a person would (start a run, approve what it asks, send the resume), must
produce exactly its "deviates" lines -- none missing, none false -- and the report never contradicts itself (an
observation shown both as conforming and as deviating).

``test_conformance_faults.py`` holds the evidence of each line (run, event index, detail); this table holds the
whole report to the catalogue."""

from __future__ import annotations

import pytest
from django.utils import timezone

from inbox.decisions.services import decision_submit
from inbox.models import InboxItem, Resume, Run
from inbox.resumes.services import resume_dispatch
from tests.agent_servers import FAULTS, faulty  # noqa: F401
from tests.helpers.starts import start_run

pytestmark = pytest.mark.integration

# fault → the report's "deviates" lines (behaviour, variant), and the lines it must also show that conform or note.
TABLE: dict[str, tuple[set[tuple[str, str]], set[tuple[str, str]]]] = {
    "": (set(), {("resume_linkage", "continued"), ("tool_result_filing", "original_call")}),
    "duplicate_ids": ({("interrupt_id_unique", "duplicate")}, set()),
    "missing_id": ({("interrupt_id_unique", "missing")}, set()),
    "empty_id": ({("interrupt_id_unique", "empty")}, set()),
    "error_outcome": ({("run_outcome", "unknown_type")}, set()),
    "empty_interrupts": ({("run_outcome", "empty_interrupts")}, set()),
    # Contract rule 1; the result it reported on the other thread is filed all the same.
    "other_thread": ({("same_thread", "other_thread")}, {("tool_result_filing", "original_call")}),
    "invalid_event": ({("event_stream", "invalid_event")}, {("tool_result_filing", "original_call")}),
    "hang": ({("event_stream", "past_deadline")}, set()),
    "trickle": ({("event_stream", "past_deadline")}, set()),
    # It asked again instead of running the approved call: that call never got its result either.
    "start_fresh": ({("resume_linkage", "started_fresh"), ("tool_result_filing", "missing")}, set()),
    # Its result names a call nobody named, so the approved call has none.
    "unknown_result": ({("tool_result_filing", "unknown_call"), ("tool_result_filing", "missing")}, set()),
    # Cut after its result: the result is kept (filed, not "missing"); the resend is refused safely.
    "cut_after_execute": (
        {("event_stream", "ended_early")},
        {("tool_result_filing", "original_call"), ("replay", "run_error")},
    ),
    "silent_after_execute": ({("event_stream", "past_deadline")}, set()),
    "cancelled": (set(), {("run_outcome", "cancelled")}),
    "pending_calls": (set(), {("run_outcome", "success_pending_calls")}),
    "subagent": (set(), {("resume_linkage", "continued")}),
    "proof": (set(), {("resume_linkage", "continued"), ("tool_result_filing", "original_call")}),
    "expired": ({("expires_at", "expired_on_arrival")}, set()),
    "thread_id_as_id": ({("interrupt_id_unique", "thread_id")}, set()),
    "unmatched_call": ({("tool_call_binding", "unmatched")}, set()),
    "no_snapshots": ({("boundary_snapshots", "none")}, set()),
    "reemit": ({("reemitted_tool_calls", "reemitted")}, set()),
    "no_result": ({("tool_result_filing", "missing")}, set()),
    "bare_error": ({("run_error", "bare")}, set()),
    "reply_duplicate_ids": ({("interrupt_id_unique", "duplicate")}, {("tool_result_filing", "original_call")}),
    "reused_id": ({("interrupt_id_unique", "reused")}, {("tool_result_filing", "original_call")}),
}


def test_the_table_names_every_fault():
    assert set(TABLE) == set(FAULTS)


def drive(client, alice, slug: str) -> None:
    """Start a run on the agent; approve everything it asks; send the resume (again while it is retried)."""
    response = start_run(client, slug, {"message": "email bob", "threadId": "t-1"})
    if response.status_code != 201:
        return
    run = Run.objects.get(pk=response.json()["id"])
    open_items = run.items.filter(status=InboxItem.Status.OPEN).order_by("position")
    if not open_items:
        return
    for item in open_items:
        decision_submit(item_id=item.pk, user=alice, status="resolved", payload={"approved": True})
    resume = Resume.objects.get(run=run)
    for _ in range(3):
        if resume_dispatch(resume_id=resume.pk) != "retry scheduled":
            return
        Resume.objects.filter(pk=resume.pk).update(next_attempt_at=timezone.now())


@pytest.mark.parametrize("mode", list(TABLE))
def test_each_fault_gives_exactly_its_report_lines(mode, make_agent, faulty, alice, client, settings):  # noqa: F811
    settings.INBOX_AGENT_READ_TIMEOUT = 1
    settings.INBOX_AGENT_STREAM_DEADLINE = 2
    server = faulty(mode)
    slug = mode.replace("_", "-") or "conformant"
    make_agent(slug, endpoint=server.url)
    client.force_login(alice)
    drive(client, alice, slug)

    response = client.get(f"/api/v1/agents/{slug}/conformance")
    assert response.status_code == 200
    behaviours = response.json()["behaviours"]
    lines = {(b["key"], s["variant"]): s for b in behaviours for s in b["seen"]}
    deviating = {key for key, line in lines.items() if line["verdict"] == "deviates"}
    expected, also = TABLE[mode]
    assert deviating == expected, f"{mode}: {sorted(deviating)}"
    assert also <= set(lines), f"{mode}: {sorted(set(lines))}"
    # Never one thing said both ways: no detail is shown under a conforming and a deviating variant of a behaviour.
    for behaviour in behaviours:
        conforming = {s["detail"] for s in behaviour["seen"] if s["verdict"] == "conforms" and s["detail"]}
        deviating_details = {s["detail"] for s in behaviour["seen"] if s["verdict"] == "deviates"}
        assert not conforming & deviating_details, (mode, behaviour["key"], conforming & deviating_details)
    if mode == "other_thread":  # the reply to a resume on another thread: held to contract rule 1
        assert next(b for b in behaviours if b["key"] == "same_thread")["rule"].startswith("Contract rule 1")
    statuses = {b["key"]: b["status"] for b in behaviours}
    assert {key for key, status in statuses.items() if status == "deviates"} == {key for key, _ in expected}
