"""JSON Schema for schemas written by untrusted agents: nothing fetched, nothing unbounded.

Validators built here never fetch a ``$ref``, match patterns with RE2 (linear time), compare ``uniqueItems`` and
``enum`` in a set, use exact fractions for ``multipleOf`` and stop past a budget of steps and time, each keyword
charged by the work it does on the answer; ``schema_problem`` refuses schemas deeper, wider or longer than the
caller's limits. Used for an interrupt's ``responseSchema`` and a policy's match schema, each with its own limits
(docs/security.md)."""

from __future__ import annotations

import contextlib
import contextvars
import functools
import json
import time
from collections.abc import Callable, Iterator, Mapping
from fractions import Fraction
from typing import Any

import attrs
import jsonschema
import re2
import referencing
import referencing.exceptions
import referencing.jsonschema
from django.conf import settings
from jsonschema._utils import equal as json_equal
from jsonschema.exceptions import ValidationError

REF_KEYWORDS = ("$ref", "$dynamicRef", "$recursiveRef")


# referencing declares its attrs classes through its own ``__dataclass_transform__`` stub, which mypy does not
# read, so it sees no ``__init__`` fields: the keyword arguments below are the documented ones.
def _refuse_retrieval(uri: str) -> referencing.Resource:
    raise referencing.exceptions.NoSuchResource(ref=uri)  # type: ignore[call-arg]


NO_FETCH_REGISTRY: referencing.Registry = referencing.Registry(retrieve=_refuse_retrieval)  # type: ignore[call-arg]


class SchemaProblem(ValueError):
    """Why a schema is refused: ``path`` inside the schema (``properties.to.pattern``) and ``rule``."""

    def __init__(self, path: str, rule: str, message: str):
        super().__init__(message)
        self.path = path
        self.rule = rule
        self.message = message


class ValidationTooCostly(Exception):
    pass


# --- RE2 ----------------------------------------------------------------------------------------------
_RE2_OPTIONS = re2.Options()
_RE2_OPTIONS.log_errors = False


@functools.lru_cache(maxsize=1024)
def compile_pattern(pattern: str) -> Any:
    """The RE2 program for a schema pattern; raises ``re2.error`` when RE2 cannot compile it."""
    return re2.compile(pattern, options=_RE2_OPTIONS)


def pattern_problem(pattern: Any, max_length: int | None = None) -> tuple[str, str] | None:
    """``(rule, message)`` when ``pattern`` cannot be used, else None."""
    if not isinstance(pattern, str):
        return "pattern_re2", "a pattern must be a string"
    if max_length is not None and len(pattern) > max_length:
        return "pattern_length", f"a pattern is at most {max_length} characters ({len(pattern)} given)"
    try:
        compile_pattern(pattern)
    except Exception as exc:  # re2.error: backreferences, lookaround and other non-linear constructs
        reason = exc.args[0].decode() if exc.args and isinstance(exc.args[0], bytes) else str(exc)
        return "pattern_re2", (
            f"pattern {pattern!r} is not supported ({reason}); patterns are matched in linear time (RE2 syntax)"
        )
    return None


def _search(pattern: str, text: str) -> bool:
    """One RE2 search, a step of the budget: ``patternProperties`` and ``additionalProperties`` try every pattern
    on every key, which one keyword step would not bound (300 patterns and 20,000 keys took minutes)."""
    budget = _budget.get()
    if budget is not None:
        budget.spend(1)
    return compile_pattern(pattern).search(text) is not None


# --- keywords -----------------------------------------------------------------------------------------
def _pattern(validator, patrn, instance, schema) -> Iterator[ValidationError]:
    if validator.is_type(instance, "string") and not _search(patrn, instance):
        yield ValidationError(f"{instance!r} does not match {patrn!r}")


def _pattern_properties(validator, pattern_properties, instance, schema) -> Iterator[ValidationError]:
    if not validator.is_type(instance, "object"):
        return
    for pattern, subschema in pattern_properties.items():
        for key, value in instance.items():
            if _search(pattern, key):
                yield from validator.descend(value, subschema, path=key, schema_path=pattern)


def _additional(instance: dict, schema: dict) -> list[str]:
    properties = schema.get("properties", {})
    patterns = list(schema.get("patternProperties", {}))
    return [key for key in instance if key not in properties and not any(_search(pattern, key) for pattern in patterns)]


