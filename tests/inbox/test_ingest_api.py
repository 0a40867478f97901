"""POST /api/v1/runs: the spec's examples in every body shape, real ag-ui-langgraph streams, and every refusal."""

from __future__ import annotations

import copy
import json
import threading
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from inbox.models import AuditEvent, InboxItem, ItemSearchText, Run, Thread
from tests.conftest import as_sse, load_events, spec_example

SPEC_EXAMPLES = ["minimal_tool_approval", "approve_with_edits", "parallel_interrupts", "non_tool_input_request"]


def future(hours: float = 2) -> str:
    return (timezone.now() + timedelta(hours=hours)).isoformat().replace("+00:00", "Z")


def as_events(finished: dict, *, with_tool_calls: bool = True) -> list[dict]:
    """A plausible stream ending in ``finished``: RUN_STARTED, a TOOL_CALL_* proposal per tool interrupt."""
    events: list[dict] = [{"type": "RUN_STARTED", "threadId": finished["threadId"], "runId": finished["runId"]}]
    for interrupt in (finished.get("outcome") or {}).get("interrupts", []):
        if with_tool_calls and interrupt.get("toolCallId"):
            call = interrupt["toolCallId"]
            args = json.dumps({"to": "a@b.com", "subject": "Hi"})
            events += [
                {"type": "TOOL_CALL_START", "toolCallId": call, "toolCallName": "sendEmail"},
                {"type": "TOOL_CALL_ARGS", "toolCallId": call, "delta": args[:10]},
                {"type": "TOOL_CALL_ARGS", "toolCallId": call, "delta": args[10:]},
                {"type": "TOOL_CALL_END", "toolCallId": call},
            ]
    events += [
        {"type": "STATE_SNAPSHOT", "snapshot": {"step": "awaiting approval"}},
        {"type": "MESSAGES_SNAPSHOT", "messages": [{"id": "m1", "role": "user", "content": "please"}]},
        finished,
    ]
    return events


def body_in_shape(finished: dict, shape: str):
    if shape == "run_finished":
        return finished
    if shape == "events":
        return as_events(finished)
    return as_sse(as_events(finished))


def open_example(name: str) -> dict:
    finished = copy.deepcopy(spec_example(name))
    for interrupt in finished["outcome"]["interrupts"]:
        if "expiresAt" in interrupt:
            interrupt["expiresAt"] = future()
    return finished


def stored_counts() -> tuple[int, int, int, int]:
    return Thread.objects.count(), Run.objects.count(), InboxItem.objects.count(), AuditEvent.objects.count()


# --- the spec's four examples, three body shapes ------------------------------------------------


@pytest.mark.parametrize("shape", ["run_finished", "events", "sse"])
@pytest.mark.parametrize("name", SPEC_EXAMPLES)
def test_it_stores_each_spec_example_in_each_body_shape(agent, ingest, name, shape):
    finished = open_example(name)
    response = ingest(agent, body_in_shape(finished, shape))

    assert response.status_code == 201, response.content
    body = response.json()
    interrupts = finished["outcome"]["interrupts"]
    assert body["runId"] == finished["runId"] and body["threadId"] == finished["threadId"]
    assert [item["interruptId"] for item in body["items"]] == [i["id"] for i in interrupts]
    assert all(
        item["status"] == "open" and item["url"].endswith(f"/inbox/items/{item['id']}/") for item in body["items"]
    )
    for interrupt in interrupts:
        item = InboxItem.objects.get(interrupt_id=interrupt["id"])
        assert item.reason == interrupt["reason"]
        assert item.message == interrupt.get("message", "")
        assert item.tool_call_id == interrupt.get("toolCallId", "")
        assert item.response_schema == interrupt.get("responseSchema")
        assert item.metadata == interrupt.get("metadata")
        assert item.raw == interrupt
        if shape != "run_finished" and interrupt.get("toolCallId"):
            assert item.tool_call["name"] == "sendEmail"
            assert item.tool_call["args"] == {"to": "a@b.com", "subject": "Hi"}


def test_it_keeps_the_snapshots_before_run_finished(agent, ingest):
    response = ingest(agent, as_events(open_example("minimal_tool_approval")))
    run = Run.objects.get(pk=response.json()["id"])
    assert run.state_snapshot == {"step": "awaiting approval"}
    assert run.messages_snapshot == [{"id": "m1", "role": "user", "content": "please"}]


