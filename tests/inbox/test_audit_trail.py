"""The tool-call trail (proposal → decision with edits as a diff → result) and the thread timeline,
after real round trips with the demo agent; both follow the team rule (404 outside the user's teams)."""

from __future__ import annotations

import copy
import json

import pytest
from django.contrib.auth.models import Group

from inbox.audit.trail import args_diff
from inbox.decisions.services import decision_submit
from inbox.ingest.start import run_start
from inbox.models import InboxItem, Resume
from inbox.resumes.services import resume_dispatch
from tests.agent_servers import demo, demo_agent, demo_server  # noqa: F401
from tests.conftest import spec_example

pytestmark = pytest.mark.integration  # round trips with the demo agent

EDITED = {"to": "bob@example.com", "subject": "Lunch (moved)", "body": "Are we still on for 1pm?"}


@pytest.fixture
def round_trip(demo, demo_agent, alice):  # noqa: F811
    """Start the demo's email scenario, approve it with edits and a comment, send the resume."""
    run = run_start(agent=demo.agent, user=alice, message="email bob@example.com").run
    item = InboxItem.objects.get(run=run)
    decision_submit(
        item_id=item.pk,
        user=alice,
        status="resolved",
        payload={"approved": True, "editedArgs": EDITED},
        comment="Moved to 1pm <b>per Bob</b>",
    )
    assert resume_dispatch(resume_id=Resume.objects.get(run=run).pk) == "delivered"
    item.refresh_from_db()
    return item


def test_the_trail_shows_proposal_decision_edits_and_result(round_trip, client, alice):
    item = round_trip
    client.force_login(alice)
    response = client.get(f"/audit/tool-calls/{item.tool_call_id}/")
    assert response.status_code == 200
    page = response.content.decode()
    proposal, decision, result = (
        page.split('id="proposal"')[1].split('id="decision"')[0],
        page.split('id="decision"')[1].split('id="result"')[0],
        page.split('id="result"')[1],
    )
    assert "sendEmail" in proposal and "Are we still on for noon?" in proposal and "Lunch" in proposal
    assert "Approved" in decision and "with edits" in decision and "alice" in decision
    # The comment is shown, escaped.
    assert "Moved to 1pm &lt;b&gt;per Bob&lt;/b&gt;" in decision and "<b>per Bob</b>" not in page
    # The diff marks what changed: "noon?" became "1pm?"; the unchanged recipient is not marked.
    assert "<del>noon?</del>" in decision and "<ins>1pm?</ins>" in decision
    assert '<tr class="same">' in decision and "bob@example.com" in decision
    executed = json.loads(item.tool_result["content"])
    assert executed["args"] == EDITED
    assert item.tool_result["runId"] in result and "Lunch (moved)" in result


def test_the_trail_is_404_for_another_team_and_for_an_unknown_tool_call(round_trip, client, carol, staff):
    client.force_login(carol)
    assert client.get(f"/audit/tool-calls/{round_trip.tool_call_id}/").status_code == 404
    client.force_login(staff)
    assert client.get(f"/audit/tool-calls/{round_trip.tool_call_id}/").status_code == 200
    assert client.get("/audit/tool-calls/no-such-call/").status_code == 404


def test_a_denied_call_shows_the_denial_and_what_the_agent_reported(demo, demo_agent, alice, client):  # noqa: F811
    run = run_start(agent=demo.agent, user=alice, message="email bob@example.com").run
    item = InboxItem.objects.get(run=run)
    decision_submit(item_id=item.pk, user=alice, status="resolved", payload={"approved": False}, comment="No.")
    assert resume_dispatch(resume_id=Resume.objects.get(run=run).pk) == "delivered"
    client.force_login(alice)
    page = client.get(f"/audit/tool-calls/{item.tool_call_id}/").content.decode()
    decision, result = page.split('id="decision"')[1].split('id="result"')
    assert "Denied" in decision and "args-diff" not in decision
    # The demo agent reports the denial as the tool's result; the step is not marked as a success.
    assert "&quot;executed&quot;: false" in result and "is-ok" not in page.split('id="result"')[0][-80:]


def test_an_open_call_shows_the_proposal_and_waits(agent, ingest, alice, client):
    ingest(agent, copy.deepcopy(spec_example("approve_with_edits")))
    client.force_login(alice)
    page = client.get("/audit/tool-calls/tc-42/").content.decode()
    assert "Waiting for a decision" in page and "Nothing ran yet" in page
    # The spec example has no TOOL_CALL events: the page says so instead of erroring.
    assert "carried no TOOL_CALL events" in page


def test_the_timeline_lists_run_interrupt_decision_resume_and_result_in_order(round_trip, client, alice):
    client.force_login(alice)
    response = client.get(f"/audit/threads/{round_trip.thread_id}/")
    assert response.status_code == 200
    page = response.content.decode()
    timeline = page.split('id="timeline"')[1]
    kinds = [chunk.split('"')[0] for chunk in timeline.split("kind-")[1:]]
    # The resumed run and its result are stored before the resume is marked delivered.
    assert kinds == ["run", "interrupt", "decision", "resume", "run", "result", "attempt"]
    assert f"Interrupt {round_trip.interrupt_id}" in timeline
    assert "alice approved" in timeline and "with edits" in timeline
    assert "Resume delivered" in timeline
    assert f"Tool result for {round_trip.tool_call_id}" in timeline


def test_the_timeline_is_404_outside_the_users_teams(round_trip, client, carol, alice):
    client.force_login(carol)
    assert client.get(f"/audit/threads/{round_trip.thread_id}/").status_code == 404
    carol.groups.add(Group.objects.get(name="ops"))
    assert client.get(f"/audit/threads/{round_trip.thread_id}/").status_code == 200


def test_anonymous_users_are_sent_to_the_login_page(round_trip, client):
    for url in (f"/audit/threads/{round_trip.thread_id}/", f"/audit/tool-calls/{round_trip.tool_call_id}/"):
        response = client.get(url)
        assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")


def test_expired_items_show_on_the_timeline(agent, ingest, alice, client):
    ingest(agent, copy.deepcopy(spec_example("non_tool_input_request")))  # its expiresAt is in the past
    item = InboxItem.objects.get()
    client.force_login(alice)
    page = client.get(f"/audit/threads/{item.thread_id}/").content.decode()
    assert "Interrupt int-form expired" in page


def test_the_args_diff_marks_changed_added_removed_and_nested_fields():
    lines = args_diff(
        {"to": "a@b.com", "cc": "x@y.z", "opts": {"urgent": False}},
        {"to": "a@b.com", "opts": {"urgent": True}, "bcc": "boss@b.com"},
    )
    # In the proposal's order; a field only the edit has comes after the proposal's own.
    assert [(line.path, line.change) for line in lines] == [
        ("to", "same"),
        ("cc", "removed"),
        ("opts.urgent", "changed"),
        ("bcc", "added"),
    ]
    assert lines[2].segments == [("delete", "false"), ("insert", "true")]
