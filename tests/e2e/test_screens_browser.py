"""Any screen: no page scrolls sideways at 390 px, and axe-core (through axe-playwright-python) finds no
critical or serious violation on the pages of the issue, at 1280×800 and 390×844, light and dark.

Set INBOX_SCREENSHOTS=<dir> to keep a screenshot of every page at every size and scheme."""

from __future__ import annotations

import copy
import json
from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone
from playwright.sync_api import expect

from inbox.decisions.services import decision_submit
from inbox.listing.saved_views import saved_view_create
from inbox.models import EscalationRule, Resume, Run
from inbox.policies.backtest import backtest_start, backtest_start_set
from inbox.policies.services import policy_create
from inbox.teams.away import away_set
from inbox.teams.escalations import escalation_sweep
from inbox.teams.snooze import item_snooze
from tests.conftest import load_events, spec_example
from tests.e2e.conftest import item_page, off_loop, settled, shot
from tests.factories import TeamFactory, UserFactory
from tests.helpers.browser import sign_in

pytestmark = pytest.mark.browser

SIZES = {"wide": {"width": 1280, "height": 800}, "phone": {"width": 390, "height": 844}}


def _finished(thread: str, run: str, interrupt: dict) -> dict:
    interrupt = {"expiresAt": (timezone.now() + timedelta(hours=2)).isoformat(), **interrupt}
    return {
        "type": "RUN_FINISHED",
        "threadId": thread,
        "runId": run,
        "outcome": {"type": "interrupt", "interrupts": [interrupt]},
    }


def _failing_agent(make_agent, alice) -> None:
    """A second agent, failing: its newest resume failed and its newest run ended in RUN_ERROR (the agents page
    then shows a failing agent beside the healthy one, whose resume was delivered)."""
    billing = make_agent("billing", name="Billing")

    def send(body) -> int:
        response = Client().post("/api/v1/runs", data=json.dumps(body), content_type="application/json", **billing.auth)
        assert response.status_code == 201, response.content
        return response.json()["id"]

    refund = Run.objects.get(
        pk=off_loop(send, _finished("t-b", "r-b", {"id": "b-1", "reason": "confirmation", "message": "Refund?"}))
    )
    off_loop(decision_submit, item_id=refund.items.get().pk, user=alice, status="resolved", payload={"approved": True})
    Resume.objects.filter(run=refund).update(state="failed", attempts=5, last_error="Connection refused")
    # A third agent whose answer is being retried after two failed attempts.
    crm = make_agent("crm", name="CRM")
    response = Client().post(
        "/api/v1/runs",
        data=json.dumps(_finished("t-crm", "r-crm", {"id": "crm-1", "reason": "confirmation", "message": "Merge?"})),
        content_type="application/json",
        **crm.auth,
    )
    merge = Run.objects.get(pk=response.json()["id"])
    off_loop(decision_submit, item_id=merge.items.get().pk, user=alice, status="resolved", payload={"approved": True})
    Resume.objects.filter(run=merge).update(
        state="pending", attempts=2, last_error="HTTP 503", next_attempt_at=timezone.now() + timedelta(minutes=5)
    )
    # A later run that ended in RUN_ERROR (as the resume worker records an agent's failed reply).
    errored = off_loop(send, _finished("t-b2", "r-b2", {"id": "b-2", "reason": "confirmation", "message": "Retry?"}))
    Run.objects.filter(pk=errored).update(outcome=Run.Outcome.ERROR)


