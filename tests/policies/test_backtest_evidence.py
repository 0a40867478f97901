"""Evidence that explains itself (issue 49, point 2): a backtest's disagreement rows show the arguments that differ
between the listed items and the person's comment (and edits); "approved, then found wrong" links the follow-up a
person denied; the enforced policies in order (the first that matches acts) are backtested beside one policy, and
the result equals a hand-computed one. Page and API both, over the seeded history of ``tests.policies.history``."""

from __future__ import annotations

import re
from html import unescape

import pytest

from inbox import limits
from inbox.models import InboxItem
from inbox.models.policies import BacktestFinding, Policy
from inbox.policies.backtest import backtest_run, backtest_start, backtest_start_set
from inbox.policies.services import policy_create
from tests.factories import AgentFactory
from tests.policies.history import INTERNAL, seed_history

EVIL = {"type": "object", "properties": {"to": {"type": "string", "pattern": "@evil\\.com$"}}, "required": ["to"]}


def _policy(staff, agent, name: str, **fields) -> Policy:
    return policy_create(
        user=staff,
        fields={"name": name, "agent": agent, "reason": "tool_call", "tool_name": "sendEmail", **fields},
    )


@pytest.fixture
def history(agent, alice, staff) -> dict[str, InboxItem]:
    """``seed_history`` with what a person reads: each e-mail has a subject (the same on all), a recipient and, on
    some, an amount; the people who disagreed said why (bob, cy), dee said nothing; kay, the denied follow-up of jo,
    says why too."""
    machine = policy_create(user=staff, fields={"name": "Machine", "agent": agent.agent, "action": "approve"})
    items = seed_history(agent.agent, AgentFactory(slug="other"), alice, machine.service_user)
    args = {
        "bob": {"to": "bob@ourco.com", "subject": "Q3 report", "amount": 120},
        "cy": {"to": "cy@ourco.com", "subject": "Q3 report", "amount": 80},
        "dee": {"to": "dee@ourco.com", "subject": "Q3 report"},
    }
    for name, arguments in args.items():
        item = items[name]
        InboxItem.objects.filter(pk=item.pk).update(tool_call={**item.tool_call, "args": arguments})
    comments = {"bob": "Wrong quarter's figures", "cy": "Only to Cy's team address", "kay": "Already paid by hand"}
    for name, comment in comments.items():
        InboxItem.objects.filter(pk=items[name].pk).update(decision_comment=comment)
    return items


@pytest.fixture
def internal(staff, agent) -> Policy:
    """Approve sendEmail to @ourco.com: shadow, alone on its page."""
    return _policy(staff, agent.agent, "Internal email", match_schema=INTERNAL, action="approve", position=10)


@pytest.fixture
def as_staff(client, staff):
    client.force_login(staff)
    return client


def _rows(page, kind: str) -> dict[int, tuple[str, str]]:
    """Each listed item's row from a backtest page: ``{item id: (its HTML, its text as read)}``."""
    html = page.content.decode()
    section = html.split(f'data-backtest-findings="{kind}"', 1)[1].split("</section>", 1)[0]
    rows = {}
    for chunk in section.split('<tr data-finding="')[1:]:
        pk, rest = chunk.split('"', 1)
        row = rest.split("</tr>", 1)[0]
        rows[int(pk)] = (row, " ".join(unescape(re.sub(r"<[^>]+>", " ", row)).split()))
    return rows


