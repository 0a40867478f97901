"""Edits wherever a schema offers them, however it offers them (issue 47.7): ``editedArgs`` behind a local ``$ref``
(Pydantic's ``$defs``), in an ``allOf`` member or in a union's branch gets Approve, Deny and "Approve with edits",
and the edit is accepted; references are followed safely (local only, bounded). Edited arguments equal to the
proposal are a plain approval: "Approved", everywhere."""

from __future__ import annotations

import json
import time
from typing import Any

import jsonschema
import pytest
from django.test import Client

from inbox.core import schema_view
from inbox.decisions.shapes import yes_no_shape
from inbox.models import InboxItem
from tests.inbox.conftest import interrupt_run

PROPOSED = {"to": "bob@example.com", "subject": "Lunch", "body": "Are we on?"}
EDITED = {**PROPOSED, "to": "carol@example.com"}
CALL_EVENTS = [
    {"type": "TOOL_CALL_START", "toolCallId": "tc-1", "toolCallName": "sendEmail"},
    {"type": "TOOL_CALL_ARGS", "toolCallId": "tc-1", "delta": json.dumps(PROPOSED)},
    {"type": "TOOL_CALL_END", "toolCallId": "tc-1"},
]
ARGS_DEF = {
    "type": "object",
    "properties": {"to": {"type": "string"}, "subject": {"type": "string"}, "body": {"type": "string"}},
}

# Pydantic's way: the whole answer is a model under $defs.
ROOT_REF = {
    "$defs": {
        "Args": ARGS_DEF,
        "Approval": {
            "type": "object",
            "properties": {"approved": {"type": "boolean"}, "editedArgs": {"$ref": "#/$defs/Args"}},
            "required": ["approved"],
        },
    },
    "$ref": "#/$defs/Approval",
}
ALL_OF = {
    "allOf": [
        {"type": "object", "properties": {"approved": {"type": "boolean"}}, "required": ["approved"]},
        {"properties": {"editedArgs": {"$ref": "#/$defs/Args"}}},
    ],
    "$defs": {"Args": ARGS_DEF},
}
UNION_OF_REFS = {
    "oneOf": [{"$ref": "#/$defs/Approve"}, {"$ref": "#/$defs/Deny"}],
    "$defs": {
        "Approve": {
            "type": "object",
            "properties": {"approved": {"const": True}, "editedArgs": {"type": "object"}},
            "required": ["approved"],
            "additionalProperties": False,
        },
        "Deny": {
            "type": "object",
            "properties": {"approved": {"const": False}, "reason": {"type": "string"}},
            "required": ["approved"],
            "additionalProperties": False,
        },
    },
}
# A described reference, as Pydantic v1 writes one: {"allOf": [{"$ref": …}], "description": …}.
WRAPPED_REF = {
    "type": "object",
    "properties": {
        "decision": {"allOf": [{"$ref": "#/$defs/Choice"}], "description": "yes or no"},
        "editedArgs": {"allOf": [{"$ref": "#/$defs/Args"}]},
    },
    "required": ["decision"],
    "$defs": {"Choice": {"type": "string", "enum": ["approve", "reject"]}, "Args": ARGS_DEF},
}

OFFERING = [
    ("root $ref to $defs", ROOT_REF, {"approved": True}, {"approved": False}),
    ("allOf", ALL_OF, {"approved": True}, {"approved": False}),
    ("oneOf of $refs", UNION_OF_REFS, {"approved": True}, {"approved": False}),
    ("allOf-wrapped $ref", WRAPPED_REF, {"decision": "approve"}, {"decision": "reject"}),
]
IDS = [case[0] for case in OFFERING]


def tool_item(agent, ingest, schema: Any, *, run: str = "r-1") -> InboxItem:
    interrupt = {"id": f"{run}-i", "reason": "tool_call", "toolCallId": "tc-1", "message": "Send it?"}
    interrupt["responseSchema"] = schema
    response = ingest(agent, interrupt_run(f"t-{run}", run, [interrupt], CALL_EVENTS))
    assert response.status_code == 201, response.content
    return InboxItem.objects.get(interrupt_id=f"{run}-i")


