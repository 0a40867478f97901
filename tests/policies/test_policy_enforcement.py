"""Auto-decision policies at ingest: enforce approve / deny, quorum raise, route, shadow, and the run's resume."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.contrib.auth.models import Group
from django.utils import timezone

from inbox.decisions.services import decision_submit
from inbox.models import AuditEvent, Decision, InboxItem, Resume
from inbox.models.policies import Policy, PolicyMatch
from inbox.policies.selectors import policy_stats
from inbox.policies.services import policy_create, policy_update
from tests.policies.runs import iso, post_tool_run

INTERNAL = {
    "type": "object",
    "properties": {"to": {"type": "string", "pattern": "@ourco\\.com$"}},
    "required": ["to"],
}
BIG_REFUND = {
    "type": "object",
    "properties": {"amount": {"type": "number", "exclusiveMinimum": 500}},
    "required": ["amount"],
}


@pytest.fixture
def internal_email(staff, agent) -> Policy:
    return policy_create(
        user=staff,
        fields={
            "name": "Internal email",
            "agent": agent.agent,
            "reason": "tool_call",
            "tool_name": "sendEmail",
            "match_schema": INTERNAL,
            "action": "approve",
            "mode": "enforce",
        },
    )


def item(run, position: int) -> InboxItem:
    return run.items.get(position=position)


def test_an_enforced_approve_decides_through_the_decision_service_and_resumes_the_run(ingest, agent, internal_email):
    run = post_tool_run(ingest, agent, "t1", "r1", ("sendEmail", {"to": "ann@ourco.com", "subject": "Hi"}))
    decided = item(run, 0)
    assert decided.status == "resolved"
    assert decided.response_payload == {"approved": True}
    assert decided.decided_by.username == "policy:Internal email"
    decision = Decision.objects.get(item=decided)
    assert decision.final and decision.user == internal_email.service_user
    event = AuditEvent.objects.get(verb="item.resolved", object_id=str(decided.pk))
    assert event.actor_label == "policy:Internal email"
    assert event.data["policyVersion"] == 1 and event.data["policy"] == "Internal email"
    # Every item of the run was decided by policy: the resume is queued at once, answering it.
    resume = Resume.objects.get(run=run)
    assert resume.input["resume"] == [{"interruptId": "r1-i1", "status": "resolved", "payload": {"approved": True}}]
    match = PolicyMatch.objects.get(item=decided)
    assert match.outcome == "decided" and match.decision == decision and match.policy_version == 1


def test_the_ingest_answer_shows_items_as_the_policy_left_them(ingest, agent, internal_email):
    from tests.policies.runs import tool_run

    body = ingest(agent, tool_run("t1", "r1", ("sendEmail", {"to": "ann@ourco.com"}))).json()
    assert [entry["status"] for entry in body["items"]] == ["resolved"]


def test_the_announcement_after_the_commit_sees_what_the_policy_decided(
    ingest, agent, alice, internal_email, monkeypatch, mailoutbox, django_capture_on_commit_callbacks
):
    from inbox.teams.tasks import announce_new_runs

    # The task runs at the commit, in this process.
    monkeypatch.setattr(announce_new_runs, "apply_async", lambda **options: announce_new_runs())
    with django_capture_on_commit_callbacks(execute=True):
        decided = post_tool_run(ingest, agent, "t1", "r1", ("sendEmail", {"to": "ann@ourco.com"}))
        left_open = post_tool_run(ingest, agent, "t2", "r2", ("sendEmail", {"to": "eve@elsewhere.com"}))
    assert item(decided, 0).status == "resolved" and item(left_open, 0).status == "open"
    assert [message.to for message in mailoutbox] == [["alice@example.com"]]
    body = mailoutbox[0].body
    assert f"/inbox/items/{item(left_open, 0).pk}/" in body and f"/inbox/items/{item(decided, 0).pk}/" not in body


def test_an_enforced_deny_denies(ingest, agent, staff):
    policy_create(
        user=staff,
        fields={
            "name": "No big refunds",
            "agent": agent.agent,
            "tool_name": "refundPayment",
            "match_schema": BIG_REFUND,
            "action": "deny",
            "mode": "enforce",
        },
    )
    run = post_tool_run(
        ingest, agent, "t1", "r1", ("refundPayment", {"amount": 900}), ("refundPayment", {"amount": 20})
    )
    big, small = item(run, 0), item(run, 1)
    assert big.status == "resolved" and big.response_payload == {"approved": False}
    assert big.decided_by.username == "policy:No big refunds"
    assert small.status == "open"  # 20 is not > 500
    assert not Resume.objects.filter(run=run).exists()


def test_a_policy_on_a_team_applies_to_the_teams_agents(ingest, agent, staff, team):
    policy_create(
        user=staff,
        fields={
            "name": "Team approves",
            "team": team,
            "tool_name": "sendEmail",
            "action": "approve",
            "mode": "enforce",
        },
    )
    run = post_tool_run(ingest, agent, "t1", "r1", ("sendEmail", {"to": "x@y.z"}))
    assert item(run, 0).status == "resolved"


def test_require_n_approvals_raises_the_items_quorum(ingest, agent, staff, alice, bob):
    policy_create(
        user=staff,
        fields={
            "name": "Two for refunds",
            "agent": agent.agent,
            "tool_name": "refundPayment",
            "action": "require_approvals",
            "approvals": 2,
            "mode": "enforce",
        },
    )
    run = post_tool_run(ingest, agent, "t1", "r1", ("refundPayment", {"amount": 10}))
    refund = item(run, 0)
    assert refund.approvals_required == 2 and refund.status == "open"
    first = decision_submit(item_id=refund.pk, user=alice, status="resolved", payload={"approved": True})
    assert not first.closed and (first.approvals, first.required) == (1, 2)
    second = decision_submit(item_id=refund.pk, user=bob, status="resolved", payload={"approved": True})
    assert second.closed
    assert AuditEvent.objects.filter(verb="policy.quorum_raised", object_id=str(refund.pk)).exists()


def test_an_approval_by_policy_counts_towards_a_quorum_only_when_the_policy_says_so(ingest, make_agent, staff, alice):
    strict = make_agent("strict", approvals_required=2)
    counted = make_agent("counted", approvals_required=2)
    for name, target, counts in (("Not counted", strict, False), ("Counted", counted, True)):
        policy_create(
            user=staff,
            fields={
                "name": name,
                "agent": target.agent,
                "action": "approve",
                "mode": "enforce",
                "counts_as_approver": counts,
            },
        )
    strict_item = item(post_tool_run(ingest, strict, "t1", "r1", ("sendEmail", {})), 0)
    counted_item = item(post_tool_run(ingest, counted, "t1", "r1", ("sendEmail", {})), 0)
    assert strict_item.status == counted_item.status == "open"
    # Not counted: alice's approval is the first of two.
    assert not decision_submit(item_id=strict_item.pk, user=alice, status="resolved", payload={"approved": True}).closed
    # Counted: the policy was one of two, alice's closes it.
    assert decision_submit(item_id=counted_item.pk, user=alice, status="resolved", payload={"approved": True}).closed
    assert PolicyMatch.objects.get(item=strict_item).outcome == "recorded"
    assert PolicyMatch.objects.get(item=counted_item).outcome == "voted"


def test_route_hands_the_item_to_another_team(ingest, agent, staff, alice, dave, client):
    finance = Group.objects.get(name="finance")
    policy_create(
        user=staff,
        fields={
            "name": "Refunds to finance",
            "agent": agent.agent,
            "tool_name": "refundPayment",
            "action": "route",
            "route_team": finance,
            "mode": "enforce",
        },
    )
    run = post_tool_run(ingest, agent, "t1", "r1", ("refundPayment", {"amount": 10}), ("sendEmail", {"to": "a@b"}))
    refund, email = item(run, 0), item(run, 1)
    assert refund.routed_team == finance and email.routed_team is None
    client.force_login(dave)
    assert client.get(f"/api/v1/items/{refund.pk}").status_code == 200
    assert client.get(f"/api/v1/items/{email.pk}").status_code == 404
    client.force_login(alice)
    assert client.get(f"/api/v1/items/{refund.pk}").status_code == 404
    assert decision_submit(item_id=refund.pk, user=dave, status="resolved", payload={"approved": True}).closed


def test_a_policy_matching_one_of_two_items_leaves_the_other_to_a_human_and_one_resume_follows(
    ingest, agent, internal_email, alice
):
    run = post_tool_run(
        ingest, agent, "t1", "r1", ("sendEmail", {"to": "ann@ourco.com"}), ("sendEmail", {"to": "eve@evil.example"})
    )
    auto, human = item(run, 0), item(run, 1)
    assert auto.status == "resolved" and human.status == "open"
    assert not Resume.objects.filter(run=run).exists()
    decision_submit(item_id=human.pk, user=alice, status="resolved", payload={"approved": False})
    resume = Resume.objects.get(run=run)
    assert [entry["payload"] for entry in resume.input["resume"]] == [{"approved": True}, {"approved": False}]
    assert Resume.objects.filter(run__thread=run.thread).count() == 1


def test_a_policy_does_not_decide_an_item_whose_run_cannot_be_resumed_any_more(ingest, agent, internal_email):
    """Policy vs expiry: one interrupt of the run is already past its expiresAt, so the run can never be
    resumed: ingest closes its sibling as expired at once (with that reason), so no policy decides it."""
    from tests.policies.runs import tool_run

    events = tool_run("t1", "r1", ("sendEmail", {"to": "ann@ourco.com"}), ("sendEmail", {"to": "bo@ourco.com"}))
    events[-1]["outcome"]["interrupts"][1]["expiresAt"] = iso(timezone.now() - timedelta(minutes=1))
    response = ingest(agent, events)
    assert response.status_code == 201, response.content
    run = agent.agent.runs.get()
    fresh, stale = item(run, 0), item(run, 1)
    assert stale.status == "expired"
    assert fresh.status == "expired"
    assert "another interrupt of the same run expired" in fresh.status_note
    assert not Decision.objects.filter(item__run=run).exists()
    assert not PolicyMatch.objects.filter(item=fresh, outcome="decided").exists()
    assert not Resume.objects.filter(run=run, state="pending").exists()


def test_a_policy_approval_the_items_schema_refuses_leaves_the_item_to_people(ingest, agent, staff):
    policy_create(
        user=staff, fields={"name": "Approve all", "agent": agent.agent, "action": "approve", "mode": "enforce"}
    )
    schema = {
        "type": "object",
        "properties": {"approved": {"type": "boolean"}, "why": {"type": "string"}},
        "required": ["approved", "why"],
    }
    run = post_tool_run(ingest, agent, "t1", "r1", ("sendEmail", {}), responseSchema=schema)
    assert item(run, 0).status == "open"
    match = PolicyMatch.objects.get(item=item(run, 0))
    assert match.outcome == "refused" and "invalid_payload" in match.note


def test_shadow_policies_record_and_the_stats_count_agreement_with_people(ingest, agent, staff, alice):
    policy = policy_create(
        user=staff,
        fields={"name": "Shadow approve", "agent": agent.agent, "tool_name": "sendEmail", "action": "approve"},
    )
    assert policy.mode == "shadow"
    run = post_tool_run(ingest, agent, "t1", "r1", *[("sendEmail", {"n": n}) for n in range(3)])
    items = list(run.items.order_by("position"))
    assert all(entry.status == "open" for entry in items)  # shadow never decides
    decision_submit(item_id=items[0].pk, user=alice, status="resolved", payload={"approved": True})
    decision_submit(item_id=items[1].pk, user=alice, status="resolved", payload={"approved": True})
    decision_submit(item_id=items[2].pk, user=alice, status="resolved", payload={"approved": False})
    stats = {row.policy.pk: row for row in policy_stats()}[policy.pk]
    assert (stats.matches, stats.compared, stats.agreed) == (3, 3, 2)
    assert stats.agreement == pytest.approx(2 / 3)
    assert stats.time_saved >= timedelta(0)
    assert AuditEvent.objects.filter(verb="policy.shadow_matched").count() == 3


def test_editing_a_policy_is_audited_with_the_diff_and_bumps_its_version(staff, internal_email):
    from inbox.policies.services import policy_promote, policy_update

    policy_update(user=staff, policy_id=internal_email.pk, fields={"tool_name": "sendMail", "position": 5})
    event = AuditEvent.objects.filter(verb="policy.updated").get()
    assert event.data["changes"] == {"toolName": ["sendEmail", "sendMail"], "position": [100, 5]}
    assert event.data["version"] == 2
    policy_update(user=staff, policy_id=internal_email.pk, fields={"mode": "shadow"})
    promoted = policy_promote(user=staff, policy_id=internal_email.pk)
    assert promoted.mode == "enforce" and promoted.version == 4
    assert AuditEvent.objects.filter(verb="policy.promoted").get().data["changes"] == {"mode": ["shadow", "enforce"]}
    renamed = policy_update(user=staff, policy_id=internal_email.pk, fields={"name": "Internal mail"})
    assert renamed.service_user.username == "policy:Internal mail"
    assert not renamed.service_user.is_active and not renamed.service_user.has_usable_password()


def test_the_audit_log_json_is_serializable(internal_email):
    assert json.dumps(internal_email.snapshot())


def test_each_change_that_alters_an_agents_policies_applies_to_its_very_next_run(ingest, agent, staff):
    """A new policy, an edit, a disabled one, a team joined or left all apply to the next run, never to one
    after a delay."""

    def next_status(n: int) -> str:
        return item(post_tool_run(ingest, agent, f"t{n}", f"r{n}", ("sendEmail", {"to": "ann@ourco.com"})), 0).status

    assert next_status(1) == "open"  # no policy yet, and that empty list is now cached
    ops = Group.objects.create(name="ops-policies")
    team_policy = policy_create(
        user=staff,
        fields={"name": "Ops approve all", "team": ops, "action": "approve", "mode": "enforce"},
    )
    assert next_status(2) == "open"  # the agent is not on that team
    agent.agent.teams.add(ops)
    assert next_status(3) == "resolved"  # joined the team: its policy applies
    policy_update(user=staff, policy_id=team_policy.pk, fields={"action": "deny"})
    assert next_status(4) == "resolved" and Decision.objects.latest("pk").payload == {"approved": False}
    policy_update(user=staff, policy_id=team_policy.pk, fields={"enabled": False})
    assert next_status(5) == "open"
    policy_update(user=staff, policy_id=team_policy.pk, fields={"enabled": True})
    assert next_status(6) == "resolved"
    agent.agent.teams.remove(ops)
    assert next_status(7) == "open"  # left the team
    agent.agent.teams.add(ops)
    team_policy.delete()
    assert next_status(8) == "open"


def test_an_enforced_approve_of_a_claude_sdk_call_sends_behavior_allow(ingest, staff, agent):
    """ag-ui-claude-sdk's deferred call carries no schema; its resume code reads ``{"behavior": "allow"}``
    (``inbox.agui.emitters``): the policy approves in that shape, not the spec's ``{"approved": true}``."""
    policy_create(
        user=staff,
        fields={
            "name": "Any mail",
            "agent": agent.agent,
            "reason": "tool_approval",
            "tool_name": "",
            "match_schema": None,
            "action": "approve",
            "mode": "enforce",
        },
    )
    metadata = {"source": "claude-sdk-deferred", "toolName": "mcp__mail__send_email", "input": {"to": "a@b.com"}}
    run = post_tool_run(
        ingest,
        agent,
        "t1",
        "r1",
        ("mcp__mail__send_email", {"to": "a@b.com"}),
        reason="tool_approval",
        metadata=metadata,
        message=None,
    )
    decided = item(run, 0)
    assert (decided.status, decided.response_payload) == ("resolved", {"behavior": "allow"})
    assert decided.outcome == InboxItem.Outcome.APPROVED
    payload = Resume.objects.get(run=run).input["resume"][0]["payload"]
    assert payload == {"behavior": "allow"}


