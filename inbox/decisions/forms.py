"""The decision forms of the item and run pages, routed by the interrupt's ``reason``.

``decision_ui`` says which controls an item gets (yes/no buttons, a form rendered from its
``responseSchema`` by django-jsonform, or a JSON editor when django-jsonform cannot render the schema);
``inbox.decisions.submission`` reads what the form sends back. jsonschema, in the service, is the
authority: nothing here decides whether an answer is valid.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from django import forms
from django.http import QueryDict
from django_jsonform.forms.fields import JSONFormField

from inbox.agui import emitters
from inbox.core import jsonschema_safe, safe_json, schema_view
from inbox.core.json_view import in_key_order
from inbox.decisions.rules import default_schema_for
from inbox.decisions.shapes import YesNoShape, asks_for_answer, shape_of
from inbox.limits import MAX_JSON_DEPTH, MAX_SCHEMA_SIZES
from inbox.models import InboxItem

# Where an agent with an unknown reason sent no responseSchema, a person may answer in words: the payload is
# what its emitter's resume code reads (``inbox.agui.emitters.answer_payload``: the bare text for Strands and
# CrewAI, ``{"answer": "<the text>"}`` for an agent the table does not know; docs/deciding.md).
TEXT_ANSWER_KEY = emitters.TEXT_ANSWER_KEY


def offers_text_answer(item: InboxItem) -> bool:
    """An extension reason and no schema, its own or its emitter's: nothing constrains the answer, so words are
    one (beside Approve / Deny). A question is answered only in words (``asks_for_answer``)."""
    return item.reason not in emitters.CORE_REASONS and default_schema_for(item) is None


def is_free_text(schema: Any) -> bool:
    """``schema`` asks for a string and nothing narrower than its length or pattern (no enum, no const, no
    type union): an answer in words is the answer itself."""
    return (
        isinstance(schema, dict)
        and schema.get("type") == "string"
        and not ({"enum", "const", "format", "oneOf", "anyOf", "allOf", "not", "$ref"} & schema.keys())
    )


def asks_for_words(item: InboxItem) -> bool:
    """The item is answered in words in one field: its schema is free text (ag2's ``context.input()``, a known
    emitter's question), or it is a question (``shapes.asks_for_answer``) with no schema at all. (An
    ``input_required`` without a schema keeps the JSON editor: any JSON is an answer.)"""
    schema = default_schema_for(item)
    if is_free_text(schema):
        return True
    return schema is None and item.reason != "input_required" and asks_for_answer(item)


def answer_in_words(item: InboxItem, text: str) -> Any:
    """The payload that sends ``text`` as the item's answer: the bare string where the schema asks for free text,
    else in the shape its emitter's resume code reads (``inbox.agui.emitters.answer_payload``)."""
    if is_free_text(default_schema_for(item)):
        return text
    return emitters.answer_payload(emitters.Interrupt.of(item), text)


# Keywords django-jsonform 2.23 does not render faithfully: such a schema gets the JSON editor instead.
_UNRENDERABLE = {
    "$ref",
    "$defs",
    "definitions",
    "$dynamicRef",
    "patternProperties",
    "if",
    "then",
    "else",
    "not",
    "dependentSchemas",
    "dependentRequired",
    "dependencies",
    "prefixItems",
    "unevaluatedProperties",
    "unevaluatedItems",
    "allOf",
    "oneOf",
    "anyOf",
    "const",
    "contains",
}


_RENDERABLE_TYPES = {"string", "number", "integer", "boolean", "object", "array"}


_REQUIRED = re.compile(r"^'(?P<name>.+)' is a required property$")


