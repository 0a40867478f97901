"""A refused answer in the words of the field it concerns: "Enter an IBAN: two letters, then 8–12 letters or
digits", not ``'123' does not match '^[A-Z]{2}…$'``. The field's own ``title`` and ``description`` (what the
form shows beside it) say what is wanted; a keyword without a sentence here keeps jsonschema's message."""

from __future__ import annotations

from typing import Any

import jsonschema

FORMAT_WORDS = {
    "date-time": "a date and a time",
    "date": "a date",
    "time": "a time",
    "email": "an e-mail address",
    "uri": "a web address (URL)",
    "uuid": "a UUID",
}
TYPE_WORDS = {
    "string": "text",
    "number": "a number",
    "integer": "a whole number",
    "boolean": "yes or no",
    "array": "a list",
    "object": "a group of fields",
}
ENUM_NAMED_AT_MOST = 10


def _with_article(noun: str) -> str:
    words = noun if noun[:2].isupper() else noun[:1].lower() + noun[1:]
    return f"{'an' if words[:1].lower() in 'aeiou' else 'a'} {words}"


def _named(schema: Any, fallback: str) -> str:
    title = schema.get("title") if isinstance(schema, dict) else None
    return title.strip() if isinstance(title, str) and title.strip() else fallback


def _described(schema: Any) -> str:
    description = schema.get("description") if isinstance(schema, dict) else None
    return description.strip().rstrip(".") if isinstance(description, str) and description.strip() else ""


def _humanized(name: Any) -> str:
    words = str(name).replace("_", " ").replace("-", " ").strip()
    return words[:1].upper() + words[1:] if words and not isinstance(name, int) else ""


def in_words(error: jsonschema.ValidationError) -> str:
    """One sentence for ``error``, in the words of the field's schema where it has them (its title, else its
    property name)."""
    schema, rule, value = error.schema, error.validator, error.validator_value
    path = list(error.absolute_path)
    field = _named(schema, (_humanized(path[-1]) if path else "") or "this field")
    described = _described(schema)
    if rule == "pattern":
        wanted = f"Enter {_with_article(field)}" if field != "this field" else "Enter a value in the expected form"
        return f"{wanted}: {described}." if described else f"{wanted} in the form it asks for."
    if rule == "format" and isinstance(value, str):
        return f"Enter {FORMAT_WORDS.get(value, _with_article(value))}" + (f": {described}." if described else ".")
    if rule == "required" and isinstance(schema, dict):
        name = error.message.split("'")[1] if error.message.count("'") >= 2 else ""
        properties = schema.get("properties")
        named = properties.get(name) if isinstance(properties, dict) else None
        return f"{_named(named, _humanized(name) or 'This field')} is required."
    if rule == "type":
        kinds = value if isinstance(value, list) else [value]
        return "Enter " + " or ".join(TYPE_WORDS.get(str(kind), str(kind)) for kind in kinds) + "."
    if rule == "enum" and isinstance(value, list):
        choices = ", ".join(str(choice) for choice in value[:ENUM_NAMED_AT_MOST])
        more = f" (and {len(value) - ENUM_NAMED_AT_MOST} more)" if len(value) > ENUM_NAMED_AT_MOST else ""
        return f"Choose one of: {choices}{more}."
    label = field[:1].upper() + field[1:]
    limits = {
        "minimum": f"{label} must be at least {value}.",
        "maximum": f"{label} must be at most {value}.",
        "exclusiveMinimum": f"{label} must be more than {value}.",
        "exclusiveMaximum": f"{label} must be less than {value}.",
        "minLength": f"{label} must be at least {value} character{'s' if value != 1 else ''}.",
        "maxLength": f"{label} must be at most {value} character{'s' if value != 1 else ''}.",
        "minItems": f"{label} needs at least {value} entr{'ies' if value != 1 else 'y'}.",
        "maxItems": f"{label} takes at most {value} entr{'ies' if value != 1 else 'y'}.",
    }
    sentence = limits.get(str(rule))
    if sentence is None:
        return error.message
    return f"{sentence} {described}." if described else sentence
