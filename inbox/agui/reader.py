"""Reading an agent's run: the body of ``POST /api/v1/runs`` or the reply stream of a resume (no database).

``parse_body`` turns the three accepted shapes (a bare ``RUN_FINISHED``, ``{"events": [...]}``, an event stream)
into raw event dicts; ``read_run`` checks them against the SDK models and the spec and returns a ``RunRecord``.
Every refusal is an ``IngestError`` naming the field path and the rule it broke."""

from __future__ import annotations

import functools
import hashlib
import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import jsonschema
from ag_ui.core import Event, EventType
from django.conf import settings
from pydantic import TypeAdapter, ValidationError

from inbox.core import jsonschema_safe, safe_json
from inbox.core.errors import ApplicationError
from inbox.core.jsonschema_safe import SchemaProblem
from inbox.limits import MAX_ID_LENGTH, MAX_JSON_DEPTH, MAX_SCHEMA_DEPTH, MAX_SCHEMA_SIZES

_event_adapter: TypeAdapter = TypeAdapter(Event)


# Events that carry nothing the inbox keeps; they are validated and then dropped from the run's record.
_NOT_RECORDED = {EventType.RAW}


_MAX_RECORDED_EVENTS = 500


@dataclass
class FieldError:
    field: str
    rule: str
    message: str

    def as_dict(self) -> dict[str, str]:
        return {"field": self.field, "rule": self.rule, "message": self.message}


class IngestError(ApplicationError):
    """A refused body: HTTP status, a machine code and the field errors, each naming the rule it broke
    (``errors: [{"field", "rule", "message"}]``, with the first one's ``field`` and ``rule`` on top)."""

    def __init__(self, status: int, code: str, message: str, errors: list[FieldError] | None = None):
        errors = errors or []
        rule = {"rule": errors[0].rule} if errors else {}
        super().__init__(
            status,
            code,
            message,
            field=errors[0].field if errors else None,
            errors=[error.as_dict() for error in errors],
            **rule,
        )

    def with_open_items(self, items: list[dict]) -> IngestError:
        self.extra["openItems"] = [
            {"id": item["pk"], "interruptId": item["interrupt_id"], "runId": item["run__run_id"]} for item in items
        ]
        return self


def _invalid(field: str, rule: str, message: str) -> IngestError:
    return IngestError(400, "invalid_run", message, [FieldError(field, rule, message)])


@dataclass
class InterruptRecord:
    position: int
    id: str
    reason: str
    message: str
    tool_call_id: str
    response_schema: dict | None
    expires_at: datetime | None
    metadata: dict | None
    raw: dict
    subagent_run_id: str = ""


@dataclass
class RunRecord:
    thread_id: str
    run_id: str
    parent_run_id: str
    outcome: str  # interrupt | success | cancelled | error
    outcome_omitted: bool
    result: Any
    error_message: str
    state_snapshot: Any
    messages_snapshot: Any
    tool_calls: list[dict]
    tool_results: list[dict]
    events: list[dict]
    interrupts: list[InterruptRecord] = field(default_factory=list)
    content_hash: str = ""
    requested_by: str = ""
    # RUN_STARTED.input as the agent echoed it (the RunAgentInput this run answered), when it did.
    started_input: dict | None = None
    # A success outcome's pendingToolCallIds (ag-ui-protocol 1.0).
    pending_tool_call_ids: list[str] = field(default_factory=list)


def parse_body(body: bytes, content_type: str) -> tuple[list[Any], str]:
    """Return (raw events, path prefix for error messages)."""
    if content_type.split(";")[0].strip().lower() == "text/event-stream":
        return parse_sse(body), "events"
    try:
        data = safe_json.loads(body, max_depth=MAX_JSON_DEPTH)
    except safe_json.UnsafeJson as exc:
        if exc.rule in ("json", "utf8"):
            message = f"The body is not valid JSON: {exc.message}"
            raise IngestError(400, "malformed_json", message, [FieldError("body", "json", exc.message)]) from None
        raise _invalid(exc.path or "body", exc.rule, exc.message) from None
    if isinstance(data, dict) and "events" in data and "type" not in data:
        events = data["events"]
        if not isinstance(events, list):
            raise _invalid("events", "type", "'events' must be an array of AG-UI events.")
        if not events:
            raise _invalid("events", "not_empty", "'events' is empty: a run must end with RUN_FINISHED.")
        return events, "events"
    if isinstance(data, dict) and "type" in data:
        return [data], ""
    raise _invalid(
        "body",
        "shape",
        'Expected one RUN_FINISHED event object, {"events": [...]}, or a text/event-stream body.',
    )


