"""Review quality: on a seeded history whose figures are worked out by hand below (fast approvals, bulk and list-key
decisions, an approval whose follow-up was denied, one a shadow deny policy matched, streaks), the report, the
API, the audit page and the CSV give the same numbers, over the period asked, and an approver sees only the
agents of their teams."""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.utils import timezone

from agents.models import Agent
from inbox.audit.exports import AuditFilterForm
from inbox.audit.review import review_for
from inbox.models import Decision, DecisionVia, InboxItem, ItemSeen, Policy, PolicyMatch, Resume
from tests.factories import AgentFactory, DecisionFactory, InboxItemFactory, RunFactory, TeamFactory, UserFactory
from tests.helpers.exports import csv_rows

pytestmark = pytest.mark.django_db

APPROVED = {"approved": True}
DENIED = {"approved": False}


class History:
    """A seeded history: two agents in two teams, three approvers, a policy."""

    def __init__(self) -> None:
        ops, finance = TeamFactory(name="ops"), TeamFactory(name="finance")
        self.mailer = AgentFactory(slug="mailer", name="Mailer", teams=[ops])
        self.billing = AgentFactory(slug="billing", name="Billing", teams=[finance])
        self.alice = UserFactory(username="alice", teams=[ops])
        self.bob = UserFactory(username="bob", teams=[ops])
        self.dave = UserFactory(username="dave", teams=[finance])
        self.staff = UserFactory(username="staff", is_staff=True)
        self.base = timezone.now() - timedelta(days=2)
        self.minute = 0

    def decide(
        self,
        user: User,
        *,
        agent: Agent | None = None,
        payload: Any = APPROVED,
        via: str = DecisionVia.PAGE,
        seen_after: float | None = None,
        at: datetime | None = None,
        item: InboxItem | None = None,
        **fields: Any,
    ) -> InboxItem:
        """``user`` decides a new item (or ``item``) a minute after the previous decision; ``seen_after``: they
        were first shown it that many seconds before deciding (negative: after), None: never."""
        self.minute += 1
        decided = at or self.base + timedelta(minutes=self.minute)
        item = item or InboxItemFactory(
            run=RunFactory(agent=agent or self.mailer),
            status=InboxItem.Status.RESOLVED,
            response_payload=payload,
            decided_by=user,
            decided_at=decided,
            created_at=decided - timedelta(hours=1),
        )
        DecisionFactory(item=item, user=user, payload=payload, via=via, created_at=decided, **fields)
        if seen_after is not None:
            ItemSeen.objects.create(item=item, user=user, first_seen_at=decided - timedelta(seconds=seen_after))
        return item


@pytest.fixture
def history() -> History:
    h = History()
    alice, bob = h.alice, h.bob
    # 60 days ago: outside the default period of 30 days.
    h.decide(alice, seen_after=0.5, at=timezone.now() - timedelta(days=60))
    h.decide(alice, seen_after=1)  # fast
    h.decide(alice, seen_after=10)
    h.decide(alice, via=DecisionVia.BULK)  # blind
    h.decide(alice, via=DecisionVia.LIST_KEY)  # blind: streak of 4 approvals so far
    h.decide(alice, payload=DENIED, seen_after=2)  # fast denial: the streak ends
    approved = h.decide(alice, seen_after=20)
    # The agent asked again on the thread (the resume's run raised a follow-up), and bob denied that.
    follow_up_run = RunFactory(agent=h.mailer, thread=approved.thread, run_id="follow-up", source="resume")
    Resume.objects.create(
        run=approved.run,
        thread=approved.thread,
        agent=h.mailer,
        next_run_id="follow-up",
        input={},
        state=Resume.State.DELIVERED,
        resumed_run=follow_up_run,
    )
    follow_up = InboxItemFactory(
        run=follow_up_run,
        status=InboxItem.Status.RESOLVED,
        response_payload=DENIED,
        decided_by=bob,
        decided_at=h.base + timedelta(minutes=h.minute + 1),
    )
    h.decide(bob, item=follow_up, payload=DENIED, seen_after=4)
    shadowed = h.decide(alice, via=DecisionVia.API)  # never opened here; a shadow deny policy matched it
    shadow = Policy.objects.create(name="no-mail", agent=h.mailer, action=Policy.Action.DENY)
    PolicyMatch.objects.create(
        policy=shadow,
        policy_version=1,
        item=shadowed,
        mode=Policy.Mode.SHADOW,
        action=Policy.Action.DENY,
        outcome=PolicyMatch.Outcome.SHADOW,
    )
    h.decide(alice, seen_after=-50)  # shown only after deciding: not timed
    # Left out: a decision bob undid, and a policy's.
    h.decide(bob, payload=DENIED, seen_after=1, withdrawn_at=timezone.now())
    account = UserFactory(username="policy-auto")
    Policy.objects.create(
        name="auto", agent=h.mailer, action=Policy.Action.APPROVE, mode=Policy.Mode.ENFORCE, service_user=account
    )
    h.decide(account, via=DecisionVia.POLICY)
    h.decide(h.dave, agent=h.billing, seen_after=0.5)
    return h