@pytest.mark.parametrize(("name", "schema", "yes", "no"), OFFERING, ids=IDS)
def test_the_shape_is_found_through_refs_and_combinators(name, schema, yes, no):
    shape = yes_no_shape(schema, proposed_args=PROPOSED)
    assert shape is not None, name
    assert (shape.payload(True), shape.payload(False), shape.edit_key) == (yes, no, "editedArgs")
    jsonschema.validate(shape.with_edits(EDITED), schema)


@pytest.mark.parametrize(("name", "schema", "yes", "no"), OFFERING, ids=IDS)
def test_the_page_offers_approve_with_edits_and_accepts_the_edit(
    client: Client, alice, agent, ingest, name, schema, yes, no
):
    item = tool_item(agent, ingest, schema)
    assert item.offers_edits
    client.force_login(alice)
    html = client.get(item.get_absolute_url()).content.decode()
    assert 'data-action="approve"' in html and 'data-action="deny"' in html
    assert 'name="edited_args"' in html
    # The field editor knows the arguments' types, read through the reference.
    assert 'data-edit-fields="{&quot;to&quot;: &quot;string&quot;' in html or name == "oneOf of $refs"
    response = client.post(f"/inbox/items/{item.pk}/decide/", {"action": "edit", "edited_args": json.dumps(EDITED)})
    assert response.status_code == 302, response.content.decode()[:2000]
    item.refresh_from_db()
    assert item.response_payload == {**yes, "editedArgs": EDITED}
    assert item.outcome == "approved_with_edits"


@pytest.mark.parametrize(("name", "schema", "yes", "no"), OFFERING, ids=IDS)
def test_the_api_accepts_the_edit(client: Client, alice, agent, ingest, name, schema, yes, no):
    item = tool_item(agent, ingest, schema)
    client.force_login(alice)
    body = {"status": "resolved", "payload": {**yes, "editedArgs": EDITED}}
    response = client.post(f"/api/v1/items/{item.pk}/decision", data=json.dumps(body), content_type="application/json")
    assert response.status_code == 201, response.content
    item.refresh_from_db()
    assert item.outcome == "approved_with_edits"


def test_edits_the_schema_does_not_offer_are_still_refused(client: Client, alice, agent, ingest):
    schema = {
        "$defs": {"Approval": {"type": "object", "properties": {"approved": {"type": "boolean"}}}},
        "$ref": "#/$defs/Approval",
    }
    item = tool_item(agent, ingest, schema)
    client.force_login(alice)
    html = client.get(item.get_absolute_url()).content.decode()
    assert 'data-action="approve"' in html and 'name="edited_args"' not in html
    body = {"status": "resolved", "payload": {"approved": True, "editedArgs": EDITED}}
    response = client.post(f"/api/v1/items/{item.pk}/decision", data=json.dumps(body), content_type="application/json")
    assert response.status_code == 400 and response.json()["error"] == "edits_not_offered"


def test_edited_args_equal_to_the_proposal_are_a_plain_approval(client: Client, alice, agent, ingest):
    item = tool_item(agent, ingest, ROOT_REF)
    client.force_login(alice)
    # The same arguments, in another key order: still the proposal.
    same = dict(reversed(list(PROPOSED.items())))
    response = client.post(
        f"/inbox/items/{item.pk}/decide/", {"action": "edit", "edited_args": json.dumps(same)}, follow=True
    )
    html = response.content.decode()
    assert "Approved: “Send it?”" in html and "Approved with edits" not in html
    item.refresh_from_db()
    assert (item.outcome, item.decisions.get().outcome) == ("approved", "approved")
    page = " ".join(client.get(item.get_absolute_url()).content.decode().split())
    assert "with edits" not in page and "data-edit-summary" not in page
    timeline = client.get(f"/audit/threads/{item.thread_id}/").content.decode()
    assert f"alice approved {item.interrupt_id}" in timeline and "with edits" not in timeline


