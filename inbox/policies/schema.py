"""The JSON Schemas of auto-decision policies: checked when a policy is saved, applied at ingest.

Everything a policy's schema may do runs behind two functions, ``validate_policy_schema`` (is it a schema
we accept?) and ``policy_matches`` (does this value satisfy it?), so that the inbox has one place where its
hardening lives:

- the schema must be valid under its meta-schema (Draft 2020-12 unless ``$schema`` names another);
- no ``$ref`` is ever fetched: references resolve only inside the schema itself (a ``referencing``
  registry whose ``retrieve`` refuses every URI);
- every ``pattern`` and ``patternProperties`` key is bounded (length) and must compile under RE2, and is
  matched with RE2 (linear time: no pathological backtracking on an agent's arguments);
- the schema itself is bounded in size and depth.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from functools import lru_cache
from typing import Any

import jsonschema
import re2
from jsonschema import validators
from referencing import Registry
from referencing.exceptions import NoSuchResource

from inbox.limits import MAX_POLICY_PATTERN, MAX_POLICY_SCHEMA_BYTES, MAX_POLICY_SCHEMA_DEPTH


def _refuse_retrieval(uri: str):
    raise NoSuchResource(ref=uri)


# Resolves nothing from outside the schema: a remote or unknown $ref is an error, never a fetch.
NO_REMOTE_REFS = Registry(retrieve=_refuse_retrieval)


def _re2_pattern(validator, pattern: str, instance: Any, schema: dict) -> Iterator[jsonschema.ValidationError]:
    if isinstance(instance, str) and not _compiled(pattern).search(instance):
        yield jsonschema.ValidationError(f"{instance!r} does not match {pattern!r}")


def _re2_pattern_properties(validator, patterns: dict, instance: Any, schema: dict):
    if not isinstance(instance, dict):
        return
    for pattern, subschema in patterns.items():
        for key, value in instance.items():
            if _compiled(pattern).search(key):
                yield from validator.descend(value, subschema, path=key, schema_path=pattern)


_RE2_OPTIONS = re2.Options()
_RE2_OPTIONS.log_errors = False  # a refused pattern is reported to whoever saved it, not to stderr


@lru_cache(maxsize=512)
def _compiled(pattern: str):
    return re2.compile(pattern, _RE2_OPTIONS)


def _validator_class(schema: dict):
    base = validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    return validators.extend(base, {"pattern": _re2_pattern, "patternProperties": _re2_pattern_properties})


def _walk(node: Any, path: str, depth: int) -> Iterator[tuple[str, str]]:
    """(path, problem) for each pattern RE2 refuses or that is too long, and for too deep a schema."""
    if depth > MAX_POLICY_SCHEMA_DEPTH:
        yield path, f"the schema is nested deeper than {MAX_POLICY_SCHEMA_DEPTH} levels"
        return
    if isinstance(node, dict):
        patterns: list[tuple[str, Any]] = []
        if isinstance(node.get("pattern"), str):
            patterns.append((f"{path}.pattern" if path else "pattern", node["pattern"]))
        if isinstance(node.get("patternProperties"), dict):
            patterns += [
                (f"{path}.patternProperties" if path else "patternProperties", key) for key in node["patternProperties"]
            ]
        for where, pattern in patterns:
            if len(pattern) > MAX_POLICY_PATTERN:
                yield where, f"a pattern is at most {MAX_POLICY_PATTERN} characters ({len(pattern)} given)"
                continue
            try:
                _compiled(pattern)
            except re2.error as exc:
                reason = exc.args[0].decode() if exc.args and isinstance(exc.args[0], bytes) else str(exc)
                yield where, f"{pattern!r} is not a pattern the inbox can match in linear time (RE2): {reason}"
        for key, value in node.items():
            yield from _walk(value, f"{path}.{key}" if path else str(key), depth + 1)
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from _walk(value, f"{path}.{index}" if path else str(index), depth + 1)


def validate_policy_schema(schema: Any) -> list[dict[str, str]]:
    """Every problem with a policy's match schema: ``[{"path": "properties.to.pattern", "message": ...}]``;
    empty when the schema is acceptable. ``None`` (match anything) is acceptable."""
    if schema is None:
        return []
    if not isinstance(schema, dict | bool):
        return [{"path": "", "message": "a JSON Schema is an object (or true/false)"}]
    size = len(json.dumps(schema))
    if size > MAX_POLICY_SCHEMA_BYTES:
        return [{"path": "", "message": f"a policy schema is at most {MAX_POLICY_SCHEMA_BYTES} bytes ({size} given)"}]
    if isinstance(schema, bool):
        return []
    try:
        cls = validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    except jsonschema.exceptions.SchemaError as exc:
        return [{"path": "$schema", "message": str(exc.message)}]
    problems = [
        {"path": ".".join(str(p) for p in error.absolute_path), "message": error.message}
        for error in cls(cls.META_SCHEMA).iter_errors(schema)
    ]
    problems += [{"path": path, "message": message} for path, message in _walk(schema, "", 0)]
    if problems:
        return problems
    # References must resolve inside the schema: look every $ref up once, with nothing retrievable.
    try:
        _check_refs_resolve(schema)
    except Exception as exc:  # referencing.exceptions.Unresolvable and friends
        return [{"path": "$ref", "message": f"references must point inside the schema (none is fetched): {exc}"}]
    return []


def _check_refs_resolve(schema: dict) -> None:
    cls = _validator_class(schema)
    resolver = cls(schema, registry=NO_REMOTE_REFS)._resolver
    for node in _refs(schema):
        resolver.lookup(node)


def _refs(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        if isinstance(node.get("$ref"), str):
            yield node["$ref"]
        for value in node.values():
            yield from _refs(value)
    elif isinstance(node, list):
        for value in node:
            yield from _refs(value)


def policy_matches(schema: Any, instance: Any) -> bool:
    """Whether ``instance`` satisfies a policy schema already accepted by ``validate_policy_schema``.
    ``None`` matches everything; a schema that cannot be applied matches nothing."""
    if schema is None:
        return True
    try:
        return _validator_class(schema if isinstance(schema, dict) else {})(
            schema, registry=NO_REMOTE_REFS, format_checker=jsonschema.FormatChecker()
        ).is_valid(instance)
    except Exception:
        return False
