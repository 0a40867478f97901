"""An undo racing a worker's claim of the held resume, on PostgreSQL with real row locks: each time exactly one
wins. Either the undo (the item is open, the agent received nothing) or the worker (the undo is a 409 too_late,
the agent received the answer once). The race is staged by a worker whose clock runs ahead: the resume is due
for it while the decision's undo window is still open for the web process. And an undo arriving while the
worker stores the agent's reply waits for it or is refused: neither deadlocks with the other."""

from __future__ import annotations

import random
import threading
import time
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from inbox.core.errors import ApplicationError
from inbox.decisions import services as decision_services
from inbox.decisions.services import decision_submit, decision_undo
from inbox.models import AuditEvent, Resume
from inbox.resumes.services import resume_dispatch
from tests.agent_servers import Reply
from tests.factories import interrupted_run

pytestmark = [pytest.mark.postgresql, pytest.mark.integration]

ROUNDS = 10


def held_decision(agent, user, scripted, thread: str, *, approved: bool, gate: threading.Event | None = None):
    """An undoable decision on a one-interrupt run of ``thread``, its resume due now, the agent (a scripted loopback
    server, answering after ``gate`` when given) finishing the resumed run: (the server, the item, the resume's pk)."""
    finished = {"type": "RUN_FINISHED", "threadId": thread, "runId": "resumed", "outcome": {"type": "success"}}
    server = scripted(Reply(sse=[{"type": "RUN_STARTED", "threadId": thread, "runId": "resumed"}, finished], gate=gate))
    agent.agent.endpoint_url = server.url
    agent.agent.save(update_fields=["endpoint_url"])
    item = interrupted_run(agent.agent, thread, f"r-{thread}", 60).items.get()
    decision_submit(item_id=item.pk, user=user, status="resolved", payload={"approved": approved}, undoable=True)
    Resume.objects.filter(run_id=item.run_id).update(next_attempt_at=timezone.now() - timedelta(seconds=1))
    return server, item, Resume.objects.get(run_id=item.run_id).pk


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
        server, item, resume_pk = held_decision(agent, alice, scripted, f"t-race-{n}", approved=False)

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


def _someone_waits_for_a_lock() -> bool:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database() "
            "AND pid <> pg_backend_pid()"
        )
        return cursor.fetchone()[0] > 0


def test_an_undo_while_the_worker_stores_the_reply_is_refused_without_a_deadlock(
    transactional_db, settings, alice, agent, scripted, monkeypatch
):
    """Staged in the order that deadlocked (CI, once in ten rounds of the race above): the worker has sent the
    resume and the agent holds its reply; the undo locks the run and the item; the agent then answers and the worker,
    storing the reply, asks for its locks; only then does the undo ask for the resume. Before the fix the worker held
    the resume and waited for the run (locked with it through a join), the undo held the run and waited for the
    resume, and PostgreSQL killed one of them. Now the worker takes the run first, as deciding and undoing do."""
    settings.INBOX_UNDO_SECONDS = 30.0
    answer = threading.Event()
    server, item, resume_pk = held_decision(agent, alice, scripted, "t-reply-vs-undo", approved=True, gate=answer)

    withdraw = decision_services.resume_withdraw
    waited: list[bool] = []

    def withdraw_once_the_worker_waits(**kwargs):
        answer.set()  # the undo holds the run and the item: the agent answers now
        deadline = time.monotonic() + 10
        while not _someone_waits_for_a_lock() and time.monotonic() < deadline:
            time.sleep(0.02)
        waited.append(_someone_waits_for_a_lock())
        return withdraw(**kwargs)

    monkeypatch.setattr(decision_services, "resume_withdraw", withdraw_once_the_worker_waits)
    results: dict[str, str] = {}
    errors: list[BaseException] = []

    def dispatch() -> None:
        try:
            results["dispatch"] = resume_dispatch(resume_id=resume_pk)
        except BaseException as error:  # noqa: BLE001 - the deadlock is what this test is about
            errors.append(error)
        finally:
            connection.close()

    def undo() -> None:
        try:
            decision_undo(item_id=item.pk, user=alice)
            results["undo"] = "undone"
        except ApplicationError as error:
            results["undo"] = error.code
        except BaseException as error:  # noqa: BLE001
            errors.append(error)
        finally:
            connection.close()

    worker = threading.Thread(target=dispatch)
    worker.start()
    deadline = time.monotonic() + 10
    while not server.received and time.monotonic() < deadline:  # sent: the agent holds its answer
        time.sleep(0.02)
    assert server.received, "the worker never sent the resume"
    undoer = threading.Thread(target=undo)
    undoer.start()
    for each in (worker, undoer):
        each.join(timeout=30)

    assert errors == []
    assert waited == [True], "the worker never waited for the undo's locks: the order was not staged"
    assert results == {"dispatch": "delivered", "undo": "too_late"}
    item.refresh_from_db()
    assert len(server.received) == 1 and item.status == "resolved"
    assert Resume.objects.get(pk=resume_pk).state == Resume.State.DELIVERED
