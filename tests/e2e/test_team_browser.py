"""Team review in Debian's Chromium against the live ASGI server: two approvers in two browsers claim,
vote and bulk-decide the way people would.

Set INBOX_SCREENSHOTS=<dir> to save a screenshot of each page the tests visit."""

from __future__ import annotations

import copy
import json

import pytest
from django.test import Client
from playwright.sync_api import expect

from inbox.models import AuditEvent, Decision, InboxItem, Run
from tests.conftest import spec_example
from tests.e2e.conftest import item_page, off_loop, open_live, shot

pytestmark = pytest.mark.browser


@pytest.fixture
def post_run(agent):
    """POST runs to the ingest API as ``as_agent`` (default: the 'mailer' agent); returns the stored Runs."""

    def post(*bodies: dict, as_agent=None) -> list[Run]:
        def send() -> list[int]:
            client, ids = Client(), []
            for body in bodies:
                response = client.post(
                    "/api/v1/runs", data=json.dumps(body), content_type="application/json", **(as_agent or agent).auth
                )
                assert response.status_code == 201, response.content
                ids.append(response.json()["id"])
            return ids

        return list(Run.objects.filter(pk__in=off_loop(send)).order_by("pk"))

    return post


def tool_approval(n: int = 0) -> dict:
    body = copy.deepcopy(spec_example("minimal_tool_approval"))
    body["threadId"], body["runId"] = f"thread-{n}", f"run-{n}"
    body["outcome"]["interrupts"][0]["message"] = f"Send email number {n} to a@b.com?"
    return body


def test_alice_claims_an_item_bob_sees_it_claimed_with_the_form_disabled_and_alice_decides(login, alice, bob, post_run):
    item = post_run(tool_approval())[0].items.get()
    url = item_page(item)
    bobs = open_live(login(bob), url)
    expect(bobs.locator("[data-holder]")).to_have_text("No one is on this yet")
    alices = login(alice)
    alices.goto(url)

    alices.get_by_role("button", name="Claim — I’m on it").click()
    expect(alices.locator(".flash-success")).to_contain_text("You’re on it")
    expect(alices.locator("[data-holder]")).to_have_text("You hold this item")
    shot(alices, "item-claimed-by-me")

    # Bob's open page follows without a reload; a fresh load shows the same.
    expect(bobs.locator("[data-claim-lock]")).to_contain_text("Claimed by alice.")
    expect(bobs.get_by_role("button", name="Approve")).to_be_disabled()
    bobs.reload()
    expect(bobs.locator("[data-holder]")).to_have_text("Claimed by alice")
    expect(bobs.locator("[data-claim-lock]")).to_contain_text("Only they can decide this item")
    expect(bobs.get_by_role("button", name="Approve")).to_be_disabled()
    expect(bobs.get_by_role("button", name="Deny")).to_be_disabled()
    shot(bobs, "item-claimed-by-someone-else")

    bobs.goto("/inbox/")
    expect(bobs.locator(f'tr[data-item-id="{item.pk}"] .holder-chip')).to_contain_text("alice")
    bobs.goto(f"/inbox/runs/{item.run_id}/")
    expect(bobs.locator(f'[data-run-item="{item.pk}"] .holder-chip')).to_contain_text("alice on it")
    expect(bobs.locator(f'[data-run-item="{item.pk}"] [data-held-by]')).to_have_text(
        "Held by alice: only they decide it."
    )
    expect(bobs.locator(f'input[name="decision-{item.pk}"]')).to_have_count(0)
    shot(bobs, "run-page-claimed-by-someone-else")

    alices.get_by_role("button", name="Approve").click()
    expect(alices.locator(".flash-success")).to_contain_text("Approved: “Send email number 0 to a@b.com?”.")
    assert Decision.objects.get(item=item).user == alice
    assert InboxItem.objects.get(pk=item.pk).status == "resolved"


