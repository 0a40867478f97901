"""Decisions map onto the shape the interrupt asked for (``inbox.decisions.shapes``): every yes/no shape in the
wild gets Approve/Deny whose payloads are valid against its schema, on the page, in bulk, on the run page and
in the e-mail links; a schema without one gets its form; edits only where the schema offers them, refused by
the API otherwise; the outcome label reads what was sent in the item's shape; reasons in the wild route as
tool approvals when they name a proposed call, Mastra's call is read from its metadata."""

from __future__ import annotations

import copy
import json
from typing import Any

import jsonschema
import pytest
from django.test import Client

from inbox.decisions.shapes import needs_form_input, shape_of, yes_no_shape
from inbox.listing.preview import resume_preview
from inbox.listing.selectors import bulk_note
from inbox.models import InboxItem
from tests.conftest import spec_example
from tests.inbox.conftest import interrupt_run

PROPOSED = {"to": "bob@example.com", "subject": "Lunch", "body": "Are we on?"}
CALL_EVENTS = [
    {"type": "TOOL_CALL_START", "toolCallId": "tc-1", "toolCallName": "sendEmail"},
    {"type": "TOOL_CALL_ARGS", "toolCallId": "tc-1", "delta": json.dumps(PROPOSED)},
    {"type": "TOOL_CALL_END", "toolCallId": "tc-1"},
]

SPEC_EDITS = {
    "type": "object",
    "properties": {"approved": {"type": "boolean"}, "editedArgs": {"type": "object"}},
    "required": ["approved"],
}
STRANDS = {"type": "object", "properties": {"approved": {"type": "boolean"}}, "required": ["approved"]}
CLAUDE = {
    "type": "object",
    "properties": {"behavior": {"type": "string", "enum": ["allow", "deny"]}, "updatedInput": {"type": "object"}},
    "required": ["behavior"],
    "additionalProperties": False,
}
CLAUDE_INPUT_REQUIRED = {**CLAUDE, "required": ["behavior", "updatedInput"]}
CLAUDE_UNION = {
    "oneOf": [
        {
            "type": "object",
            "properties": {"behavior": {"const": "allow"}, "updatedInput": {"type": "object"}},
            "required": ["behavior", "updatedInput"],
            "additionalProperties": False,
        },
        {
            "type": "object",
            "properties": {"behavior": {"const": "deny"}, "message": {"type": "string"}},
            "required": ["behavior", "message"],
            "additionalProperties": False,
        },
    ]
}

# (name, schema, what Approve sends, what Deny sends, edits offered)
SHAPES: list[tuple[str, Any, Any, Any, bool]] = [
    ("spec with edits", SPEC_EDITS, {"approved": True}, {"approved": False}, True),
    ("strands approved", STRANDS, {"approved": True}, {"approved": False}, False),
    (
        "approved and message",
        {
            "type": "object",
            "properties": {"approved": {"type": "boolean"}, "message": {"type": "string"}},
            "required": ["approved", "message"],
        },
        {"approved": True, "message": ""},
        {"approved": False, "message": ""},
        False,
    ),
    ("claude behavior", CLAUDE, {"behavior": "allow"}, {"behavior": "deny"}, True),
    (
        "claude behavior, updatedInput required",
        CLAUDE_INPUT_REQUIRED,
        {"behavior": "allow", "updatedInput": PROPOSED},
        {"behavior": "deny", "updatedInput": PROPOSED},
        True,
    ),
    (
        "claude union",
        CLAUDE_UNION,
        {"behavior": "allow", "updatedInput": PROPOSED},
        {"behavior": "deny", "message": ""},
        True,
    ),
    ("ag2 bare boolean", {"type": "boolean"}, True, False, False),
    (
        "ag2 1.2 approval: a string or a boolean",
        {"type": ["string", "boolean"], "title": "Approval", "description": "true to let the tool call go ahead"},
        True,
        False,
        False,
    ),
    ("bare allow/deny", {"type": "string", "enum": ["allow", "deny"]}, "allow", "deny", False),
    ("bare y/n", {"type": "string", "enum": ["y", "n"]}, "y", "n", False),
    (
        "two-value enum property",
        {
            "type": "object",
            "properties": {"decision": {"type": "string", "enum": ["approve", "reject"]}},
            "required": ["decision"],
        },
        {"decision": "approve"},
        {"decision": "reject"},
        False,
    ),
    (
        "one boolean property",
        {"type": "object", "properties": {"proceed": {"type": "boolean"}}, "required": ["proceed"]},
        {"proceed": True},
        {"proceed": False},
        False,
    ),
    (
        "mastra approved, not required",
        {"type": "object", "properties": {"approved": {"type": "boolean"}}},
        {"approved": True},
        {"approved": False},
        False,
    ),
]