@pytest.fixture
def pages(agent, make_agent, staff, alice, team, post_run) -> dict[str, str]:
    """One of every page the product has, with data in it (and a missing one, for the 404)."""
    tool = post_run(spec_example("approve_with_edits"))
    # The shadow policy first: the conversation's item then carries its note (a link in a sentence).
    policy = policy_create(
        user=staff,
        fields={
            "name": "Small refunds",
            "agent": agent.agent,
            "reason": "confirmation",
            "tool_name": "",
            "match_schema": {"type": "object"},
            "action": "approve",
            "mode": "shadow",
        },
    )
    # Every confirmation of the agent: a note on the conversation's item (and on the other confirmations).
    policy_create(
        user=staff,
        fields={
            "name": "Watch confirmations",
            "agent": agent.agent,
            "reason": "confirmation",
            "tool_name": "",
            "match_schema": None,
            "action": "approve",
            "mode": "shadow",
        },
    )
    conversation = post_run(
        {
            "events": [
                {"type": "RUN_STARTED", "threadId": "t-talk", "runId": "r-talk"},
                {
                    "type": "MESSAGES_SNAPSHOT",
                    "messages": [
                        {"id": "m1", "role": "user", "content": "Refund order 1042, it arrived broken"},
                        {"id": "m2", "role": "assistant", "content": "I will ask a person to approve the refund."},
                    ],
                },
                _finished("t-talk", "r-talk", {"id": "talk-1", "reason": "confirmation", "message": "Refund 40 EUR?"}),
            ]
        }
    )
    confirmation = post_run(
        _finished("t-c", "r-c", {"id": "c-1", "reason": "confirmation", "message": "Restart the cluster?"})
    )
    filing = copy.deepcopy(spec_example("non_tool_input_request"))
    filing["outcome"]["interrupts"][0]["expiresAt"] = (timezone.now() + timedelta(hours=2)).isoformat()
    form = post_run(filing)
    nested = post_run(
        _finished(
            "t-n",
            "r-n",
            {
                "id": "n-1",
                "reason": "input_required",
                "message": "Who attends?",
                "responseSchema": {
                    "type": "object",
                    "properties": {
                        "event": {"type": "string", "title": "Event"},
                        "people": {
                            "type": "array",
                            "items": {
                                "type": "object",
                                "properties": {"name": {"type": "string"}, "email": {"type": "string"}},
                                "required": ["name"],
                            },
                        },
                    },
                    "required": ["event"],
                },
            },
        ),
    )
    when = post_run(
        _finished(
            "t-w",
            "r-w",
            {
                "id": "w-1",
                "reason": "input_required",
                "message": "When should the maintenance start?",
                "responseSchema": {
                    "type": "object",
                    "properties": {"start": {"type": "string", "format": "date-time", "title": "Start"}},
                    "required": ["start"],
                },
            },
        ),
    )
    unknown = post_run(
        _finished("t-u", "r-u", {"id": "u-1", "reason": "ask_user", "message": "What should I tell them?"})
    )
    delivered = post_run(
        _finished("t-d", "r-d", {"id": "d-1", "reason": "confirmation", "message": "Archive the logs?"})
    )
    item = delivered.items.get()
    off_loop(decision_submit, item_id=item.pk, user=alice, status="resolved", payload={"approved": True})
    Resume.objects.filter(run=delivered).update(state="delivered", attempts=1)
    tool_item = tool.items.get()
    backtest = backtest_start(user=staff, policy=policy, draft_fields={"match_schema": None})
    # Staff's own snooze and saved views (one shared with a team): the Snoozed tab, the view tabs, the views page.
    snoozed = unknown.items.get()
    off_loop(item_snooze, item_id=snoozed.pk, user=staff, choice="tomorrow")
    view = saved_view_create(user=staff, name="Confirmations, oldest first", query="reason=confirmation&sort=oldest")
    saved_view_create(user=staff, name="Team tools", query="tab=all&reason=tool_call", team=team.name)
    escalated = post_run(
        _finished("t-e", "r-e", {"id": "e-1", "reason": "confirmation", "message": "Refund 900 EUR to order 77?"})
    ).items.get()
    finance = TeamFactory(name="Finance leads")
    EscalationRule.objects.create(
        team=agent.agent.teams.get(),
        after_minutes=30,
        to_team=finance,
        created_by=UserFactory(username="staff", is_staff=True),  # a grant of access: staff's
    )
    off_loop(escalation_sweep, now=timezone.now() + timedelta(minutes=31))
    deputy = UserFactory(username="deputy", teams=list(alice.groups.all()))
    start = timezone.now() - timedelta(minutes=1)
    off_loop(away_set, user=alice, starts_at=start, ends_at=start + timedelta(days=5), delegate=deputy, set_by=alice)
    _failing_agent(make_agent, alice)
    # A recorded LangGraph run: a conversation and three interrupts, each item linking to its siblings.
    parallel = post_run({"events": load_events("parallel-interrupted-run.jsonl")})
    # The ordered set with a deny policy that people disagreed with (the archive approved), made
    # after every run was posted so that it matched none of them at ingest: rows that explain it.
    deny = policy_create(
        user=staff,
        fields={"name": "No archiving", "agent": agent.agent, "reason": "confirmation", "action": "deny"},
    )
    set_backtest = backtest_start_set(user=staff, candidate=deny)
    return {
        "inbox": "/inbox/",
        "decided": "/inbox/?tab=decided",
        # The split view: the list and, beside it on a wide screen, the item (a phone shows the list alone).
        "split-view": f"/inbox/?item={tool_item.pk}",
        "split-view-decided": f"/inbox/?tab=decided&item={item.pk}",
        # A plain link to an item: the split view on a wide screen, the item page on a phone.
        "split-from-link": tool_item.get_absolute_url(),
        "inbox-snoozed": "/inbox/?tab=snoozed",
        "inbox-saved-view": f"/inbox/?{view.query}",
        "saved-views": "/inbox/views/",
        "item-snoozed": item_page(snoozed),
        "item-tool-call": item_page(tool_item),
        "item-confirmation": item_page(confirmation.items.get()),
        "item-input-form": item_page(form.items.get()),
        "item-nested-form": item_page(nested.items.get()),
        "item-date-time-form": item_page(when.items.get()),
        "item-unknown": item_page(unknown.items.get()),
        "item-decided": item_page(item),
        "item-escalated": item_page(escalated),
        "run-open": confirmation.get_absolute_url(),
        "run-delivered": delivered.get_absolute_url(),
        "agents": "/agents/",
        "agent": f"/agents/{agent.agent.slug}/",
        "thread": f"/audit/threads/{tool.thread_id}/",
        "audit-log": "/audit/",
        "tool-call-trail": f"/audit/tool-calls/{tool_item.tool_call_id}/",
        "stats": "/audit/stats/",
        "notification-settings": "/inbox/settings/notifications/",
        "escalation-rules": "/inbox/settings/escalation/",
        "run-conversation": conversation.get_absolute_url(),
        "item-conversation": item_page(conversation.items.get()),
        "item-conversation-siblings": item_page(parallel.items.order_by("pk").first()),
        "inbox-thread": f"/inbox/threads/{tool.thread_id}/",
        "policies": "/policies/",
        "policy-new": "/policies/new/",
        "policy": f"/policies/{policy.pk}/",
        "policy-edit": f"/policies/{policy.pk}/edit/",
        "policy-stats": "/policies/stats/",
        "policy-backtest": backtest.get_absolute_url(),
        "policy-set-backtest": set_backtest.get_absolute_url(),
        "api-docs": "/api/docs/",
        "not-found": "/inbox/no-such-page/",
    }


