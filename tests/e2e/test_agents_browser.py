"""The agents list and an agent's page in Chromium: staff edit its settings and tokens there, errors land under
their fields, an approver sees the settings read-only, and both pages fit a phone, light and dark, with no
critical or serious axe-core finding.

Set INBOX_SCREENSHOTS=<dir> to keep screenshots of both pages at 1280×800 and 390×844, light and dark."""

from __future__ import annotations

import json
import re
from datetime import timedelta

import pytest
from playwright.sync_api import expect

from agents.models import Agent
from inbox.models import AuditEvent
from tests.e2e.conftest import shot
from tests.factories import TeamFactory
from tests.helpers.browser import sign_in

pytestmark = pytest.mark.browser

SIZES = {"wide": {"width": 1280, "height": 800}, "phone": {"width": 390, "height": 844}}


@pytest.fixture
def finance(db):
    return TeamFactory(name="finance")


@pytest.fixture
def open_as(browser, live_asgi):
    """A logged-in page at a size and colour scheme: ``open_as(user, "phone", "dark")``."""
    contexts = []

    def open_page(user, size: str = "wide", scheme: str = "light"):
        context = browser.new_context(base_url=live_asgi, viewport=SIZES[size], color_scheme=scheme)
        contexts.append(context)
        return sign_in(context, user)

    yield open_page
    for context in contexts:
        context.close()


def _save(page) -> int:
    with page.expect_navigation() as navigation:
        page.get_by_role("button", name="Save settings").click()
    return navigation.value.status


def test_staff_set_ttl_quorum_and_teams_on_the_agent_page(open_as, staff, agent, finance):
    page = open_as(staff)
    page.goto("/agents/")
    page.get_by_role("link", name="Mailer").click()
    settings = page.locator("[data-agent-settings-form]")
    expect(settings.get_by_label("Default expiry (TTL)")).to_have_value("1d")
    settings.get_by_label("Default expiry (TTL)").fill("2h")
    settings.get_by_label("Approvals required (quorum)").fill("2")
    settings.get_by_label("finance").check()
    assert _save(page) == 200  # after the redirect
    expect(page.locator(".flash-success")).to_have_text(
        "Settings saved: Default expiry (TTL), Approvals required (quorum), Teams."
    )
    expect(page.locator("[data-setting=default_ttl]")).to_contain_text("2 h")
    expect(page.locator("[data-setting=approvals_required]")).to_have_text("2")
    expect(page.locator("[data-setting=teams]")).to_have_text("finance, ops")
    expect(settings.get_by_label("Default expiry (TTL)")).to_have_value("2h")
    expect(settings.get_by_label("finance")).to_be_checked()
    event = AuditEvent.objects.get(verb="agent.changed")
    assert (event.actor_user, event.data["fields"]) == (staff, ["default_ttl", "approvals_required", "teams"])
    assert event.data["changes"]["teams"] == {"before": ["ops"], "after": ["finance", "ops"]}
    shot(page, "agents-detail-saved")


def test_bad_settings_show_their_errors_under_their_fields_and_store_nothing(open_as, staff, agent):
    page = open_as(staff)
    page.goto("/agents/mailer/")
    settings = page.locator("[data-agent-settings-form]")
    settings.get_by_label("Default expiry (TTL)").fill("soon")
    settings.get_by_label("Approvals required (quorum)").fill("0")
    settings.get_by_label("AG-UI endpoint URL").fill("ftp://files.example/agent")
    settings.get_by_label("New auth header value").fill("Bearer typed-secret")
    assert _save(page) == 400
    expected = {
        "default_ttl": ("Default expiry (TTL)", "Not a duration"),
        "approvals_required": ("Approvals required (quorum)", "greater than or equal to 1"),
        "endpoint_url": ("AG-UI endpoint URL", "Enter a valid URL."),
    }
    for name, (label, words) in expected.items():
        field = page.locator(f"[data-field={name}]")
        error = field.locator(f"[data-field-error={name}]")
        expect(error).to_contain_text(words)
        entry = field.get_by_label(label)
        expect(entry).to_have_attribute("aria-invalid", "true")
        # Under its own input, and named by it for screen readers.
        assert error.bounding_box()["y"] > entry.bounding_box()["y"]
        assert f"id_{name}_error" in entry.get_attribute("aria-describedby")
    assert page.locator("[data-field-error]").count() == 3
    expect(page.get_by_text("Nothing was saved")).to_be_visible()
    # What was typed stays for correcting, except the secret; the stored values are unchanged.
    expect(settings.get_by_label("Default expiry (TTL)")).to_have_value("soon")
    expect(settings.get_by_label("New auth header value")).to_have_value("")
    assert "typed-secret" not in page.content()
    stored = Agent.objects.get(pk=agent.agent.pk)
    assert (stored.default_ttl, stored.approvals_required, stored.endpoint_url, stored.auth_header_value) == (
        timedelta(days=1),
        1,
        "http://127.0.0.1:9/agent",
        "",
    )
    assert not AuditEvent.objects.filter(verb="agent.changed").exists()
    shot(page, "agents-detail-errors")