def test_it_reads_a_real_ag_ui_langgraph_stream(agent, ingest):
    events = load_events("email-interrupted-run.jsonl")
    response = ingest(agent, as_sse(events))

    assert response.status_code == 201, response.content
    item = InboxItem.objects.get()
    assert item.interrupt_id == "ac5ee47e964304c8d23c4c1a28809d58"
    assert item.tool_call["name"] == "sendEmail"
    assert item.tool_call["args"] == {"to": "bob@example.com", "subject": "Lunch", "body": "Are we still on for noon?"}
    assert "editedArgs" in item.response_schema["properties"]
    run = item.run
    # The last STATE_SNAPSHOT is the complete one; mid-run ones are partial.
    assert [m["type"] for m in run.state_snapshot["messages"]] == ["human", "ai"]
    assert run.messages_snapshot[1]["toolCalls"][0]["id"] == item.tool_call_id
    assert not any(event["type"] == "RAW" for event in run.events)


def test_it_takes_proposals_from_the_messages_snapshot_when_there_are_no_tool_call_events(agent, ingest):
    events = [e for e in load_events("parallel-interrupted-run.jsonl") if not e["type"].startswith("TOOL_CALL")]
    response = ingest(agent, events)

    assert response.status_code == 201, response.content
    items = InboxItem.objects.order_by("position")
    assert [item.tool_call["args"]["to"] for item in items] == [
        "alice@example.com",
        "bob@example.com",
        "carol@example.com",
    ]
    assert {item.tool_call["source"] for item in items} == {"messages"}


@pytest.mark.parametrize("outcome", [None, {"type": "success"}, {"type": "cancelled"}])
def test_it_records_finished_runs_without_interrupts(agent, ingest, outcome):
    finished = {"type": "RUN_FINISHED", "threadId": "t-done", "runId": "r-done", "result": {"ok": 1}}
    if outcome:
        finished["outcome"] = outcome
    response = ingest(agent, finished)

    assert response.status_code == 201, response.content
    run = Run.objects.get(run_id="r-done")
    assert run.outcome == (outcome or {"type": "success"})["type"]
    assert run.outcome_omitted is (outcome is None)
    assert run.result == {"ok": 1}
    assert response.json()["items"] == []


def test_it_stores_an_item_already_past_its_expiry_as_expired(agent, ingest):
    finished = copy.deepcopy(spec_example("non_tool_input_request"))  # expiresAt 2026-04-20: in the past
    response = ingest(agent, finished)

    assert response.status_code == 201
    assert response.json()["items"][0]["status"] == "expired"
    assert InboxItem.objects.get().status == InboxItem.Status.EXPIRED


def test_it_applies_the_agents_default_ttl_when_there_is_no_expires_at(make_agent, ingest):
    short = make_agent("short-ttl", default_ttl=timedelta(minutes=30))
    before = timezone.now()
    ingest(short, open_example("minimal_tool_approval"))

    item = InboxItem.objects.get()
    assert item.expires_at_defaulted
    assert before + timedelta(minutes=30) <= item.expires_at <= timezone.now() + timedelta(minutes=30)


def test_it_records_an_audit_event_for_the_run_and_each_item(agent, ingest):
    ingest(agent, open_example("parallel_interrupts"))

    verbs = list(AuditEvent.objects.order_by("id").values_list("verb", "actor_type", "actor_label"))
    assert verbs == [("run.ingested", "agent", "mailer")] + [("item.created", "agent", "mailer")] * 3


def test_every_row_of_a_run_points_at_the_others(agent, ingest):
    """On PostgreSQL the run, items, search rows and audit events are written with ids taken up front, in one
    round trip: each must still name the right run, item and thread."""
    body = ingest(agent, open_example("parallel_interrupts")).json()

    run = Run.objects.get(pk=body["id"])
    items = list(run.items.order_by("position"))
    assert [item.pk for item in items] == [entry["id"] for entry in body["items"]]
    assert {item.thread_id for item in items} == {run.thread_id}
    searched = {row.item_id: row for row in ItemSearchText.objects.filter(item__run=run)}
    assert [(searched[item.pk].agent_id, searched[item.pk].tool_call_id) for item in items] == [
        (agent.agent.pk, item.tool_call_id) for item in items
    ]
    events = AuditEvent.objects.filter(thread_id=run.thread_id).order_by("id")
    assert [(event.object_type, event.object_id) for event in events] == [("run", str(run.pk))] + [
        ("inboxitem", str(item.pk)) for item in items
    ]


