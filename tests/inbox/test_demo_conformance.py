"""The bundled demo agent is a template for an agent's side of the contract: its conformance report has no
"deviates" line whatever people answer (approve, deny, edits, cancel, a form, a chain denied half-way), for a
message that picks no scenario, a thread used again, and a thread whose interrupt expired unanswered."""

from __future__ import annotations

from datetime import timedelta

import pytest
import time_machine

from inbox.decisions.services import decision_submit
from inbox.expiry.services import expire_sweep
from inbox.models import InboxItem, Resume, Run
from inbox.resumes.services import resume_dispatch
from tests.agent_servers import demo, demo_agent, demo_server  # noqa: F401
from tests.helpers.starts import start_run

pytestmark = pytest.mark.integration


def started(client, thread: str | None, message: str):
    body = {"message": message, **({"threadId": thread} if thread else {})}
    response = start_run(client, "demo", body)
    assert response.status_code == 201, response.json()
    return Run.objects.get(pk=response.json()["id"])


def answer_all(run: Run, user, answers) -> None:
    """Decide every interrupt of the run and of the runs its resumes raise, sending each resume."""
    answers = iter(answers)
    while run is not None and run.outcome == Run.Outcome.INTERRUPT:
        for item in run.items.order_by("position"):
            answer = next(answers)
            status, payload = answer(item) if callable(answer) else answer
            decision_submit(item_id=item.pk, user=user, status=status, payload=payload)
        resume = Resume.objects.get(run=run)
        assert resume_dispatch(resume_id=resume.pk) == "delivered"
        resume.refresh_from_db()
        run = resume.resumed_run


def deviations(client) -> list[tuple[str, str]]:
    report = client.get("/api/v1/agents/demo/conformance").json()
    return [
        (behaviour["key"], seen["variant"])
        for behaviour in report["behaviours"]
        for seen in behaviour["seen"]
        if seen["verdict"] == "deviates"
    ]


APPROVE = ("resolved", {"approved": True})
DENY = ("resolved", {"approved": False})
CANCEL = ("cancelled", None)


def edited(item: InboxItem) -> tuple[str, dict]:
    return "resolved", {"approved": True, "editedArgs": {**item.tool_call["args"], "subject": "Moved to Friday"}}


def test_the_demo_agent_conforms_whatever_people_answer(demo, demo_agent, alice, client):  # noqa: F811
    client.force_login(alice)
    answer_all(started(client, "deny", "email"), alice, [DENY])
    answer_all(started(client, "edits", "email"), alice, [edited])
    answer_all(started(client, "mixed", "parallel"), alice, [APPROVE, DENY, CANCEL])
    answer_all(started(client, "form", "filing"), alice, [CANCEL])
    answer_all(started(client, "chain", "chain"), alice, [APPROVE, DENY])
    answer_all(started(client, "deny", "email"), alice, [APPROVE])  # the same thread again
    chat = started(client, None, "hello, what can you do?")
    assert chat.outcome != Run.Outcome.INTERRUPT

    assert deviations(client) == []


def test_a_thread_whose_interrupt_expired_unanswered_stays_conformant(demo, demo_agent, alice, client):  # noqa: F811
    client.force_login(alice)
    item = started(client, "late", "email").items.get()
    with time_machine.travel(item.expires_at + timedelta(minutes=1)):
        assert expire_sweep() == 1
    # The agent still holds the interrupt nobody answered: new input on the thread gets RUN_ERROR (rule 4).
    again = started(client, "late", "email")

    assert again.outcome == Run.Outcome.ERROR
    assert deviations(client) == []