def test_an_approver_sees_the_settings_but_no_form_to_change_them(open_as, alice, agent):
    page = open_as(alice)
    page.goto("/agents/mailer/")
    expect(page.locator("[data-setting=default_ttl]")).to_contain_text("1 day")
    expect(page.locator("[data-setting=teams]")).to_have_text("ops")
    expect(page.get_by_text("Staff change these settings.")).to_be_visible()
    for gone in ("[data-agent-settings-form]", "[data-agent-tokens]", "#status"):
        expect(page.locator(gone)).to_have_count(0)
    expect(page.get_by_role("button", name="Start run")).to_be_visible()


def test_a_token_is_shown_once_works_with_bearer_and_is_refused_once_revoked(open_as, staff, agent):
    page = open_as(staff)
    page.goto("/agents/mailer/")
    tokens = page.locator("[data-agent-tokens]")
    tokens.get_by_label("Label (optional)").fill("billing host")
    tokens.get_by_role("button", name="Issue a new token").click()
    expect(page.locator(".flash-success")).to_contain_text("shown only once")
    box = page.get_by_label("New ingest token")
    expect(box).to_have_value(re.compile(r"^agi_\S{20,}$"))
    raw = box.input_value()
    shot(page, "agents-detail-new-token")
    whoami = page.request.get("/api/v1/agent", headers={"Authorization": f"Bearer {raw}"})
    assert whoami.status == 200 and whoami.json()["slug"] == "mailer"
    page.reload()
    expect(page.get_by_label("New ingest token")).to_have_count(0)
    assert raw not in page.content()
    row = tokens.locator("li.token", has_text="billing host")
    expect(row.locator(".pill")).to_have_text("Active")
    row.get_by_role("button", name=re.compile("^Revoke token")).click()
    expect(page.locator(".flash-success")).to_contain_text("Revoked token")
    expect(tokens.locator("li.token", has_text="billing host").locator(".pill")).to_have_text("Revoked")
    assert page.request.get("/api/v1/agent", headers={"Authorization": f"Bearer {raw}"}).status == 401
    assert page.request.get("/api/v1/agent", headers={"Authorization": f"Bearer {agent.token}"}).status == 200


def test_disabling_an_agent_shows_on_its_page_and_in_the_list(open_as, staff, agent):
    page = open_as(staff)
    page.goto("/agents/mailer/")
    page.get_by_role("button", name="Disable agent").click()
    expect(page.locator("[data-agent-state]")).to_have_text("Disabled")
    assert page.request.get("/api/v1/agent", headers={"Authorization": f"Bearer {agent.token}"}).status == 403
    page.goto("/agents/")
    expect(page.locator("[data-agent-row=mailer] .col-agent-state")).to_have_text("Disabled")


def _sideways(page) -> int:
    return page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth")


def _axe_problems(page) -> list[tuple[str, str, str]]:
    from axe_playwright_python.sync_playwright import Axe

    results = Axe().run(page)
    return [
        (violation["id"], violation["impact"], ", ".join(str(node["target"]) for node in violation["nodes"][:5]))
        for violation in results.response["violations"]
        if violation["impact"] in ("critical", "serious")
    ]


@pytest.mark.parametrize("scheme", ["light", "dark"])
@pytest.mark.parametrize("size", ["wide", "phone"])
def test_both_pages_fit_and_pass_axe_with_the_form_filled_wrong(open_as, staff, agent, finance, size, scheme):
    Agent.objects.filter(pk=agent.agent.pk).update(auth_header_value="Bearer kept")
    page = open_as(staff, size, scheme)
    found, wide = {}, {}
    page.goto("/agents/")
    if size == "phone":
        expect(page.locator("tr[data-agent-row]").first).to_have_css("display", "grid")
    found["list"], wide["list"] = _axe_problems(page), _sideways(page)
    shot(page, f"agents-{size}-{scheme}-list")
    page.goto("/agents/mailer/")
    found["agent"], wide["agent"] = _axe_problems(page), _sideways(page)
    shot(page, f"agents-{size}-{scheme}-agent")
    page.locator("[data-agent-tokens]").get_by_role("button", name="Issue a new token").click()
    expect(page.get_by_label("New ingest token")).to_be_visible()
    found["agent-new-token"], wide["agent-new-token"] = _axe_problems(page), _sideways(page)
    page.locator("[data-agent-settings-form]").get_by_label("Default expiry (TTL)").fill("later")
    _save(page)
    expect(page.locator("[data-field-error=default_ttl]")).to_be_visible()
    found["agent-errors"], wide["agent-errors"] = _axe_problems(page), _sideways(page)
    shot(page, f"agents-{size}-{scheme}-agent-errors")
    assert {name: problems for name, problems in found.items() if problems} == {}, json.dumps(found, indent=1)
    assert {name: extra for name, extra in wide.items() if extra > 0} == {}


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_the_empty_list_says_how_to_register_an_agent(open_as, staff, scheme):
    page = open_as(staff, "phone", scheme)
    page.goto("/agents/")
    expect(page.locator("[data-agents-empty]")).to_contain_text("manage.py agent_create")
    assert _axe_problems(page) == [] and _sideways(page) <= 0
    shot(page, f"agents-phone-{scheme}-empty")