def test_hostile_text_is_stored_exactly_as_sent(agent, ingest):
    """Values are quoted into the statement by psycopg's adapters: quotes, semicolons, placeholders, backslashes
    and non-ASCII come back byte for byte, and nothing in them runs as SQL."""
    hostile = "it's; DROP TABLE inbox_run; -- %s %(x)s \\x00 \\' $$ \u00e9\u4e2d\U0001f600 E'\\n'"
    finished = open_example("minimal_tool_approval")
    finished["outcome"]["interrupts"][0]["message"] = hostile
    finished["outcome"]["interrupts"][0]["metadata"] = {"note": hostile, hostile: [hostile]}
    ingest(agent, finished)

    item = InboxItem.objects.get()
    assert item.message == hostile
    assert item.metadata == {"note": hostile, hostile: [hostile]}
    assert ItemSearchText.objects.get(item=item).text.startswith(hostile)
    assert Run.objects.count() == 1


def test_it_accepts_every_ag_ui_event_type_it_does_not_keep(agent, ingest):
    finished = open_example("minimal_tool_approval")
    events = [
        {"type": "RUN_STARTED", "threadId": "thread-1", "runId": "run-1"},
        {"type": "STEP_STARTED", "stepName": "think"},
        {"type": "TEXT_MESSAGE_START", "messageId": "m", "role": "assistant"},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "hello"},
        {"type": "TEXT_MESSAGE_END", "messageId": "m"},
        {"type": "RAW", "event": {"anything": True}},
        {"type": "CUSTOM", "name": "on_interrupt", "value": '{"a": 1}'},
        {"type": "STATE_DELTA", "delta": [{"op": "add", "path": "/x", "value": 1}]},
        {"type": "STEP_FINISHED", "stepName": "think"},
        finished,
    ]
    assert ingest(agent, events).status_code == 201


# --- refusals: a 4xx naming the field and the rule, nothing stored --------------------------------


def refuse(agent, ingest, body, status: int = 400, **extra):
    before = stored_counts()
    response = ingest(agent, body, **extra)
    assert response.status_code == status, response.content
    assert stored_counts() == before, "a refused body must store nothing"
    return response.json()


def with_interrupts(*interrupts: dict) -> dict:
    return {
        "type": "RUN_FINISHED",
        "threadId": "t",
        "runId": "r",
        "outcome": {"type": "interrupt", "interrupts": list(interrupts)},
    }


def test_it_refuses_malformed_json(agent, client):
    before = stored_counts()
    response = client.post("/api/v1/runs", data="{not json", content_type="application/json", **agent.auth)
    assert response.status_code == 400
    assert response.json()["error"] == "malformed_json" and response.json()["field"] == "body"
    assert stored_counts() == before


