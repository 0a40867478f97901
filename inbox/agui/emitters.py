"""The AG-UI integrations whose interrupts the inbox recognises, and the answer each one's resume code reads.

An interrupt without a ``responseSchema`` says nothing of the payload its agent expects, and the spec's default
(``{"approved": boolean}``) is not what every integration reads. ``KNOWN_EMITTERS`` is the table: each row is
detected from what the interrupt itself carries (its ``reason``, ``metadata`` and shape, never the agent's
registration) and says whether the interrupt asks for an approval or a question, the schema its resume code
reads (used where the interrupt sent none), where its question is written, and how a typed answer is sent.
docs/deciding.md ("Known emitters") is this table in words; ``tests/inbox/test_emitters.py`` checks each row
against the shape its integration really sends.

Every reader goes through here: the schema a decision is validated against (``inbox.decisions.rules``), the
buttons or answer field an item gets (``inbox.decisions.shapes``, ``inbox.decisions.forms``) and the question
its page leads with. An interrupt of no known emitter that asks an open question ("Which colour?") with no
schema is answered in words as ``{"answer": "<text>"}``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

APPROVAL = "approval"
QUESTION = "question"

# The core reasons of the spec: any other string is an extension (``<framework>:<reason>`` or bare).
CORE_REASONS = frozenset({"tool_call", "input_required", "confirmation"})

# Where an answer in words goes for an interrupt of no known emitter (docs/deciding.md).
TEXT_ANSWER_KEY = "answer"

# ``ag-ui-claude-sdk``'s resume code (``RecoveryRun``) requires ``behavior``; ``message`` becomes the denial's
# reason given to the model, ``updatedInput`` the arguments the approved call runs with (a full replacement).
CLAUDE_SDK_SCHEMA: dict = {
    "type": "object",
    "properties": {
        "behavior": {"type": "string", "enum": ["allow", "deny"]},
        "message": {"type": "string"},
        "updatedInput": {"type": "object"},
    },
    "required": ["behavior"],
}

# A question whose resume code hands the payload to the agent as its answer: the words, as a string.
TEXT_SCHEMA: dict = {"type": "string", "minLength": 1}

# Keys of a Strands interrupt's ``reason`` object that hold its question, in the order they are read.
_QUESTION_KEYS = ("question", "message", "prompt", "text", "query")
# An interrupt name that says it asks for words (Strands' names are the tool's own: ``ask_human``, ``get_input``).
_ASKING_NAME = re.compile(r"(^|[^a-z])(ask|asks|question|input|clarif|answer)", re.IGNORECASE)
_OPEN_QUESTION = re.compile(r"^\s*(what|which|who|whom|whose|when|where|why|how)\b", re.IGNORECASE)


@dataclass(frozen=True)
class Interrupt:
    """What an interrupt carries, as the inbox stored it."""

    reason: str
    message: str = ""
    tool_call_id: str = ""
    response_schema: Any = None
    metadata: Any = None

    @classmethod
    def of(cls, item: Any) -> Interrupt:
        """The interrupt of an ``InboxItem`` (or anything with its fields)."""
        return cls(
            reason=item.reason or "",
            message=item.message or "",
            tool_call_id=item.tool_call_id or "",
            response_schema=item.response_schema,
            metadata=item.metadata,
        )


@dataclass(frozen=True)
class Emitter:
    """One row of the table. ``detect`` reads an interrupt; ``asks`` is APPROVAL or QUESTION (a function of the
    interrupt where the integration raises both); ``schema`` is what its resume code reads when the interrupt
    carries none; ``question`` where its question is written; ``answer`` the payload an answer in words is sent
    as."""

    key: str
    integration: str
    detect: Callable[[Interrupt], bool]
    asks: Callable[[Interrupt], str]
    schema: Callable[[Interrupt], dict | None]
    question: Callable[[Interrupt], str]
    answer: Callable[[str], Any]


def _metadata(interrupt: Interrupt) -> dict:
    return interrupt.metadata if isinstance(interrupt.metadata, dict) else {}


def _text(value: Any) -> str:
    return value.strip() if isinstance(value, str) else ""


def is_open_question(text: str) -> bool:
    """The words ask an open question (a wh-word first), not a yes/no one."""
    return bool(_OPEN_QUESTION.match(text or ""))


# --- ag-ui-claude-sdk (Claude Agent SDK) ----------------------------------------------------------------------
# A deferred tool call: ``{"id": <toolUseId>, "toolCallId": <the same>, "reason": "tool_approval", "metadata":
# {"source": "claude-sdk-deferred", "toolName", "input"}}``, no message and no schema.


def _claude_sdk(interrupt: Interrupt) -> bool:
    return (
        interrupt.reason == "tool_approval"
        and interrupt.response_schema is None
        and _metadata(interrupt).get("source") == "claude-sdk-deferred"
    )


def _claude_sdk_question(interrupt: Interrupt) -> str:
    name = _text(_metadata(interrupt).get("toolName"))
    return interrupt.message or (f"Allow {name}?" if name else "")


# --- ag-ui-strands: a tool's own ``tool_context.interrupt(name, reason=…)`` --------------------------------------
# ``{"id", "reason": <name>, "metadata": {"reason": <the reason given>}}``, no message, schema or toolCallId; the
# tool receives ``{"response": <payload>}``. (Its tool approvals carry their own ``{approved}`` schema.)


def _strands_named(interrupt: Interrupt) -> bool:
    metadata = interrupt.metadata
    return (
        interrupt.reason not in CORE_REASONS
        and not interrupt.tool_call_id
        and interrupt.response_schema is None
        and not interrupt.message
        and isinstance(metadata, dict)
        and set(metadata) == {"reason"}
    )


def _strands_question(interrupt: Interrupt) -> str:
    reason = _metadata(interrupt).get("reason")
    if isinstance(reason, str):
        return reason.strip()
    if isinstance(reason, dict):
        return next((text for key in _QUESTION_KEYS if (text := _text(reason.get(key)))), "")
    return ""


def _strands_asks(interrupt: Interrupt) -> str:
    reason = _metadata(interrupt).get("reason")
    if _ASKING_NAME.search(interrupt.reason) or (isinstance(reason, dict) and "question" in reason):
        return QUESTION
    return QUESTION if is_open_question(_strands_question(interrupt)) else APPROVAL


# --- ag-ui-crewai: ``@human_feedback`` -----------------------------------------------------------------------------
# ``{"reason": "crewai:human_feedback", "message": <the step's message>, "metadata": {"crewai": {"flowId",
# "methodName", "emit", "output"}}}``; with ``emit`` outcomes it carries ``{"type": "string", "enum": emit}``.
# The flow receives the payload as its feedback text (a non-string is JSON-encoded).


def _crewai_feedback(interrupt: Interrupt) -> bool:
    return interrupt.reason == "crewai:human_feedback" and isinstance(_metadata(interrupt).get("crewai"), dict)


def _crewai_asks(interrupt: Interrupt) -> str:
    return APPROVAL if interrupt.response_schema is not None else QUESTION


def _crewai_question(interrupt: Interrupt) -> str:
    return interrupt.message


def _strands_schema(interrupt: Interrupt) -> dict | None:
    return TEXT_SCHEMA if _strands_asks(interrupt) == QUESTION else None


def _crewai_schema(interrupt: Interrupt) -> dict | None:
    return TEXT_SCHEMA if interrupt.response_schema is None else None


def _as_string(text: str) -> Any:
    return text


def _refuses_words(text: str) -> Any:
    raise ValueError("this interrupt is an approval: it takes no answer in words")


KNOWN_EMITTERS: tuple[Emitter, ...] = (
    Emitter(
        key="claude-sdk",
        integration="ag-ui-claude-sdk",
        detect=_claude_sdk,
        asks=lambda interrupt: APPROVAL,
        schema=lambda interrupt: CLAUDE_SDK_SCHEMA,
        question=_claude_sdk_question,
        answer=_refuses_words,
    ),
    Emitter(
        key="strands-interrupt",
        integration="ag-ui-strands",
        detect=_strands_named,
        asks=_strands_asks,
        schema=_strands_schema,
        question=_strands_question,
        answer=_as_string,
    ),
    Emitter(
        key="crewai-feedback",
        integration="ag-ui-crewai",
        detect=_crewai_feedback,
        asks=_crewai_asks,
        schema=_crewai_schema,
        question=_crewai_question,
        answer=_as_string,
    ),
)


def emitter_of(interrupt: Interrupt) -> Emitter | None:
    """The known emitter of ``interrupt`` (the first row that recognises it), or None."""
    return next((emitter for emitter in KNOWN_EMITTERS if emitter.detect(interrupt)), None)


def implied_schema(interrupt: Interrupt) -> dict | None:
    """The schema the interrupt's resume code reads, when it sent none and its emitter is known; else None
    (the caller applies the spec's defaults). An interrupt's own ``responseSchema`` always wins."""
    if interrupt.response_schema is not None:
        return None
    emitter = emitter_of(interrupt)
    return emitter.schema(interrupt) if emitter is not None else None


def asks_for_input(interrupt: Interrupt) -> bool:
    """The interrupt asks a question to be answered in words, not approved: its emitter's shape says so, or (no
    known emitter) an extension reason with no schema whose message asks an open question."""
    emitter = emitter_of(interrupt)
    if emitter is not None:
        return emitter.asks(interrupt) == QUESTION
    return (
        interrupt.reason not in CORE_REASONS
        and not interrupt.tool_call_id
        and interrupt.response_schema is None
        and is_open_question(interrupt.message)
    )


def question_of(interrupt: Interrupt) -> str:
    """The question the interrupt asks, in the agent's words: its ``message``, or where its emitter writes it
    (a Strands interrupt's ``reason``); "" when it asks nothing in words."""
    if interrupt.message:
        return interrupt.message
    emitter = emitter_of(interrupt)
    return emitter.question(interrupt) if emitter is not None else ""


def answer_payload(interrupt: Interrupt, text: str) -> Any:
    """The payload that sends ``text`` as the answer, in the shape the interrupt's resume code reads: the bare
    string for Strands and CrewAI, ``{"answer": text}`` for an agent the table does not know."""
    emitter = emitter_of(interrupt)
    if emitter is None:
        return {TEXT_ANSWER_KEY: text}
    return emitter.answer(text)