FORM_SCHEMAS = [
    spec_example("non_tool_input_request")["outcome"]["interrupts"][0]["responseSchema"],
    {"type": "string"},
    {"type": "string", "enum": ["red", "green"]},
    {
        "type": "object",
        "properties": {"approved": {"type": "boolean"}, "amount": {"type": "number"}},
        "required": ["approved", "amount"],
    },
]


def tool_item(agent, ingest, schema: Any, *, reason: str = "tool_call", run: str = "r-1", metadata=None) -> InboxItem:
    interrupt: dict[str, Any] = {"id": f"{run}-i", "reason": reason, "toolCallId": "tc-1", "message": "Send it?"}
    if schema is not None:
        interrupt["responseSchema"] = schema
    if metadata is not None:
        interrupt["metadata"] = metadata
    response = ingest(agent, interrupt_run(f"t-{run}", run, [interrupt], CALL_EVENTS))
    assert response.status_code == 201, response.content
    return InboxItem.objects.get(interrupt_id=f"{run}-i")


def page(client: Client, item: InboxItem) -> str:
    response = client.get(item.get_absolute_url())
    assert response.status_code == 200
    return response.content.decode()


def decide_api(client: Client, item: InboxItem, body: dict):
    return client.post(f"/api/v1/items/{item.pk}/decision", data=json.dumps(body), content_type="application/json")


@pytest.mark.parametrize(("name", "schema", "yes", "no", "edits"), SHAPES, ids=[shape[0] for shape in SHAPES])
def test_each_shape_is_recognised_and_both_payloads_are_valid_against_it(name, schema, yes, no, edits):
    shape = yes_no_shape(schema, proposed_args=PROPOSED)
    assert shape is not None, name
    assert (shape.payload(True), shape.payload(False)) == (yes, no)
    jsonschema.validate(shape.payload(True), schema)
    jsonschema.validate(shape.payload(False), schema)
    assert (shape.edit_key is not None) == edits
    if edits:
        jsonschema.validate(shape.with_edits({**PROPOSED, "to": "carol@example.com"}), schema)


@pytest.mark.parametrize("schema", FORM_SCHEMAS)
def test_a_schema_without_a_yes_no_shape_gets_its_form(schema):
    assert yes_no_shape(schema, proposed_args=PROPOSED) is None


@pytest.mark.parametrize("action", ["approve", "deny"])
@pytest.mark.parametrize(("name", "schema", "yes", "no", "edits"), SHAPES, ids=[shape[0] for shape in SHAPES])
def test_the_page_buttons_send_the_shape_the_schema_asks_for(
    client, alice, agent, ingest, action, name, schema, yes, no, edits
):
    item = tool_item(agent, ingest, schema)
    client.force_login(alice)
    html = page(client, item)
    assert 'data-action="approve"' in html and 'data-action="deny"' in html
    assert ('name="edited_args"' in html) == edits
    response = client.post(f"/inbox/items/{item.pk}/decide/", {"action": action})
    assert response.status_code == 302, response.content.decode()[:2000]
    item.refresh_from_db()
    assert item.response_payload == (yes if action == "approve" else no)
    jsonschema.validate(item.response_payload, schema)
    assert item.outcome == ("approved" if action == "approve" else "denied")


@pytest.mark.parametrize("action", ["approve", "deny"])
@pytest.mark.parametrize(("name", "schema", "yes", "no", "edits"), SHAPES, ids=[shape[0] for shape in SHAPES])
def test_bulk_sends_the_shape_the_schema_asks_for(client, alice, agent, ingest, action, name, schema, yes, no, edits):
    item = tool_item(agent, ingest, schema)
    client.force_login(alice)
    response = client.post(
        "/api/v1/items/bulk-decision",
        data=json.dumps({"ids": [item.pk], "action": action}),
        content_type="application/json",
    )
    assert response.json()["results"][0]["ok"] is True, response.json()
    item.refresh_from_db()
    assert item.response_payload == (yes if action == "approve" else no)
    assert item.outcome == ("approved" if action == "approve" else "denied")


