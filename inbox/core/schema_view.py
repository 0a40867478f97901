"""What an untrusted JSON Schema asks of an object, read through its local references and its combinators.

Agents write a ``responseSchema`` however their library writes one: Pydantic puts the model under ``$defs`` and
points at it with ``$ref``, others merge parts with ``allOf`` or offer alternatives with ``anyOf``/``oneOf``.
``object_views`` flattens such a schema into what an answer is asked for: the properties and required names
every answer has (the schema's own, its ``$ref`` target's and its ``allOf`` members', merged) and, for each
``anyOf``/``oneOf`` branch, those together with the branch's own. The yes/no shapes (``inbox.decisions.shapes``),
the edit offer (``editedArgs``) and the edit form read it; ``jsonschema`` still checks every answer.

Schemas are untrusted input: only local references (``#`` and ``#/a/json/pointer``) are followed, never fetched,
at most ``MAX_REF_HOPS`` in a chain; at most ``MAX_NODES`` subschemas are read and ``MAX_BRANCHES`` branches
kept, so a schema whose references fan out (each pointing at several others) costs no more than those bounds."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote

MAX_REF_HOPS = 16  # references followed in one chain (a to b to c …); a cycle ends there
MAX_NODES = 256  # subschemas read for one view of a schema
MAX_BRANCHES = 32  # anyOf / oneOf branches kept

_NOWHERE = object()


def lookup(root: Any, ref: Any) -> Any:
    """The subschema of ``root`` a local reference points at (``#``, ``#/$defs/Name``), or None for any other
    reference (another document, an anchor) and for one that points at nothing."""
    if not isinstance(ref, str) or not ref.startswith("#"):
        return None
    fragment = unquote(ref[1:])
    if fragment == "":
        return root
    if not fragment.startswith("/"):
        return None  # a plain-name anchor: not followed
    node = root
    for raw in fragment[1:].split("/"):
        token = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and token in node:
            node = node[token]
        elif isinstance(node, list) and token.isdigit() and (token == "0" or not token.startswith("0")):
            index = int(token)
            if index >= len(node):
                return None
            node = node[index]
        else:
            return None
    return node


def deref(root: Any, node: Any) -> Any:
    """``node`` with its reference chain followed (and a lone ``allOf: [x]`` wrapper, as Pydantic writes a described
    reference, looked through); None when a reference leads outside ``root``, nowhere, or past ``MAX_REF_HOPS``.
    Keywords beside a followed reference are left behind: use ``object_views`` for objects."""
    for _hop in range(MAX_REF_HOPS + 1):
        if not isinstance(node, dict):
            return node
        if "$ref" in node:
            node = lookup(root, node["$ref"])
            continue
        wrapped = node.get("allOf")
        if isinstance(wrapped, list) and len(wrapped) == 1 and not {"type", "enum", "const"} & node.keys():
            node = wrapped[0]
            continue
        return node
    return None


@dataclass
class ObjectView:
    """The properties (each subschema with ``deref`` applied) and required names an answer is asked for."""

    properties: dict[str, Any] = field(default_factory=dict)
    required: set[str] = field(default_factory=set)

    def as_schema(self) -> dict[str, Any]:
        """The view as a plain object schema (no references, no combinators)."""
        return {"type": "object", "properties": dict(self.properties), "required": sorted(self.required)}


class _Reader:
    def __init__(self, root: Any):
        self.root = root
        self.nodes_left = MAX_NODES

    def collect(self, node: Any, view: ObjectView, branches: list[ObjectView], seen: set[int], hops: int) -> None:
        """Merge ``node`` (its properties, ``required``, ``$ref`` target and ``allOf`` members) into ``view``;
        each ``anyOf``/``oneOf`` member becomes a branch of its own."""
        if not isinstance(node, dict) or id(node) in seen or self.nodes_left <= 0 or hops > MAX_REF_HOPS:
            return
        seen.add(id(node))
        self.nodes_left -= 1
        properties = node.get("properties")
        if isinstance(properties, dict):
            for name, sub in properties.items():
                view.properties.setdefault(str(name), deref(self.root, sub))
        required = node.get("required")
        if isinstance(required, list):
            view.required |= {name for name in required if isinstance(name, str)}
        if "$ref" in node:
            self.collect(lookup(self.root, node["$ref"]), view, branches, seen, hops + 1)
        members = node.get("allOf")
        if isinstance(members, list):
            for member in members:
                self.collect(member, view, branches, seen, hops + 1)
        for combinator in ("oneOf", "anyOf"):
            alternatives = node.get(combinator)
            if not isinstance(alternatives, list):
                continue
            for member in alternatives:
                if len(branches) >= MAX_BRANCHES:
                    return
                branch = ObjectView()
                branches.append(branch)
                self.collect(member, branch, branches, set(), hops + 1)


def object_views(schema: Any, node: Any = None) -> list[ObjectView]:
    """``[common, *branches]`` of the object ``node`` of ``schema`` (``schema`` itself by default): the common view
    holds what every answer is asked for; each branch (an ``anyOf``/``oneOf`` member, however deep under ``$ref``
    and ``allOf``) holds the common properties and required names together with its own."""
    reader = _Reader(schema)
    common = ObjectView()
    found: list[ObjectView] = []
    reader.collect(schema if node is None else node, common, found, set(), 0)
    branches = []
    for own in found:
        merged = ObjectView(dict(own.properties), common.required | own.required)
        for name, sub in common.properties.items():
            merged.properties.setdefault(name, sub)
        branches.append(merged)
    return [common, *branches]


def property_names(schema: Any) -> set[str]:
    """Every property name ``schema`` names for an object, in any of its views."""
    return {name for view in object_views(schema) for name in view.properties}