def test_bobs_open_run_page_follows_alices_claim_and_release_without_a_reload(login, alice, bob, post_run):
    from inbox.teams.claims import item_claim, item_unclaim

    item = post_run(tool_approval())[0].items.get()
    bobs = open_live(login(bob), f"/inbox/runs/{item.run_id}/")
    row = bobs.locator(f'[data-run-item="{item.pk}"]')
    row.get_by_text("Approve", exact=True).click()
    expect(bobs.locator("#resume-preview")).to_contain_text('"status": "resolved"')

    off_loop(lambda: item_claim(item_id=item.pk, user=alice))
    expect(row.locator(".holder-chip")).to_contain_text("alice on it")
    expect(row.locator("[data-held-by]")).to_have_text("Held by alice: only they decide it.")
    expect(bobs.locator("#live-notice")).to_contain_text("alice is on int-abc123: only they decide it.")
    # Bob's choice for it is gone from the preview of the resume.
    expect(bobs.locator("#resume-preview")).not_to_contain_text('"status": "resolved"')
    shot(bobs, "run-page-live-claim")

    off_loop(lambda: item_unclaim(item_id=item.pk, user=alice))
    expect(row.locator(".holder-chip")).to_have_count(0)
    expect(row.get_by_text("Approve", exact=True)).to_be_visible()
    expect(bobs.locator("#live-notice")).to_contain_text("int-abc123 was released: anyone may decide it.")


def test_a_quorum_of_two_alice_approves_one_of_two_then_bob_approves_and_it_is_resolved(
    login, alice, bob, make_agent, post_run
):
    strict = make_agent("strict", approvals_required=2)
    item = post_run(tool_approval(), as_agent=strict)[0].items.get()
    url = item_page(item)
    bobs = open_live(login(bob), url)
    alices = login(alice)
    alices.goto(url)
    expect(alices.locator("[data-quorum-count]")).to_have_text("0 of 2 approvals")

    alices.get_by_role("button", name="Approve").click()
    expect(alices.locator(".flash-info")).to_have_text("Your approval is recorded: 1 of 2. It needs another approver.")
    expect(alices.locator("[data-quorum-count]")).to_have_text("1 of 2 approvals")
    expect(alices.locator("[data-quorum]")).to_contain_text("Approved by alice (you).")
    shot(alices, "item-quorum-one-of-two")
    assert InboxItem.objects.get(pk=item.pk).status == "open"

    # Bob's page heard the vote.
    expect(bobs.locator("[data-quorum-count]")).to_have_text("1 of 2 approvals")
    expect(bobs.locator("#live-notice")).to_contain_text("alice approved (1 of 2 approvals)")
    bobs.get_by_role("button", name="Approve").click()
    expect(bobs.locator(".flash-success")).to_contain_text("Approved: “Send email number 0 to a@b.com?”.")
    expect(bobs.locator("[data-item-status]").first).to_have_text("Approved")
    expect(bobs.locator("[data-quorum-count]")).to_have_text("2 of 2 approvals")
    shot(bobs, "item-quorum-met")
    stored = InboxItem.objects.get(pk=item.pk)
    assert (stored.status, stored.decided_by) == ("resolved", bob)


def test_bulk_approve_of_ten_items_from_the_list_resolves_all_ten_and_shows_the_summary(login, alice, post_run):
    runs = post_run(*(tool_approval(n) for n in range(10)))
    page = login(alice)
    page.goto("/inbox/")
    rows = page.locator("tr[data-item-row]")
    expect(rows).to_have_count(10)
    approve = page.locator('[data-bulk-action="approve"]')
    expect(approve).to_be_disabled()

    page.keyboard.press("j")
    page.keyboard.press("x")
    expect(page.locator("[data-bulk-count]")).to_have_text("1 selected")
    page.keyboard.press("x")
    expect(page.locator("[data-bulk-count]")).to_have_text("Select items to decide them together")
    page.get_by_label("Select all on this page").check()
    expect(page.locator("[data-bulk-count]")).to_have_text("10 selected")
    expect(page.locator("tr.is-checked")).to_have_count(10)
    page.locator("[data-bulk-comment]").fill("routine batch")
    shot(page, "list-bulk-selected")
    approve.click()

    expect(page.locator("[data-bulk-summary]")).to_have_text("10 decided.")
    expect(page.locator('[data-count="open"]')).to_have_text("0")
    expect(page.get_by_text("You’re all caught up")).to_be_visible()
    shot(page, "list-bulk-summary")
    items = InboxItem.objects.filter(run__in=runs)
    assert set(items.values_list("status", flat=True)) == {"resolved"}
    assert Decision.objects.filter(item__in=items, comment="routine batch").count() == 10
    assert AuditEvent.objects.filter(verb="item.resolved").count() == 10
