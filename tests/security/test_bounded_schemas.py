"""A schema too costly to use is refused at ingest, naming the limit; one already stored is used within the budget.

Wide schemas once took time growing with their square (deciding an item whose ``required`` lists 40,000 names,
drawing its form) or with their size and no limit (an ``allOf`` of 20,000 entries checked at ingest). A subschema
naming its own ``$schema`` escaped the hardened validator altogether. The timeout marker turns a regression into a
failure instead of a hung suite; no test asserts a duration.
"""

from __future__ import annotations

import json

import pytest

from inbox.limits import MAX_SCHEMA_COMBINED, MAX_SCHEMA_ENUM, MAX_SCHEMA_PROPERTIES, MAX_SCHEMA_REQUIRED
from inbox.models import InboxItem, Policy
from tests.security.conftest import stored

pytestmark = pytest.mark.timeout(60, func_only=True)  # the test, not the session's database set-up

SCHEMA_PATH = "outcome.interrupts[0].responseSchema"


def run_with(*schemas: dict, thread: str = "t-w") -> dict:
    interrupts = [
        {"id": f"i-{n}", "reason": "input_required", "responseSchema": schema} for n, schema in enumerate(schemas)
    ]
    return {
        "type": "RUN_FINISHED",
        "threadId": thread,
        "runId": f"r-{thread}",
        "outcome": {"type": "interrupt", "interrupts": interrupts},
    }


def decide(client, item: InboxItem, payload):
    return client.post(
        f"/api/v1/items/{item.pk}/decision",
        data=json.dumps({"status": "resolved", "payload": payload}),
        content_type="application/json",
    )


def names(count: int, prefix: str = "f") -> list[str]:
    return [f"{prefix}{n}" for n in range(count)]


# --- refused at ingest --------------------------------------------------------------------------------
WIDE = {
    "all_of_20000": ({"allOf": [{"type": "object"}] * 20_000}, "allOf", "max_allOf", MAX_SCHEMA_COMBINED),
    "any_of_20000_consts": ({"anyOf": [{"const": n} for n in range(20_000)]}, "anyOf", "max_anyOf", 1000),
    "one_of_5000": ({"oneOf": [{"const": n} for n in range(5000)]}, "oneOf", "max_oneOf", MAX_SCHEMA_COMBINED),
    "required_5000": (
        {"type": "object", "required": names(5000)},
        "required",
        "max_required",
        MAX_SCHEMA_REQUIRED,
    ),
    "properties_5000": (
        {"type": "object", "properties": {name: {"type": "string"} for name in names(5000)}},
        "properties",
        "max_properties",
        MAX_SCHEMA_PROPERTIES,
    ),
    "enum_20000": ({"enum": list(range(20_000))}, "enum", "max_enum", MAX_SCHEMA_ENUM),
    "nested_required": (
        {"type": "object", "properties": {"inner": {"type": "object", "required": names(5000)}}},
        "properties.inner.required",
        "max_required",
        MAX_SCHEMA_REQUIRED,
    ),
}


@pytest.mark.parametrize("case", list(WIDE))
def test_a_schema_too_wide_to_use_is_refused_at_ingest_naming_the_limit(case, agent, ingest):
    schema, where, rule, limit = WIDE[case]
    before = stored()
    response = ingest(agent, run_with(schema))
    assert response.status_code == 400, response.content[:500]
    body = response.json()
    assert body["field"] == f"{SCHEMA_PATH}.{where}"
    assert body["rule"] == rule
    assert f"at most {limit}" in body["detail"]
    assert stored() == before


def test_more_subschemas_in_all_than_the_limit_is_refused(agent, ingest):
    """Each keyword within its limit, the whole too large: 40 properties of 40 anyOf entries each."""
    schema = {
        "type": "object",
        "properties": {name: {"anyOf": [{"const": n} for n in range(40)]} for name in names(40)},
    }
    response = ingest(agent, run_with(schema))
    assert response.status_code == 400, response.content[:500]
    assert response.json()["rule"] == "max_subschemas"
    assert response.json()["field"].startswith(f"{SCHEMA_PATH}.properties.")


@pytest.fixture
def steps_only(settings):
    """The limits are sized against the step budget; the clock depends on the machine (and on the other test
    processes sharing it), so these tests give it room and let the steps decide."""
    settings.INBOX_VALIDATION_MAX_SECONDS = 60


def test_a_run_s_schemas_share_one_budget(agent, ingest, steps_only):
    """Two distinct schemas each within the limits and each accepted alone, together more than one budget:
    the second is refused (rule ``validation_budget``) and nothing is stored."""
    first, second = (
        {"type": "object", "properties": {name: {"type": "string"} for name in names(MAX_SCHEMA_PROPERTIES, p)}}
        for p in ("a", "b")
    )
    before = stored()
    response = ingest(agent, run_with(first, second))
    assert response.status_code == 400, response.content[:500]
    body = response.json()
    assert body["rule"] == "validation_budget"
    assert body["field"] == "outcome.interrupts[1].responseSchema"
    assert "INBOX_VALIDATION_MAX_STEPS" in body["detail"]
    assert stored() == before
    assert ingest(agent, run_with(second, thread="t-alone")).status_code == 201


