"""One error type: every refusal is an ApplicationError rendered as one JSON shape by the API and inline by
the pages; declared input (serializers) names each offending field; limits come from inbox.limits."""

from __future__ import annotations

import copy
import json

import pytest

from inbox import limits
from inbox.decisions.rules import validate_payload
from inbox.models import Decision, InboxItem
from tests.conftest import spec_example


@pytest.fixture
def email_item(agent, ingest) -> InboxItem:
    assert ingest(agent, copy.deepcopy(spec_example("minimal_tool_approval"))).status_code == 201
    return InboxItem.objects.get()


def post(client, url: str, body) -> object:
    return client.post(url, data=json.dumps(body), content_type="application/json")


def test_a_refusal_has_the_one_shape_whichever_api_refuses(client, alice, email_item):
    client.force_login(alice)
    decision = post(client, f"/api/v1/items/{email_item.pk}/decision", {"status": "maybe"})
    bulk = post(client, "/api/v1/items/bulk-decision", {"ids": ["1"], "action": "approve"})
    assign = post(client, f"/api/v1/items/{email_item.pk}/assign", {"assignee": "nobody"})
    comment = post(client, f"/api/v1/items/{email_item.pk}/comments", {"body": 7})
    for response, field, code in (
        (decision, "status", "invalid_status"),
        (bulk, "ids", "invalid"),
        (assign, "assignee", "invalid_assignee"),
        (comment, "body", "invalid_comment"),
    ):
        body = response.json()
        assert response.status_code == 400, body
        assert (body["error"], body["field"], body["errors"][0]["path"]) == (code, field, field)
        assert body["detail"] and body["errors"][0]["message"]
    assert bulk.json()["errors"][0]["message"] == "item 0: must be an integer"
    assert comment.json()["errors"][0]["message"] == "must be a string"
    assert not Decision.objects.exists()


def test_a_null_comment_is_no_comment(client, alice, email_item):
    client.force_login(alice)
    body = {"status": "resolved", "payload": {"approved": True}, "comment": None}
    response = post(client, f"/api/v1/items/{email_item.pk}/decision", body)
    assert response.status_code == 201 and response.json()["decision"]["comment"] == ""


def test_a_bulk_decision_over_the_limit_is_refused_before_anything_is_decided(client, alice, email_item):
    client.force_login(alice)
    ids = [email_item.pk] + list(range(10**6, 10**6 + limits.MAX_BULK_ITEMS))
    response = post(client, "/api/v1/items/bulk-decision", {"ids": ids, "action": "approve"})
    assert response.status_code == 400
    assert response.json()["errors"] == [{"path": "ids", "message": f"at most {limits.MAX_BULK_ITEMS} items at once"}]
    email_item.refresh_from_db()
    assert email_item.is_open


def test_a_drf_validation_error_keeps_its_field_keys_and_gains_the_common_ones(client, alice, agent):
    client.force_login(alice)
    response = post(client, f"/api/v1/agents/{agent.agent.slug}/runs", {"threadId": "x" * (limits.MAX_ID_LENGTH + 1)})
    body = response.json()
    assert response.status_code == 400
    assert "message" in body and "threadId" in body  # DRF's field-keyed members, as before
    assert body["error"] == "invalid" and body["field"] == "message"
    assert {error["path"] for error in body["errors"]} == {"message", "threadId"}


def test_the_ingest_size_refusal_names_the_field_and_rule(agent, ingest, settings):
    settings.INBOX_INGEST_MAX_BYTES = 100
    response = ingest(agent, copy.deepcopy(spec_example("minimal_tool_approval")))
    assert response.status_code == 413
    assert response.json() == {
        "error": "body_too_large",
        "detail": "The body is larger than the 100-byte limit.",
        "field": "body",
        "rule": "max_bytes",
    }


def test_a_schema_the_validator_cannot_apply_is_a_refusal_but_a_bug_is_not():
    refused = validate_payload({"type": "string", "pattern": "("}, "x")
    assert refused and "cannot be applied" in refused[0]["message"]
    with pytest.raises(AttributeError):  # a programming error surfaces (a 500), never a 400
        validate_payload({"type": "object", "properties": 5}, {"a": 1})


def test_forms_and_the_openapi_document_read_the_limits(client, alice, email_item):
    client.force_login(alice)
    item_page = client.get(f"/inbox/items/{email_item.pk}/").content.decode()
    assert f'maxlength="{limits.MAX_DECISION_COMMENT}"' in item_page
    assert f'maxlength="{limits.MAX_DISCUSSION_COMMENT}"' in item_page
    schema = client.get("/api/schema/", HTTP_ACCEPT="application/json").json()
    decision = schema["paths"]["/api/v1/items/{id}/decision"]["post"]["requestBody"]["content"]["application/json"]
    assert decision["schema"]["properties"]["comment"]["maxLength"] == limits.MAX_DECISION_COMMENT
    bulk_ref = schema["paths"]["/api/v1/items/bulk-decision"]["post"]["requestBody"]["content"]["application/json"]
    bulk = schema["components"]["schemas"][bulk_ref["schema"]["$ref"].rsplit("/", 1)[1]]
    assert bulk["properties"]["ids"]["maxItems"] == limits.MAX_BULK_ITEMS
    assert bulk["properties"]["comment"]["maxLength"] == limits.MAX_DECISION_COMMENT
    ingest = schema["paths"]["/api/v1/runs"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    interrupts = ingest["oneOf"][0]["properties"]["outcome"]["properties"]["interrupts"]
    assert interrupts["maxItems"] == limits.max_interrupts_per_run()


def test_the_bulk_limit_is_the_services_on_the_page_too(client, alice, email_item):
    client.force_login(alice)
    ids = [email_item.pk] + list(range(10**6, 10**6 + limits.MAX_BULK_ITEMS))
    page = client.post("/inbox/bulk/", {"ids": ids, "action": "approve"}, follow=True).content.decode()
    assert f"At most {limits.MAX_BULK_ITEMS} items at once." in page
    email_item.refresh_from_db()
    assert email_item.is_open and not Decision.objects.exists()
