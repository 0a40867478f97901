"""No `$ref` is ever fetched: not at ingest, not when the item's page renders, not when it is decided.

Each form of reference an agent could use to make the server reach out — an absolute http URL, a file:// URL,
a relative reference under an http or file `$id`, a `$dynamicRef` — is tried against a real loopback listener
that must receive no request and a real local file that must not be opened (an audit hook sees every open).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from inbox.models import InboxItem
from tests.security.conftest import stored

pytestmark = pytest.mark.timeout(30, func_only=True)  # the test, not the session's database set-up


def _forms(url: str, local: Path) -> dict[str, tuple[dict, str]]:
    """name: (responseSchema, path of the offending keyword inside it)"""
    return {
        "absolute_http": ({"type": "object", "properties": {"x": {"$ref": f"{url}/x.json"}}}, "properties.x.$ref"),
        "file_uri": ({"$ref": local.as_uri()}, "$ref"),
        "relative_under_http_id": ({"$id": f"{url}/schemas/root.json", "$ref": "x.json"}, "$ref"),
        "relative_under_file_id": ({"$id": local.parent.as_uri() + "/root.json", "$ref": local.name}, "$ref"),
        "nested_http_id": (
            {"type": "object", "properties": {"y": {"$id": f"{url}/nested/", "$ref": "y.json"}}},
            "properties.y.$ref",
        ),
        "dynamic_ref": ({"$dynamicRef": f"{url}/dynamic.json"}, "$dynamicRef"),
    }


FORMS = list(_forms("http://x", Path("/x")))


@pytest.fixture
def local_schema(tmp_path: Path, opened_files) -> Path:
    path = tmp_path / "local-schema.json"
    path.write_text(json.dumps({"type": "string"}))
    opened_files.watching = {str(path)}
    return path


def _run(schema: dict) -> dict:
    return {
        "events": [
            {
                "type": "RUN_FINISHED",
                "threadId": "t-ref",
                "runId": "r-ref",
                "outcome": {
                    "type": "interrupt",
                    "interrupts": [{"id": "i-ref", "reason": "input_required", "responseSchema": schema}],
                },
            }
        ]
    }


@pytest.mark.parametrize("form", FORMS)
def test_ingest_refuses_a_reference_outside_the_schema(form, agent, ingest, listener, local_schema, opened_files):
    schema, where = _forms(listener.url, local_schema)[form]
    before = stored()
    response = ingest(agent, _run(schema))

    assert response.status_code == 400, response.content
    body = response.json()
    assert body["field"] == f"events[0].outcome.interrupts[0].responseSchema.{where}"
    assert body["rule"] == "ref_internal"
    assert "only references inside it" in body["detail"]
    assert stored() == before
    assert listener.requests == [] and opened_files.seen == []


@pytest.mark.parametrize("form", FORMS)
def test_an_item_stored_with_such_a_reference_is_rendered_and_refused_without_fetching(
    form, agent, ingest, client, alice, listener, local_schema, opened_files
):
    """Items stored before ingest refused these (or written by hand) still never fetch."""
    assert ingest(agent, _run({"type": "object"})).status_code == 201
    schema, _ = _forms(listener.url, local_schema)[form]
    InboxItem.objects.update(response_schema=schema)
    item = InboxItem.objects.get()
    client.force_login(alice)

    page = client.get(f"/inbox/items/{item.pk}/")
    assert page.status_code == 200

    before = stored()
    api = client.post(
        f"/api/v1/items/{item.pk}/decision",
        data=json.dumps({"status": "resolved", "payload": {"x": 42, "y": 42}}),
        content_type="application/json",
    )
    assert api.status_code == 400, api.content
    assert "cannot be applied" in api.json()["detail"]
    form_post = client.post(f"/inbox/items/{item.pk}/decide/", {"action": "answer", "answer": '{"x": 42, "y": 42}'})
    assert form_post.status_code == 400
    assert stored() == before
    assert InboxItem.objects.get().status == "open"
    assert listener.requests == [] and opened_files.seen == []


def test_references_inside_the_schema_keep_working(agent, ingest, client, alice):
    schema = {
        "$defs": {"year": {"type": "integer", "minimum": 2000}},
        "type": "object",
        "properties": {"year": {"$ref": "#/$defs/year"}},
        "required": ["year"],
    }
    assert ingest(agent, _run(schema)).status_code == 201
    item = InboxItem.objects.get()
    client.force_login(alice)

    def decide(payload):
        return client.post(
            f"/api/v1/items/{item.pk}/decision",
            data=json.dumps({"status": "resolved", "payload": payload}),
            content_type="application/json",
        )

    refused = decide({"year": 1999})
    assert refused.status_code == 400 and refused.json()["errors"][0]["path"] == "year"
    assert decide({"year": 2024}).status_code == 201


def test_a_reference_to_nothing_inside_the_schema_is_refused(agent, ingest):
    response = ingest(agent, _run({"$ref": "#/$defs/missing"}))
    assert response.status_code == 400
    assert response.json()["rule"] == "ref_resolvable"
