"""The API says what the pages say: an item's policy matches in ``GET /api/v1/items/<id>``, a policy's match
counts and agreement in ``GET /api/v1/policies/<id>``."""

from __future__ import annotations

import pytest

from inbox.decisions.services import decision_submit
from inbox.models.policies import Policy
from inbox.policies.services import policy_create
from tests.policies.runs import post_tool_run

INTERNAL = {"type": "object", "properties": {"to": {"type": "string", "pattern": "@ourco\\.com$"}}, "required": ["to"]}


def make_policy(staff, agent, name: str, *, action: str, mode: str, position: int, **fields) -> Policy:
    return policy_create(
        user=staff,
        fields={
            "name": name,
            "agent": agent.agent,
            "reason": "tool_call",
            "tool_name": "sendEmail",
            "action": action,
            "mode": mode,
            "position": position,
            **fields,
        },
    )


@pytest.fixture
def watcher(staff, agent) -> Policy:
    """A shadow policy that would deny every e-mail."""
    return make_policy(staff, agent, "Deny all mail", action="deny", mode="shadow", position=1)


@pytest.fixture
def internal(staff, agent) -> Policy:
    """An enforced policy approving internal e-mail."""
    return make_policy(
        staff, agent, "Internal email", action="approve", mode="enforce", position=2, match_schema=INTERNAL
    )


def test_an_items_api_lists_the_shadow_and_the_enforced_policy_that_matched_it(
    ingest, agent, alice, client, watcher, internal
):
    run = post_tool_run(ingest, agent, "t1", "r1", ("sendEmail", {"to": "ann@ourco.com"}))
    item = run.items.get()
    client.force_login(alice)
    body = client.get(f"/api/v1/items/{item.pk}").json()
    assert body["status"] == "resolved"
    assert [
        (entry["policyName"], entry["version"], entry["mode"], entry["action"], entry["outcome"], entry["effect"])
        for entry in body["policies"]
    ] == [
        ("Deny all mail", 1, "shadow", "deny", "shadow", "Would have denied"),
        ("Internal email", 1, "enforce", "approve", "decided", "Approved"),
    ]
    enforced = body["policies"][1]
    assert enforced["payload"] == {"approved": True}
    assert enforced["decision"] == item.decisions.get().pk
    assert enforced["policyUrl"].endswith(f"/policies/{internal.pk}/")
    # The item page says the same two things.
    page = client.get(item.get_absolute_url()).content.decode()
    assert "would have denied" in page and "Approved by policy" in page


def test_an_item_no_policy_matched_has_an_empty_policy_list(ingest, agent, alice, client, watcher):
    run = post_tool_run(ingest, agent, "t1", "r1", ("payInvoice", {"invoice": 1}))
    client.force_login(alice)
    assert client.get(f"/api/v1/items/{run.items.get().pk}").json()["policies"] == []


def test_a_policys_api_gives_its_match_counts_and_agreement_with_people(ingest, agent, alice, staff, client, watcher):
    runs = [post_tool_run(ingest, agent, f"t{n}", f"r{n}", ("sendEmail", {"to": f"{n}@x.com"})) for n in range(3)]
    denied, approved, _open = (run.items.get() for run in runs)
    decision_submit(item_id=denied.pk, user=alice, status="resolved", payload={"approved": False})
    decision_submit(item_id=approved.pk, user=alice, status="resolved", payload={"approved": True})
    client.force_login(staff)
    stats = client.get(f"/api/v1/policies/{watcher.pk}").json()["stats"]
    assert stats["matches"] == 3
    assert stats["outcomes"] == {"shadow": 3}
    assert (stats["compared"], stats["agreed"], stats["agreement"], stats["decided"]) == (2, 1, 0.5, 0)
    assert stats["timeSavedSeconds"] >= 0
    # The policy's page shows the same figures.
    page = client.get(f"/policies/{watcher.pk}/").content.decode()
    assert "50% (1 of 2)" in page
