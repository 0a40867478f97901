"""The yes/no shape an interrupt asked for, and the payloads Approve and Deny send in it.

``yes_no_shape`` recognises the ways AG-UI integrations answer a tool approval (the spec's ``approved``,
Claude's ``behavior``, a bare boolean or two-valued enum, …) and builds both payloads, only when both are valid
against the schema, so a button never sends what the agent refuses. Every yes/no control builds its payload
here; ``EDIT_KEYS`` names where a shape offers edits (docs/deciding.md)."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from inbox.agui import emitters
from inbox.core import jsonschema_safe, schema_view
from inbox.decisions.rules import BOOLEAN_APPROVAL_SCHEMA, default_schema_for, validate_payload
from inbox.limits import MAX_SHAPE_CHECK_STEPS
from inbox.models import EDIT_KEYS, InboxItem

# Words that say yes or no in a two-valued enum, compared case-insensitively.
YES_WORDS = frozenset({"allow", "approve", "approved", "accept", "accepted", "yes", "y", "true", "ok", "confirm"})
NO_WORDS = frozenset({"deny", "denied", "reject", "rejected", "decline", "declined", "no", "n", "false"})

# Properties a yes/no answer may leave as an empty string when the schema requires them (a note to the agent).
_NOTE_KEYS = frozenset({"message", "reason", "feedback", "comment", "note"})


@dataclass(frozen=True)
class YesNoShape:
    """How a yes or a no is written for one schema. ``key`` is the property carrying it (None for a bare
    value); ``edit_key`` the property that replaces the tool's arguments, when the schema offers one."""

    approve: Any
    deny: Any
    key: str | None = None
    edit_key: str | None = None

    def payload(self, approve: bool) -> Any:
        return copy.deepcopy(self.approve if approve else self.deny)

    def with_edits(self, edited: Any) -> Any:
        """The approval carrying ``edited`` as the full replacement of the arguments (only where offered)."""
        if self.edit_key is None or not isinstance(self.approve, dict):
            raise ValueError("this shape offers no edits")
        return {**copy.deepcopy(self.approve), self.edit_key: edited}

    def is_denial(self, payload: Any) -> bool:
        if self.key is None:
            return _canonical(payload) == _canonical(self.deny)
        return isinstance(payload, dict) and _canonical(payload.get(self.key)) == _canonical(self.deny[self.key])

    def is_approval(self, payload: Any) -> bool:
        if self.key is None:
            return _canonical(payload) == _canonical(self.approve)
        return isinstance(payload, dict) and _canonical(payload.get(self.key)) == _canonical(self.approve[self.key])

    @property
    def approve_text(self) -> str:
        return json.dumps(self.approve, ensure_ascii=False)

    @property
    def deny_text(self) -> str:
        return json.dumps(self.deny, ensure_ascii=False)


APPROVED_SHAPE = YesNoShape(approve={"approved": True}, deny={"approved": False}, key="approved")


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def _yes_no_pair(values: Any) -> tuple[Any, Any] | None:
    """(the yes value, the no value) of an enum whose values include exactly one yes word and one no word."""
    if not isinstance(values, list):
        return None
    if len(values) == 2 and set(map(_canonical, values)) == {"true", "false"}:
        return True, False
    yes = [value for value in values if isinstance(value, str) and value.strip().lower() in YES_WORDS]
    no = [value for value in values if isinstance(value, str) and value.strip().lower() in NO_WORDS]
    if len(yes) == 1 and len(no) == 1 and len(values) <= 3:
        return yes[0], no[0]
    return None


def _types(schema: dict) -> set[Any]:
    """The JSON types ``schema`` names: ``"type"`` may be one name or a list of them (ag2's approval schema is
    ``{"type": ["string", "boolean"]}``); an empty set when it names none."""
    named = schema.get("type")
    if isinstance(named, list):
        return {name for name in named if isinstance(name, str)}
    return {named} if isinstance(named, str) else set()


def _value_pair(schema: Any) -> tuple[Any, Any] | None:
    """The yes and no values a (sub)schema takes: a boolean, an enum of two, or ``oneOf``/``anyOf`` consts."""
    if not isinstance(schema, dict):
        return None
    if "enum" in schema:
        return _yes_no_pair(schema["enum"])
    if "boolean" in _types(schema):
        return True, False
    for combinator in ("oneOf", "anyOf"):
        branches = schema.get(combinator)
        if isinstance(branches, list) and all(isinstance(b, dict) and "const" in b for b in branches):
            return _yes_no_pair([branch["const"] for branch in branches])
    return None


def _object_branches(schema: dict) -> list[dict]:
    """What the object schema asks of every answer, then each branch of a union (a discriminated ``oneOf``/``anyOf``)
    with it: as plain object schemas, read through local ``$ref``s and ``allOf`` (``inbox.core.schema_view``)."""
    return [view.as_schema() for view in schema_view.object_views(schema)]