# Worked out by hand from the history above (default period: the last 30 days).
ALICE = {
    "decisions": 8,
    "approvals": 7,
    "denials": 1,
    "timed": 4,  # 1 s, 10 s, 2 s, 20 s
    "medianSeconds": 6.0,
    "fast": 2,
    "fastShare": 0.5,
    "blind": 2,
    "unseen": 2,
    "contradicted": 2,
    "contradictedByFollowUp": 1,
    "contradictedByShadow": 1,
    "longestStreak": 4,
}
BOB = {"decisions": 1, "approvals": 0, "denials": 1, "timed": 1, "medianSeconds": 4.0, "fast": 0, "longestStreak": 0}
DAVE = {"decisions": 1, "approvals": 1, "timed": 1, "medianSeconds": 0.5, "fast": 1, "fastShare": 1.0}
MAILER = {
    "decisions": 9,
    "approvals": 7,
    "denials": 2,
    "timed": 5,  # 1, 10, 2, 20, 4 s
    "medianSeconds": 4.0,
    "fast": 2,
    "fastShare": 0.4,
    "blind": 2,
    "unseen": 2,
    "contradicted": 2,
    "longestStreak": 4,
}


def read_csv(response) -> list[dict]:
    assert response.status_code == 200 and response["Content-Type"].startswith("text/csv")
    return csv_rows(response.content)


def by_key(rows: list[dict]) -> dict[str, dict]:
    return {row["key"]: row for row in rows}


def report_for(user: User, **query: str) -> Any:
    form = AuditFilterForm(query, user=user)
    assert form.is_valid(), form.errors
    return review_for(form)


def assert_figures(actual: dict, expected: dict) -> None:
    assert {key: actual[key] for key in expected} == expected


def test_figures_equal_the_hand_computed_ones(history: History) -> None:
    report = report_for(history.staff)
    approvers = by_key([figures.as_dict() for figures in report.approvers])
    agents = by_key([figures.as_dict() for figures in report.agents])
    assert set(approvers) == {"alice", "bob", "dave"}  # not the policy's account
    assert_figures(approvers["alice"], ALICE)
    assert_figures(approvers["bob"], BOB)
    assert_figures(approvers["dave"], DAVE)
    assert_figures(agents["mailer"], MAILER)
    assert_figures(agents["billing"], {"decisions": 1, "fast": 1, "longestStreak": 1})
    assert_figures(report.total.as_dict(), {"decisions": 10, "approvals": 8, "fast": 3, "blind": 2, "contradicted": 2})


def test_the_period_is_the_date_range_asked(history: History) -> None:
    since = (timezone.localdate() - timedelta(days=70)).isoformat()
    alice = by_key([f.as_dict() for f in report_for(history.staff, since=since).approvers])["alice"]
    # The decision of 60 days ago joins: decided 0.5 s after she saw it, an approval before the streak of 4.
    assert_figures(alice, {"decisions": 9, "timed": 5, "fast": 3, "medianSeconds": 2.0, "longestStreak": 5})
    until = (timezone.localdate() - timedelta(days=50)).isoformat()
    only_old = by_key([f.as_dict() for f in report_for(history.staff, since=since, until=until).approvers])
    assert list(only_old) == ["alice"] and only_old["alice"]["decisions"] == 1


def page_figures(html: str, table: str) -> dict[str, dict[str, str]]:
    """The figures each row of the page's table writes beside its bars: {key: {figure: text}}."""
    section = html.split(f'id="{table}"', 1)[1].split("</table>", 1)[0]
    rows = {}
    for key, row in re.findall(r'<tr data-key="([^"]+)">(.*?)</tr>', section, re.S):
        cells = re.findall(r'data-figure="(\w+)">(.*?)</(?:td|span)>', row, re.S)
        rows[key] = {name: re.sub(r"<[^>]+>", "", text).split()[0] for name, text in cells}
    return rows


