"""The policy API (staff only, 4xx naming the field) and the staff pages: list, create, edit, promote, stats,
and the item page saying which policy decided it."""

from __future__ import annotations

import json

import pytest

from inbox.models import AuditEvent
from inbox.models.policies import Policy
from inbox.policies.services import policy_create
from tests.policies.runs import post_tool_run

INTERNAL = {"type": "object", "properties": {"to": {"type": "string", "pattern": "@ourco\\.com$"}}, "required": ["to"]}


def post(client, path: str, body: dict, method: str = "post"):
    return getattr(client, method)(path, data=json.dumps(body), content_type="application/json")


@pytest.fixture
def as_staff(client, staff):
    client.force_login(staff)
    return client


def test_staff_create_list_and_promote_policies_through_the_api(as_staff, agent):
    created = post(
        as_staff,
        "/api/v1/policies",
        {
            "name": "Internal email",
            "agent": "mailer",
            "toolName": "sendEmail",
            "matchSchema": INTERNAL,
            "action": "approve",
        },
    )
    assert created.status_code == 201, created.content
    body = created.json()
    assert body["mode"] == "shadow" and body["version"] == 1 and body["actor"] == "policy:Internal email"
    listed = as_staff.get("/api/v1/policies").json()
    assert [entry["name"] for entry in listed] == ["Internal email"]
    promoted = post(as_staff, f"/api/v1/policies/{body['id']}", {"mode": "enforce"}, method="patch")
    assert promoted.status_code == 200 and promoted.json()["mode"] == "enforce" and promoted.json()["version"] == 2
    assert as_staff.get(f"/api/v1/policies/{body['id']}").json()["mode"] == "enforce"


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"action": "approve", "agent": "mailer"}, "name"),
        ({"name": "x", "action": "approve"}, "agent"),
        ({"name": "x", "action": "explode", "agent": "mailer"}, "action"),
        ({"name": "x", "action": "approve", "agent": "nobody"}, "agent"),
        ({"name": "x", "action": "require_approvals", "agent": "mailer"}, "approvals"),
        ({"name": "x", "action": "route", "agent": "mailer"}, "routeTeam"),
        ({"name": "x", "action": "approve", "agent": "mailer", "matchSchema": {"type": "strng"}}, "matchSchema.type"),
        (
            {"name": "x", "action": "approve", "agent": "mailer", "matchSchema": {"$ref": "https://evil.example/s"}},
            "matchSchema.$ref",
        ),
        (
            {
                "name": "x",
                "action": "approve",
                "agent": "mailer",
                "matchSchema": {"properties": {"a": {"pattern": "(a)\\1"}}},
            },
            "matchSchema.properties.a.pattern",
        ),
        (
            {"name": "x", "action": "approve", "agent": "mailer", "matchSchema": {"pattern": "a" * 201}},
            "matchSchema.pattern",
        ),
    ],
)
def test_invalid_policies_are_a_400_naming_the_field_and_store_nothing(as_staff, agent, body, field):
    response = post(as_staff, "/api/v1/policies", body)
    assert response.status_code == 400, response.content
    assert response.json()["field"] == field
    assert not Policy.objects.exists()


def test_a_duplicate_name_is_refused(as_staff, agent, staff):
    policy_create(user=staff, fields={"name": "Same", "agent": agent.agent, "action": "approve"})
    response = post(as_staff, "/api/v1/policies", {"name": "Same", "agent": "mailer", "action": "deny"})
    assert response.status_code == 400 and response.json()["field"] == "name"


def test_approvers_cannot_use_the_policy_api_or_pages(client, alice, agent):
    client.force_login(alice)
    assert client.get("/api/v1/policies").status_code == 403
    assert post(client, "/api/v1/policies", {"name": "x", "agent": "mailer", "action": "approve"}).status_code == 403
    assert client.get("/policies/").status_code == 404
    assert not Policy.objects.exists()


def test_the_api_is_in_the_openapi_schema(as_staff):
    schema = as_staff.get("/api/schema/?format=json").json()
    assert {"get", "post"} <= set(schema["paths"]["/api/v1/policies"])
    assert {"get", "patch"} <= set(schema["paths"]["/api/v1/policies/{id}"])


def test_staff_create_edit_and_promote_a_policy_in_the_pages(as_staff, agent, staff):
    form = {
        "name": "Internal email",
        "agent": "mailer",
        "position": "10",
        "enabled": "on",
        "reason": "tool_call",
        "tool_name": "sendEmail",
        "subject": "arguments",
        "match_schema": json.dumps(INTERNAL),
        "action": "approve",
        "mode": "shadow",
    }
    bad = as_staff.post("/policies/new/", {**form, "match_schema": '{"pattern": "(a)\\\\1"}'})
    assert bad.status_code == 400 and b"RE2" in bad.content and not Policy.objects.exists()
    response = as_staff.post("/policies/new/", form)
    policy = Policy.objects.get()
    assert response.status_code == 302 and response["Location"] == f"/policies/{policy.pk}/"
    page = as_staff.get(f"/policies/{policy.pk}/").content.decode()
    assert "Promote to enforce" in page and "policy:Internal email" in page
    edited = as_staff.post(f"/policies/{policy.pk}/edit/", {**form, "tool_name": "sendMail"})
    assert edited.status_code == 302
    change = AuditEvent.objects.get(verb="policy.updated")
    assert change.data["changes"] == {"toolName": ["sendEmail", "sendMail"]}
    as_staff.post(f"/policies/{policy.pk}/promote/")
    policy.refresh_from_db()
    assert policy.mode == "enforce" and policy.version == 3
    listing = as_staff.get("/policies/").content.decode()
    assert "Internal email" in listing and "Enforce" in listing
    assert as_staff.get("/policies/stats/").status_code == 200


def test_the_item_page_says_which_policy_decided_it_and_what_a_shadow_would_have_done(
    client, alice, agent, staff, ingest
):
    policy_create(
        user=staff,
        fields={
            "name": "Internal email",
            "agent": agent.agent,
            "match_schema": INTERNAL,
            "action": "approve",
            "mode": "enforce",
        },
    )
    policy_create(user=staff, fields={"name": "Cautious", "agent": agent.agent, "action": "deny", "position": 1})
    run = post_tool_run(ingest, agent, "t1", "r1", ("sendEmail", {"to": "a@ourco.com"}))
    item = run.items.get()
    client.force_login(alice)
    page = client.get(item.get_absolute_url()).content.decode()
    assert "Approved by policy" in page and "Internal email" in page
    assert "Cautious" in page and "would have denied" in page
    trail = client.get(f"/audit/tool-calls/{item.tool_call_id}/").content.decode()
    assert "policy:Internal email" in trail
