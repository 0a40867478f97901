"""What a run tells about its agent's conformance, recorded as it is stored, and what the inbox refused or cut.

``record_run`` (in the ingest transaction of every stored run) and ``record_resume`` (in the transaction that
files a resume's reply) write their observations with one upsert each; ``record_refusal`` and ``record_cut``
write what never became a stored run, with the runId and the index of the event at fault as evidence."""

from __future__ import annotations

import re
import time
from collections.abc import Iterable
from datetime import datetime
from typing import Any, NamedTuple

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from inbox.agui.reader import IngestError, RunRecord, named_call, proposal_for
from inbox.conformance.rules import BY_KEY
from inbox.models import AuditEvent, InboxItem, Resume, Run
from inbox.models.conformance import ConformanceObservation


class Observation(NamedTuple):
    behaviour: str
    variant: str
    detail: str = ""
    # The index of the event at fault in the run's stream, when one event is.
    event_index: int | None = None


CORE_REASONS = {"tool_call", "input_required", "confirmation"}


def record_run(
    *,
    run: Run,
    record: RunRecord,
    items: list[InboxItem],
    reused_ids: set[str],
    superseded: Iterable[InboxItem] = (),
) -> None:
    """Write the observations of one stored run (``observe_run``). ``reused_ids``: the run's interrupt ids that
    earlier runs of the thread already used (the ingest reads them with the thread's open items);
    ``superseded``: the open items of the thread this run closed by finishing without a resume (rule 4)."""
    observations = observe_run(run=run, record=record, items=items, reused_ids=reused_ids, superseded=superseded)
    save(agent_id=run.agent_id, run=run, observations=observations)
    reused = [o.detail for o in observations if (o.behaviour, o.variant) == ("interrupt_id_unique", "reused")]
    if reused:
        _retract_unique(run.agent_id, reused)


def _retract_unique(agent_id: int, reused: list[str]) -> None:
    """An id the report showed as "new on the thread" was reused since: that line is no longer true, so it goes
    (the next run with a new id writes it again). The report never shows one id both unique and reused."""
    deleted, _ = ConformanceObservation.objects.filter(
        agent_id=agent_id, behaviour="interrupt_id_unique", variant="unique", detail__in=reused
    ).delete()
    if deleted:
        _written.pop((agent_id, "interrupt_id_unique", "unique"), None)


def observe_run(
    *,
    run: Run,
    record: RunRecord,
    items: list[InboxItem],
    reused_ids: set[str],
    superseded: Iterable[InboxItem] = (),
) -> list[Observation]:
    """Observations of one run: its outcome, RUN_ERROR shape, whether it ran past open interrupts and, for an
    interrupt, the boundary snapshots and each interrupt's binding, reason, schema, expiry and id."""
    found: list[Observation] = [_outcome(record)]
    if record.outcome == Run.Outcome.ERROR:
        started = any(event.get("type") == "RUN_STARTED" for event in record.events)
        found.append(Observation("run_error", "with_run_started" if started else "bare", record.error_message[:500]))
    else:
        closed = [item.interrupt_id for item in superseded]
        if closed:
            detail = f"{record.outcome} on thread {record.thread_id} while open: {', '.join(closed)}"
            found.append(Observation("pending_interrupts", "finished_while_open", detail, len(record.events) - 1))
        else:
            found.append(Observation("pending_interrupts", "respected"))
    if record.interrupts:
        found.append(_snapshots(record))
        proposed = {call.get("id") for call in record.tool_calls}
        for interrupt, item in zip(record.interrupts, items, strict=True):
            found.extend(_interrupt(interrupt, item, proposed, reused_ids, record.thread_id, arrived=run.created_at))
    return found