def parse_sse(body: bytes | str) -> list[Any]:
    """The ``data:`` payloads of an SSE body, one JSON event each (multi-line data joined by newlines)."""
    try:
        text = body.decode("utf-8", errors="strict") if isinstance(body, bytes) else body
    except UnicodeDecodeError as exc:
        raise _invalid("body", "utf8", f"The event stream is not valid UTF-8 (byte {exc.start}).") from None
    events: list[Any] = []
    data_lines: list[str] = []

    def flush() -> None:
        if not data_lines:
            return
        payload = "\n".join(data_lines)
        data_lines.clear()
        index = len(events)
        try:
            events.append(safe_json.loads(payload, f"events[{index}]", max_depth=MAX_JSON_DEPTH))
        except safe_json.UnsafeJson as exc:
            if exc.rule == "json":
                raise _invalid(f"events[{index}]", "json", f"SSE event {index} is not valid JSON: {exc}") from None
            raise _invalid(exc.path, exc.rule, exc.message) from None

    for line in text.splitlines():
        if line == "":
            flush()
        elif line.startswith(":"):
            continue
        elif line.startswith("data:"):
            data_lines.append(line[5:].removeprefix(" "))
    flush()
    if not events:
        raise _invalid("events", "not_empty", "The event stream holds no 'data:' events.")
    return events


def content_hash(events: list[Any]) -> str:
    canonical = json.dumps(events, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode()).hexdigest()


def _join(prefix: str, index: int | None, loc: tuple | list = ()) -> str:
    path = prefix
    if index is not None and prefix:
        path = f"{prefix}[{index}]"
    for part in loc:
        if isinstance(part, int):
            path += f"[{part}]"
        else:
            path += f".{part}" if path else str(part)
    return path


def _sdk_error(exc: ValidationError, prefix: str, index: int | None) -> IngestError:
    errors = []
    for error in exc.errors()[:20]:
        # pydantic puts the discriminator value (e.g. 'RUN_FINISHED') first in a union's location.
        loc = list(error["loc"])
        if loc and isinstance(loc[0], str) and loc[0].isupper():
            loc = loc[1:]
        loc = [_camel(part) if isinstance(part, str) else part for part in loc]
        errors.append(FieldError(_join(prefix, index, loc), "ag_ui_event", error["msg"]))
    first = errors[0] if errors else FieldError(_join(prefix, index), "ag_ui_event", str(exc))
    return IngestError(400, "invalid_event", f"{first.field}: {first.message}", errors or [first])


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


_EARLIEST_EXPIRY = datetime(1970, 1, 1, tzinfo=UTC)
_LATEST_EXPIRY = datetime(9000, 1, 1, tzinfo=UTC)


def parse_expires_at(value: Any) -> datetime:
    """ISO 8601; a value with no offset is read as UTC. Refused outside 1970–9000 (UTC), where adding a
    reminder lead or an offset could overflow."""
    if not isinstance(value, str) or not value.strip():
        raise ValueError("not a string")
    parsed = datetime.fromisoformat(value.strip())
    try:
        parsed = parsed.astimezone(UTC) if parsed.tzinfo else parsed.replace(tzinfo=UTC)
    except OverflowError:
        raise ValueError("out of range") from None
    if not _EARLIEST_EXPIRY <= parsed < _LATEST_EXPIRY:
        raise ValueError("out of range")
    return parsed


def _check_length(raw: dict, key: str, path: str) -> None:
    value = raw.get(key)
    if isinstance(value, str) and len(value) > MAX_ID_LENGTH:
        raise _invalid(
            _join(path, None, [key]),
            "max_length",
            f"{key} is at most {MAX_ID_LENGTH} characters ({len(value)} given).",
        )


def check_response_schema(schema: Any) -> str | None:
    """The problem with a responseSchema, or None. Draft 2020-12 unless ``$schema`` names another.
    No ``$ref`` is ever fetched: see ``inbox.core.jsonschema_safe``."""
    problem = response_schema_problem(schema)
    return None if problem is None else problem.message


