"""The audit log page (filters by agent, team, actor, verb and dates) and its streamed CSV/JSON
exports of decisions and events, which follow the team rule like every other read."""

from __future__ import annotations

import copy
import json
from datetime import timedelta

import pytest
import time_machine
from asgiref.sync import async_to_sync
from django.contrib.auth.models import Group
from django.test import AsyncRequestFactory
from django.utils import timezone

from inbox.audit.exports import AuditFilterForm, export_response
from inbox.decisions.services import decision_submit
from inbox.models import InboxItem
from tests.conftest import spec_example
from tests.e2e.conftest import off_loop
from tests.helpers.exports import read_csv, read_json


@pytest.fixture
def decided(make_agent, ingest, alice, bob, dave):
    """ops agent 'mailer': alice approves int-abc123 with a comment; bob denies i-1, approves i-2, cancels i-3.
    finance agent 'ledger': dave approves int-email-edit with edits."""
    mailer, ledger = make_agent("mailer"), make_agent("ledger")
    ledger.agent.teams.set([Group.objects.get(name="finance")])
    ingest(mailer, copy.deepcopy(spec_example("minimal_tool_approval")))
    ingest(mailer, copy.deepcopy(spec_example("parallel_interrupts")))
    ingest(ledger, copy.deepcopy(spec_example("approve_with_edits")))

    def decide(interrupt_id: str, user, status="resolved", payload=None, comment=""):
        item = InboxItem.objects.get(interrupt_id=interrupt_id)
        decision_submit(item_id=item.pk, user=user, status=status, payload=payload, comment=comment)

    decide("int-abc123", alice, payload={"approved": True}, comment='=HYPERLINK("http://evil")')
    decide("i-1", bob, payload={"approved": False}, comment="wrong recipient")
    decide("i-2", bob, payload={"approved": True})
    decide("i-3", bob, status="cancelled")
    decide(
        "int-email-edit",
        dave,
        payload={"approved": True, "editedArgs": {"to": "a@b.com", "subject": "Hi", "body": "revised"}},
    )
    return mailer, ledger


def test_the_decisions_csv_has_one_row_per_decision_with_who_what_and_edits(decided, staff, client):
    client.force_login(staff)
    response = client.get("/audit/export/decisions.csv")
    assert response["Content-Disposition"].startswith('attachment; filename="inbox-decisions-')
    rows = read_csv(response)
    by_interrupt = {row["interrupt_id"]: row for row in rows}
    assert set(by_interrupt) == {"int-abc123", "i-1", "i-2", "i-3", "int-email-edit"}
    assert (by_interrupt["i-1"]["user"], by_interrupt["i-1"]["approved"]) == ("bob", "False")
    assert by_interrupt["i-3"]["status"] == "cancelled" and by_interrupt["i-3"]["payload"] == ""
    assert by_interrupt["int-email-edit"]["edited"] == "True"
    assert json.loads(by_interrupt["int-email-edit"]["payload"])["editedArgs"]["body"] == "revised"
    # A comment that looks like a spreadsheet formula is defused.
    assert by_interrupt["int-abc123"]["comment"].startswith("'=HYPERLINK")


def test_the_json_export_is_one_array_with_the_same_rows(decided, staff, client):
    client.force_login(staff)
    rows = read_json(client.get("/audit/export/decisions.json"))
    assert len(rows) == 5
    assert rows[0]["interrupt_id"] == "int-abc123" and rows[0]["payload"] == {"approved": True}
    assert [row["decision_id"] for row in rows] == sorted(row["decision_id"] for row in rows)


@pytest.mark.parametrize(
    ("who", "expected"),
    [
        ("alice", {"int-abc123", "i-1", "i-2", "i-3"}),
        ("dave", {"int-email-edit"}),
        ("carol", set()),
        ("staff", {"int-abc123", "i-1", "i-2", "i-3", "int-email-edit"}),
    ],
)
def test_exports_contain_only_the_users_teams_decisions(who, expected, decided, alice, dave, carol, staff, client):
    client.force_login({"alice": alice, "dave": dave, "carol": carol, "staff": staff}[who])
    assert {row["interrupt_id"] for row in read_csv(client.get("/audit/export/decisions.csv"))} == expected
    assert {row["interrupt_id"] for row in read_json(client.get("/audit/export/decisions.json"))} == expected
    # Events too: nothing about another team's agent.
    events = read_json(client.get("/audit/export/events.json"))
    assert {event["agent"] for event in events} <= (
        {"mailer"}
        if who == "alice"
        else {"ledger"}
        if who == "dave"
        else {"mailer", "ledger"}
        if who == "staff"
        else set()
    )
    if who == "carol":
        assert events == []


def test_asking_for_another_teams_agent_exports_nothing(decided, alice, client):
    client.force_login(alice)
    response = client.get("/audit/export/decisions.csv?agent=ledger")
    assert response.status_code == 400 and response.json()["field"] == "agent"


def test_export_filters_by_agent_team_actor_and_dates(decided, staff, client):
    client.force_login(staff)

    def interrupts(query: str) -> set[str]:
        return {row["interrupt_id"] for row in read_json(client.get(f"/audit/export/decisions.json?{query}"))}

    assert interrupts("agent=ledger") == {"int-email-edit"}
    assert interrupts("team=ops") == {"int-abc123", "i-1", "i-2", "i-3"}
    assert interrupts("actor=BOB") == {"i-1", "i-2", "i-3"}
    today = timezone.localdate()
    assert len(interrupts(f"since={today}&until={today}")) == 5
    assert interrupts(f"until={today - timedelta(days=1)}") == set()


