"""The conformance report held to a deliberately faulty AG-UI agent (``tests.agent_servers.FaultyAgent``): one
test per fault, each naming the behaviour, the verdict and the evidence (run, event index); the conformant
agent and the bundled demo agent get no "deviates" line. Also: the ag-ui-protocol 1.0 fields (cancelled,
pendingToolCallIds, ResumeEntry.metadata, subagentRunId) and a run that finishes while interrupts are open."""

from __future__ import annotations

import json

import pytest
from django.core import mail
from django.utils import timezone

from inbox.decisions.services import decision_submit
from inbox.models import AuditEvent, InboxItem, Resume, Run
from inbox.resumes.services import resume_dispatch
from tests.agent_servers import FaultyAgent, demo, demo_agent, demo_server, faulty, wait_for  # noqa: F401
from tests.helpers.starts import start_run

pytestmark = pytest.mark.integration


def report(client, slug: str) -> dict[str, dict]:
    response = client.get(f"/api/v1/agents/{slug}/conformance")
    assert response.status_code == 200, response.content
    return {behaviour["key"]: behaviour for behaviour in response.json()["behaviours"]}


def deviations(client, slug: str) -> dict[tuple[str, str], dict]:
    """Every "deviates" line of the agent's report: {(behaviour, variant): the line}."""
    return {
        (key, seen["variant"]): seen
        for key, behaviour in report(client, slug).items()
        for seen in behaviour["seen"]
        if seen["verdict"] == "deviates"
    }


def seen(client, slug: str, behaviour: str) -> dict[str, dict]:
    return {row["variant"]: row for row in report(client, slug)[behaviour]["seen"]}


def start(client, slug: str, thread: str = "t-1", message: str = "email bob"):
    return start_run(client, slug, {"message": message, "threadId": thread})


def started(client, slug: str, thread: str = "t-1", message: str = "email bob") -> Run:
    response = start(client, slug, thread, message)
    assert response.status_code == 201, response.content
    return Run.objects.get(pk=response.json()["id"])


def answer(run: Run, user, *, approved: bool = True) -> Resume:
    for item in run.items.order_by("position"):
        decision_submit(item_id=item.pk, user=user, status="resolved", payload={"approved": approved})
    return Resume.objects.get(run=run)


@pytest.fixture
def agent_for(make_agent, faulty, alice, client):  # noqa: F811
    """``agent_for(mode)``: the faulty agent with that fault, registered in the inbox, alice logged in."""
    client.force_login(alice)

    def make(mode: str) -> FaultyAgent:
        server = faulty(mode)
        make_agent(mode or "conformant", endpoint=server.url)
        return server

    return make


# --- the conformant agent: no false positives ------------------------------------------------------------


def test_the_conformant_agent_gets_no_deviates_line(agent_for, alice, client):
    """Its resumed run repeats the conversation in MESSAGES_SNAPSHOT (the original assistant message and its
    toolCalls): that is not a re-emitted TOOL_CALL_* (Strands and Agent Framework were accused of it)."""
    server = agent_for("")
    run = started(client, "conformant")
    assert resume_dispatch(resume_id=answer(run, alice).pk) == "delivered"
    assert len(server.executed) == 1
    assert deviations(client, "conformant") == {}
    rows = report(client, "conformant")
    assert {s["variant"] for s in rows["reemitted_tool_calls"]["seen"]} == {"not_reemitted"}
    assert {s["variant"] for s in rows["resume_linkage"]["seen"]} == {"continued"}
    assert {s["variant"] for s in rows["same_thread"]["seen"]} == {"same"}
    assert {s["variant"] for s in rows["pending_interrupts"]["seen"]} == {"respected"}


# --- runs the inbox refuses: each an observation with its rule and evidence -------------------------------

REFUSED = [
    ("duplicate_ids", "interrupt_id_unique", "duplicate", "interrupt_id_unique"),
    ("missing_id", "interrupt_id_unique", "missing", "interrupt_id_required"),
    ("empty_id", "interrupt_id_unique", "empty", "interrupt_id_not_empty"),
    ("error_outcome", "run_outcome", "unknown_type", "outcome_type"),
    ("empty_interrupts", "run_outcome", "empty_interrupts", "interrupts_not_empty"),
]


