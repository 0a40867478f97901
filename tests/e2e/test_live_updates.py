"""Every approver's screen stays live: two people in two browsers, real websockets, the real pages."""

from __future__ import annotations

import re
from datetime import timedelta

import httpx
import pytest
from django.utils import timezone
from playwright.sync_api import expect

from inbox.decisions.services import decision_submit
from inbox.expiry.services import expire_sweep
from inbox.live import push as live
from inbox.models import InboxItem, Resume, Run
from inbox.teams.reminders import reminders_send
from tests.e2e.conftest import item_page, off_loop, open_live

pytestmark = pytest.mark.browser

PUSHED = 2_000  # ms: the "within 2 s"


@pytest.fixture
def post_item(live_asgi, agent):
    """An agent POSTs an interrupted run to the live server, over HTTP."""

    def post(thread: str, run: str, *, minutes: int = 60, count: int = 1) -> Run:
        expires = (timezone.now() + timedelta(minutes=minutes)).isoformat()
        interrupts = [
            {
                "id": f"{run}-i{n}",
                "reason": "confirmation",
                "message": f"Wire the payment {run}-{n}?",
                "expiresAt": expires,
            }
            for n in range(1, count + 1)
        ]
        response = httpx.post(
            f"{live_asgi}/api/v1/runs",
            headers={"Authorization": f"Bearer {agent.token}"},
            json={
                "type": "RUN_FINISHED",
                "threadId": thread,
                "runId": run,
                "outcome": {"type": "interrupt", "interrupts": interrupts},
            },
        )
        assert response.status_code == 201, response.text
        return Run.objects.get(pk=response.json()["id"])

    return post


def test_a_decision_by_one_approver_updates_the_others_list_and_item_page(login, post_item, alice, bob):
    run = post_item("t-1", "r-1")
    other = post_item("t-2", "r-2")
    item, other_item = run.items.get(), other.items.get()
    decider = open_live(login(alice), item_page(item))
    bob_list = open_live(login(bob), "/inbox/")
    bob_item = open_live(bob_list.context.new_page(), item.get_absolute_url())
    expect(bob_list.locator(f'tr[data-item-id="{item.pk}"]')).to_have_count(1)
    expect(bob_list.locator('[data-count="open"]')).to_have_text("2")

    decider.locator('[data-decision-form] button[data-action="approve"]').click()

    expect(bob_list.locator(f'tr[data-item-id="{item.pk}"]')).to_have_count(0, timeout=PUSHED)
    expect(bob_list.locator(f'tr[data-item-id="{other_item.pk}"]')).to_have_count(1)
    expect(bob_item.locator("#live-notice")).to_contain_text("Decided by alice", timeout=PUSHED)
    expect(bob_item.locator('[data-decision-form] button[data-action="approve"]')).to_be_disabled()
    expect(bob_item.locator(f'.item-badges [data-item-status="{item.pk}"]')).to_have_text("Approved")
    expect(bob_list.locator('[data-count="open"]')).to_have_text("1")
    expect(bob_list.locator('[data-count="decided"]')).to_have_text("1")
    assert InboxItem.objects.get(pk=item.pk).decided_by == alice


def test_a_newly_posted_item_appears_in_every_approvers_list(login, post_item, alice, bob):
    post_item("t-1", "r-1", minutes=30)
    alice_list = open_live(login(alice), "/inbox/")
    bob_list = open_live(login(bob), "/inbox/")

    # Expires sooner than the first: the open tab (soonest first) shows it on top.
    new = post_item("t-2", "r-2", minutes=10).items.get()

    for page in (alice_list, bob_list):
        row = page.locator(f'tr[data-item-id="{new.pk}"]')
        expect(row).to_have_count(1, timeout=PUSHED)
        expect(row).to_contain_text("Wire the payment r-2-1?")
        expect(page.locator("tr[data-item-row]").first).to_have_attribute("data-item-id", str(new.pk))
        expect(page.locator('[data-count="open"]')).to_have_text("2")


