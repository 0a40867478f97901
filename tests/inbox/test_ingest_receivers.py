"""``run_ingested`` receivers run inside the ingest transaction, after the run and its items are stored: they
may write, and what they write commits or rolls back with the run."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from inbox.audit.record import Actor, audit
from inbox.ingest.signals import run_ingested
from inbox.models import AuditEvent, InboxItem, Run
from tests.conftest import spec_example


@pytest.fixture
def receiver() -> Iterator[list[Any]]:
    """Connect a receiver for the test; append a callable to the list it yields to have the receiver call it."""
    actions: list[Any] = []

    def receive(*, run: Run, items: list[InboxItem], **kwargs: Any) -> None:
        for action in actions:
            action(run, items)

    run_ingested.connect(receive, dispatch_uid="tests.receiver")
    yield actions
    run_ingested.disconnect(dispatch_uid="tests.receiver")


def test_a_receiver_can_write_in_the_ingest_transaction(agent, ingest, receiver) -> None:
    def note(run: Run, items: list[InboxItem]) -> None:
        assert InboxItem.objects.filter(run=run).count() == len(items) == 3  # stored before the receivers run
        audit(actor=Actor.system("receiver"), verb="run.noted", obj=run, data={"items": [i.pk for i in items]})

    receiver.append(note)
    response = ingest(agent, spec_example("parallel_interrupts"))
    assert response.status_code == 201, response.content
    event = AuditEvent.objects.get(verb="run.noted")
    assert event.object_id == str(response.json()["id"])
    assert event.data["items"] == [item["id"] for item in response.json()["items"]]


def test_a_receiver_that_fails_leaves_nothing_of_the_run(agent, ingest, receiver) -> None:
    def fail(run: Run, items: list[InboxItem]) -> None:
        audit(actor=Actor.system("receiver"), verb="run.noted", obj=run)
        raise RuntimeError("the receiver failed")

    receiver.append(fail)
    body = spec_example("parallel_interrupts")
    with pytest.raises(RuntimeError, match="the receiver failed"):
        ingest(agent, body)
    assert not Run.objects.filter(run_id=body["runId"]).exists()
    assert not InboxItem.objects.exists()
    assert not AuditEvent.objects.filter(verb__in=["run.noted", "run.ingested"]).exists()

    receiver.clear()
    assert ingest(agent, body).status_code == 201  # the same run, posted again, is stored once
