"""Checking an answer against an agent's schema takes bounded time, and never while rows are locked.

Each case once took seconds to minutes of CPU (with the run's row locked): catastrophic backtracking in a
`pattern`, quadratic `uniqueItems`, an exponential `anyOf` chain. Each is now answered 4xx at once; the
timeout marker turns a regression into a failure instead of a hung suite.
"""

from __future__ import annotations

import json

import pytest
from django.db import connection

from inbox.core import jsonschema_safe
from inbox.models import InboxItem
from tests.security.conftest import stored

pytestmark = pytest.mark.timeout(10, func_only=True)  # the test, not the session's database set-up


def post_item(agent, ingest, schema: dict) -> InboxItem:
    body = {
        "type": "RUN_FINISHED",
        "threadId": "t-v",
        "runId": "r-v",
        "outcome": {
            "type": "interrupt",
            "interrupts": [{"id": "i-v", "reason": "input_required", "responseSchema": schema}],
        },
    }
    response = ingest(agent, body)
    assert response.status_code == 201, response.content
    return InboxItem.objects.get()


def decide(client, item, payload):
    return client.post(
        f"/api/v1/items/{item.pk}/decision",
        data=json.dumps({"status": "resolved", "payload": payload}),
        content_type="application/json",
    )


def exponential_defs(levels: int) -> dict:
    """Each level refers to the next twice: 2**levels paths, in a schema of a few hundred bytes."""
    defs = {f"l{n}": {"anyOf": [{"$ref": f"#/$defs/l{n + 1}"}, {"$ref": f"#/$defs/l{n + 1}"}]} for n in range(levels)}
    defs[f"l{levels}"] = {"type": "string"}
    return {"$defs": defs, "$ref": "#/$defs/l0"}


HOSTILE = {
    "catastrophic_pattern": ({"type": "string", "pattern": "^(a+)+$"}, "a" * 5000 + "!", 400),
    "catastrophic_pattern_property": (
        {"type": "object", "patternProperties": {"^(a+)+$": {"type": "integer"}}, "additionalProperties": False},
        {"a" * 5000 + "!": 1},
        400,
    ),
    "catastrophic_property_names": (
        {"type": "object", "propertyNames": {"pattern": "^(a|aa)+$"}},
        {"a" * 5000 + "!": 1},
        400,
    ),
    "unique_items_over_6000_objects": (
        {"type": "array", "uniqueItems": True},
        [{"n": n} for n in range(6000)] + [{"n": 0}],
        400,
    ),
    "enum_times_array": (
        {"type": "array", "items": {"enum": list(range(10_000))}},
        list(range(8000)) + [-1],
        400,
    ),
    "exponential_any_of_chain": (exponential_defs(40), 12, 400),
    "answer_over_the_size_limit": ({"type": "array"}, ["x" * 1000] * 300, 413),
}


@pytest.mark.parametrize("case", list(HOSTILE))
def test_hostile_answers_are_refused_at_once(case, agent, ingest, client, alice):
    schema, payload, status = HOSTILE[case]
    item = post_item(agent, ingest, schema)
    client.force_login(alice)
    before = stored()
    response = decide(client, item, payload)
    assert response.status_code == status, response.content[:500]
    assert stored() == before


def test_a_unique_array_of_thousands_of_objects_is_accepted(agent, ingest, client, alice):
    item = post_item(agent, ingest, {"type": "array", "uniqueItems": True})
    client.force_login(alice)
    assert decide(client, item, [{"n": n, "same": True} for n in range(6000)]).status_code == 201


def test_unique_items_keeps_jsonschema_equality(agent, ingest, client, alice):
    """1 and 1.0 are the same JSON number; true and 1 are not."""
    assert jsonschema_safe.iter_errors({"uniqueItems": True}, [1, 1.0])
    assert not jsonschema_safe.iter_errors({"uniqueItems": True}, [True, 1])
    assert not jsonschema_safe.iter_errors({"uniqueItems": True}, [{"a": [1]}, {"a": [True]}])
    assert not jsonschema_safe.iter_errors({"enum": [1]}, 1.0)
    assert jsonschema_safe.iter_errors({"enum": [1]}, True)


def test_the_answer_is_validated_before_any_row_is_locked(agent, ingest, client, alice, monkeypatch):
    item = post_item(agent, ingest, {"type": "object", "properties": {"n": {"type": "integer"}}})
    seen: list[int] = []
    validate = jsonschema_safe.iter_errors
    outside = len(connection.atomic_blocks)  # the test's own transaction

    def spy(schema, payload):
        seen.append(len(connection.atomic_blocks))
        return validate(schema, payload)

    monkeypatch.setattr(jsonschema_safe, "iter_errors", spy)
    client.force_login(alice)
    assert decide(client, item, {"n": "x"}).status_code == 400
    assert decide(client, item, {"n": 1}).status_code == 201
    assert seen == [outside, outside]
