"""The stats page: items per day by outcome, approval rate and median time to decision per agent,
share expired, resume failures — over what the user may see."""

from __future__ import annotations

import copy
from datetime import timedelta

import time_machine
from django.utils import timezone

from inbox.audit.stats import build_report
from inbox.decisions.services import decision_submit
from inbox.models import InboxItem, Resume
from tests.conftest import spec_example


def seed(agent, ingest, alice) -> None:
    """4 items: i-1 approved after 10 min, i-2 denied after 30 min, i-3 still open, int-form expired."""
    start = timezone.now()
    with time_machine.travel(start, tick=False):
        ingest(agent, copy.deepcopy(spec_example("parallel_interrupts")))
        ingest(agent, copy.deepcopy(spec_example("non_tool_input_request")))  # expiresAt already past
    with time_machine.travel(start + timedelta(minutes=10), tick=False):
        item = InboxItem.objects.get(interrupt_id="i-1")
        decision_submit(item_id=item.pk, user=alice, status="resolved", payload={"approved": True})
    with time_machine.travel(start + timedelta(minutes=30), tick=False):
        item = InboxItem.objects.get(interrupt_id="i-2")
        decision_submit(item_id=item.pk, user=alice, status="resolved", payload={"approved": False})


def test_the_report_counts_outcomes_approval_rate_median_and_expired_share(agent, ingest, alice):
    seed(agent, ingest, alice)
    report = build_report(user=alice, days=30)
    assert report.total == 4
    assert report.by_status == {"resolved": 2, "cancelled": 0, "expired": 1, "open": 1}
    (row,) = report.agents
    assert (row.slug, row.items, row.decided, row.approved, row.expired) == ("mailer", 4, 2, 1, 1)
    assert row.approval_rate == 0.5 and row.median_seconds == 20 * 60 and row.median_label == "20 min"
    assert report.expired_share == 0.25
    today = report.columns[-1]
    assert today.total == 4 and len(today.bars) == 3  # resolved, expired, open stacked


def test_the_stats_page_draws_svg_charts_and_the_per_agent_table(agent, ingest, alice, client):
    seed(agent, ingest, alice)
    Resume.objects.create(
        run=InboxItem.objects.get(interrupt_id="i-1").run,
        thread_id=InboxItem.objects.get(interrupt_id="i-1").thread_id,
        agent=agent.agent,
        next_run_id="run-x",
        input={},
        state="failed",
        last_error="connection refused by the agent",
    )
    client.force_login(alice)
    page = client.get("/audit/stats/").content.decode()
    assert '<svg viewBox="0 0 760 220"' in page and "2 decided" in page  # the bar's tooltip
    assert 'data-agent="mailer"' in page and "50%" in page and "20 min" in page
    assert "25%" in page  # share expired
    assert "connection refused by the agent" in page
    assert '<script src="http' not in page  # no CDN


def test_other_teams_see_nothing_of_these_items(agent, ingest, alice, carol, client):
    seed(agent, ingest, alice)
    report = build_report(user=carol, days=30)
    assert report.total == 0 and report.agents == []
    client.force_login(carol)
    page = client.get("/audit/stats/").content.decode()
    assert "No items in this period" in page and "mailer" not in page


def test_the_window_leaves_out_older_items(agent, ingest, alice):
    with time_machine.travel(timezone.now() - timedelta(days=10)):
        ingest(agent, copy.deepcopy(spec_example("minimal_tool_approval")))
    assert build_report(user=alice, days=7).total == 0
    assert build_report(user=alice, days=30).total == 1


def test_an_unknown_period_falls_back_to_30_days(alice, client):
    client.force_login(alice)
    response = client.get("/audit/stats/?days=abc")
    assert response.status_code == 200 and "The last 30 days" in response.content.decode()