def test_disagreements_show_the_arguments_that_differ_and_the_persons_comment(as_staff, staff, internal, history):
    backtest = backtest_start(user=staff, policy=internal)
    bob, cy, dee = history["bob"], history["cy"], history["dee"]

    body = as_staff.get(f"/api/v1/policies/{internal.pk}/backtests/{backtest.pk}?kind=disagreed").json()
    rows = {row["id"]: row for row in body["findings"]["items"]}
    assert set(rows) == {bob.pk, cy.pk, dee.pk}
    # The recipient and the amount differ between them (dee has none); the subject is the same on all: not shown.
    assert rows[bob.pk]["arguments"] == {"to": "bob@ourco.com", "amount": "120"}
    assert rows[cy.pk]["arguments"] == {"to": "cy@ourco.com", "amount": "80"}
    assert rows[dee.pk]["arguments"] == {"to": "dee@ourco.com"}
    assert (rows[bob.pk]["comment"], rows[cy.pk]["comment"], rows[dee.pk]["comment"]) == (
        "Wrong quarter's figures",
        "Only to Cy's team address",
        "",
    )
    assert rows[cy.pk]["edits"] == [{"name": "to", "proposed": "cy@ourco.com", "edited": "x@ourco.com"}]
    assert rows[bob.pk]["edits"] == [] and rows[bob.pk]["outcome"] == "denied"

    page = {pk: text for pk, (_, text) in _rows(as_staff.get(backtest.get_absolute_url()), "disagreed").items()}
    assert "to bob@ourco.com amount 120" in page[bob.pk] and "Wrong quarter's figures" in page[bob.pk]
    assert "Q3 report" not in page[bob.pk] and "sendEmail for bob?" in page[bob.pk]
    assert "to dee@ourco.com" in page[dee.pk] and "amount" not in page[dee.pk] and "no comment" in page[dee.pk]
    assert "to cy@ourco.com → x@ourco.com" in page[cy.pk] and "Only to Cy's team address" in page[cy.pk]


def test_approved_then_found_wrong_links_the_follow_up_a_person_denied(as_staff, staff, internal, history):
    backtest = backtest_start(user=staff, policy=internal)
    jo, kay = history["jo"], history["kay"]

    body = as_staff.get(f"/api/v1/policies/{internal.pk}/backtests/{backtest.pk}?kind=found_wrong").json()
    [row] = body["findings"]["items"]
    assert row["id"] == jo.pk and row["outcome"] == "approved"
    [follow_up] = row["followUps"]
    assert follow_up["id"] == kay.pk and follow_up["outcome"] == "denied"
    assert follow_up["comment"] == "Already paid by hand" and follow_up["url"].endswith(kay.get_absolute_url())

    html, text = _rows(as_staff.get(backtest.get_absolute_url()), "found_wrong")[jo.pk]
    assert f'href="{kay.get_absolute_url()}"' in html and "payInvoice for kay? by alice" in text
    assert "Already paid by hand" in text


def test_the_enforced_policies_in_order_against_a_hand_computed_result(as_staff, staff, agent, internal, history):
    """Hand-computed over the 8 items people decided for the agent in 30 days (ann bob cy dee jo: sendEmail to
    @ourco.com; eve: to @evil.com; hal, kay: payInvoice). In order: Internal email (10, approve @ourco.com) takes
    ann bob cy dee jo — agrees with ann and jo, found wrong on jo; "All mail" (15, deny every e-mail, shadow: tested
    as enforced) takes only eve, which people denied; "No evil" (20, deny @evil.com) comes too late for anything.
    Alone, "All mail" would have matched 6 and agreed on 3 (bob, dee, eve)."""
    Policy.objects.filter(pk=internal.pk).update(mode=Policy.Mode.ENFORCE)
    evil = _policy(staff, agent.agent, "No evil", match_schema=EVIL, action="deny", mode="enforce", position=20)
    all_mail = _policy(staff, agent.agent, "All mail", action="deny", position=15)
    _policy(staff, agent.agent, "Off", action="deny", mode="enforce", position=1, enabled=False)  # not in the set

    alone = backtest_start(user=staff, policy=all_mail)
    assert (alone.matched, alone.compared, alone.agreed) == (6, 6, 3)

    response = as_staff.post("/api/v1/policies/backtests", {"policy": all_mail.pk}, content_type="application/json")
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["orderedSet"] is True and body["policy"] is None and body["state"] == "done"
    assert [rules["name"] for rules in body["rules"]["policies"]] == ["Internal email", "All mail", "No evil"]
    assert (body["decided"], body["matched"], body["compared"], body["agreed"], body["foundWrong"]) == (8, 6, 6, 3, 1)
    assert body["outcomes"] == {"approved": 2, "denied": 2, "approved_with_edits": 1, "cancelled": 1}
    assert [
        (row["name"], row["candidate"], row["matched"], row["compared"], row["agreed"], row["foundWrong"])
        for row in body["breakdown"]
    ] == [
        ("Internal email", False, 5, 5, 2, 1),
        ("All mail", True, 1, 1, 1, 0),
        ("No evil", False, 0, 0, 0, 0),
    ]

    detail = as_staff.get(body["url"]).json()
    disagreed = {row["id"]: row["policy"] for row in detail["findings"]["items"]}
    assert disagreed == {history[name].pk: internal.pk for name in ("bob", "cy", "dee")}
    assert as_staff.get(body["url"] + "?kind=found_wrong").json()["findings"]["items"][0]["id"] == history["jo"].pk

    page = as_staff.get(f"/policies/backtests/{body['id']}/")
    assert page.status_code == 200
    html = page.content.decode()
    row = html.split(f'data-set-policy="{all_mail.pk}"', 1)[1].split("</tr>", 1)[0]
    assert "tested as enforced" in row and 'data-stat="matched">1<' in row
    assert f'data-set-policy="{evil.pk}"' in html

    # Without it, the enforced ones alone: Internal email as before, and No evil now takes eve.
    set_only = backtest_start_set(user=staff)
    assert [(row["policy"], row["matched"], row["agreed"]) for row in set_only.breakdown] == [
        (internal.pk, 5, 2),
        (evil.pk, 1, 1),
    ]
    assert set_only.findings.filter(kind=BacktestFinding.Kind.DISAGREED).count() == 3


