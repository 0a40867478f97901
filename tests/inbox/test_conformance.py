"""The live conformance report (issue 14): observations recorded on ingest and on resumed runs, the agent
page's table, and ``GET /api/v1/agents/<slug>/conformance`` with team visibility. Also: interrupt ids that
repeat across runs of a thread (CrewAI uses the threadId) stay distinct items, each answered by its own resume."""

from __future__ import annotations

import json

import pytest
from django.utils import timezone

from inbox.decisions.services import decision_submit
from inbox.models import InboxItem, Resume, Run
from inbox.resumes.services import resume_dispatch
from tests.agent_servers import Reply
from tests.conftest import load_events
from tests.helpers.starts import start_run

THREAD = "flow-7"


def report(client, slug: str) -> dict[str, dict]:
    response = client.get(f"/api/v1/agents/{slug}/conformance")
    assert response.status_code == 200, response.content
    return {behaviour["key"]: behaviour for behaviour in response.json()["behaviours"]}


def variants(client, slug: str) -> dict[str, set[str]]:
    return {key: {seen["variant"] for seen in b["seen"]} for key, b in report(client, slug).items()}


def feedback_pause(run_id: str, thread: str = THREAD) -> list[dict]:
    """A CrewAI-shaped pause: the interrupt id is the threadId."""
    return [
        {"type": "RUN_STARTED", "threadId": thread, "runId": run_id},
        {
            "type": "RUN_FINISHED",
            "threadId": thread,
            "runId": run_id,
            "outcome": {
                "type": "interrupt",
                "interrupts": [{"id": thread, "reason": "crewai:human_feedback", "message": f"Feedback on {run_id}?"}],
            },
        },
    ]


def start(client, slug: str, thread: str = THREAD) -> Run:
    response = start_run(client, slug, {"message": "go", "threadId": thread})
    assert response.status_code == 201, response.json()
    return Run.objects.get(pk=response.json()["id"])


@pytest.mark.integration
def test_an_interrupt_id_repeated_on_a_thread_is_a_new_item_and_each_resume_answers_its_own(
    make_agent, scripted, alice, client
):
    agent = scripted(
        Reply(sse=feedback_pause("r-1")),
        Reply(sse=feedback_pause("r-2")),
        Reply(
            sse=[
                {"type": "RUN_STARTED", "threadId": THREAD, "runId": "r-3"},
                {"type": "RUN_FINISHED", "threadId": THREAD, "runId": "r-3", "result": "published"},
            ]
        ),
    )
    make_agent("crew", endpoint=agent.url)
    client.force_login(alice)
    first = start(client, "crew")
    first_item = first.items.get()
    decision_submit(item_id=first_item.pk, user=alice, status="resolved", payload={"feedback": "shorter"})
    assert resume_dispatch(resume_id=Resume.objects.get(run=first).pk) == "delivered"

    second = Run.objects.get(run_id="r-2")
    second_item = second.items.get()
    assert second_item.pk != first_item.pk and second_item.interrupt_id == first_item.interrupt_id == THREAD
    assert second_item.is_open
    decision_submit(item_id=second_item.pk, user=alice, status="resolved", payload={"feedback": "ship it"})
    assert resume_dispatch(resume_id=Resume.objects.get(run=second).pk) == "delivered"

    # Each resume answered its own run's item with its own decision.
    assert [body["resume"] for body in agent.received[1:]] == [
        [{"interruptId": THREAD, "status": "resolved", "payload": {"feedback": "shorter"}}],
        [{"interruptId": THREAD, "status": "resolved", "payload": {"feedback": "ship it"}}],
    ]
    first_item.refresh_from_db()
    assert (first_item.status, first_item.response_payload) == ("resolved", {"feedback": "shorter"})
    assert InboxItem.objects.filter(thread__thread_id=THREAD).count() == 2
    seen = variants(client, "crew")
    assert seen["interrupt_id_unique"] == {"thread_id"}
    assert seen["interrupt_reason"] == {"custom_namespaced"}
    assert seen["boundary_snapshots"] == {"none"} and seen["expires_at"] == {"defaulted"}
    # The final run's result is shown on the second run's page (no tool call to file it on).
    page = client.get(f"/inbox/runs/{second.pk}/").content.decode()
    assert "published" in page.split("data-resumed-results", 1)[1]