def test_an_item_page_learns_that_its_item_expired(login, post_item, bob):
    item = post_item("t-1", "r-1", minutes=5).items.get()
    page = open_live(login(bob), item_page(item))

    off_loop(expire_sweep, now=timezone.now() + timedelta(minutes=6))

    expect(page.locator("#live-notice")).to_contain_text("Expired", timeout=PUSHED)
    expect(page.locator('[data-decision-form] button[data-action="approve"]')).to_be_disabled()


def test_the_run_page_follows_the_resume_and_the_resumed_runs_events(login, post_item, alice, bob):
    run = post_item("t-1", "r-1", count=2)
    first, second = run.items.order_by("position")
    page = open_live(login(bob), run.get_absolute_url())
    expect(page.locator("#resume-state")).to_have_text("Waiting for 2 decisions")

    off_loop(decision_submit, item_id=first.pk, user=alice, status="resolved", payload={"approved": True})
    expect(page.locator("#live-notice")).to_contain_text("Decided by alice", timeout=PUSHED)
    expect(page.locator(f'[data-run-item="{first.pk}"] [data-item-status]')).to_have_text("Approved")
    expect(page.locator(f'[data-run-item="{first.pk}"] input').first).to_be_disabled()
    expect(page.locator("#resume-state")).to_have_text("Waiting for 1 decision")

    off_loop(decision_submit, item_id=second.pk, user=alice, status="cancelled")
    expect(page.locator("#resume-state")).to_have_text("Queued", timeout=PUSHED)

    # The agent answers the resume (as the dispatcher would record it): the events show up.
    resume = Resume.objects.get(run=run)
    resumed = Run.objects.create(
        agent=run.agent,
        thread=run.thread,
        run_id=resume.next_run_id,
        source="resume",
        outcome="success",
        events=[{"type": "RUN_STARTED"}, {"type": "TOOL_CALL_RESULT", "content": "sent"}, {"type": "RUN_FINISHED"}],
    )
    Resume.objects.filter(pk=resume.pk).update(state="delivered", resumed_run=resumed, delivered_at=timezone.now())
    off_loop(
        live.send_now,
        live.groups_for(agent_id=run.agent_id, run_id=run.pk),
        "resume.state",
        {"run": run.pk, "resume": resume.pk, "state": "delivered", "lastError": ""},
    )

    expect(page.locator("#resume-state")).to_have_text("Delivered", timeout=PUSHED)
    expect(page.locator("#resumed-events")).to_contain_text("TOOL_CALL_RESULT")


def test_a_list_that_lost_its_socket_reconnects_and_shows_what_it_missed(login, post_item, bob):
    page = open_live(login(bob), "/inbox/")
    page.context.set_offline(True)
    page.evaluate("window.inboxLive.drop()")
    expect(page.locator("body")).to_have_attribute("data-live", "closed")

    missed = post_item("t-1", "r-1").items.get()
    page.context.set_offline(False)

    expect(page.locator("body")).to_have_attribute("data-live", "open")
    expect(page.locator(f'tr[data-item-id="{missed.pk}"]')).to_have_count(1)
    expect(page.locator('[data-count="open"]')).to_have_text("1")


def test_the_run_page_says_why_no_resume_will_be_sent_once_an_item_expired(login, post_item, bob):
    run = post_item("t-1", "r-1", minutes=5, count=2)
    page = open_live(login(bob), run.get_absolute_url())

    off_loop(expire_sweep, now=timezone.now() + timedelta(minutes=6))

    summary = page.locator("[data-expiry-summary]")
    expect(summary).to_contain_text("This run can no longer be resumed: interrupt r-1-i1 expired", timeout=PUSHED)
    expect(summary).to_contain_text("No resume was sent to the agent")
    expect(page.locator("#resume-state")).to_have_text("Not sent")
    expect(page.locator(f'[data-run-item="{run.items.order_by("position")[1].pk}"] [data-item-status]')).to_have_text(
        "Expired"
    )


