"""GET /api/v1/items, /items/<id>, /runs/<id>: session or DRF token auth, filters, pagination, OpenAPI."""

from __future__ import annotations

import copy
import os

from inbox.models import ApiToken
from tests.conftest import spec_example


def ingest_examples(agent, ingest) -> None:
    for name in ("minimal_tool_approval", "parallel_interrupts"):
        assert ingest(agent, copy.deepcopy(spec_example(name))).status_code == 201


def test_an_approver_lists_items_newest_first_with_a_token(agent, ingest, alice, client):
    ingest_examples(agent, ingest)
    _, key = ApiToken.issue(alice)

    response = client.get("/api/v1/items", HTTP_AUTHORIZATION=f"Token {key}")
    assert response.status_code == 200
    body = response.json()
    assert body["count"] == 4
    assert [r["interruptId"] for r in body["results"]][:1] in (["i-1"], ["i-2"], ["i-3"])
    assert body["results"][-1]["interruptId"] == "int-abc123"


def test_items_filter_by_status_agent_reason_and_thread(make_agent, ingest, alice, client):
    one, two = make_agent("one"), make_agent("two")
    ingest(one, copy.deepcopy(spec_example("minimal_tool_approval")))
    ingest(two, copy.deepcopy(spec_example("parallel_interrupts")))
    ingest(two, copy.deepcopy(spec_example("non_tool_input_request")))  # stored expired
    client.force_login(alice)

    def ids(query: str) -> list[str]:
        return sorted(r["interruptId"] for r in client.get(f"/api/v1/items?{query}").json()["results"])

    assert ids("agent=one") == ["int-abc123"]
    assert ids("status=expired") == ["int-form"]
    assert ids("reason=input_required") == ["int-form"]
    assert ids("thread=thread-3") == ["i-1", "i-2", "i-3"]
    assert ids("status=open&agent=two") == ["i-1", "i-2", "i-3"]


def test_an_unknown_status_filter_is_a_400_naming_the_field(alice, client):
    client.force_login(alice)
    response = client.get("/api/v1/items?status=pending")
    assert response.status_code == 400 and "status" in response.json()


def test_the_item_and_run_endpoints_return_everything_the_agent_sent(agent, ingest, alice, client):
    run_id = ingest(agent, copy.deepcopy(spec_example("approve_with_edits"))).json()["id"]
    client.force_login(alice)

    run = client.get(f"/api/v1/runs/{run_id}").json()
    assert run["runId"] == "run-10" and run["resume"] is None
    item = client.get(f"/api/v1/items/{run['items'][0]['id']}").json()
    assert item["toolCallId"] == "tc-42"
    assert item["metadata"] == {"langgraph": {"checkpointId": "ckpt-xyz", "nodeId": "tool_executor"}}
    assert item["responseSchema"]["properties"]["editedArgs"]["properties"]["to"]["format"] == "email"


def test_anonymous_readers_are_refused(agent, ingest, client):
    ingest_examples(agent, ingest)
    assert client.get("/api/v1/items").status_code in (401, 403)


def test_the_openapi_schema_describes_the_ingest_body(client, db):
    response = client.get("/api/schema/?format=json")
    assert response.status_code == 200
    schema = response.json()
    ingest = schema["paths"]["/api/v1/runs"]["post"]
    assert "application/json" in ingest["requestBody"]["content"]
    assert "text/event-stream" in ingest["requestBody"]["content"]
    assert {"201", "400", "401", "409", "413"} <= set(ingest["responses"])
    assert "/api/v1/items/{id}" in schema["paths"]
    assert ingest["security"] == [{"agentToken": []}]
    scheme = schema["components"]["securitySchemes"]["agentToken"]
    assert (scheme["type"], scheme["scheme"]) == ("http", "bearer") and "agent_create" in scheme["description"]
    comment = schema["components"]["schemas"]["CommentInputRequest"]["properties"]["body"]
    assert comment["maxLength"] == 10_000


def test_the_openapi_schema_generates_without_warnings(db):
    from django.core.management import call_command

    call_command("spectacular", "--validate", "--fail-on-warn", "--file", os.devnull)


def test_the_api_docs_page_renders(client, db):
    assert client.get("/api/docs/").status_code == 200


def test_the_item_list_counts_up_to_its_bound_and_says_when_it_stopped(agent, ingest, alice, client, monkeypatch):
    """A million items are never counted: past ``LIST_COUNT_LIMIT`` the count reads the bound, ``countIsExact`` is
    false and the pages stop there, as the list page's pager does."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from inbox.api import listing as api

    ingest_examples(agent, ingest)
    client.force_login(alice)
    body = client.get("/api/v1/items").json()
    assert (body["count"], body["countIsExact"], len(body["results"])) == (4, True, 4)

    monkeypatch.setattr(api, "LIST_COUNT_LIMIT", 3)
    with CaptureQueriesContext(connection) as queries:
        body = client.get("/api/v1/items").json()
    assert (body["count"], body["countIsExact"], len(body["results"]), body["next"]) == (3, False, 3, None)
    counts = [q["sql"] for q in queries.captured_queries if "COUNT(" in q["sql"].upper()]
    assert len(counts) == 1 and "LIMIT 4" in counts[0], counts