def _login(browser, live_asgi, user, viewport, scheme):
    context = browser.new_context(base_url=live_asgi, viewport=viewport, color_scheme=scheme)
    if user is not None:
        return context, sign_in(context, user)
    page = context.new_page()
    page.set_default_timeout(10_000)
    page.goto("/accounts/login/")
    return context, page


def _sideways(page) -> int:
    return page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth")


@pytest.mark.once  # layout and markup: the same on every database and Redis
def test_no_page_scrolls_sideways_on_a_phone(browser, live_asgi, staff, pages):
    context, page = _login(browser, live_asgi, None, SIZES["phone"], "light")
    assert _sideways(page) <= 0, "login"
    context.close()
    context, page = _login(browser, live_asgi, staff, SIZES["phone"], "light")
    wide = {}
    for name, path in pages.items():
        page.goto(path)
        expect(page.locator("#main")).to_be_visible()
        wide[name] = _sideways(page)
    context.close()
    assert {name: extra for name, extra in wide.items() if extra > 0} == {}


@pytest.mark.once  # layout and markup: the same on every database and Redis
def test_the_list_is_cards_and_the_proposal_then_the_decision_come_first_on_a_phone(browser, live_asgi, staff, pages):
    """On a phone you see what is proposed before the buttons that decide it, and the decision before the rest."""
    context, page = _login(browser, live_asgi, staff, SIZES["phone"], "light")
    page.goto(pages["inbox"])
    row = page.locator("tr[data-item-row]").first
    expect(row).to_have_css("display", "grid")  # waits out a live re-render of the rows
    page.goto(pages["item-tool-call"])
    proposal = page.locator("section[data-proposal]").bounding_box()
    decision = page.locator(".decision-card").bounding_box()
    approve = page.get_by_role("button", name="Approve", exact=True).bounding_box()
    conversation = page.get_by_role("heading", name="Conversation").bounding_box()
    assert proposal["y"] + proposal["height"] <= decision["y"] <= approve["y"]
    assert decision["y"] < conversation["y"]
    context.close()


