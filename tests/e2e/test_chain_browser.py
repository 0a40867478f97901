"""The chain, live: the demo agent's ``chain`` scenario answers the approved invoice with a second interrupt
("Email the new invoice to ACME Corp?"). The page the approver lands on after deciding goes there as soon as
it arrives (with "Then go to the next open item" on), or shows it with the tool's result without a reload
(toggle off); the run page says the agent asked again. Beside the list, the pane stays on the item read and the
follow-up is announced, with a button and the f key to open it. The resume goes out through the dispatch the Celery
task runs, to the real demo agent on loopback."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from inbox.decisions.services import decision_submit
from inbox.ingest.start import run_start
from inbox.models import InboxItem, Resume
from inbox.resumes.services import resume_dispatch
from tests.agent_servers import demo, demo_agent, demo_server, wait_for  # noqa: F401
from tests.e2e.conftest import item_page, off_loop, shot

pytestmark = [pytest.mark.browser, pytest.mark.integration]

FOLLOW_UP = "Email the new invoice to ACME Corp?"


@pytest.fixture
def invoice(demo, alice):  # noqa: F811
    """Step 1 of the chain: createInvoice waiting for approval."""
    run = off_loop(run_start, agent=demo.agent, user=alice, message="chain: invoice ACME").run
    return InboxItem.objects.get(run=run)


def deliver(item: InboxItem) -> str:
    resume = wait_for(lambda: Resume.objects.filter(run_id=item.run_id).first(), what="the resume")
    return off_loop(resume_dispatch, resume_id=resume.pk)


def test_deciding_the_first_step_goes_to_the_follow_up_as_soon_as_it_arrives(login, alice, invoice):
    page = login(alice)
    page.goto(item_page(invoice))
    expect(page.locator("[data-then-next]")).to_be_checked()
    page.locator('[data-decision-form] button[data-action="approve"]').click()
    # Nothing else is open: the page stays on the decided item and watches its run's resume.
    page.wait_for_url(f"**{invoice.get_absolute_url()}?after={invoice.run_id}")
    expect(page.locator("body")).to_have_attribute("data-live", "open")

    assert deliver(invoice) == "delivered"
    follow_up = InboxItem.objects.get(message=FOLLOW_UP)
    page.wait_for_url(f"**{follow_up.get_absolute_url()}?asked_again=*", timeout=15_000)
    expect(page.locator("h1")).to_have_text(FOLLOW_UP)


def test_with_the_toggle_off_the_result_and_the_follow_up_appear_without_a_reload(login, alice, invoice):
    page = login(alice)
    page.goto(item_page(invoice))
    page.locator("[data-then-next]").uncheck()
    page.locator('[data-decision-form] button[data-action="approve"]').click()
    page.wait_for_url(f"**{invoice.get_absolute_url()}?after={invoice.run_id}")
    expect(page.locator("body")).to_have_attribute("data-live", "open")
    outcome = page.locator("[data-item-outcome]")
    expect(outcome.locator("[data-tool-result]")).to_have_count(0)
    page.evaluate("document.body.dataset.reloadMarker = 'same page'")

    assert deliver(invoice) == "delivered"

    # The tool's result, the delivered resume and the follow-up, pushed into this very page.
    expect(outcome.locator("[data-tool-result]")).to_contain_text('"executed": true', timeout=15_000)
    expect(outcome.locator("[data-delivery]")).to_have_attribute("data-delivery", "delivered")
    link = outcome.locator("[data-follow-up-link]")
    expect(link).to_be_visible()
    expect(outcome.locator("[data-follow-up]")).to_contain_text(FOLLOW_UP)
    expect(page.locator("#live-notice")).to_contain_text("The agent asked again")
    expect(page.locator("#live-notice")).not_to_contain_text("Reload")
    assert page.evaluate("document.body.dataset.reloadMarker") == "same page"
    assert page.url.endswith(f"{invoice.get_absolute_url()}?after={invoice.run_id}")  # not followed: toggle off
    shot(page, "chain-follow-up")
    link.click()
    expect(page.locator("h1")).to_have_text(FOLLOW_UP)


def test_the_run_page_says_the_agent_asked_again(login, alice, invoice):
    off_loop(decision_submit, item_id=invoice.pk, user=alice, status="resolved", payload={"approved": True})
    page = login(alice)
    page.goto(invoice.run.get_absolute_url())
    expect(page.locator("[data-resume-state]")).to_have_attribute("data-resume-state", "pending")
    expect(page.locator("body")).to_have_attribute("data-live", "open")

    assert deliver(invoice) == "delivered"

    expect(page.locator("[data-resume-state]")).to_have_attribute("data-resume-state", "delivered", timeout=15_000)
    follow_up = page.locator("#run-live [data-follow-up]")
    expect(follow_up).to_contain_text(FOLLOW_UP)
    follow_up.locator("a").click()  # a link to an item: beside the list on this wide screen
    expect(page.locator("#item-heading")).to_have_text(FOLLOW_UP)


def test_a_decided_item_revisited_later_links_its_follow_up_but_does_not_jump(login, alice, invoice):
    page = login(alice)
    page.goto(item_page(invoice))
    page.locator('[data-decision-form] button[data-action="approve"]').click()
    page.wait_for_url(f"**?after={invoice.run_id}")
    assert deliver(invoice) == "delivered"
    follow_up = InboxItem.objects.get(message=FOLLOW_UP)
    page.wait_for_url(f"**{follow_up.get_absolute_url()}?asked_again=*")

    page.goto(item_page(invoice))
    expect(page.locator("[data-item-outcome] [data-follow-up]")).to_contain_text(FOLLOW_UP)
    page.wait_for_timeout(500)  # time for a jump that must not happen
    assert page.url.endswith(item_page(invoice))


def test_on_the_next_item_an_approver_already_working_gets_the_follow_up_as_a_link(login, alice, demo, invoice):  # noqa: F811
    other = InboxItem.objects.get(
        run=off_loop(run_start, agent=demo.agent, user=alice, message="email bob@example.com").run
    )
    page = login(alice)
    page.goto(item_page(invoice))
    page.locator('[data-decision-form] button[data-action="approve"]').click()
    page.wait_for_url(f"**{other.get_absolute_url()}?after={invoice.run_id}")
    expect(page.locator("body")).to_have_attribute("data-live", "open")
    page.locator('[data-decision-form] textarea[name="comment"]').click()  # started on this one

    assert deliver(invoice) == "delivered"

    notice = page.locator("#live-notice [data-chain-notice]")
    # A push, a render and a swap: allow for a CI machine running two suites at once.
    expect(notice).to_contain_text("The agent asked again on the run you just decided", timeout=15_000)
    expect(notice).to_contain_text(FOLLOW_UP)
    page.wait_for_timeout(300)
    assert page.url.endswith(f"{other.get_absolute_url()}?after={invoice.run_id}")  # not taken away from it
    notice.get_by_role("button", name="Open the follow-up").click()
    expect(page.locator("h1")).to_have_text(FOLLOW_UP)


def test_beside_the_list_the_follow_up_is_announced_and_the_pane_stays_on_the_item_read(
    login,
    alice,
    demo,  # noqa: F811
    invoice,
):
    other = InboxItem.objects.get(
        run=off_loop(run_start, agent=demo.agent, user=alice, message="email bob@example.com").run
    )
    page = login(alice)
    page.set_viewport_size({"width": 1280, "height": 800})
    page.goto(f"/inbox/?item={invoice.pk}")
    pane = page.locator("#split-pane [data-pane-item]")
    expect(pane).to_have_attribute("data-item-id", str(invoice.pk))
    expect(page.locator("#split-pane [data-triage-next]")).to_have_attribute("href", other.get_absolute_url())
    page.keyboard.press("a")
    expect(pane).to_have_attribute("data-item-id", str(other.pk))
    # The pane now shown watches the run just decided, for its follow-up.
    expect(page.locator("body")).to_have_attribute("data-live-url", re.compile(rf"after={invoice.run_id}&chain=1"))
    expect(page.locator("body")).to_have_attribute("data-live", "open")

    assert deliver(invoice) == "delivered"

    notice = page.locator("#split-pane #live-notice")
    expect(notice).to_have_attribute("aria-live", "polite")
    expect(notice.locator("[data-chain-notice]")).to_contain_text(
        f"The agent asked again on the run you just decided: “{FOLLOW_UP}”", timeout=15_000
    )
    button = notice.get_by_role("button", name="Open the follow-up")
    expect(button).to_have_attribute("aria-keyshortcuts", "f")
    page.wait_for_timeout(500)  # time for a jump that must not happen
    expect(pane).to_have_attribute("data-item-id", str(other.pk))
    expect(page).to_have_url(re.compile(rf"/inbox/\?item={other.pk}$"))

    page.keyboard.press("f")
    follow_up = InboxItem.objects.get(message=FOLLOW_UP)
    expect(pane).to_have_attribute("data-item-id", str(follow_up.pk))
    expect(page.locator("#split-pane #item-heading")).to_have_text(FOLLOW_UP)
    expect(page).to_have_url(re.compile(rf"/inbox/\?item={follow_up.pk}$"))