def test_the_set_is_run_from_the_list_and_from_a_policys_page(as_staff, staff, agent, internal, history):
    Policy.objects.filter(pk=internal.pk).update(mode=Policy.Mode.ENFORCE)
    all_mail = _policy(staff, agent.agent, "All mail", action="deny", position=15)
    assert "data-set-backtest-form" in as_staff.get("/policies/").content.decode()

    response = as_staff.post("/policies/backtests/", {"days": "30", "policy": str(all_mail.pk)})
    assert response.status_code == 302
    page = as_staff.get(response["Location"]).content.decode()
    assert "Backtest of the enforced policies in order" in page
    # The policy's page lists it beside its own backtests.
    detail = as_staff.get(all_mail.get_absolute_url()).content.decode()
    assert response["Location"] in detail.split("data-set-backtests", 1)[1]


def test_a_set_with_nothing_enforced_is_a_400_naming_the_policy(as_staff, internal, history):
    response = as_staff.post("/api/v1/policies/backtests", {"days": 30}, content_type="application/json")
    assert response.status_code == 400 and response.json()["errors"][0]["path"] == "policy"
    response = as_staff.post("/api/v1/policies/backtests", {"days": 0}, content_type="application/json")
    assert response.status_code == 400 and response.json()["errors"][0]["path"] == "days"
    response = as_staff.post("/api/v1/policies/backtests", {"policy": 999999}, content_type="application/json")
    assert response.status_code == 400 and response.json()["errors"][0]["path"] == "policy"


def test_a_long_period_of_the_set_is_read_by_a_worker_in_chunks(as_staff, staff, agent, internal, history, monkeypatch):
    Policy.objects.filter(pk=internal.pk).update(mode=Policy.Mode.ENFORCE)
    monkeypatch.setattr(limits, "BACKTEST_INLINE_ITEMS", 3)
    backtest = backtest_start_set(user=staff)
    assert backtest.state == "pending" and backtest.ordered_set
    page = as_staff.get(backtest.get_absolute_url()).content.decode()
    assert 'data-backtest-state="pending"' in page and 'http-equiv="refresh"' in page
    monkeypatch.setattr(limits, "BACKTEST_CHUNK", 2)  # several chunks, each writing its findings
    assert backtest_run(backtest.pk) == "done"
    backtest.refresh_from_db()
    assert (backtest.total, backtest.scanned, backtest.matched, backtest.agreed, backtest.found_wrong) == (
        8,
        8,
        5,
        2,
        1,
    )
    assert backtest.findings.count() == 4  # bob cy dee disagreed, jo found wrong
    assert as_staff.get(f"/api/v1/policies/backtests/{backtest.pk}").json()["state"] == "done"
