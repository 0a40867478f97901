"""Reading the agent's reply to a resume, once the outbox (``inbox.resumes.services``) has it as a
``RunRecord``: re-emitted tool calls are flagged, and each TOOL_CALL_RESULT completes the trail of the item
whose call it answers -- also from a reply that was cut or broke the protocol (``reported_results``): what the
agent did report is kept."""

from __future__ import annotations

from typing import Any

from ag_ui.core import ToolCallResultEvent
from django.utils import timezone
from pydantic import ValidationError

from inbox.agui.reader import RunRecord
from inbox.audit.record import Actor, audit
from inbox.live import push as live
from inbox.models import InboxItem, Run


def mark_reemitted(record: RunRecord, interrupted: Run) -> None:
    """ag-ui-langgraph re-emits TOOL_CALL_START/ARGS/END with the original arguments in the resumed run.
    They are not new proposals: flag them, so nothing reads them as what was executed."""
    original = {call.get("id") for call in interrupted.tool_calls}
    for call in record.tool_calls:
        if call.get("id") in original:
            call["reemitted"] = True


def reported_results(raw_events: list[Any]) -> list[dict]:
    """The TOOL_CALL_RESULTs of a reply the inbox could not read whole (cut, or breaking the protocol), each one
    the SDK accepts, as ``RunRecord.tool_results`` entries: the agent reported them, whatever came after."""
    found = []
    for raw in raw_events:
        if not isinstance(raw, dict) or raw.get("type") != "TOOL_CALL_RESULT":
            continue
        try:
            event = ToolCallResultEvent.model_validate(raw)
        except ValidationError:
            continue
        found.append({"toolCallId": event.tool_call_id, "messageId": event.message_id, "content": event.content})
    return found


def record_tool_results(
    *, interrupted: Run, resumed_run_id: str, results: list[dict], actor: Actor, resumed: Run | None = None
) -> list[InboxItem]:
    """TOOL_CALL_RESULT closes the audit trail of the item it answers: proposal (interrupted run) → decision
    and edits → result (the reply, ``resumed_run_id``; ``resumed``: the run it was stored as, None when the reply
    was cut or broke the protocol). An item is answered by a result for the call it asks about
    (``linked_call_id``: the call its metadata names, e.g. ADK's original call) or, failing that, for its
    own ``toolCallId``. ``actor`` records the result in the audit. Returns the interrupted run's items."""
    by_call = {result["toolCallId"]: result for result in results}
    now = timezone.now()
    items = list(interrupted.items.order_by("position", "pk"))
    for item in items:
        call_id = next((cid for cid in (item.linked_call_id, item.tool_call_id) if cid and cid in by_call), "")
        if not call_id:
            continue
        result = by_call[call_id]
        item.tool_result = {
            "content": result["content"],
            "messageId": result["messageId"],
            "runId": resumed_run_id,
            "toolCallId": call_id,
        }
        item.tool_result_at = now
        item.save(update_fields=["tool_result", "tool_result_at"])
        audit(
            actor=actor,
            verb="item.tool_result",
            obj=item,
            data={"toolCallId": call_id, "runId": resumed_run_id},
        )
        live.publish_on_commit(
            live.groups_for(
                agent_id=item.agent_id, item_id=item.pk, run_id=interrupted.pk, team_ids=[item.routed_team_id]
            ),
            "item.tool_result",
            {
                "item": item.pk,
                "run": interrupted.pk,
                "toolCallId": call_id,
                "resumedRun": resumed.pk if resumed is not None else None,
            },
        )
    return items