def _properties(schema: dict, branches: list[dict] | None = None) -> dict[str, Any]:
    """Every property any branch names (the first branch naming it gives its subschema)."""
    merged: dict[str, Any] = {}
    for branch in _object_branches(schema) if branches is None else branches:
        properties = branch.get("properties")
        if isinstance(properties, dict):
            for name, sub in properties.items():
                merged.setdefault(str(name), sub)
    return merged


def _required(schema: dict) -> set[str]:
    required = schema.get("required")
    return {str(name) for name in required} if isinstance(required, list) else set()


def edit_key_of(schema: Any, properties: dict[str, Any] | None = None) -> str | None:
    """The property through which ``schema`` offers edits of the proposal (``editedArgs``, ``updatedInput``),
    wherever it offers it: in its properties, a union's branch, an ``allOf`` member or a ``$ref``'s target."""
    if not isinstance(schema, dict):
        return None
    if properties is None:
        properties = _properties(schema)
    return next((key for key in EDIT_KEYS if key in properties), None)


def _choose_key(branches: list[dict], properties: dict[str, Any]) -> tuple[str, tuple[Any, Any]] | None:
    pairs = {name: pair for name, sub in properties.items() if (pair := _value_pair(sub)) is not None}
    # Branches of a union each name their const: {"behavior": {"const": "allow"}} | {"behavior": {"const": "deny"}}.
    for name in properties:
        consts = [
            branch["properties"][name]["const"]
            for branch in branches[1:]
            if isinstance(branch.get("properties"), dict)
            and isinstance(branch["properties"].get(name), dict)
            and "const" in branch["properties"][name]
        ]
        if consts and name not in pairs and (pair := _yes_no_pair(consts)) is not None:
            pairs[name] = pair
    if not pairs:
        return None
    for preferred in ("approved", "behavior", "decision", "approve"):
        if preferred in pairs:
            return preferred, pairs[preferred]
    required = _required(branches[0])
    among = [name for name in pairs if name in required] or list(pairs)
    if len(among) == 1:
        return among[0], pairs[among[0]]
    return None


def _filled(schema: dict, key: str, value: Any, proposed_args: Any) -> dict | None:
    """``{key: value}`` plus what ``schema`` requires besides: the edit key as the unchanged proposal, a note
    as an empty string. None when something else is required (then it is a form, not a yes/no)."""
    payload: dict[str, Any] = {key: value}
    properties = schema.get("properties") or {}
    for name in sorted(_required(schema) - {key}):
        if name in EDIT_KEYS and isinstance(
            args := proposed_args() if callable(proposed_args) else proposed_args, dict
        ):
            payload[name] = copy.deepcopy(args)
        elif name in _NOTE_KEYS and isinstance(properties.get(name), dict) and properties[name].get("type") == "string":
            payload[name] = ""
        else:
            return None
    return payload


def yes_no_shape(schema: Any, *, proposed_args: Any = None) -> YesNoShape | None:
    """The yes/no shape of ``schema`` (``None`` when it has none and needs its form). ``proposed_args`` (or a
    function returning them, called only when needed) fills an edit key the schema requires (Claude's
    ``updatedInput``) with the proposal, unchanged."""
    if not isinstance(schema, dict):
        return None
    candidates: list[YesNoShape] = []
    # The schema itself, or what its $ref points at ({"$ref": "#/$defs/Decision", "$defs": …}).
    root = schema_view.deref(schema, schema)
    if not isinstance(root, dict):
        return None
    pair = _value_pair(root)
    if pair is not None and _types(root) <= {"boolean", "string"}:
        candidates.append(YesNoShape(approve=pair[0], deny=pair[1]))
    if root.get("type", schema.get("type", "object")) == "object":
        branches = _object_branches(schema)
        properties = _properties(schema, branches)
        chosen = _choose_key(branches, properties)
        if chosen is not None:
            key, (yes, no) = chosen
            # Each branch of a union may require other things of an approval than of a denial: try every pair.
            variants = [{**branch, "properties": properties} for branch in branches]
            approvals = _distinct(a for v in variants if (a := _filled(v, key, yes, proposed_args)) is not None)
            denials = _distinct(d for v in variants if (d := _filled(v, key, no, proposed_args)) is not None)
            edit_key = edit_key_of(schema, properties)
            candidates += [
                YesNoShape(approve=a, deny=d, key=key, edit_key=edit_key) for a in approvals for d in denials
            ]
    # All candidates are checked within one small budget: a yes or a no is a few keywords under any schema an
    # agent really sends, and every list row and page asks for its item's shape (past it: the form).
    with jsonschema_safe.budget(steps=MAX_SHAPE_CHECK_STEPS):
        for shape in candidates:
            if not validate_payload(schema, shape.approve) and not validate_payload(schema, shape.deny):
                return shape
    return None