def record_resume(*, resume: Resume, resumed: Run, record: RunRecord, items: list[InboxItem]) -> None:
    """Observations of a resume's reply: same thread, whether it continued from the resume, where the tool
    results went, re-emitted calls, replays."""
    found: list[Observation] = []
    failed = record.outcome == Run.Outcome.ERROR
    found.append(Observation("same_thread", "same", record.thread_id))
    if not failed:
        # A result filed from an earlier reply to this resume (cut after it reported it) counts: it was sent.
        earlier = {str(item.tool_result.get("toolCallId")) for item in items if isinstance(item.tool_result, dict)}
        results = {result["toolCallId"] for result in record.tool_results} | earlier
        found.extend(_filing(items, results, missing=True))
    found.extend(_unknown_results(resume, record, items))
    original = {call.get("id") for call in resume.run.tool_calls}
    if original and not failed:
        # Only calls streamed as TOOL_CALL_* events: a MESSAGES_SNAPSHOT repeating the conversation's history
        # (the original assistant message with its toolCalls) re-emits nothing.
        again = [
            call["id"] for call in record.tool_calls if call.get("id") in original and call.get("source") == "events"
        ]
        if again:
            index = _event_index(record, "TOOL_CALL_START", "toolCallId", again[0])
            found.append(Observation("reemitted_tool_calls", "reemitted", "re-emitted " + ", ".join(again), index))
        elif any(item.tool_call_id for item in items):
            found.append(Observation("reemitted_tool_calls", "not_reemitted", ""))
    if not failed:
        found.append(_linkage(resume, resumed, record, items))
    if _resent(resume):
        if failed:
            found.append(Observation("replay", "run_error", f"attempt {resume.attempts}: {record.error_message[:400]}"))
        else:
            found.append(Observation("replay", "answered", f"attempt {resume.attempts} answered {record.outcome}"))
    save(agent_id=resumed.agent_id, run=resumed, observations=found)


def _filing(items: list[InboxItem], results: set[str], *, missing: bool) -> list[Observation]:
    """Where each item's TOOL_CALL_RESULT went (``results``: the toolCallIds reported), and, with ``missing``, an
    approved call that got none."""
    found = []
    for item in items:
        if not item.linked_call_id:
            continue
        # Any approval shape (``{"approved": true}``, a bare ``true``, edits), as the item's outcome reads it.
        approved = item.outcome in InboxItem.APPROVALS
        if item.linked_call_id != item.tool_call_id and item.linked_call_id in results:
            found.append(
                Observation(
                    "tool_result_filing", "named_call", f"{item.interrupt_id}: result for {item.linked_call_id}"
                )
            )
        elif item.tool_call_id and item.tool_call_id in results:
            found.append(
                Observation(
                    "tool_result_filing", "original_call", f"{item.interrupt_id}: result for {item.tool_call_id}"
                )
            )
        elif approved and missing:
            found.append(
                Observation("tool_result_filing", "missing", f"{item.interrupt_id}: approved, no TOOL_CALL_RESULT")
            )
    return found


def record_partial_results(*, resume: Resume, items: list[InboxItem], results: list[dict], run_id: str) -> None:
    """Where the results of a reply the inbox could not read whole (cut, or breaking the protocol) went: only
    what it did report (nothing is "missing" from a reply that did not end as a run)."""
    reported = {result["toolCallId"] for result in results}
    found = _filing(items, reported, missing=False)
    save(agent_id=resume.agent_id, run=None, observations=found, evidence_run_id=run_id)


def _event_index(record: RunRecord, kind: str, key: str, value: str) -> int | None:
    """The index of the first recorded event of ``kind`` whose ``key`` is ``value``."""
    return next(
        (i for i, event in enumerate(record.events) if event.get("type") == kind and event.get(key) == value), None
    )


def _known_call_ids(resume: Resume, record: RunRecord, items: list[InboxItem]) -> set[str]:
    """Every tool call id the thread named up to this reply: the items' calls, the interrupted run's and the
    reply's own calls (streamed or in its snapshot), and the calls in the conversation the resume carried."""
    known: set[str] = {cid for item in items for cid in (item.linked_call_id, item.tool_call_id) if cid}
    known |= {str(call["id"]) for call in [*resume.run.tool_calls, *record.tool_calls] if call.get("id")}
    for message in (resume.input or {}).get("messages") or []:
        if not isinstance(message, dict):
            continue
        known |= {
            str(call["id"]) for call in message.get("toolCalls") or [] if isinstance(call, dict) and call.get("id")
        }
        if message.get("toolCallId"):
            known.add(str(message["toolCallId"]))
    return known


