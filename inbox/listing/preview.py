"""The run page's preview of its resume: the ``RunAgentInput`` the decisions made so far and the choices
pending in the form would send, built by the function that builds the real one (``inbox.resumes.input``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from inbox.access import locked_by_claim
from inbox.decisions.submission import DecisionInputError, run_choice_payload
from inbox.models import InboxItem, Run
from inbox.resumes.input import build_resume_input


def resume_preview(*, run: Run, items: list[InboxItem], user=None, choices: Mapping[str, str] | None = None) -> dict:
    """What the resume will send, built by the same function that builds the real one: the decisions made
    so far, plus the run page's pending ``choices`` (``decision-<pk>``: approve / deny / cancel) for the open
    items ``user`` may decide. ``waiting`` counts the open items left without a choice; ``chosen`` those with."""

    choices = choices or {}
    answers: dict[int, tuple[str, Any]] = {}
    for item in items:
        held_by_other = user is not None and locked_by_claim(user, item)
        if not item.is_open or held_by_other:
            continue
        try:
            answer = run_choice_payload(item, choices.get(f"decision-{item.pk}", ""))
        except DecisionInputError:
            answer = None
        if answer is not None:
            answers[item.pk] = answer
    decided = [item for item in items if item.is_decided]
    run_input = build_resume_input(run=run, items=decided, next_run_id="(a fresh runId, fixed when it is sent)")
    by_id = {entry["interruptId"]: entry for entry in run_input.get("resume") or []}
    resume = []
    for item in items:
        if item.interrupt_id in by_id:
            resume.append(by_id[item.interrupt_id])
        elif item.pk in answers:
            status, payload = answers[item.pk]
            entry = {"interruptId": item.interrupt_id, "status": status}
            if status == InboxItem.Status.RESOLVED:
                entry["payload"] = payload
            resume.append(entry)
    waiting = sum(1 for item in items if item.is_open and item.pk not in answers)
    return {"input": {**run_input, "resume": resume}, "waiting": waiting, "chosen": len(answers)}
