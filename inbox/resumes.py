"""Batched resumes (the outbox): building RunAgentInput, dispatching it, reading the resumed run.

Placeholder until issue 4 lands: ``resume_create_if_complete`` is called by the decision service in the
decision's transaction.
"""

from __future__ import annotations

from inbox.models import Resume, Run


def resume_create_if_complete(*, run: Run) -> Resume | None:
    return None


def resume_dispatch(*, resume_id: int) -> str:
    return "not implemented"


def resume_requeue_stuck() -> int:
    return 0