def _unknown_results(resume: Resume, record: RunRecord, items: list[InboxItem]) -> list[Observation]:
    known = _known_call_ids(resume, record, items)
    unknown = [result["toolCallId"] for result in record.tool_results if result["toolCallId"] not in known]
    if not unknown:
        return []
    index = _event_index(record, "TOOL_CALL_RESULT", "toolCallId", unknown[0])
    detail = f"run {record.run_id}: TOOL_CALL_RESULT for {', '.join(unknown)}"
    return [Observation("tool_result_filing", "unknown_call", detail, index)]


def _signature(reason: str, message: str, proposal: dict | None) -> tuple[str, str, str, str]:
    call = proposal or {}
    return (reason, message, str(call.get("name") or ""), repr(call.get("args")))


def _linkage(resume: Resume, resumed: Run, record: RunRecord, items: list[InboxItem]) -> Observation:
    """Did the reply continue from the resume (rule 2)? It did not when it asks again exactly what the resume
    answered (same reason, message and proposed call) without a result for that call: it started over as if the
    input were new. A chain asks something else. (An echoed RUN_STARTED.input without ``resume`` proves nothing:
    adapters on ag-ui-protocol 0.1 have no such field to echo.)"""
    if record.interrupts:
        answered = {_signature(i.reason, i.message, i.proposal): i for i in items}
        results = {result["toolCallId"] for result in record.tool_results}
        for interrupt in record.interrupts:
            again = answered.get(
                _signature(interrupt.reason, interrupt.message, proposal_for(interrupt, record.tool_calls))
            )
            if again is not None and not ({again.linked_call_id, again.tool_call_id} & results):
                detail = (
                    f"run {record.run_id}: interrupt {interrupt.id} asks again what {again.interrupt_id} asked "
                    f"({again.reason}: {(again.message or again.tool_name)[:80]})"
                )
                return Observation("resume_linkage", "started_fresh", detail, len(record.events) - 1)
    return Observation("resume_linkage", "continued", record.run_id)


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
        return Observation("run_outcome", "error", record.error_message[:500])
    if record.outcome_omitted:
        return Observation("run_outcome", "legacy_success", "")
    if record.outcome == Run.Outcome.INTERRUPT:
        return Observation("run_outcome", "interrupt", f"{len(record.interrupts)} interrupt(s)")
    if record.outcome == Run.Outcome.CANCELLED:
        return Observation("run_outcome", "cancelled", record.run_id)
    if record.pending_tool_call_ids:
        return Observation(
            "run_outcome", "success_pending_calls", "pendingToolCallIds: " + ", ".join(record.pending_tool_call_ids)
        )
    return Observation("run_outcome", "success", "")


def _snapshots(record: RunRecord) -> Observation:
    state, messages = record.state_snapshot is not None, record.messages_snapshot is not None
    variant = {(True, True): "both", (True, False): "state_only", (False, True): "messages_only"}.get(
        (state, messages), "none"
    )
    # The spec asks for the state "required for resume": an agent that has none sends no STATE_SNAPSHOT. One
    # whose state changed in the run (STATE_DELTA) had some.
    if variant == "messages_only" and any(event.get("type") == "STATE_DELTA" for event in record.events):
        variant = "messages_only_state_changed"
    return Observation("boundary_snapshots", variant, "")