def test_a_quorum_counts_an_unchanged_edit_as_the_same_approval(make_agent, ingest, alice, bob):
    from inbox.decisions.services import decision_submit

    strict = make_agent("strict", approvals_required=2)
    item = tool_item(strict, ingest, ROOT_REF)
    first = decision_submit(item_id=item.pk, user=alice, status="resolved", payload={"approved": True})
    assert (first.closed, first.approvals) == (False, 1)
    unchanged = {"approved": True, "editedArgs": dict(PROPOSED)}
    second = decision_submit(item_id=item.pk, user=bob, status="resolved", payload=unchanged)
    assert (second.closed, second.approvals) == (True, 2)
    item.refresh_from_db()
    assert item.outcome == "approved"


def test_claude_sdk_edits_in_updated_input_read_as_edits_everywhere(client: Client, alice, agent, ingest):
    """Claude Agent SDK offers edits as ``updatedInput`` (the emitters' table), not ``editedArgs``: the item page's
    edit summary, its history, the tool-call trail and the backtest's rows read the edit under the key it came in."""
    from inbox.policies.selectors import _edits

    metadata = {"source": "claude-sdk-deferred", "toolName": "sendEmail", "input": PROPOSED}
    interrupt = {"id": "tc-1", "reason": "tool_approval", "toolCallId": "tc-1", "metadata": metadata}
    response = ingest(agent, interrupt_run("t-1", "r-1", [interrupt], CALL_EVENTS))
    assert response.status_code == 201, response.content
    item = InboxItem.objects.get(interrupt_id="tc-1")
    client.force_login(alice)
    body = {"status": "resolved", "payload": {"behavior": "allow", "updatedInput": EDITED}}
    response = client.post(f"/api/v1/items/{item.pk}/decision", data=json.dumps(body), content_type="application/json")
    assert response.status_code == 201, response.content
    item.refresh_from_db()
    assert item.outcome == "approved_with_edits"

    page = " ".join(client.get(item.get_absolute_url()).content.decode().split())
    assert "1 field edited: <code>to</code>" in page
    assert "approved with 1 edit" in page
    trail = client.get(f"/audit/tool-calls/{item.tool_call_id}/").content.decode()
    decision = " ".join(trail.split('id="decision"')[1].split('id="result"')[0].split())
    assert "Approved with edits" in decision and "<ins>carol@example.com</ins>" in decision
    assert _edits(item) == [("to", "bob@example.com", "carol@example.com")]


# --- reading references safely ------------------------------------------------------------------


def test_only_local_pointers_are_followed():
    root = {"$defs": {"a/b": {"type": "string"}, "list": [{"type": "integer"}]}}
    assert schema_view.lookup(root, "#/$defs/a~1b") == {"type": "string"}
    assert schema_view.lookup(root, "#/$defs/list/0") == {"type": "integer"}
    assert schema_view.lookup(root, "#") is root
    for elsewhere in (
        "https://example.com/schema#/$defs/x",
        "other.json#/x",
        "#anchor",
        "#/$defs/none",
        "#/$defs/list/01",
    ):
        assert schema_view.lookup(root, elsewhere) is None, elsewhere


def test_a_reference_cycle_ends_and_offers_nothing():
    cyclic = {"$ref": "#/$defs/A", "$defs": {"A": {"$ref": "#/$defs/B"}, "B": {"$ref": "#/$defs/A"}}}
    assert schema_view.deref(cyclic, cyclic) is None
    assert schema_view.property_names(cyclic) == set()
    assert yes_no_shape(cyclic, proposed_args=PROPOSED) is None


def test_references_that_fan_out_cost_no_more_than_the_bounds():
    """Each definition points at the next one twice: followed naively, 2**40 visits."""
    defs: dict[str, Any] = {
        f"D{n}": {"allOf": [{"$ref": f"#/$defs/D{n + 1}"}, {"$ref": f"#/$defs/D{n + 1}"}]} for n in range(40)
    }
    defs["D40"] = {"properties": {"editedArgs": {"type": "object"}}}
    schema = {"$ref": "#/$defs/D0", "$defs": defs}
    started = time.monotonic()
    schema_view.object_views(schema)
    fan = {"oneOf": [{"$ref": "#"} for _ in range(50)]}
    views = schema_view.object_views(fan)
    assert time.monotonic() - started < 1.0
    assert len(views) <= schema_view.MAX_BRANCHES + 1