@pytest.mark.once  # layout and markup: the same on every database and Redis
def test_on_a_phone_a_short_proposal_still_takes_the_pages_width(browser, live_asgi, staff, post_run):
    """A proposal with short arguments: its card and the decision's span the column (they had shrunk to their
    content, ragged beside each other), and the breadcrumb's "Inbox" stays one word beside a long run id."""
    interrupt = {"id": "s-1", "reason": "tool_call", "message": "Send?", "toolCallId": "tc-s"}
    events = [
        {"type": "RUN_STARTED", "threadId": "t-short", "runId": "run-" + "7" * 40},
        {"type": "TOOL_CALL_START", "toolCallId": "tc-s", "toolCallName": "send"},
        {"type": "TOOL_CALL_ARGS", "toolCallId": "tc-s", "delta": '{"to": "a@b.co"}'},
        {"type": "TOOL_CALL_END", "toolCallId": "tc-s"},
        _finished("t-short", "run-" + "7" * 40, interrupt),
    ]
    item = post_run({"events": events}).items.get()
    context, page = _login(browser, live_asgi, staff, SIZES["phone"], "light")
    page.goto(item_page(item))
    column = page.locator(".item-grid").bounding_box()
    for card in ("section[data-proposal]", ".decision-card"):
        box = page.locator(card).bounding_box()
        assert box["width"] >= column["width"] - 1, (card, box, column)
    inbox = page.locator("nav.crumbs > a").first
    assert inbox.evaluate("a => a.getClientRects().length") == 1 and inbox.bounding_box()["height"] < 30
    context.close()


@pytest.mark.once  # layout and markup: the same on every database and Redis
def test_a_phone_shows_three_items_above_the_fold_and_the_bulk_bar_once_one_is_selected(
    browser, live_asgi, staff, pages
):
    context, page = _login(browser, live_asgi, staff, SIZES["phone"], "light")
    page.goto(pages["inbox"])
    rows = page.locator("tr[data-item-row]")
    expect(rows.first).to_have_css("display", "grid")
    # One read of every row's place: a live re-render between reads would leave a stale handle.
    bottoms = page.evaluate(
        "[...document.querySelectorAll('tr[data-item-row]')].map(r => r.getBoundingClientRect().bottom + scrollY)"
    )
    above = [bottom for bottom in bottoms if bottom <= SIZES["phone"]["height"]]
    assert len(above) >= 3, [round(bottom) for bottom in bottoms]
    bulk = page.locator("[data-bulk-form]")
    expect(bulk).to_be_hidden()
    rows.first.locator("input[type=checkbox]").check()
    expect(bulk).to_be_visible()
    expect(page.get_by_role("button", name="Approve selected")).to_be_visible()
    context.close()


@pytest.mark.once  # layout and markup: the same on every database and Redis
def test_the_audit_log_is_cards_on_a_phone_with_every_column_readable(browser, live_asgi, staff, pages):
    """The details' one long line squeezed the other columns of the log's table to a letter each on a phone (no
    sideways scroll, so nothing else caught it): each event is a card, its actor and date on one line."""
    context, page = _login(browser, live_asgi, staff, SIZES["phone"], "dark")
    page.goto(pages["audit-log"])
    row = page.locator("#audit-events tbody tr").first
    expect(row).to_have_css("display", "grid")
    for column in ("au-col-when", "au-col-actor", "au-col-object"):
        box = row.locator(f"td.{column}").bounding_box()
        assert box["width"] > 80 and box["height"] < 60, (column, box)
    context.close()


