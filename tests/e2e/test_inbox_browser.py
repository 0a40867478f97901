"""The approver's inbox in Debian's Chromium against the live ASGI server: items posted through the ingest
API appear, and each kind of interrupt is decided the way a person would.

Set INBOX_SCREENSHOTS=<dir> to save a screenshot of each page the tests visit."""

from __future__ import annotations

import copy
import json
from datetime import timedelta

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from inbox.models import Decision, InboxItem
from tests.conftest import spec_example
from tests.e2e.conftest import item_page, shot

pytestmark = pytest.mark.browser


def stored(model, **lookup):
    return model.objects.get(**lookup)


def email_with_proposal() -> dict:
    args = {"to": "a@b.com", "subject": "Hi", "body": "Hi"}
    return {
        "events": [
            {"type": "RUN_STARTED", "threadId": "thread-2", "runId": "run-10"},
            {"type": "TOOL_CALL_START", "toolCallId": "tc-42", "toolCallName": "sendEmail"},
            {"type": "TOOL_CALL_ARGS", "toolCallId": "tc-42", "delta": json.dumps(args)},
            {"type": "TOOL_CALL_END", "toolCallId": "tc-42"},
            {
                "type": "MESSAGES_SNAPSHOT",
                "messages": [{"id": "m1", "role": "user", "content": "Email a@b.com, say hi"}],
            },
            spec_example("approve_with_edits"),
        ]
    }


def test_items_posted_through_the_api_appear_in_the_inbox(login, alice, post_run):
    page = login(alice)
    post_run(spec_example("parallel_interrupts"))
    post_run(email_with_proposal())
    page.goto("/inbox/")
    rows = page.locator("tr[data-item-row]")
    expect(rows).to_have_count(4)
    expect(page.locator("#item-rows")).to_contain_text("Approve sendEmail to y@z.com?")
    expect(page.locator("#item-rows")).to_contain_text("sendEmail")
    expect(page.locator('[data-count="open"]')).to_have_text("4")
    expect(rows.first.locator(".countdown")).to_contain_text("in 23h")
    expect(rows.first.locator(".col-age time")).to_have_text("just now")
    shot(page, "list")

    # A list left open keeps its ages current: ten minutes later, without a reload.
    page.clock.install()
    page.reload()
    expect(rows.first.locator(".col-age time")).to_have_text("just now")
    page.clock.fast_forward("10:05")
    expect(rows.first.locator(".col-age time")).to_have_text("10 min ago")


def test_approve_with_edits_sends_the_edited_arguments(login, alice, post_run):
    run = post_run(email_with_proposal())
    item = run.items.get()
    page = login(alice)
    page.goto(item_page(item))
    expect(page.locator("[data-proposed-args]")).to_contain_text('"body": "Hi"')
    page.get_by_text("Approve with edits…").click()
    page.get_by_role("button", name="Edit as JSON").click()
    editor = page.locator("[data-edited-args]")
    expect(editor).to_be_visible()
    expect(editor).to_contain_text('"body": "Hi"')
    prefilled = json.loads(editor.input_value())
    assert prefilled == {"to": "a@b.com", "subject": "Hi", "body": "Hi"}
    edited = prefilled | {"body": "Hi (revised per my note)"}
    editor.fill(json.dumps(edited, indent=2))
    # The server's diff, field by field and word by word: only body changed, by the words added.
    diff = page.locator("[data-diff] [data-args-diff]")
    expect(diff.locator("tr.changed .path")).to_have_text(["body (changed)"])
    expect(diff.locator("tr.changed ins")).to_have_text(["(revised per my note)"])
    expect(diff.locator("tr.same")).to_have_count(2)
    shot(page, "item-edit-diff")
    page.get_by_role("button", name="Approve with these edits").click()

    expect(page.locator(".flash-success")).to_contain_text("Approved with edits")
    expect(page.locator("[data-item-status]").first).to_have_text("Approved with edits")
    decision = stored(Decision, item=item)
    assert decision.user == alice
    assert decision.payload == {"approved": True, "editedArgs": edited}
    shot(page, "item-decided")