def _additional_properties(validator, additional, instance, schema) -> Iterator[ValidationError]:
    if not validator.is_type(instance, "object"):
        return
    extras = _additional(instance, schema)
    if validator.is_type(additional, "object"):
        for extra in extras:
            yield from validator.descend(instance[extra], additional, path=extra)
    elif not additional and extras:
        names = ", ".join(repr(extra) for extra in sorted(extras))
        if "patternProperties" in schema:
            verb = "does" if len(extras) == 1 else "do"
            patterns = ", ".join(repr(each) for each in sorted(schema["patternProperties"]))
            yield ValidationError(f"{names} {verb} not match any of the regexes: {patterns}")
        else:
            verb = "was" if len(extras) == 1 else "were"
            yield ValidationError(f"Additional properties are not allowed ({names} {verb} unexpected)")


def _normal(value: Any, budget: _Budget | None = None) -> Any:
    """jsonschema's equality as a value json.dumps can key: 1 == 1.0, but true != 1. Each array or object
    visited costs ``budget`` one step per entry."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        if budget is not None:
            budget.spend(len(value))
        return {key: _normal(sub, budget) for key, sub in value.items()}
    if isinstance(value, list):
        if budget is not None:
            budget.spend(len(value))
        return [_normal(sub, budget) for sub in value]
    return value


def canonical_key(value: Any) -> str:
    """``value`` as canonical JSON; inside a ``budget()`` it costs a step, one more per entry of every array and
    object in it and one per ``_BYTES_PER_STEP`` characters of the result: the work it does."""
    budget = _budget.get()
    key = json.dumps(_normal(value, budget), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    if budget is not None:
        budget.spend(1 + len(key) // _BYTES_PER_STEP)
    return key


def _size(value: Any) -> int:
    """What looking at ``value`` whole costs at most in steps, read from its top level (arrays and objects nested
    deeper are charged as they are walked)."""
    if isinstance(value, (list, dict)):
        return len(value)
    if isinstance(value, str):
        return len(value) // _BYTES_PER_STEP
    return 0


def _const(validator, const, instance, schema) -> Iterator[ValidationError]:
    """jsonschema's ``const`` (its equality: 1 == 1.0, true != 1), charged by the values it compares."""
    budget = _budget.get()
    if budget is not None:
        budget.spend(min(_size(instance), _size(const)))
    if not json_equal(instance, const):
        yield ValidationError(f"{const!r} was expected")


def _unique_items(validator, unique, instance, schema) -> Iterator[ValidationError]:
    if not unique or not validator.is_type(instance, "array"):
        return
    seen: set[str] = set()
    for index, element in enumerate(instance):
        key = canonical_key(element)
        if key in seen:
            yield ValidationError(f"has non-unique elements (item {index} repeats an earlier one)")
            return
        seen.add(key)


_enum_cache: dict[int, tuple[list, frozenset[str]]] = {}


def _enum_keys(enums: list) -> frozenset[str]:
    """The canonical keys of an ``enum`` list, computed once per list object (schemas are reused while
    validating, and an item's schema is loaded once per decision)."""
    cached = _enum_cache.get(id(enums))
    if cached is not None and cached[0] is enums:
        return cached[1]
    keys = frozenset(canonical_key(each) for each in enums)
    if len(_enum_cache) > 256:
        _enum_cache.clear()
    _enum_cache[id(enums)] = (enums, keys)
    return keys


def _enum(validator, enums, instance, schema) -> Iterator[ValidationError]:
    if not isinstance(enums, list):
        return
    if canonical_key(instance) not in _enum_keys(enums):
        shown = repr(enums) if len(enums) <= 20 else f"the {len(enums)} allowed values"
        yield ValidationError(f"{instance!r} is not one of {shown}")


def _multiple_of(validator, divisor, instance, schema) -> Iterator[ValidationError]:
    """jsonschema's ``multipleOf`` (floats first, as it does) with exact fractions wherever a float overflows:
    ``10**400 / 0.01`` and ``1.5 % 10**400`` raise ``OverflowError`` in jsonschema itself."""
    if not validator.is_type(instance, "number") or not validator.is_type(divisor, "number") or not divisor:
        return
    try:
        if isinstance(divisor, float):
            quotient = instance / divisor
            failed = int(quotient) != quotient
        else:
            failed = bool(instance % divisor)
    except (OverflowError, ValueError):
        failed = (Fraction(instance) / Fraction(divisor)).denominator != 1
    if failed:
        yield ValidationError(f"{instance!r} is not a multiple of {divisor}")


# --- the step budget ----------------------------------------------------------------------------------
# Characters of canonical JSON (``canonical_key``) or of a string looked at whole that cost one step.
_BYTES_PER_STEP = 64
# Steps spent between two readings of the clock.
_CLOCK_EVERY = 1000


