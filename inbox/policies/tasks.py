"""Celery task of policy backtests (``inbox.policies.backtest``), queued by name."""

from __future__ import annotations

from celery import shared_task

from inbox.policies.backtest import backtest_requeue_stalled, backtest_run


@shared_task(name="inbox.tasks.backtest_policy")
def backtest_policy(backtest_id: int) -> str:
    return backtest_run(backtest_id)


@shared_task(name="inbox.tasks.requeue_stalled_backtests")
def requeue_stalled_backtests() -> int:
    return len(backtest_requeue_stalled())
