"""A backtest whose worker dies is not left "Reading items" for ever: beat's recovery sweep starts it again from the
beginning once it has read nothing for INBOX_BACKTEST_STALL_SECONDS, the reading it replaces writes nothing more,
and the result is the one a single reading gives (no finding twice). Three stalled readings fail it with that
reason; a queued backtest whose message was lost is queued again as it is."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from config.celery import app
from inbox import limits
from inbox.models import InboxItem
from inbox.models.policies import BacktestFinding, PolicyBacktest
from inbox.policies import backtest as backtests
from inbox.policies.backtest import backtest_requeue_stalled, backtest_run, backtest_start
from tests.agent_servers import wait_for
from tests.policies.history import internal_email_with_history


@pytest.fixture
def policy(staff, agent, alice):
    return internal_email_with_history(staff, agent.agent, alice)


def queued_backtest(staff, policy, monkeypatch) -> PolicyBacktest:
    """A backtest long enough for a worker (its message is in the queue, or lost: the caller decides)."""
    monkeypatch.setattr(limits, "BACKTEST_INLINE_ITEMS", 1)
    backtest = backtest_start(user=staff, policy=policy, days=30)
    assert backtest.state == PolicyBacktest.State.PENDING
    return backtest


def as_a_dead_worker_left_it(backtest: PolicyBacktest, *, stalled_for: timedelta = timedelta(hours=1)) -> None:
    """Running, one chunk's finding written, no progress since: what a worker killed while reading leaves."""
    PolicyBacktest.objects.filter(pk=backtest.pk).update(
        state=PolicyBacktest.State.RUNNING, scanned=2, total=6, progress_at=timezone.now() - stalled_for
    )
    BacktestFinding.objects.create(
        backtest=backtest, item=InboxItem.objects.first(), kind=BacktestFinding.Kind.DISAGREED
    )


def result(backtest: PolicyBacktest) -> tuple:
    backtest.refresh_from_db()
    return (backtest.state, backtest.decided, backtest.matched, backtest.agreed, backtest.found_wrong)


def test_a_stalled_reading_is_started_again_and_counts_each_item_once(staff, policy, monkeypatch):
    backtest = queued_backtest(staff, policy, monkeypatch)
    as_a_dead_worker_left_it(backtest)
    # The dead worker's message, should it come back (acks late), finds the backtest taken and leaves it.
    assert backtest_run(backtest.pk) == "gone"

    assert backtest_requeue_stalled() == [backtest.pk]
    backtest.refresh_from_db()
    assert (backtest.state, backtest.attempt, backtest.scanned) == ("pending", 1, 0)
    assert not backtest.findings.exists()
    assert backtest_requeue_stalled() == []  # queued again once, not at every sweep

    assert backtest_run(backtest.pk) == "done"
    assert result(backtest) == ("done", 8, 5, 2, 1)
    assert backtest.findings.count() == 4  # as one reading finds: 3 disagreed, 1 found wrong


def test_a_reading_that_was_only_slow_writes_nothing_after_it_was_started_again(staff, policy, monkeypatch):
    backtest = queued_backtest(staff, policy, monkeypatch)
    monkeypatch.setattr(limits, "BACKTEST_CHUNK", 1)  # it writes after every item
    applies = backtests.policy_applies_to
    taken = []

    def slow_then_taken_over(*args, **kwargs):
        if not taken:  # while this reading holds its first item, the sweep sees it stalled and starts it again
            PolicyBacktest.objects.filter(pk=backtest.pk).update(progress_at=timezone.now() - timedelta(hours=1))
            taken.extend(backtest_requeue_stalled())
        return applies(*args, **kwargs)

    monkeypatch.setattr(backtests, "policy_applies_to", slow_then_taken_over)
    assert backtest_run(backtest.pk) == "superseded"
    assert taken == [backtest.pk]
    backtest.refresh_from_db()
    assert (backtest.state, backtest.attempt, backtest.scanned, backtest.matched) == ("pending", 1, 0, 0)
    assert not backtest.findings.exists()

    monkeypatch.setattr(backtests, "policy_applies_to", applies)
    assert backtest_run(backtest.pk) == "done"
    assert result(backtest) == ("done", 8, 5, 2, 1) and backtest.findings.count() == 4


def test_a_backtest_still_making_progress_is_left_alone(staff, policy, monkeypatch):
    backtest = queued_backtest(staff, policy, monkeypatch)
    as_a_dead_worker_left_it(backtest, stalled_for=timedelta(seconds=30))
    assert backtest_requeue_stalled() == []
    backtest.refresh_from_db()
    assert (backtest.state, backtest.attempt, backtest.findings.count()) == ("running", 0, 1)


