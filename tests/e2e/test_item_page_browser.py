"""The item page in Chromium: arguments read as fields with the JSON on demand, an approval with edits shows its
field-by-field word diff and the history says who did what in words, and the form built from a responseSchema
puts each error under its own field (nested ones too), marks and labels its fields, uses the panel's width and
names its buttons. axe-core finds nothing critical or serious on these pages in their decided and refused states.

Set INBOX_SCREENSHOTS=<dir> to keep screenshots of them at 1280×800 and 390×844, light and dark."""

from __future__ import annotations

import copy
import json
from datetime import timedelta

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from inbox.decisions.services import decision_submit
from inbox.models import Decision, InboxItem
from tests.conftest import spec_example
from tests.e2e.conftest import item_page, off_loop, shot
from tests.helpers.browser import sign_in

pytestmark = pytest.mark.browser

SIZES = {"wide": {"width": 1280, "height": 800}, "phone": {"width": 390, "height": 844}}

ARGS = {
    "to": "ann@example.com",
    "subject": "Q3 report",
    "body": "Hi Ann,\n\nThe Q3 report is attached. The numbers are final as of noon today.\n\n— Bob",
    "options": {"priority": "high", "track": True, "cc": ["lead@example.com", "ops@example.com"]},
}

NESTED_SCHEMA = {
    "type": "object",
    "properties": {
        "startDate": {"type": "string", "format": "date"},
        "contact_name": {"type": "string"},
        "address": {
            "type": "object",
            "properties": {
                "street": {"type": "string"},
                "city": {"type": "string"},
                "zip_code": {"type": "string", "minLength": 5},
            },
            "required": ["street", "city"],
        },
        "tags": {"type": "array", "items": {"type": "string"}, "uniqueItems": True},
    },
    "required": ["startDate", "address"],
}


def _later() -> str:
    return (timezone.now() + timedelta(hours=2)).isoformat()


def email_proposal(thread: str = "t-mail", run: str = "r-mail") -> dict:
    finished = copy.deepcopy(spec_example("approve_with_edits"))
    finished["threadId"], finished["runId"] = thread, run
    finished["outcome"]["interrupts"][0]["responseSchema"]["properties"]["editedArgs"] = {"type": "object"}
    return {
        "events": [
            {"type": "RUN_STARTED", "threadId": thread, "runId": run},
            {"type": "TOOL_CALL_START", "toolCallId": "tc-42", "toolCallName": "sendEmail"},
            {"type": "TOOL_CALL_ARGS", "toolCallId": "tc-42", "delta": json.dumps(ARGS)},
            {"type": "TOOL_CALL_END", "toolCallId": "tc-42"},
            finished,
        ]
    }


def filing() -> dict:
    body = copy.deepcopy(spec_example("non_tool_input_request"))
    body["outcome"]["interrupts"][0]["expiresAt"] = _later()
    return body


def nested_form() -> dict:
    interrupt = {
        "id": "ship-1",
        "reason": "input_required",
        "message": "Where should the hardware ship?",
        "expiresAt": _later(),
        "responseSchema": NESTED_SCHEMA,
    }
    return {
        "type": "RUN_FINISHED",
        "threadId": "t-ship",
        "runId": "r-ship",
        "outcome": {"type": "interrupt", "interrupts": [interrupt]},
    }


def row(page, label: str):
    """The django-jsonform row of the field labelled ``label`` (exactly)."""
    return page.locator(".rjf-form-row").filter(has=page.locator("label", has_text=label)).last


def required_mark(label) -> str:
    return label.evaluate("el => getComputedStyle(el, '::after').content")


# --- arguments, edits, history -------------------------------------------------------------------------------