def test_it_refuses_an_event_the_sdk_rejects_and_names_its_field(agent, ingest):
    body = refuse(
        agent,
        ingest,
        [{"type": "TEXT_MESSAGE_CONTENT", "messageId": "m"}, {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"}],
    )
    assert body["field"] == "events[0].delta"


def test_it_refuses_an_unknown_event_type(agent, ingest):
    body = refuse(agent, ingest, [{"type": "NOT_AN_EVENT"}, {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"}])
    assert body["field"].startswith("events[0]")


def test_it_refuses_a_stream_that_does_not_end_with_run_finished(agent, ingest):
    body = refuse(agent, ingest, as_sse([{"type": "RUN_STARTED", "threadId": "t", "runId": "r"}]))
    assert body["field"] == "events[0].type" and body["rule"] == "ends_with_run_finished"


def test_it_refuses_an_interrupt_outcome_with_no_interrupts(agent, ingest):
    body = refuse(agent, ingest, with_interrupts())
    assert body["field"] == "outcome.interrupts" and body["rule"] == "interrupts_not_empty"


def test_it_refuses_duplicate_interrupt_ids_in_a_run(agent, ingest):
    body = refuse(
        agent, ingest, with_interrupts({"id": "a", "reason": "confirmation"}, {"id": "a", "reason": "confirmation"})
    )
    assert body["field"] == "outcome.interrupts[1].id" and body["rule"] == "interrupt_id_unique"


def test_it_refuses_a_tool_call_interrupt_without_a_tool_call_id(agent, ingest):
    body = refuse(agent, ingest, with_interrupts({"id": "a", "reason": "tool_call"}))
    assert body["field"] == "outcome.interrupts[0].toolCallId"
    assert body["rule"] == "tool_call_requires_tool_call_id"


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "objekt"},
        {"type": "object", "required": "approved"},
        {"$schema": "http://json-schema.org/draft-07/schema#", "type": "object", "minProperties": -1},
        ["not", "an", "object"],
    ],
)
def test_it_refuses_a_response_schema_that_is_not_a_valid_json_schema(agent, ingest, schema):
    body = refuse(agent, ingest, with_interrupts({"id": "a", "reason": "input_required", "responseSchema": schema}))
    assert body["field"] == "outcome.interrupts[0].responseSchema"


def test_it_refuses_a_remote_ref_at_ingest(agent, ingest):
    """A $ref outside the schema is refused before anything is stored (tests/security covers every form)."""
    schema = {"$ref": "http://127.0.0.1:9/remote-schema.json"}
    body = refuse(agent, ingest, with_interrupts({"id": "a", "reason": "input_required", "responseSchema": schema}))
    assert body["field"] == "outcome.interrupts[0].responseSchema.$ref" and body["rule"] == "ref_internal"


def test_it_refuses_an_unparsable_expires_at(agent, ingest):
    body = refuse(agent, ingest, with_interrupts({"id": "a", "reason": "confirmation", "expiresAt": "next tuesday"}))
    assert body["field"] == "outcome.interrupts[0].expiresAt" and body["rule"] == "expires_at_iso8601"


def test_it_refuses_a_body_over_the_size_limit_with_413(agent, ingest, settings):
    settings.INBOX_INGEST_MAX_BYTES = 2000
    finished = with_interrupts({"id": "a", "reason": "confirmation", "message": "x" * 3000})
    body = refuse(agent, ingest, finished, status=413)
    assert body["error"] == "body_too_large"


def test_it_accepts_a_real_langgraph_run_well_under_the_default_limit(agent, ingest):
    events = load_events("parallel-interrupted-run.jsonl")
    assert 20_000 < len(json.dumps({"events": events})) < 1024 * 1024
    assert ingest(agent, events).status_code == 201


def test_it_refuses_more_than_100_interrupts(agent, ingest):
    interrupts = [{"id": f"i{n}", "reason": "confirmation"} for n in range(101)]
    body = refuse(agent, ingest, with_interrupts(*interrupts))
    assert body["rule"] == "interrupts_max"


def test_it_refuses_a_missing_token(agent, client):
    response = client.post("/api/v1/runs", data="{}", content_type="application/json")
    assert response.status_code == 401
    assert response["WWW-Authenticate"].startswith("Bearer")


def test_it_refuses_a_wrong_token(agent, ingest):
    agent.token = agent.token + "x"
    assert refuse(agent, ingest, open_example("minimal_tool_approval"), status=401)["error"] == "authentication_failed"


def test_it_refuses_a_revoked_token_and_accepts_the_rotated_one(agent, ingest):
    old = agent.token
    agent.token = agent.agent.rotate_tokens()
    new = agent.token
    agent.token = old
    body = refuse(agent, ingest, open_example("minimal_tool_approval"), status=401)
    assert "revoked" in body["detail"]
    agent.token = new
    assert ingest(agent, open_example("minimal_tool_approval")).status_code == 201


def test_it_refuses_a_disabled_agent_with_403(agent, ingest):
    agent.agent.enabled = False
    agent.agent.save()
    assert "disabled" in refuse(agent, ingest, open_example("minimal_tool_approval"), status=403)["detail"]


def test_it_refuses_a_new_interrupted_run_on_a_thread_with_open_items(agent, ingest):
    first = open_example("minimal_tool_approval")
    assert ingest(agent, first).status_code == 201
    second = copy.deepcopy(first)
    second["runId"] = "run-2"
    second["outcome"]["interrupts"][0]["id"] = "int-other"

    body = refuse(agent, ingest, second, status=409)
    assert body["error"] == "thread_has_open_interrupts"
    assert body["openItems"][0]["interruptId"] == "int-abc123"


def test_a_thread_whose_open_items_went_stale_accepts_a_new_run(agent, ingest):
    first = open_example("minimal_tool_approval")
    first["outcome"]["interrupts"][0]["expiresAt"] = future(hours=1)
    ingest(agent, first)
    InboxItem.objects.update(expires_at=timezone.now() - timedelta(seconds=1))
    second = copy.deepcopy(first)
    second["runId"], second["outcome"]["interrupts"][0]["id"] = "run-2", "int-2"

    assert ingest(agent, second).status_code == 201
    assert InboxItem.objects.get(interrupt_id="int-abc123").status == InboxItem.Status.EXPIRED


# --- idempotency ----------------------------------------------------------------------------------


def test_posting_the_same_run_again_returns_200_with_the_same_body(agent, ingest):
    finished = open_example("parallel_interrupts")
    first = ingest(agent, finished)
    before = stored_counts()
    again = ingest(agent, finished)

    assert (first.status_code, again.status_code) == (201, 200)
    assert again.json() == first.json()
    assert stored_counts() == before


def test_the_same_ids_with_different_content_are_a_conflict(agent, ingest):
    finished = open_example("minimal_tool_approval")
    ingest(agent, finished)
    changed = copy.deepcopy(finished)
    changed["outcome"]["interrupts"][0]["message"] = "Something else"
    assert refuse(agent, ingest, changed, status=409)["error"] == "run_conflict"


def test_the_same_run_from_another_agent_is_its_own_run(make_agent, ingest):
    finished = open_example("minimal_tool_approval")
    assert ingest(make_agent("one"), finished).status_code == 201
    assert ingest(make_agent("two"), finished).status_code == 201
    assert Run.objects.count() == 2


@pytest.mark.django_db(transaction=True)
def test_racing_copies_of_one_run_store_one_row(make_agent):
    from django.test import Client

    racer = make_agent("racer")
    body = json.dumps(open_example("parallel_interrupts"))
    statuses: list[int] = []
    barrier = threading.Barrier(6)

    def post() -> None:
        try:
            barrier.wait()
            response = Client().post("/api/v1/runs", data=body, content_type="application/json", **racer.auth)
            statuses.append(response.status_code)
        finally:
            connection.close()

    threads = [threading.Thread(target=post) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert sorted(statuses) == [200] * 5 + [201]
    assert Run.objects.count() == 1 and InboxItem.objects.count() == 3 and Thread.objects.count() == 1


@pytest.mark.django_db(transaction=True)
def test_racing_runs_on_a_new_thread_store_one_and_refuse_the_rest(make_agent):
    """Rule 4 holds on a thread that does not exist yet: the first run creates and locks it, the others
    wait for its commit and then see its open items."""
    from django.test import Client

    racer = make_agent("racer")
    statuses: list[int] = []
    barrier = threading.Barrier(6)

    def post(n: int) -> None:
        body = open_example("minimal_tool_approval")
        body["runId"] = f"run-{n}"
        try:
            barrier.wait()
            response = Client().post(
                "/api/v1/runs", data=json.dumps(body), content_type="application/json", **racer.auth
            )
            statuses.append(response.status_code)
            if response.status_code == 409:
                assert response.json()["error"] == "thread_has_open_interrupts"
        finally:
            connection.close()

    threads = [threading.Thread(target=post, args=(n,)) for n in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert sorted(statuses) == [201] + [409] * 5
    assert Run.objects.count() == 1 and InboxItem.objects.count() == 1 and Thread.objects.count() == 1


def test_the_ingest_answer_is_the_run_serializers(agent, ingest, rf):
    from inbox.api.serializers import RunSerializer

    body = ingest(agent, as_events(open_example("parallel_interrupts"))).json()
    run = Run.objects.get(pk=body["id"])
    assert body == RunSerializer(run, context={"request": rf.get("/")}).data