@pytest.mark.parametrize(("mode", "behaviour", "variant", "rule"), REFUSED)
def test_a_refused_started_run_is_reported_with_its_rule_run_and_event(
    agent_for, client, mode, behaviour, variant, rule
):
    server = agent_for(mode)
    response = start(client, mode)
    assert response.status_code == 502, response.content
    line = deviations(client, mode)[(behaviour, variant)]
    run_id = server.received[0]["runId"]
    # The RUN_FINISHED at fault is the 7th event of the stream: index 6.
    assert line["evidence"] == {"runId": run_id, "eventIndex": 6}
    assert f"({rule})" in line["detail"] and line["exampleRun"] is None
    assert not Run.objects.filter(run_id=run_id).exists()
    page = client.get(f"/agents/{mode}/").content.decode()
    assert f'data-behaviour="{behaviour}" data-variant="{variant}" data-verdict="deviates"' in page
    assert 'data-event-index="6"' in page


@pytest.mark.parametrize(("mode", "behaviour", "variant", "rule"), REFUSED)
def test_a_refused_posted_run_is_reported_with_its_rule_run_and_event(
    make_agent, ingest, alice, client, mode, behaviour, variant, rule
):
    agent = make_agent(f"poster-{mode}")
    events, _ = FaultyAgent(mode).answer(
        {"threadId": "t-9", "runId": "r-posted", "messages": [{"id": "u1", "role": "user", "content": "go"}]}
    )
    response = ingest(agent, {"events": events})
    assert response.status_code == 400 and response.json()["rule"] == rule
    client.force_login(alice)
    line = deviations(client, agent.agent.slug)[(behaviour, variant)]
    assert line["evidence"] == {"runId": "r-posted", "eventIndex": 6}
    assert "POST /api/v1/runs" in line["detail"]


# --- resumes answered badly ----------------------------------------------------------------------------


def test_a_resume_answered_on_another_thread_is_reported(agent_for, alice, client):
    agent_for("other_thread")
    run = started(client, "other_thread")
    assert resume_dispatch(resume_id=answer(run, alice).pk) == "delivered"  # it had the answer: see test_reply_broke
    line = deviations(client, "other_thread")[("same_thread", "other_thread")]
    assert "some-other-thread" in line["detail"]
    assert line["evidence"] == {"runId": Resume.objects.get(run=run).next_run_id, "eventIndex": 0}


def test_an_invalid_event_in_a_resumes_reply_is_reported_with_its_index(agent_for, alice, client):
    agent_for("invalid_event")
    run = started(client, "invalid_event")
    resume = answer(run, alice)
    assert resume_dispatch(resume_id=resume.pk) == "delivered"
    line = deviations(client, "invalid_event")[("event_stream", "invalid_event")]
    # RUN_STARTED, the approved call's TOOL_CALL_RESULT, then the broken one.
    assert line["evidence"] == {"runId": resume.next_run_id, "eventIndex": 2}
    assert f"resume {resume.pk}" in line["detail"]


def test_an_agent_that_hangs_after_run_started_is_reported(agent_for, alice, client, settings):
    settings.INBOX_AGENT_READ_TIMEOUT = 1
    agent_for("hang")
    run = started(client, "hang")
    assert resume_dispatch(resume_id=answer(run, alice).pk) == "accepted"
    line = deviations(client, "hang")[("event_stream", "past_deadline")]
    assert "read timeout" in line["detail"]


def test_an_agent_that_trickles_past_the_deadline_is_reported(agent_for, alice, client, settings):
    settings.INBOX_AGENT_STREAM_DEADLINE = 1.5
    agent_for("trickle")
    run = started(client, "trickle")
    assert resume_dispatch(resume_id=answer(run, alice).pk) == "accepted"
    line = deviations(client, "trickle")[("event_stream", "past_deadline")]
    assert "deadline" in line["detail"]


def test_an_agent_that_ignores_the_resume_and_starts_over_is_not_taken_for_a_chain(agent_for, alice, client):
    server = agent_for("start_fresh")
    run = started(client, "start_fresh")
    assert resume_dispatch(resume_id=answer(run, alice).pk) == "delivered"
    assert server.executed == []  # it never acted on the approval
    line = deviations(client, "start_fresh")[("resume_linkage", "started_fresh")]
    first = run.items.get()
    assert first.interrupt_id in line["detail"] and "asks again" in line["detail"]
    assert line["exampleRun"]["runId"] == Resume.objects.get(run=run).next_run_id


