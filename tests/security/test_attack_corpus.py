"""The attack corpus: everything a hostile agent or client sent that once answered 500 (or worse).

Each case is what an attacker sends; each must answer the given 4xx with a JSON body naming the field where
there is one, and store nothing. Run on SQLite and on PostgreSQL (which refuses NUL in text and jsonb, and
checks column lengths, so several of these only ever failed there).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from inbox.models import InboxItem
from tests.security.conftest import stored

pytestmark = pytest.mark.timeout(60, func_only=True)  # the test, not the session's database set-up


def finished(interrupt: dict | None = None, **run) -> dict:
    interrupt = {"id": "i-1", "reason": "input_required", "message": "Approve?"} | (interrupt or {})
    return {
        "type": "RUN_FINISHED",
        "threadId": "t-1",
        "runId": "r-1",
        "outcome": {"type": "interrupt", "interrupts": [interrupt]},
    } | run


def raw(body: dict, **replacements: str) -> bytes:
    """The body as JSON text with placeholders replaced by raw JSON text json.dumps would never write."""
    text = json.dumps(body)
    for name, value in replacements.items():
        text = text.replace(json.dumps(f"@{name}"), value)
    return text.encode()


def deep(levels: int) -> str:
    return "[" * levels + "]" * levels


def any_of(levels: int) -> dict:
    schema: dict = {"type": "string"}
    for _ in range(levels):
        schema = {"anyOf": [schema, {"type": "integer"}]}
    return schema


@dataclass
class Ingest:
    body: bytes
    field: str
    status: int = 400
    content_type: str = "application/json"


INGEST = {
    "nul_in_message": Ingest(raw(finished({"message": "@m"}), m='"a\\u0000b"'), "outcome.interrupts[0].message"),
    "nul_in_a_key": Ingest(raw(finished(result="@r"), r='{"a\\u0000": 1}'), "result"),
    "lone_surrogate": Ingest(raw(finished({"message": "@m"}), m='"\\ud800"'), "outcome.interrupts[0].message"),
    "nan": Ingest(raw(finished(result="@r"), r="NaN"), "result"),
    "infinity": Ingest(raw(finished(result="@r"), r="-Infinity"), "result"),
    "1e400": Ingest(raw(finished(result="@r"), r="1e400"), "result"),
    "int_4301_digits": Ingest(raw(finished(result="@r"), r="9" * 4301), "result"),
    "nesting_1000": Ingest(raw(finished(result="@r"), r=deep(1000)), "body"),
    "nesting_100": Ingest(raw(finished(result="@r"), r=deep(100)), "result"),
    "any_of_100_deep": Ingest(
        json.dumps(finished({"responseSchema": any_of(100)})).encode(), "outcome.interrupts[0].responseSchema"
    ),
    "sse_invalid_utf8": Ingest(
        b'data: {"type": "RUN_FINISHED", "threadId": "\xff\xfe"}\n\n', "body", 400, "text/event-stream"
    ),
    "sse_nul": Ingest(
        b"data: " + raw(finished({"message": "@m"}), m='"\\u0000"') + b"\n\n",
        "events[0].outcome.interrupts[0].message",
        400,
        "text/event-stream",
    ),
    "long_thread_id": Ingest(json.dumps(finished(threadId="t" * 256)).encode(), "threadId"),
    "long_run_id": Ingest(json.dumps(finished(runId="r" * 256)).encode(), "runId"),
    "long_interrupt_id": Ingest(json.dumps(finished({"id": "i" * 256})).encode(), "outcome.interrupts[0].id"),
    "long_reason": Ingest(json.dumps(finished({"reason": "x" * 256})).encode(), "outcome.interrupts[0].reason"),
    "long_tool_call_id": Ingest(
        json.dumps(finished({"reason": "tool_call", "toolCallId": "c" * 256})).encode(),
        "outcome.interrupts[0].toolCallId",
    ),
    "expires_at_past_year_9999": Ingest(
        json.dumps(finished({"expiresAt": "9999-12-31T23:59:59-23:59"})).encode(), "outcome.interrupts[0].expiresAt"
    ),
    "expires_at_before_year_1": Ingest(
        json.dumps(finished({"expiresAt": "0001-01-01T00:00:00+23:59"})).encode(), "outcome.interrupts[0].expiresAt"
    ),
    "backreference_pattern": Ingest(
        json.dumps(finished({"responseSchema": {"type": "string", "pattern": "^(a)\\1$"}})).encode(),
        "outcome.interrupts[0].responseSchema.pattern",
    ),
    "lookahead_pattern_property": Ingest(
        json.dumps(finished({"responseSchema": {"type": "object", "patternProperties": {"(?=a)": {}}}})).encode(),
        "outcome.interrupts[0].responseSchema.patternProperties",
    ),
}


@pytest.mark.parametrize("case", list(INGEST))
def test_ingest(case, client: Client, agent):
    attack = INGEST[case]
    before = stored()
    response = client.post("/api/v1/runs", data=attack.body, content_type=attack.content_type, **agent.auth)
    assert response.status_code == attack.status, response.content
    field = response.json()["field"]
    assert field == attack.field or field.startswith((f"{attack.field}.", f"{attack.field}[")), field
    assert stored() == before


# --- deciding: the API, bulk, comments ---------------------------------------------------------------
SCHEMA = {"type": "object", "properties": {"note": {"type": "string"}, "n": {"type": "number"}}}


@pytest.fixture
def item(agent, ingest) -> InboxItem:
    expires = (timezone.now() + timedelta(hours=1)).isoformat()
    assert ingest(agent, finished({"responseSchema": SCHEMA, "expiresAt": expires})).status_code == 201
    return InboxItem.objects.get()


@pytest.fixture
def tool_item(agent, ingest) -> InboxItem:
    body = finished({"reason": "tool_call", "toolCallId": "tc-1"}, threadId="t-tool", runId="r-tool")
    assert ingest(agent, body).status_code == 201
    return InboxItem.objects.get(thread__thread_id="t-tool")


API = {
    "payload_nesting_10k": (f'{{"status": "resolved", "payload": {{"n": {deep(10_000)}}}}}', "body", 400),
    "payload_nul": ('{"status": "resolved", "payload": {"note": "a\\u0000"}}', "payload.note", 400),
    "payload_nul_key": ('{"status": "resolved", "payload": {"\\u0000": 1}}', "payload", 400),
    "payload_surrogate": ('{"status": "resolved", "payload": {"note": "\\udfff"}}', "payload.note", 400),
    "payload_nan": ('{"status": "resolved", "payload": {"n": NaN}}', "payload.n", 400),
    "payload_1e400": ('{"status": "resolved", "payload": {"n": 1e400}}', "payload.n", 400),
    "payload_huge_int": ('{"status": "resolved", "payload": {"n": %s}}' % ("9" * 5000), "payload.n", 400),
    "comment_nul": ('{"status": "cancelled", "comment": "x\\u0000"}', "comment", 400),
    "comment_surrogate": ('{"status": "cancelled", "comment": "\\ud83d"}', "comment", 400),
    "payload_over_the_size_limit": (
        json.dumps({"status": "resolved", "payload": {"note": "x" * (300 * 1024)}}),
        "payload",
        413,
    ),
}


@pytest.mark.parametrize("case", list(API))
def test_decision_api(case, client: Client, alice, item):
    body, field, status = API[case]
    client.force_login(alice)
    before = stored()
    response = client.post(f"/api/v1/items/{item.pk}/decision", data=body, content_type="application/json")
    assert response.status_code == status, response.content
    data = response.json()
    assert data.get("field", (data.get("errors") or [{}])[0].get("path")) == field
    assert stored() == before


def test_bulk_and_comments(client: Client, alice, item, tool_item):
    client.force_login(alice)
    before = stored()
    cases = [
        ("/api/v1/items/bulk-decision", '{"ids": [ID], "action": "approve", "comment": "\\u0000"}'),
        ("/api/v1/items/bulk-decision", f'{{"ids": {deep(10_000)}, "action": "approve"}}'),
        ("/api/v1/items/bulk-decision", '{"ids": [ID], "action": "approve", "comment": "\\ud800"}'),
        (f"/api/v1/items/{item.pk}/comments", '{"body": "hi \\u0000"}'),
        (f"/api/v1/items/{item.pk}/comments", '{"body": "\\udc00"}'),
        (f"/api/v1/items/{item.pk}/comments", f'{{"body": {deep(10_000)}}}'),
        (f"/api/v1/runs/{item.run_id}/comments", '{"body": "\\u0000"}'),
        (f"/api/v1/items/{item.pk}/assign", '{"assignee": "\\u0000"}'),
    ]
    for url, body in cases:
        body = body.replace("ID", str(tool_item.pk))
        response = client.post(url, data=body, content_type="application/json")
        assert response.status_code == 400, (url, body[:80], response.content[:300])
        assert response.json()["error"]
    assert stored() == before


# --- the HTML decide form -------------------------------------------------------------------------------
FORM = {
    "answer_deep": ({"action": "answer", "answer": f'{{"n": {deep(5000)}}}'}, "item"),
    "answer_nan": ({"action": "answer", "answer": '{"n": NaN}'}, "item"),
    "answer_huge_int": ({"action": "answer", "answer": '{"n": %s}' % ("9" * 5000)}, "item"),
    "answer_nul_escape": ({"action": "answer", "answer": '{"note": "\\u0000"}'}, "item"),
    "answer_raw_nul": ({"action": "answer", "answer": '{"note": "a\x00"}'}, "item"),
    "edited_args_nan": ({"action": "edit", "edited_args": '{"to": NaN}'}, "edit_item"),
    "comment_nul": ({"action": "cancel", "comment": "bye\x00"}, "item"),
    "approve_comment_nul": ({"action": "approve", "comment": "\x00"}, "tool_item"),
}


@pytest.fixture
def edit_item(agent, ingest) -> InboxItem:
    schema = {
        "type": "object",
        "properties": {"approved": {"type": "boolean"}, "editedArgs": {"type": "object"}},
        "required": ["approved"],
    }
    body = finished(
        {"reason": "tool_call", "toolCallId": "tc-e", "responseSchema": schema}, threadId="t-e", runId="r-e"
    )
    assert ingest(agent, body).status_code == 201
    return InboxItem.objects.get(thread__thread_id="t-e")


@pytest.mark.parametrize("case", list(FORM))
def test_decide_form(case, client: Client, alice, request):
    data, fixture = FORM[case]
    target: InboxItem = request.getfixturevalue(fixture)
    client.force_login(alice)
    before = stored()
    response = client.post(f"/inbox/items/{target.pk}/decide/", data)
    assert response.status_code == 400, response.content[:500]
    assert stored() == before
    assert InboxItem.objects.get(pk=target.pk).status == "open"


# --- pages and exports -----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "url",
    [
        "/audit/export/events.csv?until=9999-12-31",
        "/audit/export/decisions.json?until=9999-12-31",
        "/audit/?until=9999-12-31",
        "/inbox/?q=%00",
        "/audit/export/events.csv?actor=%00",
    ],
)
def test_query_strings(url, client: Client, staff):
    client.force_login(staff)
    response = client.get(url)
    assert response.status_code == 400, response.content[:300]


def test_an_item_whose_edited_args_schema_is_a_boolean_opens(client: Client, alice, agent, ingest):
    schema = {"type": "object", "properties": {"approved": {"type": "boolean"}, "editedArgs": True}}
    body = finished({"reason": "tool_call", "toolCallId": "tc-b", "responseSchema": schema})
    assert ingest(agent, body).status_code == 201
    client.force_login(alice)
    page = client.get(f"/inbox/items/{InboxItem.objects.get().pk}/")
    assert page.status_code == 200
    assert b"Approve with edits" in page.content


@pytest.mark.parametrize(
    "url",
    [
        "/api/v1/items/99999999999999999999999",
        "/api/v1/runs/99999999999999999999999/comments",
        "/inbox/items/99999999999999999999999/",
        "/inbox/rows/?ids=99999999999999999999999",
        "/inbox/?page=99999999999999999999999",
        "/audit/tool-calls/tc-1/?item=99999999999999999999999",
    ],
)
def test_ids_too_large_for_the_database(url, client: Client, staff):
    client.force_login(staff)
    assert client.get(url).status_code in (200, 400, 404)


def test_bulk_ids_too_large_for_the_database(client: Client, alice):
    client.force_login(alice)
    body = json.dumps({"ids": [1, 91009762058100770078720], "action": "cancel"})
    response = client.post("/api/v1/items/bulk-decision", data=body, content_type="application/json")
    assert response.status_code == 400 and response.json()["field"] == "ids"


TOOL_ARGS = {
    "deep": '{"a": %s}' % deep(2000),  # noqa: UP031
    "nul": '{"to": "a\\u0000"}',
    "nan": '{"n": NaN}',
    "huge_int": '{"n": %s}' % ("9" * 5000),  # noqa: UP031
}


@pytest.mark.parametrize("case", list(TOOL_ARGS))
def test_hostile_tool_call_arguments_are_kept_as_text(case, client: Client, agent, alice):
    """Arguments arrive as text inside a string: valid JSON outside, hostile once parsed."""
    args = TOOL_ARGS[case]
    events = [
        {"type": "RUN_STARTED", "threadId": "t-1", "runId": "r-1"},
        {"type": "TOOL_CALL_START", "toolCallId": "tc-1", "toolCallName": "send"},
        {"type": "TOOL_CALL_ARGS", "toolCallId": "tc-1", "delta": args},
        {"type": "TOOL_CALL_END", "toolCallId": "tc-1"},
        {
            "type": "MESSAGES_SNAPSHOT",
            "messages": [
                {
                    "id": "m-1",
                    "role": "assistant",
                    "toolCalls": [{"id": "tc-1", "type": "function", "function": {"name": "send", "arguments": args}}],
                }
            ],
        },
        finished({"reason": "tool_call", "toolCallId": "tc-1"}),
    ]
    response = client.post(
        "/api/v1/runs", data=json.dumps({"events": events}), content_type="application/json", **agent.auth
    )
    assert response.status_code == 201, response.content
    item = InboxItem.objects.get()
    assert item.tool_call["args"] is None and item.tool_call["argsText"] == args
    client.force_login(alice)
    assert client.get(f"/inbox/items/{item.pk}/").status_code == 200
    assert client.get("/audit/tool-calls/tc-1/").status_code == 200