@dataclass
class DecisionUI:
    """How an item is decided on its page."""

    mode: str  # "boolean" | "question" | "form" | "json"
    bool_key: str | None = "approved"  # the property carrying yes/no; None when the answer is a bare value
    shape: YesNoShape | None = None  # what Approve and Deny send (``inbox.decisions.shapes``)
    yes_label: str = "Approve"
    no_label: str = "Deny"
    offers_edits: bool = False
    proposed_args: Any = None
    schema: dict | None = None
    answer_form: forms.Form | None = None
    answer_text: str = ""
    edited_text: str = ""
    errors: list[dict] = field(default_factory=list)
    # An unknown reason without a schema may also be answered in words (``offers_text_answer``); the box is
    # open from the start when the message asks an open question.
    text_answer: bool = False
    text_open: bool = False
    text_value: str = ""
    # A question ("question" mode): the words it asks, and what an answer is sent as.
    question: str = ""
    answer_sent_as: str = ""

    @property
    def proposed_text(self) -> str:
        return json.dumps(self.proposed_args if self.proposed_args is not None else {}, indent=2, ensure_ascii=False)

    @property
    def edit_field_types(self) -> str:
        """``{"<arg>": "<JSON type>"}`` from the ``editedArgs`` schema, for the page's field editor (which
        also offers arguments the schema names but the proposal lacks). The server still checks the result."""
        key = self.shape.edit_key if self.shape is not None and self.shape.edit_key else "editedArgs"
        schema = self.schema if isinstance(self.schema, dict) else {}
        # Wherever the schema offers it (a union's branch, an allOf member, a $ref's target), and however its
        # arguments are written (under $defs too).
        edited = next(
            (view.properties[key] for view in schema_view.object_views(schema) if key in view.properties), None
        )
        if not isinstance(edited, dict):  # a boolean subschema has no properties
            return "{}"
        properties = schema_view.object_views(schema, edited)[0].properties
        types = {}
        for name, spec in properties.items():
            kind = spec.get("type") if isinstance(spec, dict) else None
            if kind in ("string", "number", "integer", "boolean"):
                types[str(name)] = kind
        return json.dumps(types)

    @property
    def unplaced_errors(self) -> list[dict]:
        """Errors the schema form cannot show beside a field (about the answer as a whole)."""
        return [error for error in self.errors if not error["path"]]

    @property
    def errors_by_path(self) -> dict[str, list[str]]:
        grouped: dict[str, list[str]] = {}
        for error in self.errors:
            grouped.setdefault(error["path"], []).append(error["message"])
        return grouped


def jsonform_can_render(schema: Any) -> bool:
    """True when django-jsonform renders ``schema`` as a usable form (object or array root, no $ref,
    no type unions, no combinators, within the ingest's width limits); anything else is answered in the JSON
    editor. (An item stored before those limits may be wider: it gets the editor, not a form of thousands of
    fields.)"""
    if not isinstance(schema, dict) or schema.get("type") not in ("object", "array"):
        return False
    if schema.get("type") == "object" and not schema.get("properties"):
        return False
    return jsonschema_safe.size_problem(schema, MAX_SCHEMA_SIZES) is None and _renderable(schema)


def _renderable(schema: Any) -> bool:
    if not isinstance(schema, dict) or not isinstance(schema.get("type"), str):
        return False  # no type, or a union of types
    if schema["type"] not in _RENDERABLE_TYPES:
        return False
    if _UNRENDERABLE & schema.keys():
        return False
    properties = schema.get("properties")
    children: list[Any] = list(properties.values()) if isinstance(properties, dict) else []
    for key in ("items", "additionalProperties"):
        if isinstance(schema.get(key), dict):
            children.append(schema[key])
        elif isinstance(schema.get(key), list):
            return False
    return all(_renderable(child) for child in children)


def decision_ui(item: InboxItem, *, post: QueryDict | None = None, errors: list[dict] | None = None) -> DecisionUI:
    """The controls for ``item``; after a refused POST, prefilled with what was sent and its errors."""
    schema = item.schema_in_agent_order
    # One rule for yes/no or form (``shapes.needs_form_input``): no schema at all gives input_required the JSON
    # editor and any other reason the spec's {approved}; a schema gets buttons only if it has a yes/no shape.
    shape = shape_of(item)
    ui = DecisionUI(mode="boolean", schema=schema, errors=errors or [])
    if shape is None and asks_for_words(item):
        return _question_ui(item, ui, post)
    if shape is not None:
        ui.shape = shape
        ui.bool_key = shape.key
        if item.reason == "confirmation":
            ui.yes_label, ui.no_label = "Yes", "No"
        if offers_text_answer(item):
            ui.text_answer = True
            ui.text_value = post.get("answer_text", "") if post is not None else ""
            ui.text_open = bool(ui.text_value)
            ui.answer_sent_as = _sent_as(item)
        ui.offers_edits = shape.edit_key is not None
        call = item.proposal or {}
        # The agent's argument order (argsText), not jsonb's: the edit fields follow the proposal.
        ui.proposed_args = in_key_order(call.get("args"), call.get("argsText"), max_depth=MAX_JSON_DEPTH)
        ui.edited_text = post.get("edited_args", "") if post is not None else ""
        if not ui.edited_text:
            ui.edited_text = ui.proposed_text
        return ui
    submitted = post.get("answer", "") if post is not None else ""
    if schema is not None and jsonform_can_render(schema):
        ui.mode = "form"
        ui.answer_form = answer_form(schema, initial=submitted, errors=ui.errors)
    else:
        ui.mode = "json"
        ui.answer_text = submitted or "{}"
    return ui


def _sent_as(item: InboxItem) -> str:
    """How an answer in words reaches this agent, for the hint beside the field."""
    return json.dumps(answer_in_words(item, "…"), ensure_ascii=False)


def _question_ui(item: InboxItem, ui: DecisionUI, post: QueryDict | None) -> DecisionUI:
    """A question: its words and one answer field, no Approve / Deny."""
    ui.mode = "question"
    ui.bool_key = None
    ui.question = emitters.question_of(emitters.Interrupt.of(item))
    ui.text_value = post.get("answer_text", "") if post is not None else ""
    ui.answer_sent_as = _sent_as(item)
    return ui


