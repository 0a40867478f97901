"""The audit pages in a real browser: the tool-call trail after a full round trip with the demo agent,
the audit log with its filters and export, stats, and the notification preferences."""

from __future__ import annotations

import threading

import pytest
from django.contrib.auth.models import Group

from inbox.decisions.services import decision_submit
from inbox.ingest.start import run_start
from inbox.models import InboxItem, Resume
from inbox.resumes.services import resume_dispatch
from tests.agent_servers import demo, demo_agent, demo_server  # noqa: F401
from tests.e2e.conftest import shot
from tests.helpers.exports import csv_rows

pytestmark = pytest.mark.browser

EDITED = {"to": "bob@example.com", "subject": "Lunch moved", "body": "Are we still on for 1pm?"}


@pytest.fixture
def round_trip(demo, demo_agent, alice):  # noqa: F811
    """The demo agent proposes sendEmail; alice approves with edits; the resume goes out through the same
    dispatch the Celery task runs, and the agent's TOOL_CALL_RESULT comes back. Run on a thread of its own,
    as a request or a worker would (live pushes after commit refuse this thread's event loop)."""
    outcome: dict = {}

    def trip() -> None:
        try:
            run = run_start(agent=demo.agent, user=alice, message="email bob@example.com").run
            item = InboxItem.objects.get(run=run)
            decision_submit(
                item_id=item.pk,
                user=alice,
                status="resolved",
                payload={"approved": True, "editedArgs": EDITED},
                comment="Bob asked for 1pm",
            )
            outcome["dispatch"] = resume_dispatch(resume_id=Resume.objects.get(run=run).pk)
            item.refresh_from_db()
            outcome["item"] = item
        except Exception as exc:  # surfaced below, in the test's thread
            outcome["error"] = exc

    worker = threading.Thread(target=trip)
    worker.start()
    worker.join(60)
    if "error" in outcome:
        raise outcome["error"]
    assert outcome["dispatch"] == "delivered"
    return outcome["item"]


def test_the_tool_call_trail_after_a_round_trip_shows_proposal_edits_and_result(round_trip, login, alice):
    page = login(alice)
    page.goto(f"/audit/tool-calls/{round_trip.tool_call_id}/")

    proposal, decision, result = page.locator("#proposal"), page.locator("#decision"), page.locator("#result")
    assert "sendEmail" in proposal.inner_text() and "Are we still on for noon?" in proposal.inner_text()
    assert "Approved with edits by alice" in " ".join(decision.locator(".sub").inner_text().split())
    assert "Bob asked for 1pm" in decision.inner_text()
    # Word by word, fields in the proposal's order (to, subject, body): the subject gained "moved", the body's
    # "noon?" became "1pm?"; the recipient is unchanged.
    inserted = decision.locator("#args-diff tr.changed ins").all_inner_texts()
    assert [text.strip() for text in inserted] == ["moved", "1pm?"]
    assert decision.locator("#args-diff tr.changed del").all_inner_texts() == ["noon?"]
    assert "bob@example.com" in decision.locator("#args-diff tr.same").inner_text()
    assert round_trip.tool_result["runId"] in result.inner_text()
    assert "Lunch moved" in result.locator(".tool-result").inner_text()
    shot(page, "audit-trail")

    # From the trail to the thread's timeline, which lists the resumed run and the result.
    page.click(f"text={round_trip.thread.thread_id}")
    page.wait_for_url(f"**/audit/threads/{round_trip.thread_id}/")
    timeline = page.locator("#timeline")
    assert timeline.locator("li").count() == 7
    assert "Resume delivered" in timeline.inner_text()
    shot(page, "audit-timeline")


def test_an_outsider_gets_a_404_for_the_trail(round_trip, login, carol):
    page = login(carol)
    response = page.goto(f"/audit/tool-calls/{round_trip.tool_call_id}/")
    assert response.status == 404 and "sendEmail" not in page.content()


def test_the_audit_log_filters_and_exports_what_the_user_sees(round_trip, login, alice):
    page = login(alice)
    page.goto("/audit/")
    assert page.locator("#audit-events tbody tr").count() >= 6
    page.fill("input[name=verb]", "item.resolved")
    page.click("#audit-filters button[type=submit]")
    page.wait_for_url("**verb=item.resolved**")
    assert page.locator("#audit-events tbody tr").count() == 1
    shot(page, "audit-log")

    with page.expect_download() as download_info:
        page.click("a[href*='decisions.csv']")
    rows = csv_rows(open(download_info.value.path(), "rb").read())  # without the signed trailer
    assert [(row["user"], row["tool_name"], row["edited"]) for row in rows] == [("alice", "sendEmail", "True")]


def test_the_stats_page_draws_its_charts(round_trip, login, alice):
    page = login(alice)
    page.goto("/audit/stats/")
    assert page.locator("#chart-per-day rect").count() == 1
    assert page.locator("#kpi-approval .value").inner_text() == "100%"
    assert page.locator("#per-agent tr[data-agent='demo'] .approval").inner_text() == "100%"
    shot(page, "audit-stats")


def test_a_user_switches_to_the_digest_in_the_browser(login, bob):
    bob.groups.add(Group.objects.get_or_create(name="finance")[0])
    page = login(bob)
    page.goto("/inbox/settings/notifications/")
    page.check("input[value=digest]")
    page.click("#notification-form button[type=submit]")
    assert "Notification preferences saved." in page.locator(".flash").inner_text()
    assert page.locator("input[value=digest]").is_checked()
    shot(page, "audit-prefs")