def test_a_schema_at_the_limits_is_accepted_and_decided(agent, ingest, client, alice, steps_only):
    fields = names(MAX_SCHEMA_PROPERTIES, "g")
    schema = {
        "type": "object",
        "properties": {name: {"type": "integer"} for name in fields[:-1]} | {fields[-1]: {"enum": list(range(10_000))}},
        "required": fields,
    }
    assert ingest(agent, run_with(schema)).status_code == 201
    item = InboxItem.objects.get()
    client.force_login(alice)
    missing = decide(client, item, {})
    assert missing.status_code == 400 and len(missing.json()["errors"]) == len(fields)
    assert missing.json()["field"] == "g0"
    assert client.get(f"/inbox/items/{item.pk}/").status_code == 200
    assert decide(client, item, {name: 1 for name in fields}).status_code == 201


# --- stored before the limits: used within the budget -------------------------------------------------
@pytest.fixture
def wide_item(agent, ingest) -> InboxItem:
    """An item whose schema was stored without today's ingest limits (written to the row directly)."""
    assert ingest(agent, run_with({"type": "object"})).status_code == 201
    item = InboxItem.objects.get()
    wide = names(40_000)
    schema = {"type": "object", "properties": {name: {"type": "string"} for name in wide}, "required": wide}
    InboxItem.objects.filter(pk=item.pk).update(response_schema=schema, response_schema_text=json.dumps(schema))
    item.refresh_from_db()
    return item


def test_deciding_an_item_with_a_wide_required_list_is_answered(wide_item, client, alice):
    client.force_login(alice)
    before = stored()
    response = decide(client, wide_item, {})
    assert response.status_code == 400, response.content[:500]
    assert response.json()["error"] == "invalid_payload"
    assert stored() == before


def test_an_item_with_a_wide_schema_renders_and_is_decided_from_its_page(wide_item, client, alice):
    client.force_login(alice)
    page = client.get(f"/inbox/items/{wide_item.pk}/")
    assert page.status_code == 200
    response = client.post(f"/inbox/items/{wide_item.pk}/decide/", {"action": "answer", "answer": "{}"})
    assert response.status_code == 400
    wide_item.refresh_from_db()
    assert wide_item.status == InboxItem.Status.OPEN


def test_an_item_whose_union_repeats_a_branch_is_listed_shown_and_bulk_decided(
    agent, ingest, client, alice, steps_only
):
    """Finding the yes/no shape paired every branch's approval with every branch's denial and validated each
    pair: cubic in the branches (80 took a minute). Each distinct answer is now tried once, within one budget."""
    branch = {"properties": {"approved": {"type": "boolean"}}, "required": ["approved"]}
    schema = {"type": "object", "properties": {"approved": {"type": "boolean"}}, "oneOf": [branch] * 150}
    body = run_with(schema)
    body["outcome"]["interrupts"][0]["reason"] = "confirmation"
    assert ingest(agent, body).status_code == 201
    item = InboxItem.objects.get()
    client.force_login(alice)
    assert client.get("/inbox/").status_code == 200
    assert client.get(f"/inbox/items/{item.pk}/").status_code == 200
    bulk = client.post(
        "/api/v1/items/bulk-decision",
        data=json.dumps({"ids": [item.pk], "action": "approve"}),
        content_type="application/json",
    )
    assert bulk.status_code < 500, bulk.content[:300]
    item.refresh_from_db()
    assert item.status == InboxItem.Status.OPEN  # every branch matches a yes, so oneOf refuses it: the form


def test_many_patterns_against_many_keys_are_counted(agent, ingest, client, alice, steps_only):
    """``patternProperties`` and ``additionalProperties`` try every pattern on every key: one keyword each, but
    300 patterns and 20,000 keys are six million searches (minutes). Each search is now a step."""
    schema = {
        "type": "object",
        "patternProperties": {f"^x{n}$": {} for n in range(300)},
        "additionalProperties": False,
    }
    assert ingest(agent, run_with(schema)).status_code == 201
    client.force_login(alice)
    response = decide(client, InboxItem.objects.get(), {f"k{n}": 1 for n in range(20_000)})
    assert response.status_code == 400, response.content[:300]
    assert "takes more than" in response.json()["detail"]


# --- a subschema's own $schema does not escape the hardened validator ---------------------------------
def test_a_subschema_naming_its_own_dialect_still_matches_in_linear_time(agent, ingest, client, alice):
    dialect = "https://json-schema.org/draft/2020-12/schema"
    schema = {"type": "object", "properties": {"name": {"$schema": dialect, "pattern": "^(a+)+$"}}}
    assert ingest(agent, run_with(schema)).status_code == 201
    client.force_login(alice)
    response = decide(client, InboxItem.objects.get(), {"name": "a" * 40 + "!"})
    assert response.status_code == 400
    assert response.json()["field"] == "name"


# --- policies -----------------------------------------------------------------------------------------
def test_a_policy_schema_too_wide_to_use_is_refused(client, staff, agent):
    client.force_login(staff)
    body = {"name": "wide", "action": "approve", "agent": "mailer", "matchSchema": {"allOf": [{}] * 3000}}
    response = client.post("/api/v1/policies", data=json.dumps(body), content_type="application/json")
    assert response.status_code == 400, response.content[:500]
    assert response.json()["field"] == "matchSchema.allOf"
    assert not Policy.objects.exists()