def response_schema_problem(schema: Any) -> SchemaProblem | None:
    """Like ``check_response_schema`` with the path inside the schema and the rule broken."""
    if not isinstance(schema, dict):
        return SchemaProblem("", "response_schema_valid", "responseSchema must be a JSON object")
    # Agents send the same few schemas again and again; checking one against its meta-schema costs more
    # than the rest of the ingest's parsing, so each distinct schema is checked once per process.
    try:
        return _check_schema_text(json.dumps(schema, sort_keys=True, separators=(",", ":")))
    except jsonschema_safe.ValidationTooCostly as exc:  # not cached: the budget may be shared with other schemas
        return SchemaProblem(
            "",
            "validation_budget",
            f"checking the run's response schemas against their meta-schema takes more than {exc} "
            "(INBOX_VALIDATION_MAX_STEPS, INBOX_VALIDATION_MAX_SECONDS)",
        )


@functools.lru_cache(maxsize=2048)
def _check_schema_text(text: str) -> SchemaProblem | None:
    schema = json.loads(text)
    # Depth and width first: the meta-schema check recurses, and its work grows with the schema's width.
    problem = jsonschema_safe.schema_problem(schema, max_depth=MAX_SCHEMA_DEPTH, max_sizes=MAX_SCHEMA_SIZES)
    if problem is not None:
        return problem
    try:
        jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    except jsonschema.exceptions.SchemaError as exc:  # an unknown $schema dialect
        return SchemaProblem("$schema", "response_schema_valid", str(exc.message))
    try:
        jsonschema_safe.check_schema(schema)
    except jsonschema.exceptions.SchemaError as exc:
        where = "/".join(str(p) for p in exc.absolute_path)
        return SchemaProblem("", "response_schema_valid", f"{exc.message}" + (f" (at /{where})" if where else ""))
    return None


OUTCOME_TYPES = ("success", "interrupt", "cancelled")


def _check_interrupts(raw_finished: dict, path: str) -> None:
    """The spec's rules on an interrupt outcome, on the raw dict so each error names its rule."""
    outcome = raw_finished.get("outcome")
    if isinstance(outcome, dict) and outcome.get("type") not in OUTCOME_TYPES:
        kind = outcome.get("type")
        raise _invalid(
            _join(path, None, ["outcome", "type"]),
            "outcome_type",
            f"{kind!r} is not a run outcome (success, interrupt or cancelled): RUN_ERROR is the sole error event.",
        )
    if not isinstance(outcome, dict) or outcome.get("type") != "interrupt":
        return
    opath = _join(path, None, ["outcome", "interrupts"])
    interrupts = outcome.get("interrupts")
    if not isinstance(interrupts, list):
        raise _invalid(opath, "interrupts_array", "An interrupt outcome must carry an 'interrupts' array.")
    if not interrupts:
        raise _invalid(opath, "interrupts_not_empty", "An interrupt outcome's 'interrupts' array must not be empty.")
    limit = settings.INBOX_MAX_INTERRUPTS_PER_RUN
    if len(interrupts) > limit:
        raise _invalid(
            opath, "interrupts_max", f"A run may carry at most {limit} interrupts; this one has {len(interrupts)}."
        )
    seen: dict[str, int] = {}
    for i, interrupt in enumerate(interrupts):
        ipath = f"{opath}[{i}]"
        if not isinstance(interrupt, dict):
            raise _invalid(ipath, "interrupt_object", "Each interrupt must be a JSON object.")
        interrupt_id = interrupt.get("id")
        if interrupt_id is None:
            raise _invalid(f"{ipath}.id", "interrupt_id_required", "Each interrupt must have an id.")
        if isinstance(interrupt_id, str):
            if interrupt_id in seen:
                raise _invalid(
                    f"{ipath}.id",
                    "interrupt_id_unique",
                    f"Interrupt id {interrupt_id!r} is used twice in this run (also at index {seen[interrupt_id]}).",
                )
            seen[interrupt_id] = i
            if not interrupt_id.strip():
                raise _invalid(f"{ipath}.id", "interrupt_id_not_empty", "An interrupt's id must not be empty.")
        for key in ("id", "reason", "toolCallId"):
            _check_length(interrupt, key, ipath)
        if interrupt.get("reason") == "tool_call" and not interrupt.get("toolCallId"):
            raise _invalid(
                f"{ipath}.toolCallId",
                "tool_call_requires_tool_call_id",
                "An interrupt with reason 'tool_call' must set toolCallId.",
            )
        if interrupt.get("responseSchema") is not None:
            problem = response_schema_problem(interrupt["responseSchema"])
            if problem:
                where = f"{ipath}.responseSchema" + (f".{problem.path}" if problem.path else "")
                raise _invalid(where, problem.rule, f"responseSchema is not usable: {problem.message}")
        if interrupt.get("expiresAt") is not None:
            try:
                parse_expires_at(interrupt["expiresAt"])
            except (ValueError, TypeError):
                raise _invalid(
                    f"{ipath}.expiresAt",
                    "expires_at_iso8601",
                    f"expiresAt {interrupt['expiresAt']!r} is not an ISO 8601 date-time between 1970 and 9000.",
                ) from None


