"""The JSON Schemas of auto-decision policies: checked when a policy is saved (``validate_policy_schema``), applied
at ingest (``policy_matches``).

The hardening is an interrupt's ``responseSchema``'s (``inbox.core.jsonschema_safe``: no ``$ref`` fetched, RE2
patterns, bounded work); this module adds the policy's own limits from ``inbox.limits`` (docs/policies.md)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import jsonschema
from jsonschema import validators

from inbox.core import jsonschema_safe
from inbox.limits import MAX_POLICY_PATTERN, MAX_POLICY_SCHEMA_BYTES, MAX_POLICY_SCHEMA_DEPTH, MAX_SCHEMA_SIZES


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
    problem = jsonschema_safe.schema_problem(
        schema, max_depth=MAX_POLICY_SCHEMA_DEPTH, max_pattern=MAX_POLICY_PATTERN, max_sizes=MAX_SCHEMA_SIZES
    )
    if problem is not None and problem.rule.startswith("max_"):
        # Before the meta-schema check, which recurses and whose work grows with the schema's width.
        return [{"path": problem.path, "message": problem.message}]
    try:
        validators.validator_for(schema, default=jsonschema.Draft202012Validator)
        errors = jsonschema_safe.meta_schema_errors(schema)
    except jsonschema.exceptions.SchemaError as exc:
        return [{"path": "$schema", "message": str(exc.message)}]
    except jsonschema_safe.ValidationTooCostly as exc:
        return [{"path": "", "message": f"checking this schema against its meta-schema takes more than {exc}"}]
    problems = [{"path": ".".join(str(p) for p in error.absolute_path), "message": error.message} for error in errors]
    if problem is not None:
        problems.append({"path": problem.path, "message": problem.message})
    return problems


def policy_matches(schema: Any, instance: Any) -> bool:
    """Whether ``instance`` satisfies a policy schema already accepted by ``validate_policy_schema``.
    ``None`` matches everything; a schema that cannot be applied (or costs too much to) matches nothing."""
    if schema is None:
        return True
    try:
        return jsonschema_safe.is_valid(schema, instance)
    except Exception:
        return False


def policy_matcher(schema: Any) -> Callable[[Any], bool]:
    """``policy_matches`` for many values of one schema (a backtest's items): the validator is built once."""
    if schema is None:
        return lambda instance: True
    try:
        check = jsonschema_safe.validity_check(schema)
    except Exception:
        return lambda instance: False

    def matches(instance: Any) -> bool:
        try:
            return check(instance)
        except Exception:
            return False

    return matches
