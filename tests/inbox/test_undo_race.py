"""An undo racing a worker's claim of the held resume, on PostgreSQL with real row locks: each time exactly one
wins. Either the undo (the item is open, the agent received nothing) or the worker (the undo is a 409 too_late,
the agent received the answer once). The race is staged by a worker whose clock runs ahead: the resume is due
for it while the decision's undo window is still open for the web process."""

from __future__ import annotations

import random
import threading
import time
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from inbox.core.errors import ApplicationError
from inbox.decisions.services import decision_submit, decision_undo
from inbox.models import AuditEvent, Resume
from inbox.resumes.services import resume_dispatch
from tests.agent_servers import Reply
from tests.factories import interrupted_run

pytestmark = [pytest.mark.postgresql, pytest.mark.integration]

ROUNDS = 10


def race(item, resume_pk: int, user) -> dict[str, str]:
    """Undo and dispatch at once, from two threads (two connections, as two processes would)."""
    barrier = threading.Barrier(2)
    results: dict[str, str] = {}

    def undo() -> None:
        try:
            barrier.wait(timeout=10)
            decision_undo(item_id=item.pk, user=user)
            results["undo"] = "undone"
        except ApplicationError as error:
            results["undo"] = error.code
        finally:
            connection.close()

    def claim() -> None:
        try:
            barrier.wait(timeout=10)
            time.sleep(random.uniform(0, 0.06))  # staggered, so that either side gets there first
            results["dispatch"] = resume_dispatch(resume_id=resume_pk)
        finally:
            connection.close()

    threads = [threading.Thread(target=undo), threading.Thread(target=claim)]
    for worker in threads:
        worker.start()
    for worker in threads:
        worker.join(timeout=30)
    return results


def test_an_undo_and_a_claim_racing_never_both_win(transactional_db, settings, alice, agent, scripted):
    settings.INBOX_UNDO_SECONDS = 30.0
    for n in range(ROUNDS):
        thread = f"t-race-{n}"
        finished = {"type": "RUN_FINISHED", "threadId": thread, "runId": "resumed", "outcome": {"type": "success"}}
        server = scripted(Reply(sse=[{"type": "RUN_STARTED", "threadId": thread, "runId": "resumed"}, finished]))
        agent.agent.endpoint_url = server.url
        agent.agent.save(update_fields=["endpoint_url"])
        item = interrupted_run(agent.agent, thread, f"r-race-{n}", 60).items.get()
        decision_submit(item_id=item.pk, user=alice, status="resolved", payload={"approved": False}, undoable=True)
        Resume.objects.filter(run_id=item.run_id).update(next_attempt_at=timezone.now() - timedelta(seconds=1))
        resume_pk = Resume.objects.get(run_id=item.run_id).pk

        results = race(item, resume_pk, alice)

        item.refresh_from_db()
        if results["undo"] == "undone":
            assert results["dispatch"] == "not claimed", results
            assert server.received == [] and item.status == "open"
            assert not Resume.objects.filter(pk=resume_pk).exists()
        else:
            assert results["undo"] == "too_late", results
            assert results["dispatch"] == "delivered", results
            assert len(server.received) == 1 and item.status == "resolved"
            assert not AuditEvent.objects.filter(verb="item.decision_undone", object_id=str(item.pk)).exists()