def test_the_run_page_preview_shows_exactly_what_approve_sends(alice, agent, ingest):
    item = tool_item(agent, ingest, {"type": "boolean"})
    preview = resume_preview(run=item.run, items=[item], user=alice, choices={f"decision-{item.pk}": "approve"})
    assert preview["input"]["resume"] == [{"interruptId": item.interrupt_id, "status": "resolved", "payload": True}]


@pytest.mark.parametrize("schema", FORM_SCHEMAS[:1])
def test_a_form_item_has_no_buttons_and_bulk_turns_it_down(client, alice, agent, ingest, schema):
    item = tool_item(agent, ingest, schema, reason="input_required")
    client.force_login(alice)
    assert 'data-action="approve"' not in page(client, item)
    assert needs_form_input(item) and bulk_note(item, alice).kind == "form"
    response = client.post(
        "/api/v1/items/bulk-decision",
        data=json.dumps({"ids": [item.pk], "action": "approve"}),
        content_type="application/json",
    )
    assert response.json()["results"][0]["error"] == "needs_input"


# Edits only where offered (issue 31.1).

EDITED = {**PROPOSED, "to": "carol@example.com"}


@pytest.mark.parametrize(
    ("reason", "schema"),
    [("tool_call", STRANDS), ("confirmation", None), ("tool_call", None), ("ask_user", None)],
    ids=["strands {approved}", "adk confirmation without schema", "tool_call without schema", "unknown reason"],
)
def test_edits_not_offered_are_refused_by_the_api_and_not_drawn_on_the_page(
    client, alice, agent, ingest, reason, schema
):
    item = tool_item(agent, ingest, schema, reason=reason)
    client.force_login(alice)
    html = page(client, item)
    assert 'name="edited_args"' not in html and 'value="edit"' not in html
    response = decide_api(client, item, {"status": "resolved", "payload": {"approved": True, "editedArgs": EDITED}})
    assert response.status_code == 400, response.content
    body = response.json()
    assert body["error"] == "edits_not_offered"
    assert body["errors"][0]["path"] == "editedArgs"
    assert "capability signal" in body["detail"] and "original arguments" in body["detail"]
    item.refresh_from_db()
    assert item.is_open
    # The page's own "edit" action is refused the same way (a tampered form).
    response = client.post(f"/inbox/items/{item.pk}/decide/", {"action": "edit", "edited_args": json.dumps(EDITED)})
    assert response.status_code == 400
    item.refresh_from_db()
    assert item.is_open


def test_edits_where_offered_are_accepted_and_labelled(client, alice, agent, ingest):
    item = tool_item(agent, ingest, SPEC_EDITS)
    client.force_login(alice)
    response = client.post(f"/inbox/items/{item.pk}/decide/", {"action": "edit", "edited_args": json.dumps(EDITED)})
    assert response.status_code == 302
    item.refresh_from_db()
    assert item.response_payload == {"approved": True, "editedArgs": EDITED}
    assert item.outcome == "approved_with_edits"


def test_claude_updated_input_is_an_edit_only_when_it_changes_the_proposal(client, alice, agent, ingest):
    unchanged = tool_item(agent, ingest, CLAUDE_INPUT_REQUIRED, run="r-1")
    changed = tool_item(agent, ingest, CLAUDE_INPUT_REQUIRED, run="r-2")
    client.force_login(alice)
    assert client.post(f"/inbox/items/{unchanged.pk}/decide/", {"action": "approve"}).status_code == 302
    response = client.post(f"/inbox/items/{changed.pk}/decide/", {"action": "edit", "edited_args": json.dumps(EDITED)})
    assert response.status_code == 302
    unchanged.refresh_from_db()
    changed.refresh_from_db()
    assert (unchanged.outcome, changed.outcome) == ("approved", "approved_with_edits")
    assert changed.response_payload == {"behavior": "allow", "updatedInput": EDITED}


@pytest.mark.parametrize(
    ("schema", "payload", "outcome"),
    [
        ({"type": "string", "enum": ["allow", "deny"]}, "deny", "denied"),
        ({"type": "string", "enum": ["y", "n"]}, "n", "denied"),
        ({"type": "string", "enum": ["y", "n"]}, "y", "approved"),
        (CLAUDE, {"behavior": "deny"}, "denied"),
        ({"type": "boolean"}, True, "approved"),
    ],
)
def test_the_outcome_label_reads_the_answer_in_its_shape(client, alice, agent, ingest, schema, payload, outcome):
    item = tool_item(agent, ingest, schema)
    client.force_login(alice)
    assert decide_api(client, item, {"status": "resolved", "payload": payload}).status_code == 201
    item.refresh_from_db()
    assert item.outcome == outcome