def test_bad_filters_are_a_400_naming_the_field(decided, staff, client):
    client.force_login(staff)
    for query, field in (
        ("since=yesterday", "since"),
        ("since=2026-11-30&until=2026-11-01", "until"),
        ("team=nope", "team"),
    ):
        response = client.get(f"/audit/export/decisions.csv?{query}")
        assert response.status_code == 400 and response.json()["field"] == field, query
    assert client.get("/audit/export/decisions.xml").status_code == 404
    assert client.get("/audit/export/passwords.csv").status_code == 404


def test_anonymous_users_cannot_export(decided, client):
    response = client.get("/audit/export/decisions.csv")
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]


def test_exports_are_read_in_batches_so_every_row_arrives_once(decided, staff, client, monkeypatch):
    monkeypatch.setattr("inbox.audit.exports.BATCH_SIZE", 2)
    client.force_login(staff)
    rows = read_json(client.get("/audit/export/decisions.json"))
    assert len(rows) == 5 and len({row["decision_id"] for row in rows}) == 5
    assert len(read_csv(client.get("/audit/export/events.csv"))) > 5


def test_under_asgi_the_export_streams_from_an_async_iterator(transactional_db, decided, staff, monkeypatch):
    monkeypatch.setattr("inbox.audit.exports.BATCH_SIZE", 2)
    request = AsyncRequestFactory().get("/audit/export/decisions.json")
    request.user = staff
    form = AuditFilterForm({}, user=staff)
    assert form.is_valid()
    response = export_response(request=request, form=form, kind="decisions", fmt="json")
    assert response.is_async

    async def collect() -> bytes:
        return b"".join([chunk async for chunk in response])

    # Read on a thread of its own, as a server's would: the main thread may carry an asyncio loop that an earlier
    # browser test left there, where async_to_sync refuses to run (its rows are committed: transactional_db).
    document = json.loads(off_loop(async_to_sync(collect)))
    assert len(document["rows"]) == 5 and len(document["signature"]) == 64


def test_the_audit_log_page_lists_and_filters_events(decided, alice, client):
    client.force_login(alice)
    page = client.get("/audit/").content.decode()
    assert "item.resolved" in page and "mailer" in page and "ledger" not in page
    filtered = client.get("/audit/?verb=item.cancelled&actor=bob").content.decode()
    assert filtered.count('class="au-verb') == 1 and "item.cancelled" in filtered
    # The export links carry the same filters.
    assert "/audit/export/decisions.csv?verb=item.cancelled&amp;actor=bob" in filtered


def test_the_audit_log_page_shows_filter_errors(decided, alice, client):
    client.force_login(alice)
    response = client.get("/audit/?since=not-a-date")
    assert response.status_code == 400 and "Enter a valid date" in response.content.decode()


def test_the_audit_log_page_filters_by_date_range(decided, alice, client):
    with time_machine.travel(timezone.now() + timedelta(days=3)):
        client.force_login(alice)
        today = timezone.localdate()
        page = client.get(f"/audit/?since={today}").content.decode()
        assert "No audit events match" in page
        page = client.get(f"/audit/?since={today - timedelta(days=4)}&until={today}").content.decode()
        assert "item.resolved" in page


def _actors_shown(client, actor: str) -> list[tuple[str, str]]:
    """(actor label, verb) of each event the log page lists for ?actor=."""
    page = client.get("/audit/", {"actor": actor})
    assert page.status_code == 200
    events = AuditFilterForm({"actor": actor}, user=page.wsgi_request.user)
    assert events.is_valid()
    return sorted(events.events().values_list("actor_label", "verb"))


def test_the_actor_filter_finds_people_agents_and_system_actors(decided, staff, bob, client):
    """A person's and an agent's events are found by who they are (an index in the log's order), any other name
    by the label each event recorded: the log reads the same either way, and a rename keeps a person's events."""
    from inbox.expiry.services import expire_sweep

    client.force_login(staff)
    bobs = _actors_shown(client, "BOB")
    assert bobs == sorted([("bob", "item.resolved"), ("bob", "item.resolved"), ("bob", "item.cancelled")])
    assert {verb for label, verb in _actors_shown(client, "mailer")} == {"run.ingested", "item.created"}
    assert all(label == "mailer" for label, _ in _actors_shown(client, "mailer"))
    # A system actor has no user or agent: matched by its label.
    InboxItem.objects.filter(interrupt_id="int-email-edit").update(status="open", expires_at=timezone.now())
    expire_sweep()
    expired = _actors_shown(client, "expiry")
    assert ("expiry", "item.expired") in expired and {label for label, _ in expired} == {"expiry"}
    # Renamed since: the events still recorded as "bob" are found by the new name, and by the old one only
    # while nobody else is called that.
    bob.username = "robert"
    bob.save()
    assert [verb for _, verb in _actors_shown(client, "robert")] == [verb for _, verb in bobs]
    assert [verb for _, verb in _actors_shown(client, "bob")] == [verb for _, verb in bobs]
    assert _actors_shown(client, "nobody") == []
