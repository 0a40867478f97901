"""The round trip against a real LangGraph graph served by ag-ui-langgraph (emit_interrupt_outcome=True) in a
uvicorn subprocess: start a run from the inbox, decide through the API, and check the agent's own record.

Several interrupts in one resume are not covered here: ag-ui-langgraph cannot resume them on LangGraph 1.x
(ag-ui issue #2178; see tests/fixtures/ag-ui-langgraph/parallel-resume-run-error.jsonl). The demo agent
covers parallel interrupts (tests/inbox/test_resume_*.py).
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from inbox.decisions.services import decision_submit
from inbox.models import InboxItem, Resume
from inbox.resumes.services import resume_dispatch
from tests.agent_servers import AgentProcess
from tests.helpers.starts import start_run as api_start

pytestmark = pytest.mark.integration
pytest.importorskip("fastapi", reason="ag-ui-langgraph's FastAPI endpoint needs fastapi (requirements-dev.txt)")


@pytest.fixture(scope="module")
def langgraph_server(tmp_path_factory) -> Iterator[AgentProcess]:
    server = AgentProcess(module="tests.integration.langgraph_app", log_dir=tmp_path_factory.mktemp("langgraph"))
    server.start(timeout=60)
    yield server
    server.stop()


@pytest.fixture
def mailer(make_agent, langgraph_server):
    return make_agent("mailer", endpoint=langgraph_server.url).agent


def start_run(client, message: str) -> dict:
    response = api_start(client, "mailer", {"message": message})
    assert response.status_code == 201, response.json()
    return response.json()


def decide(client, item_id: int, **body) -> None:
    # The decision API is the lead's; its service is the same write path.
    from django.contrib.auth.models import User

    user = User.objects.get(pk=client.session["_auth_user_id"])
    decision_submit(item_id=item_id, user=user, **body)


def sent_for(server: AgentProcess, tool_call_id: str) -> list[dict]:
    return [entry for entry in server.record()["sent"] if entry["toolCallId"] == tool_call_id]


def test_approve_with_edits_runs_the_edited_arguments_in_the_graph(client, alice, mailer, langgraph_server):
    client.force_login(alice)
    run = start_run(client, "Email bob@example.com subject: Lunch body: Are we still on for noon?")
    assert (run["outcome"], len(run["items"])) == ("interrupt", 1)
    item = InboxItem.objects.get(pk=run["items"][0]["id"])
    assert item.reason == "tool_call" and item.offers_edits
    assert item.tool_call["name"] == "sendEmail"
    assert item.tool_call["args"] == {"to": "bob@example.com", "subject": "Lunch", "body": "Are we still on for noon?"}

    edited = {"to": "bob@example.com", "subject": "Lunch (moved)", "body": "Let's do 1pm instead."}
    decide(client, item.pk, status="resolved", payload={"approved": True, "editedArgs": edited})
    resume = Resume.objects.get(run_id=run["id"])
    assert resume_dispatch(resume_id=resume.pk) == "delivered"

    assert sent_for(langgraph_server, item.tool_call_id) == [{"toolCallId": item.tool_call_id, "args": edited}]
    resume.refresh_from_db()
    resumed = resume.resumed_run
    # ag-ui-langgraph: legacy success (no outcome) and the proposal re-emitted with the original arguments.
    assert (resumed.outcome, resumed.outcome_omitted) == ("success", True)
    assert [(c["id"], c.get("reemitted")) for c in resumed.tool_calls] == [(item.tool_call_id, True)]
    item.refresh_from_db()
    assert json.loads(item.tool_result["content"])["args"] == edited
    assert item.tool_call["args"]["subject"] == "Lunch"  # the proposal, as proposed
    # The label tells what the graph ran: other arguments than the proposal's.
    assert edited != item.proposed_args and item.outcome_label == "Approved with edits"

    shown = client.get(f"/api/v1/runs/{run['id']}").json()
    assert shown["resume"]["state"] == "delivered"
    assert shown["resume"]["input"]["resume"] == [
        {"interruptId": item.interrupt_id, "status": "resolved", "payload": {"approved": True, "editedArgs": edited}}
    ]


def test_a_denied_email_is_not_sent(client, alice, mailer, langgraph_server):
    client.force_login(alice)
    run = start_run(client, "Email carol@example.com subject: Hi body: Hello")
    item = InboxItem.objects.get(pk=run["items"][0]["id"])
    decide(client, item.pk, status="resolved", payload={"approved": False})
    assert resume_dispatch(resume_id=Resume.objects.get(run_id=run["id"]).pk) == "delivered"
    assert sent_for(langgraph_server, item.tool_call_id) == []
    item.refresh_from_db()
    assert json.loads(item.tool_result["content"])["status"] == "denied"
    assert item.outcome_label == "Denied"  # nothing ran


def test_a_cancelled_email_is_not_sent(client, alice, mailer, langgraph_server):
    client.force_login(alice)
    run = start_run(client, "Email dave@example.com subject: Hi body: Hello")
    item = InboxItem.objects.get(pk=run["items"][0]["id"])
    decide(client, item.pk, status="cancelled")
    resume = Resume.objects.get(run_id=run["id"])
    assert resume.input["resume"] == [{"interruptId": item.interrupt_id, "status": "cancelled"}]
    assert resume_dispatch(resume_id=resume.pk) == "delivered"
    assert sent_for(langgraph_server, item.tool_call_id) == []
    decisions = [d for d in langgraph_server.record()["decisions"] if d["toolCallId"] == item.tool_call_id]
    assert decisions[0]["answer"]["__agui_cancelled__"] is True
    item.refresh_from_db()
    assert item.outcome_label == "Cancelled"  # nothing ran


def test_the_inbox_refuses_a_new_run_on_a_thread_whose_interrupt_is_open(client, alice, mailer, langgraph_server):
    # ag-ui-langgraph would silently re-emit the open interrupt instead of RUN_ERROR: the inbox never asks.
    client.force_login(alice)
    run = start_run(client, "Email erin@example.com subject: Hi body: Hello")
    response = api_start(client, "mailer", {"message": "again", "threadId": run["threadId"]})
    assert response.status_code == 409
