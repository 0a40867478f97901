"""The API shows what the pages show (issue 49, point 1): for each page of policies, escalation and away, the
operations that give its data are in the OpenAPI schema with the fields the page shows; an item's escalations and
who holds it for whom while a person is away (``GET /api/v1/items/<id>``); the stats page's escalated-versus-not
figures (``GET /api/v1/audit/stats``)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.test import Client
from drf_spectacular.generators import SchemaGenerator

from inbox.decisions.services import decision_submit
from inbox.models import AuditEvent, AwayStatus, EscalationRule
from inbox.teams.away import away_set
from inbox.teams.claims import item_claim
from inbox.teams.escalations import escalation_sweep
from tests.factories import TeamFactory, UserFactory
from tests.inbox.conftest import NOW

# Each page, the operations that give its data, and (operation: fields of its 200 answer) what it must carry
# beyond the operation itself. A page that shows something no operation gives fails here.
PAGES: dict[str, dict[str, tuple[str, ...]]] = {
    "/policies/ (the list, in order, with each policy's matches and agreement; set backtests)": {
        "GET /api/v1/policies": (),
        "GET /api/v1/policies/stats": ("policy", "matches", "agreed", "compared", "agreement"),
        "GET /api/v1/policies/backtests": ("results",),
        "POST /api/v1/policies/backtests": (),
    },
    "/policies/stats/": {
        "GET /api/v1/policies/stats": ("matches", "decided", "compared", "agreed", "timeSavedSeconds", "mode"),
    },
    "/policies/new/ and /policies/<id>/edit/ (with Backtest these values)": {
        "POST /api/v1/policies": (),
        "PATCH /api/v1/policies/{id}": (),
        "POST /api/v1/policies/{id}/backtests": ("draft", "rules"),
    },
    "/policies/<id>/ (stats, evidence, backtests, set backtests, recent matches, Promote)": {
        "GET /api/v1/policies/{id}": ("stats", "backtest", "evidence", "backtests", "matches"),
        "GET /api/v1/policies/{id}/matches": ("results",),
        "GET /api/v1/policies/{id}/backtests": ("results",),
        "POST /api/v1/policies/{id}/backtests": (),
        "GET /api/v1/policies/backtests": (),
        "POST /api/v1/policies/backtests": (),
        "PATCH /api/v1/policies/{id}": (),
    },
    "/policies/<id>/backtests/<id>/": {
        "GET /api/v1/policies/{id}/backtests/{backtest_pk}": ("findings", "outcomes", "foundWrong", "agreement"),
    },
    "/policies/backtests/<id>/ (the enforced policies in order)": {
        "GET /api/v1/policies/backtests/{backtest_pk}": ("findings", "breakdown", "orderedSet"),
    },
    "/inbox/settings/escalation/ (the rules, the business hours of the teams one leads)": {
        "GET /api/v1/escalation-rules": (),
        "POST /api/v1/escalation-rules": (),
        "DELETE /api/v1/escalation-rules/{id}": (),
        "GET /api/v1/business-hours": ("team", "days", "opens", "closes", "timeZone", "words"),
        "PUT /api/v1/business-hours/{team}": ("team", "days", "opens", "closes", "timeZone"),
        "DELETE /api/v1/business-hours/{team}": (),
    },
    "/inbox/settings/notifications/ (e-mail about new items, teams; away: from, until, delegate; notices)": {
        "GET /api/v1/away": ("user", "from", "until", "delegate", "inForce"),
        "PUT /api/v1/away": (),
        "DELETE /api/v1/away": (),
        "GET /api/v1/notices": (),
        "GET /api/v1/notification-preferences": ("emailMode", "email", "digestLastSentAt", "teams"),
        "PUT /api/v1/notification-preferences": ("emailMode",),
    },
    "/inbox/items/<id>/ (its escalations, its holder for someone away, its policies)": {
        "GET /api/v1/items/{id}": ("escalations", "delegation", "holderAway", "policies"),
    },
    "/audit/stats/ (time to decision, escalated and not)": {
        "GET /api/v1/audit/stats": ("escalation", "medianSeconds", "byStatus", "agents"),
    },
}


def _resolve(schema: dict[str, Any], node: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in node:
        node = schema["components"]["schemas"][node["$ref"].rsplit("/", 1)[-1]]
    if "allOf" in node:
        merged: dict[str, Any] = {"properties": {}}
        for part in node["allOf"]:
            merged["properties"].update(_resolve(schema, part).get("properties", {}))
        return merged
    if node.get("type") == "array":
        return _resolve(schema, node["items"])
    return node


def answer_fields(schema: dict[str, Any], operation: dict[str, Any]) -> set[str]:
    """The properties of an operation's 2xx JSON answer (of an item, for a list)."""
    for code, response in operation.get("responses", {}).items():
        if code.startswith("2") and "content" in response:
            return set(_resolve(schema, response["content"]["application/json"]["schema"]).get("properties", {}))
    return set()


def test_each_page_of_policies_escalation_and_away_has_the_operations_that_give_its_data(db):
    schema = SchemaGenerator().get_schema(request=None, public=True)
    missing = []
    for page, operations in PAGES.items():
        for key, fields in operations.items():
            method, path = key.split(" ", 1)
            operation = schema["paths"].get(path, {}).get(method.lower())
            if operation is None:
                missing.append(f"{page}: {key} is not in the schema")
                continue
            absent = set(fields) - answer_fields(schema, operation)
            if absent:
                missing.append(f"{page}: {key} answers without {sorted(absent)}")
    assert not missing, "\n".join(missing)