@pytest.mark.integration
def test_a_reused_interrupt_id_that_is_not_the_thread_id_is_reported_as_reused(make_agent, scripted, alice, client):
    pause = feedback_pause("r-1", thread="t-reuse")
    pause[1]["outcome"]["interrupts"][0]["id"] = "ask"
    again = json.loads(json.dumps(pause).replace("r-1", "r-2"))
    agent = scripted(Reply(sse=pause), Reply(sse=again))
    make_agent("reuser", endpoint=agent.url)
    client.force_login(alice)
    first = start(client, "reuser", thread="t-reuse")
    decision_submit(item_id=first.items.get().pk, user=alice, status="cancelled")
    assert resume_dispatch(resume_id=Resume.objects.get(run=first).pk) == "delivered"
    # "ask" was new on the thread when it first came, and is reused now: the report says the latter only, never
    # that one id is both new (conforms) and reused (deviates).
    assert variants(client, "reuser")["interrupt_id_unique"] == {"reused"}


def test_a_recorded_langgraph_round_trip_reports_snapshots_reemitted_calls_and_legacy_success(
    agent, ingest, alice, client, scripted
):
    recorded = load_events("email-interrupted-run.jsonl")
    response = ingest(agent, {"events": recorded})
    assert response.status_code == 201, response.content
    run = Run.objects.get(pk=response.json()["id"])
    item = run.items.get()
    server = scripted(Reply(sse=load_events("email-resumed-run.jsonl")))
    agent.agent.endpoint_url = server.url
    agent.agent.save(update_fields=["endpoint_url"])
    decision_submit(item_id=item.pk, user=alice, status="resolved", payload={"approved": True})
    assert resume_dispatch(resume_id=Resume.objects.get(run=run).pk) == "delivered"

    client.force_login(alice)
    rows = report(client, agent.agent.slug)
    seen = {key: {s["variant"] for s in b["seen"]} for key, b in rows.items()}
    assert seen["boundary_snapshots"] == {"both"}
    assert seen["tool_call_binding"] == {"matched"} and seen["response_schema"] == {"with_edits"}
    assert seen["run_outcome"] == {"interrupt", "legacy_success"}
    assert seen["reemitted_tool_calls"] == {"reemitted"} and rows["reemitted_tool_calls"]["status"] == "deviates"
    assert seen["tool_result_filing"] == {"original_call"}
    assert rows["replay"]["status"] == "unseen" and rows["replay"]["seen"] == []
    example = rows["boundary_snapshots"]["seen"][0]["exampleRun"]
    assert example == {"id": run.pk, "runId": run.run_id, "url": f"/inbox/runs/{run.pk}/"}
    assert "State at the interrupt boundary" in rows["boundary_snapshots"]["rule"]


@pytest.mark.integration
def test_a_resent_resume_and_run_errors_are_reported(make_agent, scripted, alice, client):
    agent = scripted(
        Reply(sse=feedback_pause("r-1", thread="t-err")),
        Reply(status=503, body=b"busy", content_type="text/plain"),
        Reply(sse=[{"type": "RUN_ERROR", "message": "cannot correlate"}]),
    )
    make_agent("flaky", endpoint=agent.url)
    client.force_login(alice)
    run = start(client, "flaky", thread="t-err")
    decision_submit(item_id=run.items.get().pk, user=alice, status="resolved", payload={"ok": True})
    resume = Resume.objects.get(run=run)
    assert resume_dispatch(resume_id=resume.pk) == "retry scheduled"
    Resume.objects.filter(pk=resume.pk).update(next_attempt_at=timezone.now())
    assert resume_dispatch(resume_id=resume.pk) == "failed"
    seen = variants(client, "flaky")
    assert seen["replay"] == {"run_error"}
    assert seen["run_error"] == {"bare"}
    assert seen["run_outcome"] == {"interrupt", "error"}