@pytest.mark.parametrize("approved", [True, False])
def test_a_tool_result_for_a_call_nobody_named_is_reported(agent_for, alice, client, approved):
    agent_for("unknown_result")
    run = started(client, "unknown_result")
    resume = answer(run, alice, approved=approved)
    assert resume_dispatch(resume_id=resume.pk) == "delivered"
    line = deviations(client, "unknown_result")[("tool_result_filing", "unknown_call")]
    assert "tc-nobody-named" in line["detail"]
    assert line["evidence"] == {"runId": resume.next_run_id, "eventIndex": 1}


def test_a_safe_replay_answered_with_run_error_conforms_and_the_resume_is_delivered(agent_for, alice, client):
    """The agent executed the call on the first copy and its stream was cut before RUN_FINISHED; the resend (same
    runId) gets the RUN_ERROR the spec asks for an interrupt it no longer holds. Nothing ran twice: rule 5 holds,
    and the resume reads delivered with the result unknown, not failed."""
    server = agent_for("cut_after_execute")
    run = started(client, "cut_after_execute")
    resume = answer(run, alice)
    assert resume_dispatch(resume_id=resume.pk) == "retry scheduled"
    Resume.objects.filter(pk=resume.pk).update(next_attempt_at=timezone.now())
    assert resume_dispatch(resume_id=resume.pk) == "accepted"
    assert len(server.executed) == 1
    assert server.received[1]["runId"] == server.received[2]["runId"]
    resume.refresh_from_db()
    assert resume.state == Resume.State.ACCEPTED and "refused the resend" in resume.last_error
    replay = seen(client, "cut_after_execute", "replay")
    assert replay["run_error"]["verdict"] == "conforms"
    assert ("replay", "run_error") not in deviations(client, "cut_after_execute")
    assert not AuditEvent.objects.filter(verb="resume.failure_notified").exists()


def test_a_retried_silent_copy_refused_with_run_error_is_delivered_not_failed(
    agent_for, alice, staff, client, settings
):
    """Sent whole, no answer within the read timeout: failed, for a person. Retried by hand, the agent answers
    RUN_ERROR: it no longer holds the interrupt because it acted on the first copy."""
    from inbox.resumes.services import resume_retry

    settings.INBOX_AGENT_READ_TIMEOUT = 1
    server = agent_for("silent_after_execute")
    run = started(client, "silent_after_execute")
    resume = answer(run, alice)
    assert resume_dispatch(resume_id=resume.pk) == "failed"
    resume_retry(resume=resume, user=staff)
    assert resume_dispatch(resume_id=resume.pk) == "accepted"
    assert len(server.executed) == 1
    assert seen(client, "silent_after_execute", "replay")["run_error"]["verdict"] == "conforms"


# --- ag-ui-protocol 1.0 fields ----------------------------------------------------------------------------


def test_a_cancelled_outcome_is_stored_and_reported_as_cancelled(agent_for, alice, client):
    agent_for("cancelled")
    run = started(client, "cancelled")
    resume = answer(run, alice)
    assert resume_dispatch(resume_id=resume.pk) == "delivered"
    resume.refresh_from_db()
    assert resume.resumed_run.outcome == Run.Outcome.CANCELLED
    outcomes = seen(client, "cancelled", "run_outcome")
    assert set(outcomes) == {"interrupt", "cancelled"}
    assert "cancelled" in outcomes["cancelled"]["did"]
    page = client.get(resume.resumed_run.get_absolute_url()).content.decode()
    assert "pill-run-cancelled" in page and "This run ended cancelled" in page


def test_pending_tool_call_ids_on_success_are_kept_and_shown(agent_for, alice, client):
    """The agent sends them, as Pydantic AI does, only to a client that declares AG-UI 1.0: the inbox does, on the
    input that starts a run and on the resume."""
    server = agent_for("pending_calls")
    run = started(client, "pending_calls")
    resume = answer(run, alice)
    assert resume_dispatch(resume_id=resume.pk) == "delivered"
    assert [body["protocolVersion"] for body in server.received] == ["1.0", "1.0"]
    resume.refresh_from_db()
    assert resume.resumed_run.pending_tool_call_ids == ["tc-front-1"]
    assert "tc-front-1" in seen(client, "pending_calls", "run_outcome")["success_pending_calls"]["detail"]
    assert client.get(f"/api/v1/runs/{resume.resumed_run.pk}").json()["pendingToolCallIds"] == ["tc-front-1"]
    page = client.get(resume.resumed_run.get_absolute_url()).content.decode()
    assert "data-pending-tool-calls" in page and "tc-front-1" in page.split("data-pending-tool-calls", 1)[1]


