"""Auto-decision policies in Debian's Chromium: staff create a policy in the page, an agent posts a run, and
the item arrives already approved by the policy, with the run resumed.

Set INBOX_SCREENSHOTS=<dir> to save a screenshot of each page the test visits."""

from __future__ import annotations

import json

import pytest
from django.test import Client
from playwright.sync_api import expect

from inbox.models import Resume, Run
from tests.e2e.conftest import item_page, off_loop, shot
from tests.policies.runs import tool_run

pytestmark = pytest.mark.browser

INTERNAL = (
    '{"type": "object", "properties": {"to": {"type": "string", "pattern": "@ourco\\\\.com$"}}, "required": ["to"]}'
)


def test_staff_create_a_policy_and_the_next_matching_item_is_approved_by_it(login, staff, alice, agent):
    page = login(staff)
    page.goto("/inbox/")
    page.get_by_role("link", name="Policies").click()
    page.get_by_role("link", name="New policy").first.click()
    page.fill("#id_name", "Internal email")
    page.select_option("#id_agent", "mailer")
    page.fill("#id_reason", "tool_call")
    page.fill("#id_tool_name", "sendEmail")
    page.fill("#id_match_schema", '{"pattern": "(a)\\\\1"}')
    page.select_option("#id_action", "approve")
    page.select_option("#id_mode", "enforce")
    page.get_by_role("button", name="Create policy").click()
    expect(page.locator("[data-field-error=match_schema]")).to_contain_text("RE2")
    shot(page, "policy-form-error")
    page.fill("#id_match_schema", INTERNAL)
    page.get_by_role("button", name="Create policy").click()
    expect(page.locator("h1")).to_contain_text("Internal email")
    expect(page.locator("[data-policy-mode]")).to_have_text("Enforce")
    shot(page, "policy-created")

    def send() -> int:
        body = tool_run("t1", "r1", ("sendEmail", {"to": "ann@ourco.com", "subject": "Lunch"}))
        response = Client().post(
            "/api/v1/runs", data=json.dumps({"events": body}), content_type="application/json", **agent.auth
        )
        assert response.status_code == 201, response.content
        return response.json()["id"]

    run = Run.objects.get(pk=off_loop(send))
    item = run.items.get()
    approver = login(alice)
    approver.goto(item_page(item))
    expect(approver.locator("[data-policy-note=decided]")).to_contain_text("Approved by policy Internal email")
    expect(approver.locator(".outcome")).to_contain_text("policy:Internal email")
    shot(approver, "item-approved-by-policy")
    assert Resume.objects.filter(run=run).exists()

    page.reload()
    expect(page.locator("[data-stat=matches]")).to_have_text("1")
    expect(page.locator("[data-policy-matches]")).to_contain_text("Decided the item")
    shot(page, "policy-page-with-match")