def test_the_agent_page_shows_the_table_and_the_api_keeps_to_the_team(agent, ingest, alice, carol, client):
    ingest(agent, {"events": load_events("email-interrupted-run.jsonl")})
    client.force_login(alice)
    page = client.get(f"/agents/{agent.agent.slug}/").content.decode()
    table = page.split("data-conformance", 1)[1]
    assert 'data-behaviour="boundary_snapshots" data-variant="both" data-verdict="conforms"' in table
    assert 'data-behaviour="replay" data-verdict="unseen"' in table
    assert "State at the interrupt boundary" in table
    client.force_login(carol)
    assert client.get(f"/api/v1/agents/{agent.agent.slug}/conformance").status_code == 404
    client.logout()
    assert client.get(f"/api/v1/agents/{agent.agent.slug}/conformance").status_code in (401, 403)


def test_the_report_is_in_the_openapi_schema(client, staff):
    client.force_login(staff)
    schema = client.get("/api/schema/", HTTP_ACCEPT="application/json").content.decode()
    assert "/api/v1/agents/{slug}/conformance" in schema and "ConformanceReport" in schema


@pytest.mark.integration
def test_an_operators_retry_counts_as_a_resent_resume(make_agent, scripted, alice, staff, client):
    from inbox.resumes.services import resume_retry

    agent = scripted(
        Reply(sse=feedback_pause("r-1", thread="t-retry")),
        Reply(
            sse=[{"type": "RUN_STARTED", "threadId": "t-retry", "runId": "x"}, {"type": "RUN_ERROR", "message": "busy"}]
        ),
        Reply(
            sse=[
                {"type": "RUN_STARTED", "threadId": "t-retry", "runId": "x"},
                {"type": "RUN_FINISHED", "threadId": "t-retry", "runId": "x"},
            ]
        ),
    )
    make_agent("retried", endpoint=agent.url)
    client.force_login(alice)
    run = start(client, "retried", thread="t-retry")
    decision_submit(item_id=run.items.get().pk, user=alice, status="resolved", payload={"ok": True})
    resume = Resume.objects.get(run=run)
    assert resume_dispatch(resume_id=resume.pk) == "failed"
    assert "replay" not in {k for k, v in variants(client, "retried").items() if v}
    resume_retry(resume=resume, user=staff)
    assert resume_dispatch(resume_id=resume.pk) == "delivered"
    seen = variants(client, "retried")
    assert seen["replay"] == {"answered"} and seen["run_error"] == {"with_run_started"}
    assert agent.received[1]["runId"] == agent.received[2]["runId"]


def _interrupted(thread: str, run_id: str, reason: str = "tool_call") -> dict:
    interrupt = {"id": f"i-{run_id}", "reason": reason, "message": "Go?"}
    if reason == "tool_call":
        interrupt["toolCallId"] = "tc-1"
    return {
        "type": "RUN_FINISHED",
        "threadId": thread,
        "runId": run_id,
        "outcome": {"type": "interrupt", "interrupts": [interrupt]},
    }


@pytest.mark.django_db(transaction=True)
def test_an_observation_is_written_again_only_after_the_refresh_time(agent, ingest, alice, client, settings):
    """Every ingest of an agent upserted the same rows (and concurrent ingests queued on their locks): a web
    process writes an observation it wrote less than INBOX_CONFORMANCE_REFRESH_SECONDS ago only once that time
    is over; one never seen before is written at once."""
    from inbox.models.conformance import ConformanceObservation

    # Long enough that a slow machine never reaches it between the first ingests; shortened to nothing below
    # instead of sleeping through it.
    settings.INBOX_CONFORMANCE_REFRESH_SECONDS = 60

    def last_seen(behaviour: str, variant: str):
        row = ConformanceObservation.objects.get(agent=agent.agent, behaviour=behaviour, variant=variant)
        return row.last_seen_at, row.example_run.run_id

    assert ingest(agent, _interrupted("t-1", "r-1")).status_code == 201
    first = last_seen("interrupt_reason", "tool_call")
    assert first[1] == "r-1"
    assert ingest(agent, _interrupted("t-2", "r-2")).status_code == 201
    assert last_seen("interrupt_reason", "tool_call") == first  # written under a minute ago: not again
    # A variant this process has not written yet is written at once.
    assert ingest(agent, _interrupted("t-3", "r-3", reason="input_required")).status_code == 201
    assert last_seen("interrupt_reason", "input_required")[1] == "r-3"
    settings.INBOX_CONFORMANCE_REFRESH_SECONDS = 0  # the refresh time is over
    assert ingest(agent, _interrupted("t-4", "r-4")).status_code == 201
    again = last_seen("interrupt_reason", "tool_call")
    assert again[1] == "r-4" and again[0] > first[0]
    client.force_login(alice)
    seen = report(client, agent.agent.slug)["interrupt_reason"]["seen"]
    assert {row["variant"] for row in seen} == {"tool_call", "input_required"}