# --- an item's escalations and away ----------------------------------------------------------------------


@pytest.fixture
def finance(db):
    return TeamFactory(name="Finance leads")


@pytest.fixture
def rule(team, finance):
    granter = UserFactory(username="granter", is_staff=True, is_superuser=True)
    return EscalationRule.objects.create(team=team, after_minutes=30, to_team=finance, created_by=granter)


def test_an_items_api_says_when_to_whom_and_why_it_was_escalated(stored_run, clock, rule, alice):
    item = stored_run("t-1", "r-1", 300).items.get()
    client = Client()
    client.force_login(alice)
    assert client.get(f"/api/v1/items/{item.pk}").json()["escalations"] == []

    clock.shift(timedelta(minutes=31))
    assert escalation_sweep() == 1
    body = client.get(f"/api/v1/items/{item.pk}").json()
    [escalation] = body["escalations"]
    assert escalation["step"] == 1 and escalation["to"] == "Finance leads" and escalation["toTeam"] == "Finance leads"
    assert escalation["toUser"] is None and escalation["why"] == "no decision from ops in 30 min"
    assert escalation["at"] == "2026-12-01T10:31:00Z"
    page = client.get(item.get_absolute_url()).content.decode()
    assert escalation["why"] in page and "Escalated to Finance leads" in page  # what the page says, the API says


def test_an_items_api_says_who_holds_it_for_whom_while_a_person_is_away(stored_run, clock, alice, bob):
    carl = UserFactory(username="carl", teams=list(bob.groups.all()))
    item = stored_run("t-1", "r-1", 300).items.get()
    item_claim(item_id=item.pk, user=bob)
    client = Client()
    client.force_login(alice)
    before = client.get(f"/api/v1/items/{item.pk}").json()
    assert before["delegation"] is None and before["holderAway"] is None

    away_set(user=bob, starts_at=NOW, ends_at=NOW + timedelta(days=2), delegate=carl, set_by=bob)
    body = client.get(f"/api/v1/items/{item.pk}").json()
    assert body["delegation"] == {"holder": "carl", "heldFor": "bob", "at": "2026-12-01T10:00:00Z"}
    assert body["holderAway"] is None  # carl, who holds it, is not away
    assert "carl holds this item for bob" in client.get(item.get_absolute_url()).content.decode()

    # carl's own away period has begun and the sweep has not handed his items over yet: the item says so.
    AwayStatus.objects.create(user=carl, starts_at=NOW, ends_at=NOW + timedelta(days=1), delegate=alice, set_by=carl)
    body = client.get(f"/api/v1/items/{item.pk}").json()
    assert body["holderAway"] == {"holder": "carl", "until": "2026-12-02T10:00:00Z", "delegate": "alice"}
    page = client.get(item.get_absolute_url()).content.decode()
    assert "carl is away until Wed 2 Dec, 10:00" in page and "alice decides for them" in page


def test_the_stats_api_gives_the_escalated_and_not_figures_the_page_shows(stored_run, clock, rule, alice, finance):
    dave = UserFactory(username="dave", teams=[finance])
    quick = stored_run("t-1", "r-1", 300).items.get()
    slow = stored_run("t-2", "r-2", 300).items.get()
    clock.shift(timedelta(minutes=10))
    decision_submit(item_id=quick.pk, user=alice, status="resolved", payload={"approved": True})
    clock.shift(timedelta(minutes=30))
    escalation_sweep()
    clock.shift(timedelta(minutes=50))
    decision_submit(item_id=slow.pk, user=dave, status="resolved", payload={"approved": True})

    client = Client()
    client.force_login(alice)
    body = client.get("/api/v1/audit/stats?days=7").json()
    assert body["escalation"] == {
        "escalatedDecided": 1,
        "notEscalatedDecided": 1,
        "medianEscalatedSeconds": 90 * 60.0,
        "medianNotEscalatedSeconds": 10 * 60.0,
    }
    assert body["days"] == 7 and body["total"] == 2 and body["byStatus"]["resolved"] == 2
    assert "escalated: 1.5 h · not escalated: 10 min" in client.get("/audit/stats/?days=7").content.decode()
    refused = client.get("/api/v1/audit/stats?days=12")
    assert refused.status_code == 400 and refused.json()["errors"][0]["path"] == "days"


def test_the_notification_preferences_the_away_page_shows_are_read_and_set_through_the_api(alice):
    client = Client()
    client.force_login(alice)
    body = client.get("/api/v1/notification-preferences").json()
    assert body == {"emailMode": "immediate", "email": "alice@example.com", "digestLastSentAt": None, "teams": ["ops"]}

    changed = client.put("/api/v1/notification-preferences", {"emailMode": "digest"}, content_type="application/json")
    assert changed.status_code == 200 and changed.json()["emailMode"] == "digest"
    page = client.get("/inbox/settings/notifications/").content.decode()
    assert 'value="digest" id="id_email_mode_1" required checked>' in page  # the page shows what the API set
    assert AuditEvent.objects.get(verb="preferences.changed").data["email_mode"] == {
        "from": "immediate",
        "to": "digest",
    }

    wrong = client.put("/api/v1/notification-preferences", {"emailMode": "hourly"}, content_type="application/json")
    assert wrong.status_code == 400 and wrong.json()["field"] == "emailMode"
