"""Undo, in a real browser, with a real Celery worker sending resumes to the demo agent on loopback: after a
decision (button, key, bulk action, run page) the page shows "Denied: “…” — Undo"; undone within the window,
the item is open again and the agent receives nothing; left alone, the window closes and the resume leaves."""

from __future__ import annotations

import pytest
from axe_playwright_python.sync_playwright import Axe
from django.utils import timezone
from playwright.sync_api import expect

from inbox.decisions.services import decision_submit, decision_undo
from inbox.ingest.start import run_start
from inbox.models import AuditEvent, Decision, InboxItem, Resume
from tests.agent_servers import demo, demo_agent, demo_server, wait_for  # noqa: F401
from tests.e2e.conftest import item_page, off_loop, open_live, settled, shot

pytestmark = [pytest.mark.browser, pytest.mark.integration, pytest.mark.worker]

WINDOW = 4.0  # seconds: long enough to press Undo, short enough to wait out


@pytest.fixture(autouse=True)
def undo_on(settings):
    settings.INBOX_UNDO_SECONDS = WINDOW  # the live server decides in this process


def resumes_received(agent) -> list[dict]:  # noqa: F811
    return [request for request in agent.record()["requests"] if request.get("resume")]


def wait_out_the_windows(page, items: list[InboxItem]) -> None:
    """Past the end of the windows the items' decisions had (and a margin), the worker has had every chance to send."""
    until = max(Decision.objects.filter(item__in=items).values_list("undo_until", flat=True))
    page.wait_for_timeout(max(0.0, (until - timezone.now()).total_seconds()) * 1000 + 2000)


def deny_both(page, first: InboxItem, second: InboxItem) -> None:
    for item in (first, second):
        page.locator(f'tr[data-item-id="{item.pk}"] input[data-bulk-select]').check()
    page.locator('[data-bulk-action="deny"]').click()


def email_item(demo, alice, to: str) -> InboxItem:  # noqa: F811
    run = off_loop(run_start, agent=demo.agent, user=alice, message=f"email {to}").run
    return InboxItem.objects.get(run=run)


def test_undo_within_the_window_sends_nothing_and_after_it_the_resume_leaves(
    settings,
    login,
    alice,
    demo,  # noqa: F811
    demo_agent,  # noqa: F811
    start_worker,
):
    start_worker()
    demo_agent.reset()
    item = email_item(demo, alice, "bob@example.com")
    page = login(alice)
    page.goto(item_page(item))

    page.keyboard.press("d")
    toast = page.locator("[data-undo-toast]")
    expect(toast).to_contain_text(f"Denied: “{item.short_title}”")
    expect(toast.locator("button[data-undo]")).to_have_text("Undo")
    shot(page, "undo-toast-item")
    page.keyboard.press("u")

    expect(page.locator(".flash-success")).to_contain_text(f"Undone: “{item.short_title}” is open again")
    expect(page.locator('[data-decision-form] button[data-action="deny"]')).to_be_enabled()
    # Past the window the worker has had every chance to send: nothing reached the agent, the item is open.
    wait_for(
        lambda: AuditEvent.objects.filter(verb="resume.withdrawn").exists(),
        what="the withdrawn resume on record",
    )
    wait_out_the_windows(page, [item])
    assert resumes_received(demo_agent) == []
    item.refresh_from_db()
    assert item.status == "open"
    assert not Resume.objects.filter(run_id=item.run_id).exists()

    # Decided again and left alone: the Undo goes when its window (shorter now: nothing is pressed in it) closes,
    # then the worker sends the resume.
    settings.INBOX_UNDO_SECONDS = 2.0
    page.locator('[data-decision-form] button[data-action="approve"]').click()
    expect(page.locator("[data-undo-toast] button[data-undo]")).to_be_visible()
    expect(page.locator("button[data-undo]")).to_have_count(0, timeout=(WINDOW + 5) * 1000)
    expect(page.locator(".undo-toast")).to_contain_text(f"Approved: “{item.short_title}”")
    wait_for(lambda: Resume.objects.filter(run_id=item.run_id, state="delivered").exists(), what="the delivery")
    received = resumes_received(demo_agent)
    assert len(received) == 1
    assert [entry["payload"]["approved"] for entry in received[0]["resume"]] == [True]
    # Too late now: the page's undo (a stale form) is refused in words, and nothing changes.
    decided = InboxItem.objects.get(pk=item.pk)
    assert decided.outcome == "approved"