def test_approve_with_edits_in_fields_keeps_a_multi_line_body_and_the_argument_order(login, alice, post_run):
    item = post_run(email_with_proposal()).items.get()
    page = login(alice)
    page.goto(item_page(item))
    page.get_by_text("Approve with edits…").click()
    fields = page.locator("[data-edit-fields]")
    expect(fields.locator("[data-edit-key]")).to_have_count(3)  # to, subject, body: one field each
    expect(page.locator("[data-edited-args]")).to_be_hidden()
    expect(fields.get_by_label("subject")).to_have_value("Hi")
    body = fields.get_by_label("body")
    body.fill("Hi Ann,\n\nThe report is attached.\n— Bob")
    fields.get_by_label("subject").fill('Q3 report "final"')
    diff = page.locator("[data-diff] [data-args-diff]")
    expect(diff.locator("tr.changed")).to_have_count(2)
    expect(diff.locator("tr.changed .path")).to_have_text(["subject (changed)", "body (changed)"])  # proposal order
    expect(diff.locator("tr.changed").first).to_contain_text('Q3 report "final"')
    shot(page, "item-edit-fields")
    # What is submitted keeps the proposal's argument order (as stored: jsonb orders keys its own way).
    editor = page.locator("[data-edited-args]")
    assert list(json.loads(editor.input_value())) == list(json.loads(editor.get_attribute("data-proposal")))
    page.get_by_role("button", name="Approve with these edits").click()

    expect(page.locator(".flash-success")).to_contain_text("Approved with edits")
    edited = stored(Decision, item=item).payload["editedArgs"]
    assert edited == {
        "to": "a@b.com",
        "subject": 'Q3 report "final"',
        "body": "Hi Ann,\n\nThe report is attached.\n— Bob",
    }


def test_the_parallel_example_is_decided_approve_approve_cancel_on_the_run_page(login, alice, post_run):
    run = post_run(spec_example("parallel_interrupts"))
    page = login(alice)
    page.goto(f"/inbox/runs/{run.pk}/")
    items = page.locator("[data-run-item]")
    expect(items).to_have_count(3)
    page.get_by_role("button", name="Approve", exact=True).first.click()  # "Set all: Approve"
    items.nth(2).locator(".seg-cancel").click()
    preview = page.locator("#resume-preview")
    expect(preview).to_contain_text('"interruptId": "i-3",\n      "status": "cancelled"')
    expect(page.locator("[data-run-summary]")).to_contain_text("This completes the run")
    shot(page, "run-chosen")
    page.get_by_role("button", name="Submit decisions").click()

    expect(page.locator(".flash-success")).to_contain_text("3 decisions recorded")
    for pk, status in zip(
        run.items.order_by("position").values_list("pk", flat=True), ["Approved", "Approved", "Cancelled"], strict=True
    ):
        expect(page.locator(f'.run-item [data-item-status="{pk}"]')).to_have_text(status)
    decided = {item.interrupt_id: (item.status, item.response_payload) for item in run.items.order_by("position")}
    assert decided == {
        "i-1": ("resolved", {"approved": True}),
        "i-2": ("resolved", {"approved": True}),
        "i-3": ("cancelled", None),
    }
    shot(page, "run-decided")


def test_the_quarterly_filing_form_refuses_bad_answers_next_to_the_fields_then_accepts(login, alice, post_run):
    body = copy.deepcopy(spec_example("non_tool_input_request"))
    body["outcome"]["interrupts"][0]["expiresAt"] = (timezone.now() + timedelta(hours=2)).isoformat()
    item = post_run(body).items.get()
    page = login(alice)
    page.goto(item_page(item))
    form = page.locator("[data-schema-form]")
    form.locator("select").select_option("Q1")
    year = form.locator("input").nth(0)
    year.fill("1999")
    page.get_by_role("button", name="Submit answer").click()

    expect(page.locator(".form-summary")).to_contain_text("Not saved: please fix the 2 problems")
    assert page.evaluate("location.pathname") == f"/inbox/items/{item.pk}/"  # the item's address, not …/decide/
    expect(page.locator("details", has_text="Expected answer")).not_to_have_attribute("open", "")
    year_row = page.locator(".rjf-form-row", has_text="Year")
    expect(year_row).to_contain_text("Year must be at least 2000.")
    revenue_row = page.locator(".rjf-form-row", has_text="Revenue")
    expect(revenue_row).to_contain_text("This field is required.")
    shot(page, "form-errors")
    assert stored(InboxItem, pk=item.pk).status == "open"

    form = page.locator("[data-schema-form]")
    expect(form.locator("select")).to_have_value("Q1")
    form.locator("input").nth(0).fill("2026")
    form.locator("input").nth(1).fill("4200000")
    page.get_by_role("button", name="Submit answer").click()
    expect(page.locator(".flash-success")).to_contain_text("Answered")
    assert stored(InboxItem, pk=item.pk).response_payload == {"quarter": "Q1", "year": 2026, "revenue": 4200000}


