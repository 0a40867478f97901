"""The inbox list as an approver works through it, in Chromium: a screenful of dense rows at 1440×900 with each
message wrapped to two lines, column headers that sort, filters that apply on change, and a reason on every
open row that has no bulk checkbox.

Set INBOX_SCREENSHOTS=<dir> to keep screenshots of the list at 1440×900 and 390×844, light and dark."""

from __future__ import annotations

import json
import re
from datetime import timedelta
from urllib.parse import parse_qs, urlparse

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from inbox.models import InboxItem
from tests.e2e.conftest import off_loop, open_live, settled, shot

pytestmark = pytest.mark.browser

WIDE = {"width": 1440, "height": 900}
PHONE = {"width": 390, "height": 844}

# What agents ask in a working day: short questions and long ones, tool calls and confirmations.
REQUESTS = [
    ("tool_call", "sendEmail", "Send the renewal reminder to the 14 customers whose annual plan ends this month?"),
    (
        "tool_call",
        "issueRefund",
        "Refund order #48213 (€129.00) to the original card? The customer reports the parcel arrived damaged and "
        "attached three photos of the broken hinge; the carrier has already accepted the claim.",
    ),
    ("confirmation", None, "Restart the billing cluster?"),
    (
        "tool_call",
        "deleteRecords",
        "Delete 2,314 stale leads that nobody has contacted in 18 months from the CRM, with their activity "
        "history and attached files? This cannot be undone.",
    ),
    ("confirmation", None, "Publish the March release notes to the public changelog?"),
    ("tool_call", "createInvoice", "Create an invoice of $4,800.00 for Northwind Traders (consulting, February)?"),
    ("tool_call", "postMessage", "Post the incident summary for INC-2291 in #status-updates?"),
    (
        "confirmation",
        None,
        "Rotate the production database credentials now? Every service reconnects within a minute; the two "
        "nightly batch jobs still running will be retried from their last checkpoint.",
    ),
    ("tool_call", "scheduleMeeting", "Book a 30-minute call with Dana Whitfield on Thursday at 15:00?"),
    ("tool_call", "updatePrice", "Raise the price of the Team plan from $12 to $14 per seat for new customers?"),
    ("confirmation", None, "Archive the 2023 audit logs to cold storage?"),
    (
        "tool_call",
        "sendEmail",
        "Reply to the vendor with the signed NDA and ask them to confirm the delivery window for the 40 "
        "replacement laptops before Friday, copying procurement and the IT lead?",
    ),
    ("tool_call", "mergePullRequest", "Merge PR #1187 “Retry webhooks with jitter” into main?"),
    ("confirmation", None, "Disable the legacy SSO login for the Berlin office?"),
    ("tool_call", "transferFunds", "Transfer €12,500.00 from the operating account to payroll?"),
    ("tool_call", "grantAccess", "Grant Priya Raman read access to the finance dashboards until 30 June?"),
    (
        "confirmation",
        None,
        "Scale the search service from 4 to 8 replicas for the product launch? The estimated extra cost is "
        "$310 per day until it is scaled back.",
    ),
    ("tool_call", "closeTicket", "Close support ticket #7731 as resolved?"),
    ("tool_call", "sendSms", "Text the on-call engineer that the backup job failed twice?"),
    ("confirmation", None, "Renew the TLS certificate of api.example.com now rather than in 9 days?"),
]


def _run(n: int, reason: str, tool: str | None, message: str, minutes: int, **metadata: str) -> dict:
    """One interrupted run of one request, expiring in ``minutes``."""
    interrupt = {
        "id": f"req-{n}",
        "reason": reason,
        "message": message,
        "expiresAt": (timezone.now() + timedelta(minutes=minutes)).isoformat(),
    }
    events: list[dict] = [{"type": "RUN_STARTED", "threadId": f"thread-{n}", "runId": f"run-{n}"}]
    if tool:
        interrupt["toolCallId"] = f"call-{n}"
        events += [
            {"type": "TOOL_CALL_START", "toolCallId": f"call-{n}", "toolCallName": tool},
            {"type": "TOOL_CALL_ARGS", "toolCallId": f"call-{n}", "delta": json.dumps({"n": n})},
            {"type": "TOOL_CALL_END", "toolCallId": f"call-{n}"},
        ]
    finished = {
        "type": "RUN_FINISHED",
        "threadId": f"thread-{n}",
        "runId": f"run-{n}",
        "outcome": {"type": "interrupt", "interrupts": [interrupt]},
    }
    if metadata:
        finished["metadata"] = metadata
    return {"events": [*events, finished]}


@pytest.fixture
def twenty(post_run) -> list[InboxItem]:
    """Twenty open requests, one run each, expiring 15 min, 25 min, … apart in posting order (so the Open tab's
    default order, soonest first, is the posting order)."""
    return [
        post_run(_run(n, reason, tool, message, minutes=15 + 10 * n)).items.get()
        for n, (reason, tool, message) in enumerate(REQUESTS)
    ]