def test_arguments_read_as_fields_and_the_json_opens_on_demand(login, alice, post_run):
    item = post_run(email_proposal()).items.get()
    page = login(alice)
    page.goto(item_page(item))
    fields = page.locator("[data-proposed-fields]")
    expect(fields.locator("dt")).to_have_text(["to", "subject", "body", "options", "priority", "track", "cc", "1", "2"])
    body = fields.locator(".field-row", has=page.locator("dt", has_text="body")).locator("dd")
    # The multi-line body keeps its lines (as a person reads it, not "\n\n") and wraps inside the card.
    assert body.evaluate("el => el.innerText") == ARGS["body"]
    box, card = body.bounding_box(), page.locator("section[data-proposal]").bounding_box()
    assert box["x"] + box["width"] <= card["x"] + card["width"]
    # Nested parts are indented under their parent, one step per level.
    left = {
        label: fields.locator(".field-row", has=page.locator("dt", has_text=label)).first.bounding_box()["x"]
        for label in ("options", "priority", "1")
    }
    assert left["options"] < left["priority"] < left["1"]
    # The JSON is there on demand, in the agent's order, and its block is reachable by keyboard.
    json_block = page.locator("[data-proposed-args]")
    expect(json_block).to_be_hidden()
    summary = page.locator("summary", has_text="Show JSON")
    summary.focus()
    page.keyboard.press("Enter")
    expect(json_block).to_be_visible()
    assert list(json.loads(json_block.inner_text())) == list(ARGS)
    page.keyboard.press("Tab")
    expect(json_block).to_be_focused()
    expect(json_block).to_have_accessible_name("Proposed arguments as JSON")
    shot(page, "item-args-fields")


def test_an_approval_with_edits_shows_each_edited_field_word_by_word(login, alice, bob, post_run):
    item = post_run(email_proposal()).items.get()
    page = login(alice)
    page.goto(item_page(item))
    page.get_by_text("Approve with edits…").click()
    editor = page.locator("[data-edited-args]")
    if editor.is_hidden():
        page.get_by_role("button", name="Edit as JSON").click()
    edited = ARGS | {"subject": "Q3 report (final)", "body": ARGS["body"].replace("noon today", "5pm yesterday")}
    editor.fill(json.dumps(edited, indent=2))
    page.get_by_label("Comment (optional").fill("The numbers moved.")
    page.get_by_label("Then go to the next open item").uncheck()
    page.get_by_role("button", name="Approve with these edits").click()
    expect(page.locator(".flash-success")).to_contain_text("Approved with edits")

    # Another approver opens the decided item: the arguments are the diff, field by field in the agent's order.
    page = login(bob)
    page.goto(item_page(item))
    diff = page.locator("#proposal-diff")
    # Each row says its change in words too (read by screen readers), not by colour alone.
    expect(diff.locator("td.path")).to_have_text(
        [
            "to (unchanged)",
            "subject (changed)",
            "body (changed)",
            "options.priority (unchanged)",
            "options.track (unchanged)",
            "options.cc (unchanged)",
        ]
    )
    expect(diff.locator("tr.changed del")).to_have_text(["noon", "today."])
    expect(diff.locator("tr.changed ins")).to_have_text([" (final)", "5pm", "yesterday."])
    expect(page.locator("[data-edit-summary]")).to_contain_text("2 fields edited: subject, body.")
    page.get_by_role("link", name="See the edits").click()
    expect(page).to_have_url(f"{item_page(item)}#proposal-diff")

    # The history says it in words; the same diff and the payload are under Details.
    entry = page.locator("[data-history-entry]")
    expect(entry.locator(".history-sentence")).to_contain_text("alice approved with 2 edits")
    expect(entry.locator(".comment")).to_have_text("The numbers moved.")
    expect(entry.locator(".args-diff")).to_be_hidden()
    entry.locator("summary", has_text="Details").click()
    expect(entry.locator(".args-diff tr.changed del")).to_have_text(["noon", "today."])
    expect(entry.locator("pre")).to_contain_text('"subject": "Q3 report (final)"')
    shot(page, "item-decided-with-edits")
    assert Decision.objects.get(item=item).payload == {"approved": True, "editedArgs": edited}


def test_a_denial_reads_as_a_sentence_with_its_reason(login, alice, bob, post_run):
    item = post_run(email_proposal()).items.get()
    off_loop(
        decision_submit,
        item_id=item.pk,
        user=bob,
        status="resolved",
        payload={"approved": False},
        comment="Not before the audit.",
    )
    page = login(alice)
    page.goto(item_page(item))
    sentence = page.locator("[data-history-entry] .history-sentence")
    expect(sentence).to_contain_text("bob denied: Not before the audit.")
    expect(page.locator("[data-history]")).not_to_contain_text('{"approved"')  # no raw JSON until asked
    page.locator("[data-history] summary", has_text="Details").click()
    expect(page.locator("[data-history] pre")).to_contain_text('"approved": false')


# --- the form built from the responseSchema ------------------------------------------------------------------