def test_an_unknown_reason_renders_and_can_be_decided(login, alice, post_run):
    run = post_run(
        {
            "type": "RUN_FINISHED",
            "threadId": "t-m",
            "runId": "r-m",
            "outcome": {
                "type": "interrupt",
                "interrupts": [
                    {
                        "id": "mig-1",
                        "reason": "acme:db_migration",
                        "message": "Apply migration 0042_drop_legacy_orders?",
                        "metadata": {"tables": ["orders_legacy"], "lockSeconds": 12},
                    }
                ],
            },
        }
    )
    page = login(alice)
    page.goto(item_page(run.items.get()))
    badge = page.locator(".item-badges .badge")
    expect(badge).to_have_text("Db migration (acme)")  # the reason in words, its framework after it
    expect(badge).to_have_attribute("title", "reason: acme:db_migration")  # the raw string on hover
    expect(page.locator("h1")).to_have_text("Apply migration 0042_drop_legacy_orders?")
    summary = page.locator("[data-metadata-summary]")
    expect(summary).to_be_visible()
    expect(summary).to_contain_text('tables["orders_legacy"]')
    expect(summary).to_contain_text("lockSeconds12")
    shot(page, "item-custom-reason")
    page.get_by_role("button", name="Deny").click()
    expect(page.locator(".flash-success")).to_contain_text("Denied")
    assert stored(InboxItem, interrupt_id="mig-1").response_payload == {"approved": False}


def test_an_xss_payload_in_message_and_metadata_stays_inert(login, alice, post_run):
    script = "<script>window.__xss = 'script'</script>"
    image = "<img src=x onerror=\"window.__xss = 'img'\">"
    run = post_run(
        {
            "type": "RUN_FINISHED",
            "threadId": "t-x",
            "runId": "r-x",
            "outcome": {
                "type": "interrupt",
                "interrupts": [
                    {
                        "id": "x-1",
                        "reason": "confirmation",
                        "message": f"Hello {script}{image}",
                        "metadata": {"note": image, "more": script},
                        "responseSchema": {
                            "type": "object",
                            "title": image,
                            "properties": {
                                "approved": {"type": "boolean", "title": image},
                                "why": {"type": "string", "title": script},
                            },
                            "required": ["why"],
                        },
                    }
                ],
            },
        }
    )
    page = login(alice)
    dialogs: list[str] = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    item = run.items.get()
    for url in ("/inbox/", f"/inbox/items/{item.pk}/", f"/inbox/runs/{run.pk}/"):
        page.goto(url)
        page.wait_for_load_state("load")
        assert page.evaluate("window.__xss") is None, url
    page.goto(item_page(item))
    expect(page.locator("h1.item-message")).to_have_text(f"Hello {script}{image}")
    page.locator("summary", has_text="Metadata").click()
    expect(page.locator("[data-metadata]")).to_be_visible()
    expect(page.locator("[data-metadata]")).to_contain_text(image.replace('"', '\\"'))
    expect(page.locator("[data-schema-form]")).to_contain_text("<script>")  # the schema title, as text
    assert page.locator("img[src=x]").count() == 0
    assert page.evaluate("window.__xss") is None
    assert dialogs == []
    shot(page, "item-xss")


def test_keyboard_navigation_moves_opens_and_lists_shortcuts(login, alice, post_run):
    run = post_run(spec_example("parallel_interrupts"))
    items = list(run.items.order_by("expires_at", "pk"))
    page = login(alice)
    page.set_viewport_size({"width": 1024, "height": 800})  # the list alone (wider, the split view: its own tests)
    page.goto("/inbox/")
    rows = page.locator("tr[data-item-row]")
    expect(rows).to_have_count(3)
    page.keyboard.press("j")
    expect(rows.nth(0)).to_have_class("row-open is-selected")
    page.keyboard.press("j")
    page.keyboard.press("j")
    page.keyboard.press("k")
    expect(rows.nth(1)).to_have_class("row-open is-selected")
    expect(page.locator("tr.is-selected")).to_have_count(1)
    page.keyboard.press("?")
    expect(page.locator("#shortcuts")).to_be_visible()
    expect(page.locator("#shortcuts")).to_contain_text("Next item")
    page.keyboard.press("Escape")
    expect(page.locator("#shortcuts")).to_be_hidden()
    page.keyboard.press("Enter")
    page.wait_for_url(f"**/inbox/items/{items[1].pk}/")
    expect(page.locator("h1")).to_have_text(items[1].message)


def test_a_person_signs_in_through_the_form_and_lands_on_the_inbox(browser, live_asgi, alice):
    """The other browser tests start from a session cookie (tests/helpers/browser.py): this one types."""
    from tests.helpers.browser import sign_in_through_the_form

    context = browser.new_context(base_url=live_asgi)
    page = sign_in_through_the_form(context, alice)
    assert page.url.endswith("/inbox/")
    expect(page.get_by_role("heading", level=1)).to_be_visible()
    expect(page.locator("body")).to_contain_text("alice")
    context.close()