def _fully_visible_rows(page) -> int:
    return page.evaluate(
        """() => [...document.querySelectorAll("tr[data-item-row]")].filter((row) => {
             const box = row.getBoundingClientRect();
             return box.height > 0 && box.top >= 0 && box.bottom <= window.innerHeight;
           }).length"""
    )


def _messages(page) -> list[str]:
    return page.locator("tr[data-item-row] .row-link").all_inner_texts()


def test_twelve_rows_or_more_fit_a_1440_by_900_screen_with_each_message_whole_on_two_lines(login, alice, twenty):
    page = login(alice)
    page.set_viewport_size(WIDE)
    page.goto("/inbox/")
    expect(page.locator("tr[data-item-row]")).to_have_count(20)
    assert _fully_visible_rows(page) >= 12
    # Each message is there whole (nothing cut off by the server), and takes at most two lines.
    longest = max((item for item in twenty), key=lambda item: len(item.message))
    link = page.locator(f'tr[data-item-id="{longest.pk}"] .row-link')
    expect(link).to_have_text(longest.message)
    # Measured in one go: the live socket may swap the rows in (a resync right after the load) at any moment.
    measured = page.evaluate(
        """(id) => {
             const link = document.querySelector(`tr[data-item-id="${id}"] .row-link`);
             const lines = link.getBoundingClientRect().height / parseFloat(getComputedStyle(link).lineHeight);
             return {lines: Math.round(lines), clamped: link.scrollHeight > link.clientHeight};
           }""",
        longest.pk,
    )
    assert measured == {"lines": 2, "clamped": True}
    expect(link).to_have_attribute("title", longest.message)
    for scheme in ("light", "dark"):
        page.emulate_media(color_scheme=scheme)
        shot(page, f"list-1440-{scheme}")
    page.set_viewport_size(PHONE)
    assert page.evaluate("getComputedStyle(document.querySelector('tr[data-item-row]')).display") == "grid"
    assert page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth") <= 0
    for scheme in ("light", "dark"):
        page.emulate_media(color_scheme=scheme)
        shot(page, f"list-390-{scheme}")


def _query(page) -> dict[str, list[str]]:
    return parse_qs(urlparse(page.url).query)


def test_column_headers_sort_the_list_both_ways_and_keep_the_filters(login, alice, twenty):
    page = login(alice)
    page.set_viewport_size(WIDE)
    page.goto("/inbox/?reason=tool_call")
    tool_calls = [item.message for item in twenty if item.reason == "tool_call"]
    expires = page.locator("th.col-due")
    age = page.locator("th.col-age")
    # The Open tab is sorted by expiry, soonest first, and says so.
    expect(expires).to_have_attribute("aria-sort", "ascending")
    expect(age).not_to_have_attribute("aria-sort", re.compile(".*"))
    assert _messages(page) == tool_calls

    expires.get_by_role("link").click()
    page.wait_for_url(re.compile(r"sort=expires_last"))
    expect(expires).to_have_attribute("aria-sort", "descending")
    expect(expires.locator(".sort-arrow")).to_have_text("↓")
    assert _messages(page) == tool_calls[::-1]
    assert _query(page)["reason"] == ["tool_call"]

    expires.get_by_role("link").click()
    page.wait_for_url(re.compile(r"sort=expires(&|$)"))
    expect(expires).to_have_attribute("aria-sort", "ascending")
    assert _messages(page) == tool_calls

    # Age: newest first (the youngest ages at the top), then oldest first.
    age.get_by_role("link", name=re.compile("^Age")).click()
    page.wait_for_url(re.compile(r"sort=newest"))
    expect(age).to_have_attribute("aria-sort", "ascending")
    expect(expires).not_to_have_attribute("aria-sort", re.compile(".*"))
    assert _messages(page) == tool_calls[::-1]
    age.get_by_role("link").click()
    page.wait_for_url(re.compile(r"sort=oldest"))
    expect(age).to_have_attribute("aria-sort", "descending")
    assert _messages(page) == tool_calls
    assert _query(page)["reason"] == ["tool_call"]
    # The Sort select tells the same.
    expect(page.locator("select[name=sort]")).to_have_value("oldest")

    # Where no index serves an order, the header stays plain: the Decided tab sorts by age only.
    page.goto("/inbox/?tab=decided")
    expect(page.locator("th.col-due")).to_have_text("Outcome")
    expect(page.locator("th.col-due a")).to_have_count(0)
    expect(page.locator("th.col-agent a, th.col-reason a, th.col-tool a")).to_have_count(0)
    expect(page.locator("th.col-age a")).to_have_count(1)


