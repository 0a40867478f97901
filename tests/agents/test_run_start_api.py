"""POST /api/v1/agents/<slug>/runs: the inbox starts a run on an agent and ingests its outcome."""

from __future__ import annotations

import pytest

from inbox.models import ApiToken, Run
from tests.agent_servers import Reply
from tests.helpers.starts import start_run

pytestmark = pytest.mark.integration


def post(client, slug: str, body: dict, **extra):
    return start_run(client, slug, body, **extra)


def test_starting_a_run_ingests_its_interrupts(client, demo, demo_agent, alice):
    client.force_login(alice)
    response = post(client, "demo", {"message": "parallel"})
    assert response.status_code == 201, response.content
    body = response.json()
    assert (body["source"], body["outcome"], len(body["items"])) == ("started", "interrupt", 3)
    run = Run.objects.get(pk=body["id"])
    assert run.input["messages"][-1]["content"] == "parallel"
    assert run.input["threadId"] == body["threadId"] == demo_agent.record()["requests"][0]["threadId"]
    assert [item.tool_call["name"] for item in run.items.order_by("position")] == ["sendEmail"] * 3


def test_a_token_authenticated_client_can_start_a_run_on_a_given_thread(client, demo, demo_agent, alice):
    _, key = ApiToken.issue(alice)
    response = post(client, "demo", {"message": "hello", "threadId": "my-thread"}, HTTP_AUTHORIZATION=f"Token {key}")
    assert response.status_code == 201, response.content
    assert (response.json()["threadId"], response.json()["outcome"]) == ("my-thread", "success")


def test_a_thread_with_open_items_refuses_a_new_run_without_calling_the_agent(client, demo, demo_agent, alice):
    client.force_login(alice)
    first = post(client, "demo", {"message": "email"}).json()
    response = post(client, "demo", {"message": "email", "threadId": first["threadId"]})
    assert response.status_code == 409
    assert response.json()["error"] == "thread_has_open_interrupts"
    assert response.json()["openItems"][0]["id"] == first["items"][0]["id"]
    assert len(demo_agent.record()["requests"]) == 1


def test_an_agent_the_user_cannot_see_is_not_found(client, demo, carol):
    client.force_login(carol)
    assert post(client, "demo", {"message": "email"}).status_code == 404


def test_anonymous_callers_are_refused(client, demo):
    assert post(client, "demo", {"message": "email"}).status_code in (401, 403)


def test_a_missing_message_names_the_field(client, demo, alice):
    client.force_login(alice)
    response = post(client, "demo", {"threadId": "t"})
    assert response.status_code == 400 and "message" in response.json()


def test_an_unreachable_agent_is_a_502(client, make_agent, alice, scripted):
    server = scripted(Reply())
    make_agent("gone", endpoint=server.url)
    server.stop()
    client.force_login(alice)
    response = post(client, "gone", {"message": "email"})
    assert response.status_code == 502
    assert response.json()["error"] == "agent_unreachable"


def test_an_agent_answering_garbage_is_a_502(client, make_agent, alice, scripted):
    server = scripted(Reply(sse=[{"type": "RUN_STARTED", "threadId": "t"}]))
    make_agent("odd", endpoint=server.url)
    client.force_login(alice)
    response = post(client, "odd", {"message": "email"})
    assert response.status_code == 502
    assert response.json()["error"] == "agent_bad_reply"
    assert "runId" in response.json()["detail"]


def test_the_agents_outbound_auth_header_is_sent(client, make_agent, alice, scripted):
    server = scripted(
        Reply(
            sse=[
                {"type": "RUN_STARTED", "threadId": "t1", "runId": "r1"},
                {"type": "RUN_FINISHED", "threadId": "t1", "runId": "r1"},
            ]
        )
    )
    make_agent("authed", endpoint=server.url, auth_header_name="X-Agent-Key", auth_header_value="s3cret")
    client.force_login(alice)
    response = post(client, "authed", {"message": "hi", "threadId": "t1"})
    assert response.status_code == 201, response.content
    assert server.headers[0]["X-Agent-Key"] == "s3cret"
    assert set(server.received[0]) >= {"threadId", "runId", "messages", "state", "tools", "context", "forwardedProps"}


def test_retrying_a_resume_that_has_not_failed_is_a_409(client, demo, demo_agent, alice, staff):
    from inbox.decisions.services import decision_submit

    client.force_login(alice)
    run = post(client, "demo", {"message": "email"}).json()
    decision_submit(item_id=run["items"][0]["id"], user=alice, status="resolved", payload={"approved": True})
    client.force_login(staff)  # retrying is an operator's action
    response = client.post(f"/api/v1/runs/{run['id']}/resume/retry")
    assert response.status_code == 409
    assert response.json()["state"] == "pending"


def test_retry_on_a_run_without_a_resume_is_a_404(client, demo, demo_agent, alice, carol):
    client.force_login(alice)
    run = post(client, "demo", {"message": "email"}).json()
    assert client.post(f"/api/v1/runs/{run['id']}/resume/retry").status_code == 404
    client.force_login(carol)
    assert client.post(f"/api/v1/runs/{run['id']}/resume/retry").status_code == 404


def test_the_openapi_schema_documents_both_endpoints(client, staff):
    client.force_login(staff)
    schema = client.get("/api/schema/?format=json").json()
    assert "post" in schema["paths"]["/api/v1/agents/{slug}/runs"]
    assert "post" in schema["paths"]["/api/v1/runs/{id}/resume/retry"]
