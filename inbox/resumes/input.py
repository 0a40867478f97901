"""Building the ``RunAgentInput`` a resume sends: the decisions as ``resume[]`` entries, the conversation
replayed as AG-UI messages and the interrupted run's state. Pure: the outbox (``inbox.resumes.services``) fixes
it once per resume, and the run page previews it with the same function."""

from __future__ import annotations

import json
import uuid
from typing import Any

from ag_ui.core import (
    PROTOCOL_VERSION,
    AssistantMessage,
    FunctionCall,
    Message,
    ResumeEntry,
    RunAgentInput,
    ToolCall,
    ToolMessage,
)
from pydantic import TypeAdapter

from inbox.models import InboxItem, Run


def new_run_id() -> str:
    return f"run-{uuid.uuid4().hex}"


# What an interrupt's metadata asks to have echoed in its answer's ``ResumeEntry.metadata`` (ag-ui-protocol 1.0:
# envelope data beside the payload), as paths copied when present: ag2's ``metadata.ag2.proof`` (a per-interrupt
# secret that ``AGUIStream(require_resume_proof=True)`` wants back).
ECHOED_METADATA_PATHS: tuple[tuple[str, ...], ...] = (("ag2", "proof"),)


def echoed_metadata(metadata: Any) -> dict[str, Any] | None:
    """The ``ResumeEntry.metadata`` answering an interrupt with this metadata: each of
    ``ECHOED_METADATA_PATHS`` it holds, at the same path; None when it holds none."""
    echoed: dict[str, Any] = {}
    for path in ECHOED_METADATA_PATHS:
        value = metadata
        for key in path:
            value = value.get(key) if isinstance(value, dict) else None
        if value is None:
            continue
        target = echoed
        for key in path[:-1]:
            target = target.setdefault(key, {})
        target[path[-1]] = value
    return echoed or None


def build_resume_input(*, run: Run, items: list[InboxItem], next_run_id: str) -> dict[str, Any]:
    """The RunAgentInput answering every interrupt of ``run`` (``items`` in position order), camelCase
    exactly as the SDK serializes it. Replay-style continuation: ``messages`` as ``resume_messages`` says,
    ``state`` from the interrupted run's STATE_SNAPSHOT ({} without one); tools, context and
    forwardedProps are always present, and ``protocolVersion`` declares the AG-UI version the inbox speaks
    (``ag_ui.core.PROTOCOL_VERSION``, "1.0"): agents give 1.0 features (``pendingToolCallIds``, the ``cancelled``
    outcome) only to clients that declare it."""
    entries = []
    for item in items:
        metadata = echoed_metadata(item.metadata)
        if item.status == InboxItem.Status.RESOLVED:
            entries.append(
                ResumeEntry(
                    interrupt_id=item.interrupt_id, status="resolved", payload=item.response_payload, metadata=metadata
                )
            )
        elif item.status == InboxItem.Status.CANCELLED:
            entries.append(ResumeEntry(interrupt_id=item.interrupt_id, status="cancelled", metadata=metadata))
        else:
            raise ValueError(f"item {item.pk} is {item.status}: only resolved or cancelled items can be resumed")
    run_input = RunAgentInput.model_validate(
        {
            "threadId": run.thread.thread_id,
            "runId": next_run_id,
            "protocolVersion": PROTOCOL_VERSION,
            "state": run.state_snapshot if run.state_snapshot is not None else {},
            "messages": [],
            "tools": [],
            "context": [],
            "forwardedProps": {},
        }
    )
    run_input.messages = resume_messages(run)
    run_input.resume = entries
    return run_input.model_dump(mode="json", by_alias=True)


def resume_messages(run: Run) -> list[Message]:
    """The conversation a resume carries, as AG-UI SDK messages.

    - The interrupted run sent a ``MESSAGES_SNAPSHOT``: that snapshot, as sent (the spec's rule: the agent
      emits what it needs to resume before RUN_FINISHED).
    - It did not: rebuilt from what the inbox saw, in this order:
      1. the messages of the input the run answered (``Run.input``: what the inbox sent when it started or
         resumed the run, or the ``RUN_STARTED.input`` the agent echoed);
      2. a ``tool`` message for each TOOL_CALL_RESULT of the run that answers a call made before it;
      3. one ``assistant`` message (id ``assistant-<runId>``) whose ``toolCalls`` are the run's tool-call
         proposals (id, name, and arguments exactly as streamed), re-emitted calls left out;
      4. a ``tool`` message for each TOOL_CALL_RESULT of the run that answers one of those proposals.
      Nothing known gives ``[]``.
    """
    if run.messages_snapshot:
        return _message_adapter.validate_python(run.messages_snapshot)
    messages: list[Message] = _message_adapter.validate_python((run.input or {}).get("messages") or [])
    proposals = [call for call in run.tool_calls or [] if call.get("id") and not call.get("reemitted")]
    proposed = {call["id"] for call in proposals}
    results = [result for result in run.tool_results or [] if result.get("toolCallId")]
    messages += [_tool_message(result) for result in results if result["toolCallId"] not in proposed]
    if proposals:
        messages.append(
            AssistantMessage(
                id=f"assistant-{run.run_id}",
                role="assistant",
                tool_calls=[
                    ToolCall(
                        id=call["id"],
                        type="function",
                        function=FunctionCall(name=call.get("name") or "", arguments=call.get("argsText") or ""),
                    )
                    for call in proposals
                ],
            )
        )
    messages += [_tool_message(result) for result in results if result["toolCallId"] in proposed]
    return messages


def _tool_message(result: dict) -> ToolMessage:
    content = result.get("content")
    return ToolMessage(
        id=result.get("messageId") or f"tool-{result['toolCallId']}",
        role="tool",
        tool_call_id=result["toolCallId"],
        content=content if isinstance(content, str) else json.dumps(content),
    )


_message_adapter: TypeAdapter = TypeAdapter(list[Message])