def test_the_api_the_page_and_the_csv_show_the_same_numbers(client, history: History) -> None:
    client.force_login(history.staff)
    api = client.get("/api/v1/audit/review-quality")
    assert api.status_code == 200
    approvers = by_key(api.json()["approvers"])
    assert_figures(approvers["alice"], ALICE)
    assert_figures(by_key(api.json()["agents"])["mailer"], MAILER)

    page = client.get("/audit/review/")
    assert page.status_code == 200
    html = page.content.decode()
    shown = page_figures(html, "review-approvers")
    assert shown["alice"] == {
        "decisions": "8",
        "median": "6.0",
        "fast": "50%",
        "blind": "2",
        "contradicted": "2",
        "streak": "4",
    }
    assert shown["bob"]["median"] == "4.0" and shown["bob"]["streak"] == "0"
    assert page_figures(html, "review-agents")["mailer"]["fast"] == "40%"
    assert 'href="/audit/review/"' in client.get("/audit/").content.decode()  # the audit pages link it

    rows = read_csv(client.get("/audit/review/export.csv"))
    csv_alice = next(row for row in rows if row["scope"] == "approver" and row["key"] == "alice")
    assert {key: csv_alice[key] for key in ALICE} == {key: str(value) for key, value in ALICE.items()}
    csv_mailer = next(row for row in rows if row["scope"] == "agent" and row["key"] == "mailer")
    assert csv_mailer["medianSeconds"] == "4.0" and csv_mailer["fastShare"] == "0.4"
    assert next(row for row in rows if row["scope"] == "all")["decisions"] == "10"


def test_an_approver_sees_only_the_agents_of_their_teams(client, history: History) -> None:
    client.force_login(history.alice)
    body = client.get("/api/v1/audit/review-quality").json()
    assert [agent["key"] for agent in body["agents"]] == ["mailer"]
    assert set(by_key(body["approvers"])) == {"alice", "bob"}  # dave decides billing's items only
    assert body["total"]["decisions"] == 9
    html = client.get("/audit/review/").content.decode()
    assert 'data-key="billing"' not in html and 'data-key="dave"' not in html
    rows = read_csv(client.get("/audit/review/export.csv"))
    assert {row["key"] for row in rows} == {"alice", "bob", "mailer", "all"}

    client.force_login(history.dave)
    body = client.get("/api/v1/audit/review-quality").json()
    assert [agent["key"] for agent in body["agents"]] == ["billing"]
    assert list(by_key(body["approvers"])) == ["dave"]
    # Another team's agent is not a choice: the same 400 as an agent that does not exist.
    refused = client.get("/api/v1/audit/review-quality", {"agent": "mailer"})
    assert refused.status_code == 400 and refused.json()["field"] == "agent"

    client.logout()
    assert client.get("/api/v1/audit/review-quality").status_code in (401, 403)


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ({"since": "yesterday"}, "since"),
        ({"since": "2026-05-02", "until": "2026-05-01"}, "until"),
        ({"until": "9999-12-31"}, "until"),
        ({"actor": "x" * 5000}, "actor"),
        ({"since": "2026-01-01\x00"}, "since"),
    ],
)
def test_bad_filters_are_a_400_naming_the_field(client, history: History, query: dict, field: str) -> None:
    client.force_login(history.staff)
    response = client.get("/api/v1/audit/review-quality", query)
    assert response.status_code == 400 and response.json()["field"] == field
    assert client.get("/audit/review/", query).status_code == 400
    export = client.get("/audit/review/export.csv", query)
    assert export.status_code == 400 and export.json()["field"] == field


def test_a_decision_records_how_it_was_made(client, history: History) -> None:
    """Each way of deciding stores its ``via``; the figures count bulk and list keys as blind."""
    ops_agent = history.mailer
    client.force_login(history.alice)

    def open_item() -> InboxItem:
        return InboxItemFactory(run=RunFactory(agent=ops_agent), response_schema=None)

    page_item, bulk_item, key_item, api_item = open_item(), open_item(), open_item(), open_item()
    client.post(f"/inbox/items/{page_item.pk}/decide/", {"action": "approve"})
    client.post("/inbox/bulk/", {"ids": [bulk_item.pk], "action": "approve"})
    client.post("/inbox/bulk/", {"ids": [key_item.pk], "action": "approve", "via": "key"})
    client.post(
        f"/api/v1/items/{api_item.pk}/decision", {"status": "resolved", "payload": APPROVED}, "application/json"
    )
    vias = dict(
        Decision.objects.filter(user=history.alice, created_at__gte=timezone.now() - timedelta(minutes=5)).values_list(
            "item_id", "via"
        )
    )
    assert vias == {
        page_item.pk: DecisionVia.PAGE,
        bulk_item.pk: DecisionVia.BULK,
        key_item.pk: DecisionVia.LIST_KEY,
        api_item.pk: DecisionVia.API,
    }