def test_an_enforced_approve_leaves_a_question_to_people(ingest, staff, agent):
    policy_create(
        user=staff,
        fields={
            "name": "Say yes",
            "agent": agent.agent,
            "reason": "ask_user",
            "tool_name": "",
            "match_schema": None,
            "action": "approve",
            "mode": "enforce",
        },
    )
    body = [
        {"type": "RUN_STARTED", "threadId": "t1", "runId": "r1"},
        {
            "type": "RUN_FINISHED",
            "threadId": "t1",
            "runId": "r1",
            "outcome": {
                "type": "interrupt",
                "interrupts": [{"id": "q-1", "reason": "ask_user", "message": "Which colour?"}],
            },
        },
    ]
    assert ingest(agent, body).status_code == 201
    asked = InboxItem.objects.get(interrupt_id="q-1")
    assert asked.is_open and asked.response_payload is None
    match = PolicyMatch.objects.get(item=asked)
    assert match.outcome == "refused" and match.note.startswith("asks_a_question")


ACCEPT_REJECT = {
    "type": "object",
    "properties": {"decision": {"type": "string", "enum": ["accept", "reject"]}},
    "required": ["decision"],
}


@pytest.mark.parametrize(
    ("action", "payload", "words", "other"),
    [
        ("approve", {"decision": "accept"}, "Approved by policy", "Denied by policy"),
        ("deny", {"decision": "reject"}, "Denied by policy", "Approved by policy"),
    ],
)
def test_a_policy_decision_in_the_items_own_shape_reads_as_what_it_was(
    ingest, staff, agent, alice, client, action, payload, words, other
):
    """Issue 47.1: the policy note on the item page reads the stored outcome, not whether the payload says
    ``approved``: an approve in an ``accept``/``reject`` schema is no denial."""
    policy_create(
        user=staff,
        fields={"name": "Mail", "agent": agent.agent, "tool_name": "sendEmail", "action": action, "mode": "enforce"},
    )
    from tests.policies.runs import tool_run

    body = ingest(agent, tool_run("t1", "r1", ("sendEmail", {"to": "a@b.com"}), responseSchema=ACCEPT_REJECT)).json()
    decided = InboxItem.objects.get(pk=body["items"][0]["id"])
    assert (decided.status, decided.response_payload) == ("resolved", payload)
    expected = "approved" if action == "approve" else "denied"
    assert decided.outcome == expected
    client.force_login(alice)
    page = client.get(decided.get_absolute_url()).content.decode()
    notes = page[page.index("data-policy-notes") :].split("</section>", 1)[0]
    assert words in notes and other not in notes, notes