def test_a_bulk_deny_on_the_list_can_be_undone(
    settings,
    login,
    alice,
    demo,  # noqa: F811
    demo_agent,  # noqa: F811
    start_worker,
):
    start_worker()
    demo_agent.reset()
    first = email_item(demo, alice, "ann@example.com")
    second = email_item(demo, alice, "cid@example.com")
    page = login(alice)
    page.goto("/inbox/")
    deny_both(page, first, second)

    toast = page.locator("[data-undo-toast]")
    expect(toast).to_contain_text("Denied 2 items")
    toast.locator("button[data-undo]").click()

    expect(page.locator(".flash-success")).to_contain_text("Undone: 2 decisions. Nothing was sent.")
    expect(page.locator(f'tr[data-item-id="{first.pk}"]')).to_be_visible()
    expect(page.locator(f'tr[data-item-id="{second.pk}"]')).to_be_visible()
    wait_out_the_windows(page, [first, second])
    assert resumes_received(demo_agent) == []
    assert set(InboxItem.objects.filter(pk__in=[first.pk, second.pk]).values_list("status", flat=True)) == {"open"}

    # Denied again with time for the screenshots and axe before pressing Undo (nothing waits this window out).
    settings.INBOX_UNDO_SECONDS = 30.0
    deny_both(page, first, second)
    expect(toast).to_contain_text("Denied 2 items")
    for size, scheme in (((390, 844), "light"), ((1280, 800), "dark")):
        page.set_viewport_size({"width": size[0], "height": size[1]})
        page.emulate_media(color_scheme=scheme)
        shot(page, f"undo-toast-list-{size[0]}-{scheme}")
        # The toast and the bulk summary beside it: nothing critical or serious for axe, in either scheme.
        found = [
            (violation["id"], [str(node["target"]) for node in violation["nodes"][:3]])
            for violation in Axe().run(settled(page)).response["violations"]
            if violation["impact"] in ("critical", "serious")
        ]
        assert found == [], found
    toast.locator("button[data-undo]").click()
    expect(page.locator(".flash-success")).to_contain_text("Undone: 2 decisions. Nothing was sent.")


def test_the_run_page_offers_undo_too(login, alice, demo):  # noqa: F811
    item = email_item(demo, alice, "dee@example.com")
    page = login(alice)
    page.goto(item.run.get_absolute_url())
    page.locator(f'label.seg-deny:has(input[name="decision-{item.pk}"])').click()
    page.locator("[data-run-submit]").click()

    expect(page.locator("[data-undo-toast]")).to_contain_text("1 decision recorded")
    page.keyboard.press("u")

    expect(page.locator(".flash-success")).to_contain_text("is open again")
    assert InboxItem.objects.get(pk=item.pk).status == "open"
    assert not Resume.objects.filter(run_id=item.run_id).exists()


def test_a_teammates_open_list_gets_the_undone_item_back_and_announces_it(
    login,
    alice,
    bob,
    demo,  # noqa: F811
):
    item = email_item(demo, alice, "eve@example.com")
    bob_list = open_live(login(bob), "/inbox/")
    row = bob_list.locator(f'tr[data-item-id="{item.pk}"]')
    expect(row).to_be_visible()
    off_loop(
        decision_submit, item_id=item.pk, user=alice, status="resolved", payload={"approved": False}, undoable=True
    )
    expect(row).to_have_count(0)

    off_loop(decision_undo, item_id=item.pk, user=alice)

    expect(row).to_be_visible()
    expect(bob_list.locator("#live-announce")).to_have_text(
        f"Back in the list (a decision was undone): “{item.short_title}”."
    )


@pytest.mark.parametrize("address", ["list", "list-with-item"])
def test_the_list_with_its_pane_shows_the_undo_toast_once(settings, login, alice, demo, address):  # noqa: F811
    """The page draws the Undo toast above the list; the pane beside it (opened as the list loads, or named by
    ``?item=``) does not draw it again."""
    settings.INBOX_UNDO_SECONDS = 60.0  # the window stays open through the reload, however slow the machine
    decided = email_item(demo, alice, "fay@example.com")
    other = email_item(demo, alice, "gus@example.com")
    page = login(alice)
    page.goto(item_page(decided))
    page.keyboard.press("d")
    expect(page.locator("[data-undo-toast]")).to_contain_text(f"Denied: “{decided.short_title}”")

    page.goto("/inbox/" if address == "list" else f"/inbox/?item={other.pk}")
    expect(page.locator(f'#split-pane [data-pane-item][data-item-id="{other.pk}"]')).to_be_visible()
    settled(page)
    expect(page.locator("[data-undo-toast]")).to_have_count(1)
    expect(page.locator("[data-undo-toast]")).to_contain_text(f"Denied: “{decided.short_title}”")