def test_the_filing_form_sent_empty_shows_each_required_error_under_its_own_field(login, alice, post_run):
    item = post_run(filing()).items.get()
    page = login(alice)
    page.goto(item_page(item))
    form = page.locator("[data-schema-form]")
    for label in ("Quarter", "Year", "Revenue"):
        field = form.get_by_label(label, exact=True)
        expect(field).to_have_attribute("aria-required", "true")  # (c) marked for screen readers…
        assert required_mark(row(page, label).locator("label")) == '" *"'  # …and on screen
        # (d) the label is tied to its input: clicking it focuses the field.
        row(page, label).locator("label").click()
        expect(field).to_be_focused()
    page.get_by_role("button", name="Submit answer").click()

    expect(page.locator(".form-summary")).to_contain_text("please fix the 3 problems")
    expect(form.locator(".rjf-error-text")).to_have_count(3)
    for label in ("Quarter", "Year", "Revenue"):
        expect(row(page, label).locator(".rjf-error-text")).to_have_text(["This field is required."])
        field = form.get_by_label(label, exact=True)
        expect(field).to_have_attribute("aria-invalid", "true")
        expect(field).to_have_accessible_description("This field is required.")
    shot(page, "item-filing-errors")
    assert InboxItem.objects.get(pk=item.pk).status == "open"


def test_a_nested_form_puts_errors_under_the_nested_fields_with_titles_people_read(login, alice, post_run):
    item = post_run(nested_form()).items.get()
    page = login(alice)
    page.goto(item_page(item))
    form = page.locator("[data-schema-form]")
    # (e) titles fall back to the property name in words.
    expect(form.locator("label")).to_have_text(["Start date", "Contact name", "Street", "City", "Zip code"])
    expect(form.locator(".rjf-form-group-title")).to_have_text(["Address [-]", "Tags"])
    # (c) the required fields of the nested object are marked too.
    for label in ("Start date", "Street", "City"):
        expect(form.get_by_label(label, exact=True)).to_have_attribute("aria-required", "true")
        assert required_mark(row(page, label).locator("label")) == '" *"'
    for label in ("Contact name", "Zip code"):
        expect(form.get_by_label(label, exact=True)).not_to_have_attribute("aria-required", "true")
        assert required_mark(row(page, label).locator("label")) in ("none", "normal")
    form.get_by_label("Zip code").fill("123")
    form.get_by_role("button", name="Add an entry to Tags").click()
    form.get_by_label("Tags, entry 1").fill("fragile")
    form.get_by_role("button", name="Add an entry to Tags").click()
    form.get_by_label("Tags, entry 2").fill("fragile")
    page.get_by_role("button", name="Submit answer").click()

    expect(page.locator(".form-summary")).to_contain_text("please fix the 5 problems")
    expect(row(page, "Start date").locator(".rjf-error-text")).to_have_text(["This field is required."])
    expect(row(page, "Street").locator(".rjf-error-text")).to_have_text(["This field is required."])
    expect(row(page, "City").locator(".rjf-error-text")).to_have_text(["This field is required."])
    expect(row(page, "Zip code").locator(".rjf-error-text")).to_have_text(["Zip code must be at least 5 characters."])
    expect(row(page, "Contact name").locator(".rjf-error-text")).to_have_count(0)
    tags = page.locator(".rjf-form-group").filter(has=page.locator(".rjf-form-group-title", has_text="Tags")).last
    expect(tags.locator(".rjf-error-text")).to_have_text(["has non-unique elements (item 1 repeats an earlier one)"])
    expect(form.get_by_label("Zip code")).to_have_value("123")  # what was typed is kept
    shot(page, "item-nested-errors")


def test_the_forms_buttons_say_what_they_do_and_list_entries_have_names(login, alice, post_run):
    item = post_run(nested_form()).items.get()
    page = login(alice)
    page.goto(item_page(item))
    form = page.locator("[data-schema-form]")
    toggle = form.get_by_role("button", name="Collapse Address")
    expect(toggle).to_have_attribute("aria-expanded", "true")
    toggle.click()
    expect(form.get_by_label("Street")).to_be_hidden()
    expanded = form.get_by_role("button", name="Expand Address")
    expect(expanded).to_have_attribute("aria-expanded", "false")
    expanded.click()
    expect(form.get_by_label("Street")).to_be_visible()

    add = form.get_by_role("button", name="Add an entry to Tags")
    add.click()
    add.click()
    form.get_by_label("Tags, entry 1").fill("fragile")
    form.get_by_label("Tags, entry 2").fill("urgent")
    form.get_by_role("button", name="Move entry 1 of Tags down").click()
    expect(form.get_by_label("Tags, entry 1")).to_have_value("urgent")
    form.get_by_role("button", name="Remove entry 2 of Tags").click()
    expect(form.get_by_label("Tags, entry 2")).to_have_count(0)
    expect(form.get_by_label("Tags, entry 1")).to_have_value("urgent")
    # No button is left with only a glyph ("[-]", "×", "↑") for a name.
    names = form.get_by_role("button").evaluate_all(
        "els => els.map(el => el.getAttribute('aria-label') || el.textContent)"
    )
    assert all(len(name) > 3 and not name.startswith("[") for name in names), names
    shot(page, "item-nested-entries")