def test_a_queued_backtest_whose_message_was_lost_is_queued_again_as_it_is(staff, policy, monkeypatch):
    backtest = queued_backtest(staff, policy, monkeypatch)
    PolicyBacktest.objects.filter(pk=backtest.pk).update(progress_at=timezone.now() - timedelta(hours=1))
    assert backtest_requeue_stalled() == [backtest.pk]
    backtest.refresh_from_db()
    assert (backtest.state, backtest.attempt) == ("pending", 0)
    assert timezone.now() - backtest.progress_at < timedelta(minutes=1)


def test_the_third_stalled_reading_fails_with_its_reason_on_the_page_and_the_api(client, staff, policy, monkeypatch):
    backtest = queued_backtest(staff, policy, monkeypatch)
    for attempt in range(backtests.BACKTEST_MAX_ATTEMPTS):
        PolicyBacktest.objects.filter(pk=backtest.pk).update(
            state=PolicyBacktest.State.RUNNING, progress_at=timezone.now() - timedelta(hours=1)
        )
        queued = backtest_requeue_stalled()
        assert queued == ([backtest.pk] if attempt < backtests.BACKTEST_MAX_ATTEMPTS - 1 else [])
    backtest.refresh_from_db()
    assert backtest.state == "failed" and backtest.finished_at is not None
    assert backtest.error == "Its worker stopped 3 times while reading the items."

    client.force_login(staff)
    page = client.get(backtest.get_absolute_url()).content.decode()
    assert "The backtest did not finish." in page and "Its worker stopped 3 times" in page
    assert 'http-equiv="refresh"' not in page
    body = client.get(f"/api/v1/policies/{policy.pk}/backtests/{backtest.pk}").json()
    assert (body["state"], body["attempt"], body["error"]) == ("failed", 3, backtest.error)


def test_the_page_says_a_backtest_was_started_again(client, staff, policy, monkeypatch):
    backtest = queued_backtest(staff, policy, monkeypatch)
    client.force_login(staff)
    assert "Started again" not in client.get(backtest.get_absolute_url()).content.decode()
    as_a_dead_worker_left_it(backtest)
    backtest_requeue_stalled()
    page = client.get(backtest.get_absolute_url()).content.decode()
    assert "Queued…" in page and "Started again from the beginning: the worker reading it stopped." in page


def test_with_no_worker_at_all_the_page_says_so_after_three_stall_periods(client, staff, policy, monkeypatch, settings):
    backtest = queued_backtest(staff, policy, monkeypatch)
    client.force_login(staff)
    stall = settings.INBOX_BACKTEST_STALL_SECONDS
    PolicyBacktest.objects.filter(pk=backtest.pk).update(progress_at=timezone.now() - timedelta(seconds=2 * stall))
    assert "The backtest did not finish." not in client.get(backtest.get_absolute_url()).content.decode()
    PolicyBacktest.objects.filter(pk=backtest.pk).update(progress_at=timezone.now() - timedelta(seconds=4 * stall))
    page = client.get(backtest.get_absolute_url()).content.decode()
    assert "The backtest did not finish." in page and "is a Celery worker running?" in page


@pytest.mark.worker
def test_a_real_worker_and_beat_finish_a_backtest_whose_worker_died(
    transactional_db, staff, policy, client, start_worker, monkeypatch
):
    backtest = queued_backtest(staff, policy, monkeypatch)
    app.control.purge()  # the dead worker had taken its message
    as_a_dead_worker_left_it(backtest)
    start_worker(beat=True, extra_env={"INBOX_BACKTEST_STALL_SECONDS": "2", "INBOX_RECOVERY_SWEEP_SECONDS": "1"})
    client.force_login(staff)
    url = f"/api/v1/policies/{policy.pk}/backtests/{backtest.pk}"
    done = wait_for(
        lambda: (body := client.get(url).json())["state"] == "done" and body,
        timeout=60,
        what="beat to queue the stalled backtest again and the worker to read it",
    )
    assert (done["decided"], done["matched"], done["agreed"], done["foundWrong"], done["attempt"]) == (8, 5, 2, 1, 1)
    assert PolicyBacktest.objects.get().findings.count() == 4
    assert done["outcomes"] == {"approved": 2, "denied": 1, "approved_with_edits": 1, "cancelled": 1}