def test_a_rolled_back_write_is_not_remembered(agent, ingest, settings):
    """What this process remembers as written is only what committed: inside a transaction that never commits
    (this test's), each ingest writes its observations again."""
    from inbox.models.conformance import ConformanceObservation

    settings.INBOX_CONFORMANCE_REFRESH_SECONDS = 3600
    assert ingest(agent, _interrupted("t-1", "r-1")).status_code == 201
    assert ingest(agent, _interrupted("t-2", "r-2")).status_code == 201
    row = ConformanceObservation.objects.get(agent=agent.agent, behaviour="interrupt_reason", variant="tool_call")
    assert row.example_run.run_id == "r-2"


def ag2_pause(thread: str, call_id: str) -> list[dict]:
    """An ag2-shaped tool approval: the call, then an interrupt whose schema takes a bare boolean."""
    return [
        {"type": "RUN_STARTED", "threadId": thread, "runId": "r-1"},
        {"type": "TOOL_CALL_START", "toolCallId": call_id, "toolCallName": "sendEmail"},
        {"type": "TOOL_CALL_ARGS", "toolCallId": call_id, "delta": '{"to": "bob@example.com"}'},
        {"type": "TOOL_CALL_END", "toolCallId": call_id},
        {
            "type": "RUN_FINISHED",
            "threadId": thread,
            "runId": "r-1",
            "outcome": {
                "type": "interrupt",
                "interrupts": [
                    {
                        "id": "ask-1",
                        "reason": "tool_call",
                        "toolCallId": call_id,
                        "responseSchema": {"type": ["string", "boolean"]},
                    }
                ],
            },
        },
    ]


@pytest.mark.integration
def test_a_bare_true_approval_is_read_as_an_approval_when_the_reply_is_filed(make_agent, scripted, alice, client):
    """A payload that is not an object (ag2's bare ``true``) used to fail the resume after delivery with
    "AttributeError: 'bool' object has no attribute 'get'"; it counts as an approval like ``{"approved": true}``."""
    agent = scripted(
        Reply(sse=ag2_pause("t-bool", "call-1")),
        Reply(
            sse=[
                {"type": "RUN_STARTED", "threadId": "t-bool", "runId": "r-2"},
                {"type": "RUN_FINISHED", "threadId": "t-bool", "runId": "r-2", "outcome": {"type": "success"}},
            ]
        ),
    )
    make_agent("boolean", endpoint=agent.url)
    client.force_login(alice)
    run = start(client, "boolean", thread="t-bool")
    decision_submit(item_id=run.items.get().pk, user=alice, status="resolved", payload=True)
    resume = Resume.objects.get(run=run)
    assert resume_dispatch(resume_id=resume.pk) == "delivered"
    assert agent.received[1]["resume"] == [{"interruptId": "ask-1", "status": "resolved", "payload": True}]
    resume.refresh_from_db()
    assert resume.state == Resume.State.DELIVERED and resume.resumed_run.outcome == "success"
    # Approved and no TOOL_CALL_RESULT came back: reported as such, as for {"approved": true}.
    assert variants(client, "boolean")["tool_result_filing"] == {"missing"}