@pytest.mark.once  # layout and markup: the same on every database and Redis
@pytest.mark.parametrize("size", ["wide", "phone"])
def test_the_forms_inputs_use_the_panels_width(browser, live_asgi, alice, post_run, size):
    item = post_run(nested_form()).items.get()
    context = browser.new_context(base_url=live_asgi, viewport=SIZES[size])
    page = sign_in(context, alice)
    page.goto(item_page(item))
    form = page.locator("[data-schema-form]")
    form.get_by_role("button", name="Add an entry to Tags").click()
    right = form.bounding_box()["x"] + form.bounding_box()["width"]
    for label in ("Start date", "Contact name", "Street", "City", "Zip code"):
        box = form.get_by_label(label, exact=True).bounding_box()
        assert right - (box["x"] + box["width"]) <= 4, (label, box, right)
        assert box["width"] >= form.bounding_box()["width"] * 0.8, (label, box)
    # A list entry's input shares the row with its buttons: they sit beside it, not on top of it.
    entry = form.get_by_label("Tags, entry 1").bounding_box()
    remove = form.get_by_role("button", name="Remove entry 1 of Tags").bounding_box()
    assert entry["x"] + entry["width"] <= remove["x"]
    assert page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth") <= 0
    context.close()


# --- the states above, at every size and scheme: axe-core and screenshots ------------------------------------


def _serious(axe, page) -> list[tuple[str, str]]:
    results = axe.run(page)
    return [
        (violation["id"], ", ".join(str(node["target"]) for node in violation["nodes"][:5]))
        for violation in results.response["violations"]
        if violation["impact"] in ("critical", "serious")
    ]


@pytest.mark.once  # layout and markup: the same on every database and Redis
@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_axe_finds_nothing_serious_on_the_item_pages_states(browser, live_asgi, alice, bob, post_run, scheme):
    from axe_playwright_python.sync_playwright import Axe

    proposal = post_run(email_proposal("t-open", "r-open")).items.get()
    decided = post_run(email_proposal("t-done", "r-done")).items.get()
    edited = ARGS | {"subject": "Q3 report (final)", "options": ARGS["options"] | {"priority": "normal"}}
    off_loop(
        decision_submit,
        item_id=decided.pk,
        user=alice,
        status="resolved",
        payload={"approved": True, "editedArgs": edited},
        comment="Final numbers.",
    )
    form = post_run(filing()).items.get()
    nested = post_run(nested_form()).items.get()
    axe, found = Axe(), {}
    for size, viewport in SIZES.items():
        context = browser.new_context(base_url=live_asgi, viewport=viewport, color_scheme=scheme)
        page = sign_in(context, bob)
        page.goto(item_page(proposal))
        page.locator("summary", has_text="Show JSON").click()
        found[f"{size}-tool-call-open"] = _serious(axe, page)
        shot(page, f"item-{size}-{scheme}-tool-call-open")
        page.goto(item_page(decided))
        page.locator("[data-history] summary", has_text="Details").click()
        found[f"{size}-tool-call-decided-with-edits"] = _serious(axe, page)
        shot(page, f"item-{size}-{scheme}-tool-call-decided-with-edits")
        page.goto(item_page(form))
        page.get_by_role("button", name="Submit answer").click()
        expect(page.locator(".form-summary")).to_be_visible()
        found[f"{size}-form-errors"] = _serious(axe, page)
        shot(page, f"item-{size}-{scheme}-form-errors")
        page.goto(item_page(nested))
        page.get_by_role("button", name="Add an entry to Tags").click()
        page.get_by_role("button", name="Submit answer").click()
        expect(page.locator(".form-summary")).to_be_visible()
        page.get_by_role("button", name="Add an entry to Tags").click()
        found[f"{size}-nested-form-errors"] = _serious(axe, page)
        shot(page, f"item-{size}-{scheme}-nested-form")
        context.close()
    bad = {name: problems for name, problems in found.items() if problems}
    assert bad == {}, json.dumps(bad, indent=1)