class _Budget:
    """Steps left, and a wall-clock deadline read every ``_CLOCK_EVERY`` steps spent (following references
    deep in a chain costs more than the step count says). A keyword costs a step per application and, where its
    work grows with the answer (``uniqueItems``, ``enum``, ``const``, ``required``, ``additionalProperties``), steps for
    that work too, so the clock is read as often as the work asks."""

    def __init__(self, limit: int, seconds: float):
        self.left = limit
        self.limit = limit
        self.deadline = time.monotonic() + seconds
        self.until_clock = _CLOCK_EVERY

    def spend(self, cost: int) -> None:
        self.left -= cost
        self.until_clock -= max(cost, 1)
        if self.left < 0:
            raise ValidationTooCostly(f"{self.limit} steps")
        if self.until_clock <= 0:
            self.until_clock = _CLOCK_EVERY
            if time.monotonic() > self.deadline:
                raise ValidationTooCostly(f"{settings.INBOX_VALIDATION_MAX_SECONDS:g} seconds")


_budget: contextvars.ContextVar[_Budget | None] = contextvars.ContextVar("jsonschema_budget", default=None)


@contextlib.contextmanager
def budget(steps: int | None = None) -> Iterator[None]:
    """Everything checked inside shares one budget of ``INBOX_VALIDATION_MAX_STEPS`` (or fewer ``steps``) and
    ``INBOX_VALIDATION_MAX_SECONDS`` (the one already running, when there is one): an ingest's schema checks
    are bounded together, however many interrupts carry a schema."""
    if _budget.get() is not None:
        yield
        return
    limit = settings.INBOX_VALIDATION_MAX_STEPS if steps is None else min(steps, settings.INBOX_VALIDATION_MAX_STEPS)
    token = _budget.set(_Budget(limit, settings.INBOX_VALIDATION_MAX_SECONDS))
    try:
        yield
    finally:
        _budget.reset(token)


# Following a reference costs jsonschema about ten times a plain keyword; an error, built, placed and reported
# (``inbox.decisions.rules.validate_payload``), about five.
_COSTS = {"$ref": 10, "$dynamicRef": 10, "$recursiveRef": 10}
_ERROR_COST = 5


# Keywords whose own work (not their descents, charged as each is applied) grows with the size of the schema's
# value (``required`` looks up each of its names) or of the instance (``additionalProperties`` walks its keys).
_SIZED_BY_VALUE = frozenset({"required", "dependentRequired"})
_SIZED_BY_INSTANCE = frozenset({"additionalProperties", "unevaluatedProperties", "unevaluatedItems"})


def _budgeted(name: str, keyword):
    cost = _COSTS.get(name, 1)
    by_value = name in _SIZED_BY_VALUE
    by_instance = name in _SIZED_BY_INSTANCE

    def apply(validator, value, instance, schema):
        budget = _budget.get()
        if budget is None:
            return keyword(validator, value, instance, schema)
        work = cost
        if by_value:
            work += _size(value)
        if by_instance:
            work += _size(instance)
        budget.spend(work)
        return _charged(budget, keyword(validator, value, instance, schema))

    return apply


def _charged(budget: _Budget, errors: Iterator[ValidationError] | None) -> Iterator[ValidationError]:
    """Each error costs steps too: a ``required`` list of 40,000 missing names is one keyword but 40,000
    errors."""
    for error in errors or ():
        budget.spend(_ERROR_COST)
        yield error


_OVERRIDES = {
    "pattern": _pattern,
    "patternProperties": _pattern_properties,
    "additionalProperties": _additional_properties,
    "uniqueItems": _unique_items,
    "enum": _enum,
    "const": _const,
    "multipleOf": _multiple_of,
}


@functools.cache
def safe_validator_class(base: Any) -> Any:
    """``base`` (a jsonschema validator class) with the keywords above, every keyword counted against the
    budget, and ``evolve`` kept on hardened classes: jsonschema's own picks the class for a subschema from its
    ``$schema``, which would apply such a subschema (or a ``$ref`` to one) with Python's ``re`` and no budget."""
    if getattr(base, "_inbox_safe", False):
        return base
    keywords = dict(base.VALIDATORS)
    for name, keyword in _OVERRIDES.items():
        if name in keywords:
            keywords[name] = keyword
    safe = jsonschema.validators.extend(base, {name: _budgeted(name, kw) for name, kw in keywords.items()})
    jsonschema_evolve = safe.evolve

    def evolve(self, **changes):
        evolved = jsonschema_evolve(self, **changes)
        if getattr(type(evolved), "_inbox_safe", False):
            return evolved
        chosen: Any = type(evolved)  # the class jsonschema picked for the subschema's own $schema
        fields = attrs.fields(chosen)
        return safe_validator_class(chosen)(
            **{field.alias: getattr(evolved, field.name) for field in fields if field.init}
        )

    safe.evolve = evolve
    safe._inbox_safe = True
    return safe