def read_run(raw_events: list[Any], prefix: str = "events", *, allow_error: bool = False) -> RunRecord:
    """Check one run's events and keep what the inbox needs.

    The last event must be ``RUN_FINISHED`` (or ``RUN_ERROR`` when ``allow_error``, for a resume's reply).
    """
    if not raw_events:
        raise _invalid(prefix or "body", "not_empty", "No events: a run must end with RUN_FINISHED.")
    last = len(raw_events) - 1
    for index, raw in enumerate(raw_events):
        if not isinstance(raw, dict):
            raise _invalid(
                _join(prefix, index if prefix else None), "event_object", "Each event must be a JSON object."
            )
        for key in ("threadId", "runId", "parentRunId"):
            _check_length(raw, key, _join(prefix, index if prefix else None))
    final = raw_events[last]
    final_path = _join(prefix, last if prefix else None)
    final_type = final.get("type")
    if final_type != "RUN_FINISHED" and not (allow_error and final_type == "RUN_ERROR"):
        raise _invalid(
            f"{final_path}.type" if final_path else "type",
            "ends_with_run_finished",
            f"The run must end with RUN_FINISHED; its last event is {final_type!r}.",
        )
    for index, raw in enumerate(raw_events[:-1]):
        if raw.get("type") in ("RUN_FINISHED", "RUN_ERROR"):
            path = _join(prefix, index if prefix else None)
            raise _invalid(f"{path}.type", "single_run", f"{raw['type']} may only be the last event of the run.")
    if final_type == "RUN_FINISHED":
        with jsonschema_safe.budget():  # the run's schemas are checked within one budget, however many
            _check_interrupts(final, final_path)

    events = []
    for index, raw in enumerate(raw_events):
        try:
            events.append(_event_adapter.validate_python(raw))
        except ValidationError as exc:
            raise _sdk_error(exc, prefix, index if prefix else None) from None
    return _record(events, raw_events, prefix)


def _record(events: list, raw_events: list[dict], prefix: str) -> RunRecord:
    started = next((e for e in events if e.type == EventType.RUN_STARTED), None)
    thread_id, run_id = _run_ids(events, started, prefix)
    record = RunRecord(
        thread_id=thread_id or "",
        run_id=run_id or "",
        parent_run_id=(getattr(started, "parent_run_id", None) or "") if started else "",
        outcome="success",
        outcome_omitted=False,
        result=None,
        error_message="",
        state_snapshot=None,
        messages_snapshot=None,
        tool_calls=[],
        tool_results=[],
        events=[],
        content_hash=content_hash(raw_events),
    )
    calls = _read_events(events, record)
    for call in calls.values():
        call["args"] = _parse_args(call["argsText"])
        call["source"] = "events"
    _calls_from_messages(record.messages_snapshot, calls)
    record.tool_calls = list(calls.values())
    record.requested_by = _requested_by(events)
    if started is not None and started.input is not None:
        record.started_input = started.input.model_dump(mode="json", by_alias=True)
    if record.outcome == "interrupt":
        record.interrupts = _interrupts(events[-1], raw_events[-1])
    return record