@pytest.mark.once  # layout and markup: the same on every database and Redis
def test_policies_are_cards_on_a_phone_and_the_stats_legend_speaks_words(browser, live_asgi, staff, pages):
    """On a phone the policies are cards, not a table crushed to a few letters a line; the stats legend names
    statuses in words beside small swatches."""
    context, page = _login(browser, live_asgi, staff, SIZES["phone"], "light")
    for name in ("policies", "policy-stats"):
        page.goto(pages[name])
        row = page.locator("table.data-table tbody tr").first
        expect(row).to_have_css("display", "grid")
        title = row.locator("td.col-title").bounding_box()
        assert title["width"] > 100, (name, title)
    page.set_viewport_size(SIZES["wide"])
    page.goto(pages["stats"])
    legend = page.locator(".au-legend")
    expect(legend).to_contain_text("Decided")
    expect(legend).not_to_contain_text("resolved")
    swatch = legend.locator("svg").first.bounding_box()
    assert swatch["width"] <= 16 and swatch["height"] <= 16, swatch
    context.close()


def _settled(page) -> None:
    """A schema form is drawn by django-jsonform's script, then item.js names its fields on the next animation
    frame: wait for both (a busy machine can let axe in between), as a person's first look would."""
    page.wait_for_function(
        "[...document.querySelectorAll('[data-django-jsonform-container]')].every(c => c.children.length)"
    )
    page.evaluate("() => new Promise(done => requestAnimationFrame(() => requestAnimationFrame(done)))")


# What a colour scheme changes is colours (the dark blocks of static/css set colours only): the dark pass runs the
# rules that read them, and the light pass every rule, on the same markup.
COLOUR_RULES = ["color-contrast", "link-in-text-block"]


def _axe_problems(axe, page, rules: list[str] | None = None) -> list[tuple[str, str, str]]:
    options: dict = {"resultTypes": ["violations"], **({"runOnly": rules} if rules else {})}
    results = axe.run(page, options=options)
    return [
        (violation["id"], violation["impact"], ", ".join(str(node["target"]) for node in violation["nodes"][:5]))
        for violation in results.response["violations"]
        if violation["impact"] in ("critical", "serious")
    ]


@pytest.mark.once  # the markup's accessibility: every page's rendering on PostgreSQL is the access matrix's
@pytest.mark.parametrize("role", ["staff", "approver"])
@pytest.mark.parametrize("size", ["wide", "phone"])
def test_axe_finds_nothing_critical_or_serious(browser, live_asgi, staff, alice, pages, size, role):
    """Every page, in both colour schemes, as staff and as an approver in no staff role (who sees the 403 page where
    staff see more). Each page is opened once and checked light (every rule), then dark (the colour rules:
    ``COLOUR_RULES``); ``INBOX_SCREENSHOTS=<dir>`` keeps a screenshot of each."""
    from axe_playwright_python.sync_playwright import Axe

    axe = Axe()
    found = {}

    def check(page, name: str) -> None:
        for scheme in ("light", "dark"):
            page.emulate_media(color_scheme=scheme)
            settled(page)
            found[f"{name} ({scheme})"] = _axe_problems(axe, page, COLOUR_RULES if scheme == "dark" else None)
            shot(page, f"screen-{size}-{scheme}-{role}-{name}")

    context, page = _login(browser, live_asgi, None, SIZES[size], "light")
    check(page, "login")
    context.close()
    context, page = _login(browser, live_asgi, staff if role == "staff" else alice, SIZES[size], "light")
    for name, path in pages.items():
        page.goto(path)
        expect(page.locator("#main")).to_be_visible()
        page.wait_for_load_state("networkidle")
        page.evaluate(
            "document.querySelectorAll('main details').forEach(d => { d.open = true; })"
        )  # the folded parts too
        _settled(page)
        check(page, name)
    context.close()
    bad = {name: problems for name, problems in found.items() if problems}
    assert bad == {}, json.dumps(bad, indent=1)
    assert len(found) == 2 * (len(pages) + 1)  # every page, in both schemes