def base_validator_class(schema: Any) -> Any:
    return jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)


def validator_for(schema: Any) -> jsonschema.protocols.Validator:
    """A validator for ``schema`` that fetches nothing, matches patterns with RE2 and checks formats."""
    base = base_validator_class(schema)
    return safe_validator_class(base)(schema, registry=NO_FETCH_REGISTRY, format_checker=base.FORMAT_CHECKER)


def is_valid(schema: Any, instance: Any) -> bool:
    """Whether ``instance`` satisfies ``schema``, stopping at the first error; raises like ``iter_errors``."""
    with budget():
        return validator_for(schema).is_valid(instance)


def validity_check(schema: Any) -> Callable[[Any], bool]:
    """``is_valid`` for many instances of one schema: the validator is built once (most of the cost of checking a
    small instance), and each instance is checked within a budget of its own."""
    validator = validator_for(schema)

    def check(instance: Any) -> bool:
        with budget():
            return validator.is_valid(instance)

    return check


def iter_errors(schema: Any, instance: Any) -> list[ValidationError]:
    """Every error of ``instance`` under ``schema``; raises ``ValidationTooCostly`` past the step budget (its
    own, or the one of the ``budget()`` it runs in) and ``referencing.exceptions.Unresolvable`` for a
    reference that points outside the schema."""
    with budget():
        return list(validator_for(schema).iter_errors(instance))


def meta_schema_errors(schema: Any, *, first_only: bool = False) -> list[ValidationError]:
    """What is wrong with ``schema`` under its dialect's meta-schema (Draft 2020-12 unless ``$schema`` names
    another), checked by the hardened validator within the budget: ``ValidationTooCostly`` past it. An
    unknown ``$schema`` raises ``SchemaError`` as ``validator_for`` does."""
    base = base_validator_class(schema)
    meta = safe_validator_class(jsonschema.validators.validator_for(base.META_SCHEMA, default=base))
    errors = []
    with budget():
        for error in meta(base.META_SCHEMA, format_checker=meta.FORMAT_CHECKER).iter_errors(schema):
            errors.append(error)
            if first_only:
                break
    return errors


def check_schema(schema: Any) -> None:
    """jsonschema's ``check_schema``: ``SchemaError`` for the first problem ``meta_schema_errors`` finds."""
    for error in meta_schema_errors(schema, first_only=True):
        raise jsonschema.exceptions.SchemaError.create_from(error)


# --- ingest-time checks -------------------------------------------------------------------------------
_SUBSCHEMA_MAPS = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas", "dependencies")
_SUBSCHEMA_LISTS = ("allOf", "anyOf", "oneOf", "prefixItems", "items")
_SUBSCHEMAS = (
    "items",
    "additionalItems",
    "additionalProperties",
    "unevaluatedItems",
    "unevaluatedProperties",
    "contains",
    "propertyNames",
    "if",
    "then",
    "else",
    "not",
    "contentSchema",
)


def _depth(value: Any, limit: int) -> int:
    deepest, stack = 0, [(value, 1)]
    while stack:
        current, depth = stack.pop()
        if isinstance(current, dict | list):
            deepest = max(deepest, depth)
            if deepest > limit:
                return deepest
            children = current.values() if isinstance(current, dict) else current
            stack.extend((child, depth + 1) for child in children)
    return deepest


def _join(path: str, part: str | int) -> str:
    if isinstance(part, int):
        return f"{path}[{part}]"
    return f"{path}.{part}" if path else part


def _subschemas(schema: dict, path: str) -> Iterator[tuple[Any, str]]:
    for keyword in _SUBSCHEMA_MAPS:
        value = schema.get(keyword)
        if isinstance(value, dict):
            for name, sub in value.items():
                yield sub, _join(_join(path, keyword), name)
    for keyword in _SUBSCHEMA_LISTS:
        value = schema.get(keyword)
        if isinstance(value, list):
            for index, sub in enumerate(value):
                yield sub, _join(_join(path, keyword), index)
    for keyword in _SUBSCHEMAS:
        value = schema.get(keyword)
        if isinstance(value, dict):
            yield value, _join(path, keyword)


# The keywords whose width ``max_sizes`` may bound (its keys, with "subschemas" for the schema's total).
SIZED_KEYWORDS = ("required", "properties", "enum", "allOf", "anyOf", "oneOf")