def _distinct(payloads: Iterable[Any]) -> list[Any]:
    """Each payload once: a union's branches mostly ask the same of a yes (and pairing every approval with every
    denial squares their number)."""
    seen: set[str] = set()
    distinct = []
    for payload in payloads:
        key = jsonschema_safe.canonical_key(payload)
        if key not in seen:
            seen.add(key)
            distinct.append(payload)
    return distinct


def shape_of(item: Any) -> YesNoShape | None:
    """The yes/no shape ``item`` is decided in, or None when it needs its form. The schema is the interrupt's
    own or the one its known emitter's resume code reads (``inbox.decisions.rules.default_schema_for``: Claude
    Agent SDK's ``{behavior}``). An item with neither gets the spec's ``{approved}`` default, except one that
    asks for input (``input_required``, or a question: ``inbox.agui.emitters.asks_for_input``), which is
    answered, never approved."""
    schema = default_schema_for(item)
    if schema is None:
        return None if asks_for_answer(item) else APPROVED_SHAPE
    if schema == BOOLEAN_APPROVAL_SCHEMA:  # the default, or an interrupt's own schema that says the same
        return APPROVED_SHAPE
    return yes_no_shape(schema, proposed_args=lambda: item.proposed_args)


def asks_for_answer(item: Any) -> bool:
    """The item asks for input, not a yes or a no: ``input_required``, or a question by its emitter's shape or
    its open wording (``inbox.agui.emitters.asks_for_input``). Approve never sends ``{"approved": true}`` as
    the answer to one."""
    return item.reason == "input_required" or emitters.asks_for_input(emitters.Interrupt.of(item))


def needs_form_input(item: Any) -> bool:
    """The one rule for whether an item needs its form: no yes/no shape. The list (not bulk-selectable, "Needs
    its form"), the item page (no Approve/Deny), bulk actions and the e-mail links all read it."""
    return shape_of(item) is None


def offers_edits(item: Any) -> bool:
    """The item may be approved with edited arguments: its own schema offers an edit key and has a yes/no shape."""
    shape = shape_of(item)
    return shape is not None and shape.edit_key is not None


def bulk_payload(item: Any, action: str) -> tuple[str, Any] | None:
    """``(status, payload)`` for a bulk/shortcut ``approve`` / ``deny`` / ``cancel`` of ``item``, in its own
    shape; None when the item needs its form."""
    if action == "cancel":
        return "cancelled", None
    shape = shape_of(item)
    if shape is None:
        return None
    return "resolved", shape.payload(action == "approve")


def outcome_for(item: Any, status: str, payload: Any) -> str:
    """The one judge of what a decision means (``InboxItem.Outcome``), read in the item's own schema: the decision
    service stores it on the decision and, when it closes the item, on the item; every reader reads it from
    there. A ``resolved`` answer is "denied" or "approved" where it is the deny or the approve value of the item's
    yes/no shape (``shape_of``; without a schema, the spec's ``{"approved"}``), "approved_with_edits" only when an
    offered edit key carries arguments other than the proposal's, and otherwise "answered". An item that needs
    its form is judged by the form's own yes/no property when it has one (``{"approved": false, "note": …}``)."""
    if status == "cancelled":
        return InboxItem.Outcome.CANCELLED
    if status == "expired":
        return InboxItem.Outcome.EXPIRED
    if status != "resolved":
        return ""
    shape = shape_of(item) or _form_yes_no(item)
    if shape is None:
        return InboxItem.Outcome.ANSWERED
    if shape.is_denial(payload):
        return InboxItem.Outcome.DENIED
    if shape.is_approval(payload):
        edit_key = shape.edit_key
        if edit_key is not None and isinstance(payload, dict) and edit_key in payload:
            if jsonschema_safe.canonical_key(payload[edit_key]) != jsonschema_safe.canonical_key(item.proposed_args):
                return InboxItem.Outcome.APPROVED_WITH_EDITS
        return InboxItem.Outcome.APPROVED
    return InboxItem.Outcome.ANSWERED


def _form_yes_no(item: Any) -> YesNoShape | None:
    """The yes/no property of a form (an object schema with other required fields, so no buttons): its yes and no
    values judge an answer given in the form. None when the form has no such property."""
    schema = default_schema_for(item)
    if not isinstance(schema, dict):
        return None
    branches = _object_branches(schema)
    properties = _properties(schema, branches)
    chosen = _choose_key(branches, properties)
    if chosen is None:
        return None
    key, (yes, no) = chosen
    return YesNoShape(approve={key: yes}, deny={key: no}, key=key, edit_key=edit_key_of(schema, properties))