@pytest.mark.once  # layout and markup: the same on every database and Redis
def test_on_a_phone_the_scrolling_tabs_take_the_keyboard_and_keep_their_landmark(browser, live_asgi, staff, pages):
    """a11y.js gave every box that scrolls sideways role="region"; on the list's <nav> tabs and the audit log's
    filter <form> that is a role axe does not allow (a minor finding, so the test above let it through): they
    keep their own roles, and still take the keyboard."""
    from axe_playwright_python.sync_playwright import Axe

    axe = Axe()
    context, page = _login(browser, live_asgi, staff, SIZES["phone"], "light")
    page.set_viewport_size({"width": 320, "height": 800})  # narrower than the tabs on every page with a list
    disallowed = {}
    for name, path in pages.items():
        page.goto(path)
        expect(page.locator("#main")).to_be_visible()
        page.wait_for_load_state("networkidle")
        tabs = page.locator("nav.tabs")
        if tabs.count() and tabs.evaluate("nav => nav.scrollWidth > nav.clientWidth + 1"):
            expect(tabs).to_have_attribute("tabindex", "0")
            assert tabs.get_attribute("role") is None, name
        found = [
            str(node["target"])
            for v in axe.run(page, options={"runOnly": ["aria-allowed-role"], "resultTypes": ["violations"]}).response[
                "violations"
            ]
            if v["id"] == "aria-allowed-role"
            for node in v["nodes"]
        ]
        if found:
            disallowed[name] = found
    context.close()
    assert disallowed == {}


@pytest.mark.once  # layout and markup: the same on every database and Redis
def test_axe_finds_nothing_on_the_empty_inbox(browser, live_asgi, staff):
    from axe_playwright_python.sync_playwright import Axe

    context, page = _login(browser, live_asgi, staff, SIZES["wide"], "light")
    page.goto("/inbox/")
    assert _axe_problems(Axe(), page) == []
    context.close()


# The contrast of an SVG text against what is behind it, which axe does not check: the text's fill, and the
# background of the nearest box that paints one (the card).
SVG_TEXT_CONTRAST = """(sel) => {
  const rgb = (c) => c.match(/[\\d.]+/g).slice(0, 3).map(Number);
  const lum = ([r, g, b]) => {
    const f = (v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; };
    return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b);
  };
  return [...document.querySelectorAll(sel)].map((text) => {
    let box = text.closest("svg").parentElement;
    while (box && /rgba\\(0, 0, 0, 0\\)|transparent/.test(getComputedStyle(box).backgroundColor)) box = box.parentElement;
    const [a, b] = [lum(rgb(getComputedStyle(text).fill)), lum(rgb(getComputedStyle(box).backgroundColor))];
    return [text.textContent.trim(), Math.round(((Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05)) * 100) / 100];
  });
}"""


@pytest.mark.once  # layout and markup: the same on every database and Redis
@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_the_stats_donut_label_reads_in_either_scheme(browser, live_asgi, staff, pages, scheme):
    """The share in the middle of the donut was dark grey on the dark card (1.06:1): its text is measured here."""
    context, page = _login(browser, live_asgi, staff, SIZES["wide"], scheme)
    page.goto(pages["stats"])
    found = page.evaluate(SVG_TEXT_CONTRAST, "#chart-expired text")
    assert len(found) == 2 and all(ratio >= 4.5 for _, ratio in found), found
    # The chip with the proposed tool's name is not a white patch in dark mode.
    page.goto(pages["item-tool-call"])
    chip = page.evaluate(
        "() => { const el = document.querySelector('.tool-name'); return el && getComputedStyle(el).backgroundColor; }"
    )
    if chip is not None and scheme == "dark":
        assert chip in ("rgb(46, 33, 80)",), chip
    context.close()


@pytest.mark.once  # layout and markup: the same on every database and Redis
@pytest.mark.parametrize("scheme", ["light", "dark"])
@pytest.mark.parametrize("size", ["wide", "phone"])
def test_axe_on_an_item_with_a_conversation_and_on_failing_and_healthy_agents(
    browser, live_asgi, staff, pages, size, scheme
):
    """The two findings the issue named: link-in-text-block on an item with a conversation, and color-contrast on
    the agents page with a failing agent (failed delivery, run error) beside a healthy one."""
    from axe_playwright_python.sync_playwright import Axe

    axe = Axe()
    context, page = _login(browser, live_asgi, staff, SIZES[size], scheme)
    found = {}
    for name in ("item-conversation", "item-conversation-siblings", "agents", "run-conversation", "stats"):
        page.goto(pages[name])
        expect(page.locator("#main")).to_be_visible()
        page.wait_for_load_state("networkidle")
        page.evaluate("document.querySelectorAll('main details').forEach(d => { d.open = true; })")
        shot(page, f"axe48-{size}-{scheme}-{name}")
        found[name] = _axe_problems(axe, page)
    # What the findings were about is on the pages: a policy's note (a link in a sentence) on the item, and the
    # failing, retrying and healthy agents' marks.
    page.goto(pages["item-conversation"])
    expect(page.locator("[data-policy-notes] li a")).to_be_visible()
    page.goto(pages["agents"])
    expect(page.locator(".delivery-retrying").first).to_be_visible()
    expect(page.locator(".delivery-delivered").first).to_be_visible()
    expect(page.locator(".delivery-failed").first).to_be_visible()
    expect(page.locator(".pill-run-error").first).to_be_visible()
    context.close()
    assert {name: problems for name, problems in found.items() if problems} == {}, json.dumps(found, indent=1)