def jsonform_error_map(errors: list[dict]) -> dict[str, list[str]]:
    """The service's errors ({"path": "a.b", ...}) keyed the way django-jsonform shows them by a field."""
    error_map: dict[str, list[str]] = {}
    for error in errors:
        error_map.setdefault(error["path"].replace(".", "§"), []).append(error["message"])
    return error_map


_LINK_FORMATS = {"uri", "uri-reference"}  # django-jsonform shows these as an input plus a link to its value
_UPLOAD_FORMATS = {"data-url", "file-url"}  # upload widgets: the inbox takes no files, so plain text
_SAFE_SCHEMES = ("http:", "https:", "mailto:")


def _safe_link(value: Any) -> bool:
    return isinstance(value, str) and value.strip().lower().startswith(_SAFE_SCHEMES)


def widget_schema(schema: Any) -> Any:
    """The agent's schema as handed to django-jsonform: a link-rendered field keeps its ``default`` only if it
    is an http(s) or mailto URL (a ``javascript:`` default would otherwise be a clickable link), and upload
    formats become plain text fields. Validation still uses the agent's schema unchanged."""
    if isinstance(schema, list):
        return [widget_schema(sub) for sub in schema]
    if not isinstance(schema, dict):
        return schema
    safe = {key: widget_schema(value) for key, value in schema.items()}
    kind = safe.get("format") if isinstance(safe.get("format"), str) else None
    if kind in _LINK_FORMATS and "default" in safe and not _safe_link(safe["default"]):
        del safe["default"]
    if kind in _UPLOAD_FORMATS:
        del safe["format"]
    return safe


_WORD_BREAKS = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")


def humanize(name: str) -> str:
    """A property name as a label: "startDate", "start_date" and "start-date" all read "Start date";
    acronyms stay ("userID" → "User ID")."""
    words = re.sub(r"[\s_.-]+", " ", _WORD_BREAKS.sub(" ", name)).split()
    if not words:
        return name
    text = " ".join(word if len(word) > 1 and word.isupper() else word.lower() for word in words)
    return text[0].upper() + text[1:]


def _fit_property(name: str, schema: Any, required: bool) -> Any:
    if not isinstance(schema, dict):
        return schema
    fitted = form_schema(schema)
    title = fitted.get("title")
    if not isinstance(title, str) or not title.strip():
        fitted["title"] = humanize(str(name))
    # django-jsonform marks a field required from its parent's list, but it overwrites a required object's own
    # list with ``true``, so the fields of a required nested object lost their mark: each says it itself.
    if required and fitted.get("type") not in ("object", "array"):
        fitted["required"] = True
    # A field's JSON Schema description is what to enter: django-jsonform shows it only as ``help_text`` (a
    # group shows its description itself), under the field.
    description = fitted.get("description")
    if fitted.get("type") not in ("object", "array") and isinstance(description, str) and description.strip():
        fitted.setdefault("help_text", description)
    return fitted


def form_schema(schema: Any) -> Any:
    """The schema django-jsonform draws: every property has a title (a humanized name where the agent gave none,
    not django-jsonform's "Startdate") and every required field says so, however deep. Only the form's
    rendering reads it; answers are validated against the agent's schema."""
    if not isinstance(schema, dict):
        return schema
    fitted = dict(schema)
    properties = schema.get("properties")
    if isinstance(properties, dict):
        listed = schema.get("required")
        required = {name for name in listed if isinstance(name, str)} if isinstance(listed, list) else set()
        fitted["properties"] = {name: _fit_property(name, sub, name in required) for name, sub in properties.items()}
    for key in ("items", "additionalProperties"):
        if isinstance(schema.get(key), dict):
            fitted[key] = form_schema(schema[key])
    return fitted


def answer_form(schema: dict, *, initial: str = "", errors: list[dict] | None = None) -> forms.Form:
    class AnswerForm(forms.Form):
        answer = JSONFormField(schema=form_schema(widget_schema(schema)), required=False, label="Answer")

    try:
        value = safe_json.loads(initial, max_depth=MAX_JSON_DEPTH) if initial else None
    except safe_json.UnsafeJson:
        value = None
    form = AnswerForm(initial={"answer": value})
    if errors:
        form.fields["answer"].widget.add_error(jsonform_error_map(errors))
    return form


def field_errors(errors: list[dict]) -> list[dict]:
    """The service's errors with plainer words for a missing field (already placed on the field)."""
    placed = []
    for error in errors:
        message = error.get("message", "")
        if _REQUIRED.match(message) or message.endswith(" is required."):  # jsonschema's or decisions.wording's
            message = "This field is required."
        placed.append({"path": error.get("path", ""), "message": message})
    return placed
