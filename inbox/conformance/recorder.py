"""What a run tells about its agent's conformance, recorded as it is stored.

``record_run`` runs in the ingest transaction of every stored run (posted, started or resumed);
``record_resume`` in the transaction that files a resume's reply. Each writes its observations with one
upsert (one statement), so ingest stays cheap.
"""

from __future__ import annotations

import time
from datetime import datetime

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from inbox.agui.parser import RunRecord, named_call
from inbox.conformance.models import ConformanceObservation
from inbox.conformance.rules import BY_KEY
from inbox.models import AuditEvent, InboxItem, Resume, Run

Observation = tuple[str, str, str]  # behaviour, variant, detail
CORE_REASONS = {"tool_call", "input_required", "confirmation"}


def record_run(*, run: Run, record: RunRecord, items: list[InboxItem], new_thread: bool) -> None:
    """Write the observations of one stored run (``observe_run``)."""
    save(
        agent_id=run.agent_id,
        run=run,
        observations=observe_run(run=run, record=record, items=items, new_thread=new_thread),
    )


def observe_run(*, run: Run, record: RunRecord, items: list[InboxItem], new_thread: bool) -> list[Observation]:
    """Observations of one run: its outcome, RUN_ERROR shape and, for an interrupt, the boundary snapshots and
    each interrupt's binding, reason, schema, expiry and id."""
    found: list[Observation] = [_outcome(record)]
    if record.outcome == Run.Outcome.ERROR:
        started = any(event.get("type") == "RUN_STARTED" for event in record.events)
        found.append(("run_error", "with_run_started" if started else "bare", record.error_message[:500]))
    if record.interrupts:
        found.append(_snapshots(record))
        proposed = {call.get("id") for call in record.tool_calls}
        reused = set() if new_thread else _reused_ids(run, [i.id for i in record.interrupts])
        for interrupt, item in zip(record.interrupts, items, strict=True):
            found.extend(_interrupt(interrupt, item, proposed, reused, record.thread_id))
    return found


def record_resume(*, resume: Resume, resumed: Run, record: RunRecord, items: list[InboxItem]) -> None:
    """Observations of a resume's reply: where the tool results went, re-emitted calls, replays."""
    found: list[Observation] = []
    results = {result["toolCallId"] for result in record.tool_results}
    for item in items:
        if not item.linked_call_id or record.outcome == Run.Outcome.ERROR:
            continue
        approved = item.status == InboxItem.Status.RESOLVED and (item.response_payload or {}).get("approved") is True
        if item.linked_call_id != item.tool_call_id and item.linked_call_id in results:
            found.append(("tool_result_filing", "named_call", f"{item.interrupt_id}: result for {item.linked_call_id}"))
        elif item.tool_call_id and item.tool_call_id in results:
            found.append(
                ("tool_result_filing", "original_call", f"{item.interrupt_id}: result for {item.tool_call_id}")
            )
        elif approved:
            found.append(("tool_result_filing", "missing", f"{item.interrupt_id}: approved, no TOOL_CALL_RESULT"))
    original = {call.get("id") for call in resume.run.tool_calls}
    if original and record.outcome != Run.Outcome.ERROR:
        again = [call["id"] for call in record.tool_calls if call.get("id") in original]
        if again:
            found.append(("reemitted_tool_calls", "reemitted", "re-emitted " + ", ".join(again)))
        elif any(item.tool_call_id for item in items):
            found.append(("reemitted_tool_calls", "not_reemitted", ""))
    if _resent(resume):
        if record.outcome == Run.Outcome.ERROR:
            found.append(("replay", "run_error", f"attempt {resume.attempts}: {record.error_message[:400]}"))
        else:
            found.append(("replay", "answered", f"attempt {resume.attempts} answered {record.outcome}"))
    save(agent_id=resumed.agent_id, run=resumed, observations=found)


def _resent(resume: Resume) -> bool:
    """This input (same runId) was sent before: an earlier attempt of this claim series, or an operator's retry
    (which restarts the attempt count)."""
    if resume.attempts > 1:
        return True
    return AuditEvent.objects.filter(
        object_type=Resume._meta.model_name, object_id=str(resume.pk), verb="resume.retried"
    ).exists()


def _outcome(record: RunRecord) -> Observation:
    if record.outcome == Run.Outcome.ERROR:
        return ("run_outcome", "error", record.error_message[:500])
    if record.outcome_omitted:
        return ("run_outcome", "legacy_success", "")
    if record.outcome == Run.Outcome.INTERRUPT:
        return ("run_outcome", "interrupt", f"{len(record.interrupts)} interrupt(s)")
    return ("run_outcome", "success", "")