def _size_problem(node: dict, path: str, max_sizes: Mapping[str, int]) -> SchemaProblem | None:
    for keyword in SIZED_KEYWORDS:
        value = node.get(keyword)
        limit = max_sizes.get(keyword)
        if limit is not None and isinstance(value, list | dict) and len(value) > limit:
            return SchemaProblem(
                _join(path, keyword),
                f"max_{keyword}",
                f"{keyword} has {len(value)} entries; a schema the inbox can check in bounded time has at most {limit}",
            )
    return None


def size_problem(schema: Any, max_sizes: Mapping[str, int]) -> SchemaProblem | None:
    """The first keyword of ``schema`` wider than ``max_sizes`` allows (or the subschemas beyond
    ``max_sizes["subschemas"]``), or None; a walk that stops there, so it costs at most the limits."""
    subschemas = max_sizes.get("subschemas")
    stack: list[tuple[Any, str]] = [(schema, "")]
    seen = -1  # the root is not one of its subschemas
    while stack:
        node, path = stack.pop()
        if not isinstance(node, dict):
            continue
        seen += 1
        if subschemas is not None and seen > subschemas:
            return SchemaProblem(
                path,
                "max_subschemas",
                f"the schema has more than {subschemas} subschemas; a schema the inbox can check in bounded time "
                f"has at most {subschemas}",
            )
        problem = _size_problem(node, path, max_sizes)
        if problem is not None:
            return problem
        stack.extend(_subschemas(node, path))
    return None


def schema_problem(
    schema: Any, *, max_depth: int, max_pattern: int | None = None, max_sizes: Mapping[str, int] | None = None
) -> SchemaProblem | None:
    """What makes ``schema`` unusable for the inbox beyond its meta-schema, or None: deeper than
    ``max_depth``, wider than ``max_sizes`` (``size_problem``, when given), a reference that points outside
    the schema or to nothing, a pattern RE2 cannot compile (or longer than ``max_pattern`` characters, when
    given)."""
    deepest = _depth(schema, max_depth)
    if deepest > max_depth:
        return SchemaProblem("", "max_depth", f"the schema is nested deeper than {max_depth} levels")
    if not isinstance(schema, dict):
        return None
    if max_sizes is not None:
        too_wide = size_problem(schema, max_sizes)
        if too_wide is not None:
            return too_wide
    specification = referencing.jsonschema.specification_with(
        schema.get("$schema", "") if isinstance(schema.get("$schema"), str) else "",
        default=referencing.jsonschema.DRAFT202012,
    )
    root = specification.create_resource(schema)
    resolver = NO_FETCH_REGISTRY.resolver_with_root(root)
    stack: list[tuple[Any, str, Any]] = [(schema, "", resolver)]
    unevaluated_at, patterns_at = "", ""
    while stack:
        node, path, resolver = stack.pop()
        if not isinstance(node, dict):
            continue
        if node is not schema and isinstance(specification.id_of(node), str):
            resolver = resolver.in_subresource(specification.create_resource(node))
        for keyword in REF_KEYWORDS:
            ref = node.get(keyword)
            if not isinstance(ref, str):
                continue
            where = _join(path, keyword)
            if not ref.startswith("#"):
                return SchemaProblem(
                    where,
                    "ref_internal",
                    f"{keyword} {ref!r} points outside the schema; only references inside it (starting with '#', "
                    "like '#/$defs/name') are allowed, and nothing is ever fetched",
                )
            try:
                resolver.lookup(ref)
            except referencing.exceptions.Unresolvable:
                return SchemaProblem(where, "ref_resolvable", f"{keyword} {ref!r} points to nothing in this schema")
        for keyword in ("pattern",):
            if keyword in node:
                problem = pattern_problem(node[keyword], max_pattern)
                if problem:
                    return SchemaProblem(_join(path, keyword), *problem)
        if isinstance(node.get("patternProperties"), dict):
            for pattern in node["patternProperties"]:
                problem = pattern_problem(pattern, max_pattern)
                if problem:
                    return SchemaProblem(_join(path, "patternProperties"), *problem)
            patterns_at = patterns_at or _join(path, "patternProperties")
        if "unevaluatedProperties" in node:
            unevaluated_at = unevaluated_at or _join(path, "unevaluatedProperties")
        stack.extend((sub, sub_path, resolver) for sub, sub_path in _subschemas(node, path))
    if unevaluated_at and patterns_at:
        # jsonschema matches patternProperties for unevaluatedProperties with Python's backtracking re.
        return SchemaProblem(
            unevaluated_at,
            "no_unevaluated_with_patterns",
            f"unevaluatedProperties cannot be used in a schema that has patternProperties (at {patterns_at})",
        )
    return None