def _run_ids(events: list, started: Any, prefix: str) -> tuple[str | None, str | None]:
    """threadId/runId of the run: from RUN_FINISHED (or RUN_ERROR), else RUN_STARTED; both must agree."""
    final = events[-1]
    thread_id = getattr(final, "thread_id", None)
    run_id = getattr(final, "run_id", None)
    if started is not None:
        if thread_id is None:
            thread_id, run_id = started.thread_id, started.run_id
        elif (started.thread_id, started.run_id) != (thread_id, run_id):
            index = events.index(started)
            raise _invalid(
                _join(prefix, index, ["runId"]),
                "same_run",
                "RUN_STARTED and RUN_FINISHED name different threadId/runId: one POST carries one run.",
            )
    return thread_id, run_id


def _read_events(events: list, record: RunRecord) -> dict[str, dict]:
    """Fill the record's snapshots, results, outcome and event list; return the streamed tool calls by id."""
    calls: dict[str, dict] = {}
    last_chunk_id: str | None = None
    for event in events:
        kind = event.type
        if kind in _TOOL_CALL_EVENTS:
            last_chunk_id = _read_tool_call_event(event, calls, last_chunk_id)
        elif kind == EventType.STATE_SNAPSHOT:
            record.state_snapshot = event.snapshot
        elif kind == EventType.MESSAGES_SNAPSHOT:
            record.messages_snapshot = [m.model_dump(mode="json", by_alias=True) for m in event.messages]
        elif kind == EventType.TOOL_CALL_RESULT:
            record.tool_results.append(
                {"toolCallId": event.tool_call_id, "messageId": event.message_id, "content": event.content}
            )
        elif kind == EventType.RUN_FINISHED:
            record.result = event.result
            if event.outcome is None:
                record.outcome, record.outcome_omitted = "success", True
            else:
                record.outcome = event.outcome.type
                record.pending_tool_call_ids = list(getattr(event.outcome, "pending_tool_call_ids", None) or [])
        elif kind == EventType.RUN_ERROR:
            record.outcome, record.error_message = "error", event.message
        if kind not in _NOT_RECORDED and len(record.events) < _MAX_RECORDED_EVENTS:
            record.events.append(_compact(event))
    return calls


_TOOL_CALL_EVENTS = {EventType.TOOL_CALL_START, EventType.TOOL_CALL_ARGS, EventType.TOOL_CALL_CHUNK}


def _read_tool_call_event(event: Any, calls: dict[str, dict], last_chunk_id: str | None) -> str | None:
    """Accumulate one TOOL_CALL_START/ARGS/CHUNK into ``calls``; return the id a following id-less chunk
    continues."""
    kind = event.type
    if kind == EventType.TOOL_CALL_START:
        calls[event.tool_call_id] = {"id": event.tool_call_id, "name": event.tool_call_name, "argsText": ""}
    elif kind == EventType.TOOL_CALL_ARGS:
        calls.setdefault(event.tool_call_id, {"id": event.tool_call_id, "name": "", "argsText": ""})
        calls[event.tool_call_id]["argsText"] += event.delta
    else:
        call_id = event.tool_call_id or last_chunk_id
        if call_id:
            last_chunk_id = call_id
            call = calls.setdefault(call_id, {"id": call_id, "name": "", "argsText": ""})
            call["name"] = call["name"] or (event.tool_call_name or "")
            call["argsText"] += event.delta or ""
    return last_chunk_id


def _calls_from_messages(messages: list[dict] | None, calls: dict[str, dict]) -> None:
    """Plain LangGraph nodes emit no TOOL_CALL_* events: the proposals are then only in the snapshot."""
    for message in messages or []:
        if message.get("role") != "assistant":
            continue
        for tool_call in message.get("toolCalls") or []:
            call_id = tool_call.get("id")
            if call_id and call_id not in calls:
                function = tool_call.get("function") or {}
                args_text = function.get("arguments") or ""
                calls[call_id] = {
                    "id": call_id,
                    "name": function.get("name", ""),
                    "argsText": args_text,
                    "args": _parse_args(args_text),
                    "source": "messages",
                }


def _interrupts(final: Any, final_raw: dict) -> list[InterruptRecord]:
    records = []
    for position, interrupt in enumerate(final.outcome.interrupts):
        records.append(
            InterruptRecord(
                position=position,
                id=interrupt.id,
                reason=interrupt.reason,
                message=interrupt.message or "",
                tool_call_id=interrupt.tool_call_id or "",
                response_schema=interrupt.response_schema,
                expires_at=parse_expires_at(interrupt.expires_at) if interrupt.expires_at else None,
                metadata=interrupt.metadata,
                raw=final_raw["outcome"]["interrupts"][position],
                subagent_run_id=str(interrupt.subagent_run_id or ""),
            )
        )
    return records


