"""The tool-call trail: a proposal, its decisions, the edit diff and the result, for one tool call.

The diff is ``inbox.core.json_view.args_diff``, the one the item page shows too."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from inbox.core import json_view, safe_json
from inbox.core.json_view import DiffLine, args_diff
from inbox.limits import MAX_JSON_DEPTH
from inbox.models import Decision, InboxItem, Resume, Run


@dataclass
class Trail:
    item: InboxItem
    proposal: dict | None
    decisions: list[Decision]
    edited_args: Any
    diff: list[DiffLine]
    resume: Resume | None
    sent_entry: dict | None
    result: dict | None

    @property
    def proposal_json(self) -> str:
        """The proposed arguments in the order the agent wrote them."""
        return json.dumps(proposal_args(self.proposal), indent=2, ensure_ascii=False)

    @property
    def edited_json(self) -> str:
        return json.dumps(self.edited_args, indent=2, ensure_ascii=False, sort_keys=True)

    @property
    def sent_json(self) -> str:
        return json.dumps(self.sent_entry, indent=2, ensure_ascii=False, sort_keys=True)

    @property
    def result_text(self) -> str:
        """The tool result's content, pretty-printed when it is JSON (it usually is)."""
        content = (self.result or {}).get("content")
        if isinstance(content, str):
            try:
                return json.dumps(safe_json.loads(content, max_depth=MAX_JSON_DEPTH), indent=2, ensure_ascii=False)
            except safe_json.UnsafeJson:
                return content
        return json.dumps(content, indent=2, ensure_ascii=False)

    @property
    def approved(self) -> bool | None:
        """None unless resolved; then whether the answer was anything but a denial."""
        if self.item.status != InboxItem.Status.RESOLVED:
            return None
        return not self.item.is_denial


def proposal_args(proposal: dict | None) -> Any:
    """A tool call's parsed arguments in the order the agent wrote them (``core.json_view.proposal_args``)."""
    return json_view.proposal_args(proposal, max_depth=MAX_JSON_DEPTH)


def _resume_of(run: Run) -> Resume | None:
    try:
        return run.resume
    except Resume.DoesNotExist:
        return None


def tool_call_result(item: InboxItem, resume: Resume | None) -> dict | None:
    """The TOOL_CALL_RESULT for the item's tool call: stored on the item, else read from the resumed run."""
    if item.tool_result:
        return item.tool_result
    runs = Run.objects.filter(thread_id=item.thread_id, created_at__gte=item.created_at).exclude(pk=item.run_id)
    if resume is not None and resume.resumed_run_id:
        runs = runs.filter(pk=resume.resumed_run_id)
    elif resume is not None:
        runs = runs.filter(run_id=resume.next_run_id)
    for run in runs.order_by("created_at", "id"):
        for result in run.tool_results or []:
            if result.get("toolCallId") == item.tool_call_id:
                return {**result, "runId": run.run_id}
    return None


def build_trail(item: InboxItem) -> Trail:
    proposal = item.tool_call or item.run.tool_call(item.tool_call_id)
    edited = item.edited_args
    resume = _resume_of(item.run)
    sent = None
    if resume is not None:
        sent = next(
            (
                entry
                for entry in (resume.input or {}).get("resume", [])
                if entry.get("interruptId") == item.interrupt_id
            ),
            None,
        )
    return Trail(
        item=item,
        proposal=proposal,
        decisions=list(item.decisions.select_related("user")),
        edited_args=edited,
        diff=args_diff(proposal_args(proposal), edited) if edited is not None else [],
        resume=resume,
        sent_entry=sent,
        result=tool_call_result(item, resume),
    )