# The text a control shows: its own (unless its font size is 0) and what CSS adds after it.
SHOWN_TEXT = """(el) => {
  const own = parseFloat(getComputedStyle(el).fontSize) ? el.innerText.trim() : "";
  const after = getComputedStyle(el, "::after").content;
  return own + (after && after !== "none" && after !== "normal" ? after.replace(/^"|"$/g, "") : "");
}"""

PLACEHOLDER_FITS = """(input) => {
  const style = getComputedStyle(input);
  const canvas = document.createElement("canvas").getContext("2d");
  canvas.font = `${style.fontStyle} ${style.fontWeight} ${style.fontSize} ${style.fontFamily}`;
  const room = input.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
  return [input.placeholder, Math.ceil(canvas.measureText(input.placeholder).width), Math.floor(room)];
}"""


@pytest.mark.once  # layout and markup: the same on every database and Redis
@pytest.mark.parametrize("size", ["wide", "phone"])
def test_a_form_item_takes_the_wide_column_reads_in_order_and_names_its_buttons(
    browser, live_asgi, staff, post_run, size
):
    people = post_run(
        _finished(
            "t-f",
            "r-f",
            {
                "id": "f-1",
                "reason": "input_required",
                "message": "Who attends, and when?",
                "responseSchema": {
                    "type": "object",
                    "properties": {
                        "code": {
                            "type": "string",
                            "title": "Booking code",
                            "description": "Six letters, from the confirmation mail",
                            "minLength": 6,
                        },
                        "start": {"type": "string", "format": "date-time", "title": "Start"},
                        "people": {
                            "type": "array",
                            "title": "People",
                            "items": {"type": "object", "properties": {"name": {"type": "string"}}},
                        },
                    },
                    "required": ["code"],
                },
            },
        )
    ).items.get()
    context, page = _login(browser, live_asgi, staff, SIZES[size], "light")
    page.goto(item_page(people))
    _settled(page)
    if size == "wide":
        form_card = page.locator(".decision-card").bounding_box()
        other = page.locator(".item-grid .main-col").bounding_box()
        assert form_card["width"] > other["width"], (form_card, other)
    # The time box says why it is empty, and its words fit.
    placeholder, need, room = page.locator(".rjf-datetime-field-time input").evaluate(PLACEHOLDER_FITS)
    assert placeholder == "Choose a date first" and need <= room, (placeholder, need, room)
    # An entry added: every button of the form says what it does in words or a plain arrow, none a bare "[-]".
    page.locator(".rjf-add-button").first.click()
    page.locator(".rjf-add-button").first.click()
    _settled(page)
    shown = [
        text
        for button in page.locator("[data-schema-form] button").all()
        if button.is_visible()
        for text in [button.evaluate(SHOWN_TEXT)]
    ]
    assert "Remove" in shown, shown
    bare = [text for text in shown if text.strip() in ("[-]", "[+]", "×", "")]
    assert bare == [], shown
    # Refused: the field's description reads before its error.
    page.locator(".rjf-form-row", has_text="Booking code").locator("input").fill("abc")
    page.get_by_role("button", name="Submit answer").click()
    error = page.locator("[data-schema-form] .rjf-error-text").first
    expect(error).to_be_visible()
    shot(page, f"form-{size}")
    help_text = page.locator("[data-schema-form] .rjf-help-text", has_text="Six letters").bounding_box()
    assert help_text["y"] + help_text["height"] <= error.bounding_box()["y"] + 1
    context.close()