def test_a_subagent_run_id_is_kept_and_shown(agent_for, client):
    agent_for("subagent")
    item = started(client, "subagent").items.get()
    assert item.subagent_run_id == "sub-run-7" and item.raw["subagentRunId"] == "sub-run-7"
    assert client.get(f"/api/v1/items/{item.pk}").json()["subagentRunId"] == "sub-run-7"
    page = client.get(item.get_absolute_url()).content.decode()
    assert "sub-run-7" in page.split("data-subagent-run", 1)[1]


def test_the_resume_echoes_the_proof_the_interrupts_metadata_asks_for(agent_for, alice, client):
    """ag2's ``require_resume_proof``: ``metadata.ag2.proof`` comes back in ``ResumeEntry.metadata``."""
    server = agent_for("proof")
    run = started(client, "proof")
    item = run.items.get()
    assert resume_dispatch(resume_id=answer(run, alice).pk) == "delivered"
    entry = server.received[1]["resume"][0]
    assert entry["metadata"] == {"ag2": {"proof": f"proof-{item.interrupt_id}"}}
    assert len(server.executed) == 1


# --- rule 4: a run that finishes while interrupts are open -------------------------------------------------


def _pause(thread: str, run_id: str) -> list[dict]:
    events, _ = FaultyAgent("").answer(
        {"threadId": thread, "runId": run_id, "messages": [{"id": "u1", "role": "user", "content": "go"}]}
    )
    return events


def test_a_success_on_a_thread_with_open_items_supersedes_them_and_tells_their_approvers(
    make_agent, ingest, alice, bob, client
):
    agent = make_agent("mover")
    assert ingest(agent, _pause("t-open", "r-1")).status_code == 201
    item = InboxItem.objects.get(run__run_id="r-1")
    mail.outbox.clear()
    finished = [
        {"type": "RUN_STARTED", "threadId": "t-open", "runId": "r-2"},
        {"type": "RUN_FINISHED", "threadId": "t-open", "runId": "r-2", "outcome": {"type": "success"}},
    ]
    assert ingest(agent, finished).status_code == 201

    item.refresh_from_db()
    assert (item.status, item.outcome, item.outcome_label) == ("expired", "superseded", "Superseded")
    assert "r-2" in item.status_note
    assert AuditEvent.objects.filter(verb="item.superseded", object_id=str(item.pk)).exists()
    # Never sent: no resume, and deciding it now is refused.
    assert not Resume.objects.filter(run=item.run).exists()
    client.force_login(alice)
    response = client.post(
        f"/api/v1/items/{item.pk}/decision",
        data=json.dumps({"status": "resolved", "payload": {"approved": True}}),
        content_type="application/json",
    )
    assert response.status_code == 409
    page = client.get(item.get_absolute_url()).content.decode()
    assert 'data-outcome="superseded"' in page and "Superseded" in page.split("data-expired-why", 1)[1]
    line = deviations(client, "mover")[("pending_interrupts", "finished_while_open")]
    assert item.interrupt_id in line["detail"] and line["exampleRun"]["runId"] == "r-2"

    from inbox.teams.superseded import notify_superseded

    assert notify_superseded([item.pk]) == 2
    assert sorted(message.to[0] for message in mail.outbox) == sorted([alice.email, bob.email])
    assert "superseded" in mail.outbox[0].subject and item.get_absolute_url() in mail.outbox[0].body


def test_a_new_interrupted_run_on_a_thread_with_open_items_is_refused_and_reported(make_agent, ingest, alice, client):
    agent = make_agent("pusher")
    assert ingest(agent, _pause("t-open", "r-1")).status_code == 201
    response = ingest(agent, _pause("t-open", "r-2"))
    assert response.status_code == 409
    client.force_login(alice)
    line = deviations(client, "pusher")[("pending_interrupts", "interrupted_while_open")]
    assert line["evidence"]["runId"] == "r-2"


# --- reasons -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("reason", "variant", "verdict"),
    [
        ("tool_approval", "custom_plain", "note"),
        ("mastra:tool_suspend", "custom_namespaced", "note"),
        ("core:approve", "core_prefix", "deviates"),
    ],
)
def test_a_non_core_reason_is_noted_and_core_is_reserved(make_agent, ingest, alice, client, reason, variant, verdict):
    agent = make_agent("reasoner")
    events = _pause("t-r", "r-1")
    events[-1]["outcome"]["interrupts"][0]["reason"] = reason
    assert ingest(agent, events).status_code == 201
    client.force_login(alice)
    row = seen(client, "reasoner", "interrupt_reason")[variant]
    assert row["verdict"] == verdict
    assert "`core:` is reserved" in row["did"] and reason in row["detail"]


