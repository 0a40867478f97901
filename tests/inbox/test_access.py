"""The one access module and the model's rule methods: a stored denial and what counts as decided, who holds
an item and whether that locks a viewer out; the pages, the stats and the database condition agree."""

from __future__ import annotations

from inbox import access
from inbox.audit.stats import build_report
from inbox.models import InboxItem
from inbox.teams.claims import item_claim


def _boolean_item(agent, ingest) -> InboxItem:
    body = {
        "type": "RUN_FINISHED",
        "threadId": "t-bool",
        "runId": "r-bool",
        "outcome": {
            "type": "interrupt",
            "interrupts": [{"id": "i-bool", "reason": "input_required", "responseSchema": {"type": "boolean"}}],
        },
    }
    assert ingest(agent, body).status_code == 201
    return InboxItem.objects.get(interrupt_id="i-bool")


def test_a_bare_false_is_a_denial_on_the_page_in_the_stats_and_in_the_database(agent, ingest, alice, client):
    item = _boolean_item(agent, ingest)
    client.force_login(alice)
    response = client.post(
        f"/api/v1/items/{item.pk}/decision", {"status": "resolved", "payload": False}, content_type="application/json"
    )
    assert response.status_code == 201, response.content
    item.refresh_from_db()
    assert item.is_decided and item.is_denial and item.decisions.get().is_denial
    assert list(InboxItem.objects.filter(outcome=InboxItem.Outcome.DENIED)) == [item]
    report = build_report(user=alice)
    assert (report.agents[0].decided, report.agents[0].approved, report.approval_rate) == (1, 0, 0.0)
    assert "alice denied i-bool" in client.get(f"/audit/threads/{item.thread_id}/").content.decode()


def test_holding_an_item_locks_out_teammates_but_not_staff(agent, ingest, alice, bob, staff):
    item = _boolean_item(agent, ingest)
    item = item_claim(item_id=item.pk, user=alice)
    assert item.held_by(alice) and not item.held_by_other(alice)
    assert item.held_by_other(bob) and item.held_by_other(staff)
    assert not access.locked_by_claim(alice, item) and not access.overrides_claim(alice, item)
    assert access.locked_by_claim(bob, item) and not access.overrides_claim(bob, item)
    assert not access.locked_by_claim(staff, item) and access.overrides_claim(staff, item)


def test_every_visible_queryset_follows_the_team_rule(agent, ingest, alice, carol, staff):
    item = _boolean_item(agent, ingest)
    for user, sees in ((alice, True), (staff, True), (carol, False)):
        assert access.visible_items(user).filter(pk=item.pk).exists() is sees
        assert access.visible_runs(user).filter(pk=item.run_id).exists() is sees
        assert access.visible_threads(user).filter(pk=item.thread_id).exists() is sees
        assert access.visible_audit_events(user).filter(agent=agent.agent).exists() is sees
        assert access.may_see(user, "item", item.pk) is sees
        assert access.may_see(user, "run", item.run_id) is sees
    assert list(access.visible_teams(carol).values_list("name", flat=True)) == ["elsewhere"]
    assert set(InboxItem.objects.filter(access.deciding_items_q(alice)).distinct()) == {item}
    assert not InboxItem.objects.filter(access.deciding_items_q(carol)).exists()