def _interrupt(
    interrupt, item: InboxItem, proposed: set, reused: set, thread_id: str, *, arrived: datetime
) -> list[Observation]:
    found: list[Observation] = []
    name = interrupt.id
    reason = interrupt.reason
    if reason == "tool_call":
        bound = interrupt.tool_call_id in proposed
        found.append(
            Observation("tool_call_binding", "matched" if bound else "unmatched", f"{name} → {interrupt.tool_call_id}")
        )
    if reason == "confirmation" and named_call(interrupt.metadata) is not None:
        call = named_call(interrupt.metadata) or {}
        found.append(
            Observation("interrupt_reason", "confirmation_original_call", f"{name}: original call {call.get('name')}")
        )
    elif reason in CORE_REASONS:
        found.append(Observation("interrupt_reason", reason, name))
    elif reason.startswith("core:"):
        found.append(Observation("interrupt_reason", "core_prefix", f"{name}: {reason} (`core:` is reserved)"))
    else:
        namespaced = ":" in reason.strip(":")
        variant = "custom_namespaced" if namespaced else "custom_plain"
        found.append(
            Observation("interrupt_reason", variant, f"{name}: non-core reason {reason} (`core:` is reserved)")
        )
    if interrupt.response_schema is not None:
        found.append(Observation("response_schema", "with_edits" if item.offers_edits else "present", name))
    else:
        found.append(
            Observation("response_schema", "absent_input_required" if reason == "input_required" else "absent", name)
        )
    if interrupt.expires_at is None:
        found.append(Observation("expires_at", "defaulted", name))
    elif interrupt.expires_at <= arrived:
        detail = f"{name}: expiresAt {interrupt.expires_at.isoformat()}, arrived {arrived.isoformat()}"
        found.append(Observation("expires_at", "expired_on_arrival", detail))
    else:
        found.append(Observation("expires_at", "set", name))
    if interrupt.id == thread_id:
        found.append(Observation("interrupt_id_unique", "thread_id", name))
    elif interrupt.id in reused:
        found.append(Observation("interrupt_id_unique", "reused", name))
    else:
        found.append(Observation("interrupt_id_unique", "unique", name))
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


def save(
    *,
    agent_id: int,
    run: Run | None,
    observations: list[Observation] | list[tuple],
    now: datetime | None = None,
    evidence_run_id: str = "",
) -> None:
    """Upsert the observations (one statement): last seen now, this run the example, first seen kept.

    An observation this process already wrote less than ``INBOX_CONFORMANCE_REFRESH_SECONDS`` ago is not written
    again: every ingest of an agent upserted the same few rows, and concurrent ingests of one agent queued on
    their row locks until each other's commit. So "last seen" and its example run are up to that long behind
    per web process; an observation never seen before is written at once."""
    now = now or timezone.now()
    moment = time.monotonic()
    rows: dict[tuple[str, str], ConformanceObservation] = {}
    for observation in observations:
        behaviour, variant, detail, event_index = Observation(*observation)
        BY_KEY[behaviour].variant(variant)  # a typo here is a bug, not data
        if _fresh(agent_id, behaviour, variant, moment):
            continue
        rows[(behaviour, variant)] = ConformanceObservation(
            agent_id=agent_id,
            behaviour=behaviour,
            variant=variant,
            detail=detail[:1000],
            example_run=run,
            evidence_run_id=(run.run_id if run is not None else evidence_run_id)[:255],
            event_index=event_index,
            first_seen_at=now,
            last_seen_at=now,
        )
    if rows:
        ConformanceObservation.objects.bulk_create(
            list(rows.values()),
            update_conflicts=True,
            unique_fields=["agent", "behaviour", "variant"],
            update_fields=["detail", "example_run", "evidence_run_id", "event_index", "last_seen_at"],
        )
        keys = [(agent_id, behaviour, variant) for behaviour, variant in rows]
        transaction.on_commit(lambda: _written.update(dict.fromkeys(keys, moment)))


# --- what the inbox refused or cut ------------------------------------------------------------------------

# A refusal's rule (``IngestError``'s first field error) → the behaviour and variant it shows.
_REFUSAL_BY_RULE: dict[str, tuple[str, str]] = {
    "interrupt_id_unique": ("interrupt_id_unique", "duplicate"),
    "interrupt_id_required": ("interrupt_id_unique", "missing"),
    "interrupt_id_not_empty": ("interrupt_id_unique", "empty"),
    "outcome_type": ("run_outcome", "unknown_type"),
    "interrupts_not_empty": ("run_outcome", "empty_interrupts"),
    "interrupts_array": ("run_outcome", "empty_interrupts"),
    "tool_call_requires_tool_call_id": ("tool_call_binding", "missing"),
    "expires_at_iso8601": ("expires_at", "invalid"),
    "ag_ui_event": ("event_stream", "invalid_event"),
    "event_object": ("event_stream", "invalid_event"),
    "json": ("event_stream", "invalid_event"),
    "utf8": ("event_stream", "invalid_event"),
    "ends_with_run_finished": ("event_stream", "not_one_run"),
    "single_run": ("event_stream", "not_one_run"),
    "same_run": ("event_stream", "not_one_run"),
    "not_empty": ("event_stream", "not_one_run"),
    "thread_has_open_interrupts": ("pending_interrupts", "interrupted_while_open"),
}
_EVENT_INDEX = re.compile(r"^events\[(\d+)\]")


