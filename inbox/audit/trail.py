"""The tool-call trail: a proposal, its decisions, the edit diff and the result, for one tool call."""

from __future__ import annotations

import difflib
import json
import re
from dataclasses import dataclass, field
from typing import Any

from inbox.core import safe_json
from inbox.limits import MAX_JSON_DEPTH
from inbox.models import Decision, InboxItem, Resume, Run


@dataclass
class DiffLine:
    path: str
    change: str  # same | changed | added | removed
    before: str = ""
    after: str = ""
    # For changed text: [(op, text)] with op in equal | delete | insert.
    segments: list[tuple[str, str]] = field(default_factory=list)


def _flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(value, dict) and value:
        flat: dict[str, Any] = {}
        for key, inner in value.items():
            flat.update(_flatten(inner, f"{prefix}.{key}" if prefix else str(key)))
        return flat
    return {prefix or "(arguments)": value}


def _show(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True)


def _word_segments(before: str, after: str) -> list[tuple[str, str]]:
    a, b = re.split(r"(\s+)", before), re.split(r"(\s+)", after)
    segments: list[tuple[str, str]] = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        if op == "equal":
            segments.append(("equal", "".join(a[i1:i2])))
        else:
            if i2 > i1:
                segments.append(("delete", "".join(a[i1:i2])))
            if j2 > j1:
                segments.append(("insert", "".join(b[j1:j2])))
    return segments


def args_diff(proposed: Any, edited: Any) -> list[DiffLine]:
    """The edited arguments against the proposal, field by field (editedArgs is a full replacement)."""
    before, after = _flatten(proposed), _flatten(edited)
    lines = []
    # Sorted paths: PostgreSQL's jsonb does not keep the agent's key order, so sort for a stable page.
    for path in sorted(set(before) | set(after)):
        if path not in after:
            lines.append(DiffLine(path, "removed", before=_show(before[path])))
        elif path not in before:
            lines.append(DiffLine(path, "added", after=_show(after[path])))
        elif before[path] == after[path]:
            lines.append(DiffLine(path, "same", before=_show(before[path]), after=_show(after[path])))
        else:
            old, new = _show(before[path]), _show(after[path])
            lines.append(DiffLine(path, "changed", before=old, after=new, segments=_word_segments(old, new)))
    return lines


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
        return json.dumps((self.proposal or {}).get("args"), indent=2, ensure_ascii=False, sort_keys=True)

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
    payload = item.response_payload
    edited = payload.get("editedArgs") if isinstance(payload, dict) and "editedArgs" in payload else None
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
        diff=args_diff((proposal or {}).get("args"), edited) if edited is not None else [],
        resume=resume,
        sent_entry=sent,
        result=tool_call_result(item, resume),
    )