# --- the bundled demo agent is exemplary --------------------------------------------------------------------


def test_the_demo_agent_gets_no_deviates_line(demo, demo_agent, alice, client):  # noqa: F811
    client.force_login(alice)
    for thread, message in [
        ("d-email", "email"),
        ("d-parallel", "parallel"),
        ("d-filing", "filing"),
        ("d-chain", "chain"),
    ]:
        run = started(client, "demo", thread, message)
        while run.outcome == Run.Outcome.INTERRUPT:
            for item in run.items.order_by("position"):
                payload = (
                    {"quarter": "Q1", "year": 2026, "revenue": 1.5}
                    if item.reason == "input_required"
                    else {"approved": True}
                )
                decision_submit(item_id=item.pk, user=alice, status="resolved", payload=payload)
            resume = Resume.objects.get(run=run)
            assert resume_dispatch(resume_id=resume.pk) == "delivered"
            resume.refresh_from_db()
            run = resume.resumed_run
    assert deviations(client, "demo") == {}


def test_messages_snapshot_alone_is_a_note_unless_the_state_changed(make_agent, ingest, alice, client):
    """The spec asks for the state "required for resume": an agent without state (Microsoft Agent Framework's
    adapter) sends MESSAGES_SNAPSHOT alone and is not accused; one whose state changed in the run is."""
    agent = make_agent("stateless")
    events = [event for event in _pause("t-s", "r-1") if event["type"] != "STATE_SNAPSHOT"]
    assert ingest(agent, events).status_code == 201
    client.force_login(alice)
    assert seen(client, "stateless", "boundary_snapshots")["messages_only"]["verdict"] == "note"
    assert deviations(client, "stateless") == {}
    changed = [event for event in _pause("t-s2", "r-2") if event["type"] != "STATE_SNAPSHOT"]
    changed.insert(1, {"type": "STATE_DELTA", "delta": [{"op": "add", "path": "/draft", "value": 1}]})
    assert ingest(agent, changed).status_code == 201
    assert ("boundary_snapshots", "messages_only_state_changed") in deviations(client, "stateless")


def test_a_body_over_the_size_limit_and_an_unusable_schema_are_in_the_report(
    make_agent, ingest, alice, client, settings
):
    agent = make_agent("bulky")
    events = _pause("t-b", "r-1")
    events[-1]["outcome"]["interrupts"][0]["responseSchema"] = {"type": "no-such-type"}
    assert ingest(agent, events).status_code == 400
    settings.INBOX_INGEST_MAX_BYTES = 2000
    events = _pause("t-b", "r-2")
    events[-1]["outcome"]["interrupts"][0]["message"] = "x" * 3000
    assert ingest(agent, events).status_code == 413
    client.force_login(alice)
    line = deviations(client, "bulky")[("response_schema", "invalid")]
    assert line["evidence"] == {"runId": "r-1", "eventIndex": 6}
    assert "over_limits" in seen(client, "bulky", "event_stream")


@pytest.mark.worker
def test_the_superseded_notice_goes_through_the_worker(make_agent, alice, client, start_worker):
    """The ingest queues ``inbox.notifications.notify_superseded`` after its commit; a real worker mails it."""
    agent = make_agent("mover")
    worker = start_worker()

    def post(events: list[dict]) -> int:
        return client.post(
            "/api/v1/runs", data=json.dumps({"events": events}), content_type="application/json", **agent.auth
        ).status_code

    assert post(_pause("t-open", "r-1")) == 201
    item = InboxItem.objects.get(run__run_id="r-1")
    finished = [{"type": "RUN_FINISHED", "threadId": "t-open", "runId": "r-2", "outcome": {"type": "success"}}]
    assert post(finished) == 201
    wait_for(
        lambda: AuditEvent.objects.filter(verb="item.superseded_notified", object_id=str(item.pk)).exists(),
        what="the superseded notice",
    )
    # The notice is written with the ingest; the worker sends it. Its email backend is the console: the message is in
    # its log.
    wait_for(lambda: "To: alice@example.com" in worker.log(), what="the worker to send the superseded notice")
    assert item.get_absolute_url() in worker.log()