def _snapshots(record: RunRecord) -> Observation:
    state, messages = record.state_snapshot is not None, record.messages_snapshot is not None
    variant = {(True, True): "both", (True, False): "state_only", (False, True): "messages_only"}.get(
        (state, messages), "none"
    )
    return ("boundary_snapshots", variant, "")


def _reused_ids(run: Run, ids: list[str]) -> set[str]:
    return set(
        InboxItem.objects.filter(thread_id=run.thread_id, interrupt_id__in=ids)
        .exclude(run=run)
        .values_list("interrupt_id", flat=True)
    )


def _interrupt(interrupt, item: InboxItem, proposed: set, reused: set, thread_id: str) -> list[Observation]:
    found: list[Observation] = []
    name = interrupt.id
    reason = interrupt.reason
    if reason == "tool_call":
        bound = interrupt.tool_call_id in proposed
        found.append(("tool_call_binding", "matched" if bound else "unmatched", f"{name} → {interrupt.tool_call_id}"))
    if reason == "confirmation" and named_call(interrupt.metadata) is not None:
        call = named_call(interrupt.metadata) or {}
        found.append(("interrupt_reason", "confirmation_original_call", f"{name}: original call {call.get('name')}"))
    elif reason in CORE_REASONS:
        found.append(("interrupt_reason", reason, name))
    else:
        namespaced = ":" in reason and not reason.startswith("core:")
        found.append(("interrupt_reason", "custom_namespaced" if namespaced else "custom_plain", f"{name}: {reason}"))
    if interrupt.response_schema is not None:
        found.append(("response_schema", "with_edits" if item.offers_edits else "present", name))
    else:
        found.append(("response_schema", "absent_input_required" if reason == "input_required" else "absent", name))
    found.append(("expires_at", "defaulted" if interrupt.expires_at is None else "set", name))
    if interrupt.id == thread_id:
        found.append(("interrupt_id_unique", "thread_id", name))
    elif interrupt.id in reused:
        found.append(("interrupt_id_unique", "reused", name))
    else:
        found.append(("interrupt_id_unique", "unique", name))
    return found


# When this process last wrote each (agent, behaviour, variant), by the monotonic clock; only after its commit.
_written: dict[tuple[int, str, str], float] = {}


def forget_written() -> None:
    """Forget what this process wrote (tests: a flushed database may hand an agent's id to another agent)."""
    _written.clear()


def _fresh(agent_id: int, behaviour: str, variant: str, moment: float) -> bool:
    """This process wrote the observation less than ``INBOX_CONFORMANCE_REFRESH_SECONDS`` ago."""
    written = _written.get((agent_id, behaviour, variant))
    return written is not None and moment - written < settings.INBOX_CONFORMANCE_REFRESH_SECONDS


def save(*, agent_id: int, run: Run | None, observations: list[Observation], now: datetime | None = None) -> None:
    """Upsert the observations (one statement): last seen now, this run the example, first seen kept.

    An observation this process already wrote less than ``INBOX_CONFORMANCE_REFRESH_SECONDS`` ago is not written
    again: every ingest of an agent upserted the same few rows, and concurrent ingests of one agent queued on
    their row locks until each other's commit. So "last seen" and its example run are up to that long behind
    per web process; an observation never seen before is written at once."""
    now = now or timezone.now()
    moment = time.monotonic()
    rows: dict[tuple[str, str], ConformanceObservation] = {}
    for behaviour, variant, detail in observations:
        BY_KEY[behaviour].variant(variant)  # a typo here is a bug, not data
        if _fresh(agent_id, behaviour, variant, moment):
            continue
        rows[(behaviour, variant)] = ConformanceObservation(
            agent_id=agent_id,
            behaviour=behaviour,
            variant=variant,
            detail=detail[:1000],
            example_run=run,
            first_seen_at=now,
            last_seen_at=now,
        )
    if rows:
        ConformanceObservation.objects.bulk_create(
            list(rows.values()),
            update_conflicts=True,
            unique_fields=["agent", "behaviour", "variant"],
            update_fields=["detail", "example_run", "last_seen_at"],
        )
        keys = [(agent_id, behaviour, variant) for behaviour, variant in rows]
        transaction.on_commit(lambda: _written.update(dict.fromkeys(keys, moment)))
