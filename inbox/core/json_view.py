"""JSON as people read it: a value as a list of fields, and two values compared field by field, word by word.

One implementation for every page that shows tool-call arguments: the item page (proposal, outcome, decision
history) and the tool-call trail. Keys keep the order they come in; ``in_key_order`` gives a stored value back
the order its sender wrote (PostgreSQL's jsonb does not keep it). Limits come in as parameters.
"""

from __future__ import annotations

import difflib
import json
import re
from dataclasses import dataclass, field
from typing import Any

from inbox.core import safe_json

ROOT_LABEL = "(arguments)"
# Word diffs compare token lists; past this many token pairs a changed value is shown as removed-then-added
# rather than spending seconds on one page (a 256 KiB body against its edit).
MAX_DIFF_PAIRS = 4_000_000

_MISSING: Any = object()


def show(value: Any) -> str:
    """A leaf value as text: a string as itself, anything else as compact JSON."""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True)


def _same(before: Any, after: Any) -> bool:
    """Equal as JSON: 1 and true, or "1" and 1, are different values even where Python calls them equal."""
    return json.dumps(before, sort_keys=True) == json.dumps(after, sort_keys=True)


def in_key_order(value: Any, text: Any, *, max_depth: int) -> Any:
    """``value`` with the key order of ``text``, the same JSON as its sender wrote it (a tool call's
    ``argsText``), when that text parses to an equal value; otherwise ``value`` as it is."""
    if not isinstance(text, str) or not text or not isinstance(value, dict | list):
        return value
    try:
        parsed = safe_json.loads(text, max_depth=max_depth)
    except safe_json.UnsafeJson:
        return value
    return parsed if _same(parsed, value) else value


def proposal_args(proposal: dict | None, *, max_depth: int) -> Any:
    """A tool call's parsed arguments with the key order of its ``argsText`` (jsonb keeps its own order)."""
    proposal = proposal or {}
    return in_key_order(proposal.get("args"), proposal.get("argsText"), max_depth=max_depth)


def in_schema_order(value: Any, schema: Any) -> Any:
    """``value`` (an answer) with its object keys in the order ``schema``'s ``properties`` declare them, however
    deep (``items`` for arrays); keys the schema does not name follow in their own order."""
    if not isinstance(schema, dict):
        return value
    if isinstance(value, dict):
        declared = schema.get("properties")
        properties: dict = declared if isinstance(declared, dict) else {}
        names = [name for name in properties if name in value] + [name for name in value if name not in properties]
        return {name: in_schema_order(value[name], properties.get(name)) for name in names}
    if isinstance(value, list):
        return [in_schema_order(entry, schema.get("items")) for entry in value]
    return value


# --- the diff -------------------------------------------------------------------------------------------


@dataclass
class DiffLine:
    path: str
    change: str  # same | changed | added | removed
    before: str = ""
    after: str = ""
    # For changed text: [(op, text)] with op in equal | delete | insert.
    segments: list[tuple[str, str]] = field(default_factory=list)


def word_segments(before: str, after: str) -> list[tuple[str, str]]:
    """``before`` → ``after`` as runs of equal, deleted and inserted words (whitespace kept as it is)."""
    a, b = re.split(r"(\s+)", before), re.split(r"(\s+)", after)
    if len(a) * len(b) > MAX_DIFF_PAIRS:
        return [("delete", before), ("insert", after)]
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


def _pairs(before: Any, after: Any, path: str, out: list[tuple[str, Any, Any]]) -> None:
    """Every leaf path of either value with what each holds there (``_MISSING`` where one has none), in the
    first value's key order, keys only the second has after them (sorted: a stable page on every database)."""
    before_object = isinstance(before, dict) and bool(before)
    after_object = isinstance(after, dict) and bool(after)
    if not before_object and not after_object:
        out.append((path or ROOT_LABEL, before, after))
        return
    if not before_object and before is not _MISSING:  # a plain value that became an object
        out.append((path or ROOT_LABEL, before, _MISSING))
    if not after_object and after is not _MISSING:  # an object that became a plain value
        out.append((path or ROOT_LABEL, _MISSING, after))
    old = before if before_object else {}
    new = after if after_object else {}
    for key in [*old, *sorted(key for key in new if key not in old)]:
        _pairs(old.get(key, _MISSING), new.get(key, _MISSING), f"{path}.{key}" if path else str(key), out)


def args_diff(proposed: Any, edited: Any) -> list[DiffLine]:
    """The edited arguments against the proposal, field by field in the proposal's order (editedArgs is a full
    replacement, so a field it lacks is removed)."""
    pairs: list[tuple[str, Any, Any]] = []
    _pairs(proposed, edited, "", pairs)
    lines = []
    for path, before, after in pairs:
        if after is _MISSING:
            lines.append(DiffLine(path, "removed", before=show(before)))
        elif before is _MISSING:
            lines.append(DiffLine(path, "added", after=show(after)))
        elif _same(before, after):
            lines.append(DiffLine(path, "same", before=show(before), after=show(after)))
        else:
            old, new = show(before), show(after)
            lines.append(DiffLine(path, "changed", before=old, after=new, segments=word_segments(old, new)))
    return lines


def edit_count(lines: list[DiffLine]) -> int:
    """How many fields an edit changed, added or removed."""
    return sum(1 for line in lines if line.change != "same")


# --- the field list ---------------------------------------------------------------------------------------


@dataclass
class FieldRow:
    depth: int  # 0 for the top level's fields
    label: str
    kind: str  # object | array | text | multiline | empty-text | number | boolean | null | empty
    text: str = ""


def _leaf(depth: int, label: str, value: Any) -> FieldRow:
    if isinstance(value, str):
        if not value:
            return FieldRow(depth, label, "empty-text", "(empty)")
        return FieldRow(depth, label, "multiline" if "\n" in value else "text", value)
    if isinstance(value, bool):
        return FieldRow(depth, label, "boolean", "true" if value else "false")
    if value is None:
        return FieldRow(depth, label, "null", "null")
    if isinstance(value, dict | list):  # an empty one
        return FieldRow(depth, label, "empty", "(none)" if isinstance(value, list) else "(empty)")
    return FieldRow(depth, label, "number", show(value))


def field_rows(value: Any, *, limit: int) -> tuple[list[FieldRow], bool]:
    """``value`` as rows of label and text, nested objects and lists one level deeper each (list entries are
    numbered from 1), at most ``limit`` rows; returns the rows and whether some were left out."""
    if not isinstance(value, dict | list) or not value:
        return [_leaf(0, ROOT_LABEL, value)], False
    rows: list[FieldRow] = []
    stack: list[tuple[int, str, Any]] = [(0, label, sub) for label, sub in reversed(_children(value))]
    while stack:
        if len(rows) >= limit:
            return rows, True
        depth, label, current = stack.pop()
        if isinstance(current, dict | list) and current:
            size, is_object = len(current), isinstance(current, dict)
            noun = ("field" if is_object else "entry") if size == 1 else ("fields" if is_object else "entries")
            rows.append(FieldRow(depth, label, "object" if is_object else "array", f"{size} {noun}"))
            stack.extend((depth + 1, sub_label, sub) for sub_label, sub in reversed(_children(current)))
        else:
            rows.append(_leaf(depth, label, current))
    return rows, False


def _children(value: dict | list) -> list[tuple[str, Any]]:
    if isinstance(value, dict):
        return [(str(key), sub) for key, sub in value.items()]
    return [(str(index), sub) for index, sub in enumerate(value, start=1)]
