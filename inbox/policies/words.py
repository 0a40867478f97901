"""A policy's match schema in words, for the policy pages: "to ends with “@ourco.com”" where the page showed the
JSON Schema ``{"properties": {"to": {"pattern": "@ourco\\.com$"}}}``. The JSON stays on the page, behind a
summary; a keyword this module does not put in words is named, never dropped, so the words never claim a policy
matches more than it does."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

# Keywords that say nothing about what matches.
_NOTES = {"$schema", "$id", "$comment", "title", "description", "default", "examples", "deprecated", "readOnly"}
_TYPES = {
    "string": "text",
    "number": "a number",
    "integer": "a whole number",
    "boolean": "true or false",
    "array": "a list",
    "object": "a set of fields",
    "null": "empty (null)",
}
_FORMATS = {
    "email": "an e-mail address",
    "date": "a date",
    "date-time": "a date and time",
    "time": "a time of day",
    "uri": "a URL",
    "hostname": "a host name",
    "ipv4": "an IPv4 address",
    "ipv6": "an IPv6 address",
    "uuid": "a UUID",
}
# A pattern is read as words only when it is a plain text between optional anchors: ^text$, ^text, text$, text.
_PLAIN = re.compile(r"(?:\\[.\\^$|?*+()\[\]{}/@-]|[^.\\^$|?*+()\[\]{}])*")


@dataclass(frozen=True)
class Clause:
    """One condition: ``field`` (a dotted path; empty for the whole subject) and what must hold of it."""

    field: str
    words: str


def value_words(value: Any) -> str:
    if isinstance(value, str):
        return f"“{value}”"
    if value is None:
        return "empty (null)"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return f"{value:g}" if isinstance(value, float) else str(value)
    return json.dumps(value, ensure_ascii=False)


def _either(values: list[str]) -> str:
    return values[0] if len(values) == 1 else ", ".join(values[:-1]) + " or " + values[-1]


def pattern_words(pattern: str) -> str:
    start, end = pattern.startswith("^"), pattern.endswith("$") and not pattern.endswith("\\$")
    body = pattern[1 if start else 0 : len(pattern) - 1 if end else len(pattern)]
    if body and _PLAIN.fullmatch(body):
        text = value_words(re.sub(r"\\(.)", r"\1", body))
        if start and end:
            return f"is exactly {text}"
        return f"starts with {text}" if start else f"ends with {text}" if end else f"contains {text}"
    return f"matches the pattern {pattern}"


def _count(number: Any, one: str, many: str) -> str:
    return f"{number} {one if number == 1 else many}"


def _type_words(rule: Any) -> str:
    types = rule if isinstance(rule, list) else [rule]
    return "is " + _either([_TYPES.get(str(kind), str(kind)) for kind in types])


def _enum_words(rule: Any) -> str | None:
    if not isinstance(rule, list) or not rule:
        return None
    return f"is {value_words(rule[0])}" if len(rule) == 1 else "is one of " + _either(list(map(value_words, rule)))


# Keywords about the value itself: the words for the keyword's value (None: not put in words).
_VALUE_WORDS: dict[str, Any] = {
    "type": _type_words,
    "const": lambda rule: f"is {value_words(rule)}",
    "enum": _enum_words,
    "minimum": lambda rule: f"is at least {value_words(rule)}",
    "maximum": lambda rule: f"is at most {value_words(rule)}",
    "exclusiveMinimum": lambda rule: f"is more than {value_words(rule)}",
    "exclusiveMaximum": lambda rule: f"is less than {value_words(rule)}",
    "multipleOf": lambda rule: f"is a multiple of {value_words(rule)}",
    "minLength": lambda rule: f"has at least {_count(rule, 'character', 'characters')}",
    "maxLength": lambda rule: f"has at most {_count(rule, 'character', 'characters')}",
    "pattern": lambda rule: pattern_words(rule) if isinstance(rule, str) else None,
    "format": lambda rule: f"is {_FORMATS.get(str(rule), f'in the format {rule}')}",
    "minItems": lambda rule: f"has at least {_count(rule, 'entry', 'entries')}",
    "maxItems": lambda rule: f"has at most {_count(rule, 'entry', 'entries')}",
    "uniqueItems": lambda rule: "has no entry twice" if rule is True else None,
    "minProperties": lambda rule: f"has at least {_count(rule, 'field', 'fields')}",
    "maxProperties": lambda rule: f"has at most {_count(rule, 'field', 'fields')}",
    "contains": lambda rule: "has an entry that " + _joined(clauses(rule), "is anything"),
    "not": lambda rule: "does not hold: " + _joined(clauses(rule), "anything"),
    "anyOf": lambda rule: _choices("at least one", rule),
    "oneOf": lambda rule: _choices("exactly one", rule),
}


def _choices(how_many: str, options: Any) -> str | None:
    if not isinstance(options, list):
        return None
    listed = [f"({index}) {_joined(clauses(option), 'anything')}" for index, option in enumerate(options, 1)]
    return f"{how_many} of these holds: " + "; ".join(listed)


def _nested(key: str, rule: Any, schema: dict[str, Any], field: str) -> list[Clause] | None:
    """The clauses of a keyword about the value's parts (fields, entries) or of sub-schemas all applied to it."""
    if key == "properties" and isinstance(rule, dict):
        return [clause for name, inner in rule.items() for clause in clauses(inner, _child(field, name))]
    if key == "required" and isinstance(rule, list):
        return [Clause(_child(field, str(name)), "is given") for name in rule]
    if key == "items" and isinstance(rule, dict | bool):
        return clauses(rule, f"{field}[each]" if field else "[each]")
    if key == "allOf" and isinstance(rule, list):
        return [clause for option in rule for clause in clauses(option, field)]
    if key == "additionalProperties" and rule is False:
        named = list(schema.get("properties") or {})
        return [Clause(field, "has no other field" + (f" than {_either(named)}" if named else ""))]
    return None


def clauses(schema: Any, field: str = "") -> list[Clause]:
    """What ``schema`` asks of the value at ``field``, one condition each, in the schema's order."""
    if schema is True or schema == {}:
        return []
    if schema is False:
        return [Clause(field, "never matches")]
    if not isinstance(schema, dict):
        return [Clause(field, f"satisfies {json.dumps(schema)}")]
    found: list[Clause] = []
    for key, rule in schema.items():
        if key in _NOTES or (key == "type" and rule == "object" and not field):
            continue  # notes; and the subject (tool arguments, interrupt metadata) is always a set of fields
        nested = _nested(key, rule, schema, field)
        words = _VALUE_WORDS[key](rule) if nested is None and key in _VALUE_WORDS else None
        if nested is not None:
            found += nested
        elif words is not None:
            found.append(Clause(field, words))
        else:
            found.append(
                Clause(field, f"satisfies the JSON Schema rule “{key}”: {json.dumps(rule, ensure_ascii=False)}")
            )
    return found


def _child(field: str, name: str) -> str:
    return f"{field}.{name}" if field else str(name)


def _joined(found: list[Clause], nothing: str) -> str:
    if not found:
        return nothing
    return " and ".join(f"{clause.field} {clause.words}" if clause.field else clause.words for clause in found)