def test_a_reminder_shows_on_the_open_item_page_and_as_a_notice_on_the_list(login, post_item, alice, bob, settings):
    settings.INBOX_REMINDER_LEAD_SECONDS = 600
    item = post_item("t-1", "r-1", minutes=5).items.get()
    on_item = open_live(login(bob), item_page(item))
    list_page = open_live(login(alice), "/inbox/")
    # The list opens its first item beside it, and its socket follows that pane: wait until it is up again.
    expect(list_page.locator(f'#split-pane [data-pane-item][data-item-id="{item.pk}"]')).to_be_visible()
    expect(list_page.locator("body")).to_have_attribute("data-live", "open")
    list_page.wait_for_timeout(500)

    assert off_loop(reminders_send) == 1

    expect(on_item.locator("#live-notice")).to_contain_text(
        "Reminder: “Wire the payment r-1-1?” (confirmation) expires in 5 minutes.", timeout=PUSHED
    )
    expect(list_page.locator(".live-toast")).to_contain_text("Reminder: “Wire the payment r-1-1?”", timeout=PUSHED)
    expect(on_item.locator('[data-decision-form] button[data-action="approve"]')).to_be_enabled()


def test_a_list_open_during_a_big_sweep_is_refreshed_from_one_summary(login, post_item, bob):
    for n in range(3):
        post_item(f"t-{n}", f"r-{n}", minutes=5, count=70)  # 210 items: more than one push per item allows
    page = open_live(login(bob), "/inbox/")
    # The list opens its first item beside it, and its socket follows that pane: wait until it is up again.
    expect(page.locator("#split-pane [data-pane-item]")).to_be_visible()
    expect(page.locator("body")).to_have_attribute("data-live", "open")
    page.wait_for_timeout(500)
    expect(page.locator('[data-count="open"]')).to_have_text("210")

    assert off_loop(expire_sweep, now=timezone.now() + timedelta(minutes=6)) == 210

    expect(page.locator('[data-count="open"]')).to_have_text("0", timeout=PUSHED)
    expect(page.locator('[data-count="expired"]')).to_have_text("210")
    expect(page.locator("tr[data-item-row]")).to_have_count(0)
    expect(page.locator("body")).to_have_attribute("data-live-last", "items.expired")


def test_arrivals_and_departures_are_announced_in_the_lists_live_region(login, post_item, alice, bob):
    """A new row used to appear with only a highlight, the live region empty: a screen reader heard nothing."""
    first = post_item("t-1", "r-1").items.get()
    bob_list = open_live(login(bob), "/inbox/")
    region = bob_list.locator("#live-announce")
    expect(region).to_have_attribute("aria-live", "polite")
    expect(region).to_have_text("")

    post_item("t-2", "r-2", count=2)
    expect(region).to_have_text("2 new items: “Wire the payment r-2-1?” and “Wire the payment r-2-2?”.", timeout=PUSHED)

    off_loop(decision_submit, item_id=first.pk, user=alice, status="resolved", payload={"approved": True})
    expect(region).to_have_text("Left the list: “Wire the payment r-1-1?”.", timeout=PUSHED)


def test_ticks_the_selected_row_and_focus_outlast_pushed_rows(login, post_item, bob):
    """The server's fresh rows do not know what this browser ticked, selected or focused: all three survive."""
    first = post_item("t-1", "r-1", minutes=30).items.get()
    second = post_item("t-2", "r-2", minutes=40).items.get()
    page = login(bob)
    page.set_viewport_size({"width": 1024, "height": 800})  # the list alone
    open_live(page, "/inbox/")
    page.locator("body").press("j")
    page.keyboard.press("x")  # ticks the first row
    page.keyboard.press("j")  # selects and focuses the second
    expect(page.locator(f'tr[data-item-id="{second.pk}"] .row-link')).to_be_focused()

    new = post_item("t-3", "r-3", minutes=10).items.get()

    expect(page.locator("tr[data-item-row]").first).to_have_attribute("data-item-id", str(new.pk))
    expect(page.locator(f'tr[data-item-id="{first.pk}"] input[data-bulk-select]')).to_be_checked()
    expect(page.locator(f'tr[data-item-id="{second.pk}"]')).to_have_class(re.compile(r"\bis-selected\b"))
    expect(page.locator(f'tr[data-item-id="{second.pk}"] .row-link')).to_be_focused()
    expect(page.locator(f'tr[data-item-id="{new.pk}"] input[data-bulk-select]')).not_to_be_checked()