def refusal_observation(*, rule: str, field: str, message: str, where: str = "") -> Observation:
    """What a refusal of the inbox says about the agent: the behaviour its rule belongs to, the rule and
    message as the detail, and the index of the event at fault (read from the field path, ``events[3]....``;
    a bare RUN_FINISHED body is event 0)."""
    behaviour, variant = _REFUSAL_BY_RULE.get(rule, ("", ""))
    if not behaviour:
        if ".responseSchema" in field:
            behaviour, variant = "response_schema", "invalid"
        elif field.endswith(".expiresAt"):
            behaviour, variant = "expires_at", "invalid"
        else:
            behaviour, variant = "event_stream", "refused"
    match = _EVENT_INDEX.match(field or "")
    index = int(match.group(1)) if match else (0 if field and not field.startswith(("events", "body")) else None)
    prefix = f"{where}: " if where else ""
    return Observation(behaviour, variant, f"{prefix}refused ({rule}) at {field or 'body'}: {message}"[:1000], index)


def run_id_of(raw_events: Any) -> str:
    """The runId a refused body names (its last event that names one), for the evidence; '' if none."""
    for event in reversed(raw_events if isinstance(raw_events, list) else []):
        if isinstance(event, dict) and isinstance(event.get("runId"), str):
            return event["runId"]
    return ""


def record_refusal(*, agent_id: int, rule: str, field: str, message: str, run_id: str = "", where: str = "") -> None:
    """Write what a refusal says about the agent (``refusal_observation``). Call outside the refused write's
    transaction: the observation must stay when that rolls back."""
    observation = refusal_observation(rule=rule, field=field, message=message, where=where)
    save(agent_id=agent_id, run=None, observations=[observation], evidence_run_id=run_id)


def record_cut(
    *, agent_id: int, variant: str, message: str, run_id: str = "", event_index: int | None = None, where: str = ""
) -> None:
    """Write a reply the inbox cut or could not read (``event_stream`` variants: past the deadline, ended early,
    not an event stream, an invalid event), or one that answered on another thread (``same_thread``)."""
    behaviour = "same_thread" if variant == "other_thread" else "event_stream"
    prefix = f"{where}: " if where else ""
    observation = Observation(behaviour, variant, f"{prefix}{message}"[:1000], event_index)
    save(agent_id=agent_id, run=None, observations=[observation], evidence_run_id=run_id)


def record_ingest_error(*, agent_id: int, error: IngestError, raw_events: Any = None, where: str = "") -> None:
    """``record_refusal`` for an ``IngestError``: its first field error's rule and path (or its code)."""
    first = error.errors[0] if error.errors else {}
    record_refusal(
        agent_id=agent_id,
        rule=str(first.get("rule") or error.extra.get("rule") or error.code),
        field=str(first.get("field") or ""),
        message=error.message,
        run_id=run_id_of(raw_events),
        where=where,
    )


# ``AgentCallError.kind`` → the ``event_stream`` variant it shows; transport failures and HTTP errors are the
# agent's availability, not its conformance.
_CALL_ERROR_VARIANTS = {
    "timeout": "past_deadline",
    "deadline": "past_deadline",
    "invalid_event": "invalid_event",
    "ended_early": "ended_early",
    "not_event_stream": "not_event_stream",
    "over_limits": "over_limits",
}


def record_call_error(*, agent_id: int, error: Any, run_id: str = "", where: str = "") -> None:
    """``record_cut`` for an ``agents.client.AgentCallError`` that says something about the agent's stream."""
    variant = _CALL_ERROR_VARIANTS.get(getattr(error, "kind", ""), "")
    if variant:
        record_cut(
            agent_id=agent_id,
            variant=variant,
            message=error.message,
            run_id=run_id,
            event_index=getattr(error, "event_index", None),
            where=where,
        )