# Reasons in the wild (issue 33.2).

MASTRA_METADATA = {
    "mastra": {
        "type": "mastra_suspend",
        "toolName": "sendEmail",
        "suspendPayload": {"reason": "needs approval"},
        "args": PROPOSED,
        "resumeSchema": '{"type":"object","properties":{"approved":{"type":"boolean"}}}',
        "runId": "r-m",
    }
}


def test_a_mastra_interrupt_shows_the_call_its_metadata_names_and_bulk_approves_it(client, alice, agent, ingest):
    interrupt = {
        "id": "r-m::tc-9",
        "reason": "mastra:tool_suspend",
        "toolCallId": "tc-9",
        "responseSchema": {"type": "object", "properties": {"approved": {"type": "boolean"}}},
        "metadata": MASTRA_METADATA,
    }
    # Mastra streams no TOOL_CALL_* before its interrupt.
    assert ingest(agent, interrupt_run("t-m", "r-m", [interrupt], [])).status_code == 201
    item = InboxItem.objects.get(interrupt_id="r-m::tc-9")
    assert item.tool_call["name"] == "sendEmail" and item.tool_call["args"] == PROPOSED
    assert item.proposed_args == PROPOSED
    client.force_login(alice)
    html = page(client, item)
    assert "sendEmail" in html and "bob@example.com" in html
    assert bulk_note(item, alice).kind == ""
    response = client.post(
        "/api/v1/items/bulk-decision",
        data=json.dumps({"ids": [item.pk], "action": "approve"}),
        content_type="application/json",
    )
    assert response.json()["results"][0]["ok"] is True
    item.refresh_from_db()
    assert item.response_payload == {"approved": True}


@pytest.mark.parametrize("reason", ["tool_approval", "tool-approval", "mastra:tool_suspend", "langgraph:interrupt"])
def test_an_interrupt_naming_a_proposed_call_is_a_tool_approval_whatever_its_reason(
    client, alice, agent, ingest, reason
):
    item = tool_item(agent, ingest, None, reason=reason)
    assert shape_of(item) is not None and not needs_form_input(item)
    client.force_login(alice)
    html = page(client, item)
    assert "Tool approval" in html and 'data-action="approve"' in html
    rows = client.get("/inbox/").content.decode()
    cell = rows[rows.index('<td class="col-reason">') :].split("</td>")[0]
    assert "Tool approval" in cell
    assert f">{reason}<" not in cell  # the reason in words, the raw string only in the title


@pytest.mark.parametrize(
    ("reason", "words"),
    [
        ("ask_question", "Question"),
        ("langgraph:interrupt", "Interrupt (langgraph)"),
        ("inbox:budget", "Budget (inbox)"),
    ],
)
def test_list_rows_show_a_reason_in_words(client, alice, agent, ingest, reason, words):
    interrupt = {"id": "r-q-i", "reason": reason, "message": "What should I tell them?"}
    assert ingest(agent, interrupt_run("t-q", "r-q", [interrupt])).status_code == 201
    client.force_login(alice)
    rows = client.get("/inbox/").content.decode()
    cell = rows[rows.index('<td class="col-reason">') :].split("</td>")[0]
    assert words in cell
    assert f">{words} ({reason})</option>" in rows  # the reason filter names it in words too


# The list and the item agree (issue 31.8).


def test_an_unknown_reason_without_schema_is_decided_alike_in_the_list_and_on_its_page(client, alice, agent, ingest):
    interrupt = {"id": "r-u-i", "reason": "ask_user", "message": "Proceed with the migration?"}
    assert ingest(agent, interrupt_run("t-u", "r-u", [interrupt])).status_code == 201
    item = InboxItem.objects.get(interrupt_id="r-u-i")
    client.force_login(alice)
    on_page = 'data-action="approve"' in page(client, item)
    in_list = bulk_note(item, alice).selectable
    assert on_page and in_list
    rows = client.get("/inbox/").content.decode()
    assert "Needs its form" not in rows and "data-bulk-select" in rows


def test_the_shapes_payloads_never_leak_between_items(agent, ingest):
    item = tool_item(agent, ingest, CLAUDE_INPUT_REQUIRED)
    shape = shape_of(item)
    assert shape is not None
    payload = shape.payload(True)
    payload["updatedInput"]["to"] = "mallory@example.com"
    assert shape.payload(True)["updatedInput"] == PROPOSED
    assert copy.deepcopy(PROPOSED) == PROPOSED