# Where framework metadata names the real tool call behind an interrupt raised on a synthetic one: Google ADK's
# ``confirmation`` interrupts sit on an ``adk_request_confirmation`` call and carry the call they guard here.
NAMED_CALL_PATHS: tuple[tuple[str, ...], ...] = (("adk", "originalFunctionCall"),)


def named_call(metadata: Any) -> dict | None:
    """The tool call an interrupt's metadata names ({"id", "name", "args"}), or None."""
    for path in NAMED_CALL_PATHS:
        value = metadata
        for key in path:
            value = value.get(key) if isinstance(value, dict) else None
        if isinstance(value, dict) and isinstance(value.get("id"), str) and value["id"]:
            return value
    return None


def suspended_call(metadata: Any, tool_call_id: str) -> dict | None:
    """The call a ``@ag-ui/mastra`` interrupt suspended ({"id", "name", "args"}), or None. Mastra streams no
    TOOL_CALL_* before its interrupt: the proposal is only in ``metadata.mastra`` (``{"type": "mastra_suspend",
    "toolName", "args", "suspendPayload", "resumeSchema", "runId"}``), bound by the interrupt's ``toolCallId``."""
    mastra = metadata.get("mastra") if isinstance(metadata, dict) else None
    if not tool_call_id or not isinstance(mastra, dict) or mastra.get("type") != "mastra_suspend":
        return None
    name = mastra.get("toolName")
    if not isinstance(name, str) or not name:
        return None
    return {"id": tool_call_id, "name": name, "args": mastra.get("args")}


def proposal_for(interrupt: InterruptRecord, tool_calls: list[dict]) -> dict | None:
    """The proposal an interrupt asks about: the call its metadata names (as streamed if it was, else as the
    metadata gives it), or else the call its own ``toolCallId`` points at."""
    by_id = {call.get("id"): call for call in tool_calls}
    named = named_call(interrupt.metadata)
    if named is None and interrupt.tool_call_id not in by_id:
        named = suspended_call(interrupt.metadata, interrupt.tool_call_id)
    if named is not None:
        if named["id"] in by_id:
            return by_id[named["id"]]
        args = named.get("args")
        return {
            "id": named["id"],
            "name": str(named.get("name") or ""),
            "args": args,
            "argsText": json.dumps(args) if args is not None else "",
            "source": "metadata",
        }
    return by_id.get(interrupt.tool_call_id) if interrupt.tool_call_id else None


REQUESTED_BY_KEY = "requestedBy"


def _requested_by(events: list) -> str:
    """The person who asked for the run: ``requestedBy`` in RUN_FINISHED's or RUN_STARTED's ``metadata``, or in
    the ``forwardedProps`` of RUN_STARTED's echoed input (documented in docs/agents/README.md)."""
    for event in reversed(events):
        if event.type not in (EventType.RUN_FINISHED, EventType.RUN_STARTED):
            continue
        for source in (event.metadata, getattr(getattr(event, "input", None), "forwarded_props", None)):
            if isinstance(source, dict) and isinstance(source.get(REQUESTED_BY_KEY), str):
                return source[REQUESTED_BY_KEY].strip()[:255]
    return ""


def _parse_args(text: str) -> Any:
    """The arguments an agent streamed as text; None when they are not JSON the inbox can store (invalid, or
    holding NUL, NaN, overlong numbers, deep nesting: see ``inbox.core.safe_json``). The text is kept either way."""
    if not text:
        return {}
    try:
        return safe_json.loads(text, max_depth=MAX_JSON_DEPTH)
    except safe_json.UnsafeJson:
        return None


def _compact(event: Any) -> dict:
    # Snapshots are kept whole on the run; the event list only notes where they happened (without serializing
    # them once more: a MESSAGES_SNAPSHOT is the whole conversation).
    if event.type in (EventType.STATE_SNAPSHOT, EventType.MESSAGES_SNAPSHOT):
        return {"type": event.type.value}
    return event.model_dump(mode="json", by_alias=True, exclude={"raw_event"})