def test_a_filter_applies_as_soon_as_it_changes_and_the_list_stays_live(login, alice, twenty, post_run):
    page = login(alice)
    page.set_viewport_size(WIDE)
    open_live(page, "/inbox/")
    apply = page.locator("[data-filters-apply]")
    # No Apply button to click: it is out of sight until a keyboard reaches it.
    assert apply.bounding_box()["width"] <= 1
    page.locator("select[name=reason]").select_option("confirmation")
    page.wait_for_url(re.compile(r"reason=confirmation"))
    confirmations = [item.message for item in twenty if item.reason == "confirmation"]
    assert _messages(page) == confirmations
    expect(page.locator('[data-count="open"]')).to_have_text(str(len(confirmations)))
    expect(page.locator("select[name=reason]")).to_be_focused()
    expect(page.locator("body")).to_have_attribute("data-live", "open")

    # The filtered list still follows what arrives: a confirmation shows up, a tool call does not.
    post_run(_run(90, "confirmation", None, "Restore yesterday's snapshot of the staging database?", minutes=5))
    post_run(_run(91, "tool_call", "sendEmail", "Send the weekly digest?", minutes=5))
    rows = page.locator("tr[data-item-row]")
    expect(rows.first).to_contain_text("Restore yesterday's snapshot of the staging database?")
    expect(rows).to_have_count(len(confirmations) + 1)
    expect(page.locator("#item-rows")).not_to_contain_text("Send the weekly digest?")

    # A text search applies on Enter, and keeps the select's choice.
    page.locator("input[name=q]").fill("cluster")
    page.locator("input[name=q]").press("Enter")
    page.wait_for_url(re.compile(r"q=cluster"))
    assert _query(page)["reason"] == ["confirmation"]
    assert _messages(page) == ["Restart the billing cluster?"]
    # Tabbing to the Apply button shows it.
    page.locator("select[name=sort]").focus()
    page.keyboard.press("Tab")
    expect(apply).to_be_focused()
    assert apply.bounding_box()["width"] > 20


def test_an_open_row_without_a_bulk_checkbox_says_why(login, alice, bob, post_run):
    plain = post_run(_run(1, "confirmation", None, "Restart the billing cluster?", minutes=30)).items.get()
    form = post_run(_run(2, "input_required", None, "Which cost centre should this go to?", minutes=40)).items.get()
    held = post_run(_run(3, "confirmation", None, "Archive the 2023 audit logs?", minutes=50)).items.get()
    InboxItem.objects.filter(pk=held.pk).update(claimed_by=bob)
    mine = post_run(
        _run(4, "tool_call", "transferFunds", "Transfer €900 to payroll?", minutes=60, requestedBy="alice")
    ).items.get()
    page = login(alice)
    page.set_viewport_size(WIDE)
    page.goto("/inbox/")

    def cell(item):
        return page.locator(f'tr[data-item-id="{item.pk}"] td.col-select')

    expect(cell(plain).get_by_role("checkbox", name=f"Select {plain.interrupt_id}")).to_be_enabled()
    for item, words in (
        (form, "Needs an answer from its form: open it to decide"),
        (held, "Claimed by bob: only they decide it"),
    ):
        expect(cell(item).get_by_role("checkbox")).to_have_count(0)
        note = cell(item).locator("[data-bulk-note]")
        expect(note).to_be_visible()
        expect(note).to_have_attribute("title", words)
        expect(cell(item)).to_have_text(words)  # read by a screen reader with the row
    # The requester may still pick their own request to deny or cancel it, and is told they cannot approve it.
    own = cell(mine).get_by_role("checkbox")
    expect(own).to_be_enabled()
    expect(own).to_have_accessible_description(re.compile("someone else must approve it"))
    expect(page.locator(f'tr[data-item-id="{mine.pk}"] [data-self-requested]')).to_be_visible()
    expect(page.locator(f'tr[data-item-id="{plain.pk}"] [data-self-requested]')).to_have_count(0)

    from axe_playwright_python.sync_playwright import Axe

    axe, found = Axe(), {}
    for size, viewport in (("wide", WIDE), ("phone", PHONE)):
        page.set_viewport_size(viewport)
        for scheme in ("light", "dark"):
            page.emulate_media(color_scheme=scheme)
            violations = axe.run(settled(page)).response["violations"]
            found[f"{size}-{scheme}"] = [v["id"] for v in violations if v["impact"] in ("critical", "serious")]
            shot(page, f"list-bulk-notes-{size}-{scheme}")
    assert found == dict.fromkeys(found, [])
    page.set_viewport_size(WIDE)
    page.emulate_media(color_scheme="light")
    # Bulk-approving it anyway is refused for that row alone, as the note said.
    own.check()
    cell(plain).get_by_role("checkbox").check()
    page.locator('[data-bulk-action="approve"]').click()
    expect(page.locator("[data-bulk-summary]")).to_contain_text("1 decided")
    assert off_loop(lambda: InboxItem.objects.get(pk=mine.pk).status) == "open"
