"""The behaviours the report follows, each held to a rule of the AG-UI Interrupts spec
(``../shared/spec/ag-ui-interrupts.md``), with what each observed variant means for an agent author."""

from __future__ import annotations

from dataclasses import dataclass

CONFORMS, DEVIATES, NOTE = "conforms", "deviates", "note"


@dataclass(frozen=True)
class Variant:
    key: str
    verdict: str  # conforms | deviates | note (accepted, but worth knowing)
    label: str  # what the agent did


@dataclass(frozen=True)
class Behaviour:
    key: str
    title: str
    rule: str  # where in the spec
    expects: str  # what the spec expects
    variants: tuple[Variant, ...]

    def variant(self, key: str) -> Variant:
        return next(v for v in self.variants if v.key == key)


BEHAVIOURS: tuple[Behaviour, ...] = (
    Behaviour(
        "run_outcome",
        "Run outcome",
        "Run outcomes",
        "RUN_FINISHED carries outcome {type: success} or {type: interrupt, interrupts: [...]}; an omitted outcome "
        "is the legacy shape, accepted as success.",
        (
            Variant("interrupt", CONFORMS, "ended with an interrupt outcome"),
            Variant("success", CONFORMS, "ended with outcome {type: success}"),
            Variant("legacy_success", NOTE, "ended with RUN_FINISHED without outcome (legacy success)"),
            Variant("error", NOTE, "ended with RUN_ERROR"),
        ),
    ),
    Behaviour(
        "boundary_snapshots",
        "Snapshots at the interrupt boundary",
        "State at the interrupt boundary",
        "Before the RUN_FINISHED that carries an interrupt, the agent must emit STATE_SNAPSHOT and MESSAGES_SNAPSHOT "
        "with what a resume needs.",
        (
            Variant("both", CONFORMS, "sent STATE_SNAPSHOT and MESSAGES_SNAPSHOT before the interrupt"),
            Variant("state_only", DEVIATES, "sent STATE_SNAPSHOT only; the inbox rebuilt the resume's messages"),
            Variant("messages_only", DEVIATES, "sent MESSAGES_SNAPSHOT only; the resume carries state {}"),
            Variant("none", DEVIATES, "sent no snapshot; the inbox rebuilt the resume's messages"),
        ),
    ),
    Behaviour(
        "tool_call_binding",
        "tool_call interrupts bound to a proposed call",
        "Reason taxonomy: tool_call; Tool-bound interrupts",
        "A tool_call interrupt's toolCallId names a call the run proposed with TOOL_CALL_* (the proposal the "
        "approver sees).",
        (
            Variant("matched", CONFORMS, "toolCallId matched a call proposed in the run"),
            Variant("unmatched", DEVIATES, "toolCallId named no call proposed in the run: no proposal to show"),
        ),
    ),
    Behaviour(
        "interrupt_reason",
        "Interrupt reasons",
        "Reason taxonomy",
        "reason is a core value (tool_call, input_required, confirmation) or a custom string namespaced as "
        "<framework>:<reason>.",
        (
            Variant("tool_call", CONFORMS, "reason tool_call"),
            Variant("input_required", CONFORMS, "reason input_required"),
            Variant("confirmation", CONFORMS, "reason confirmation"),
            Variant(
                "confirmation_original_call",
                NOTE,
                "reason confirmation bound to a synthetic call; metadata names the original call, shown and "
                "linked as the proposal",
            ),
            Variant("custom_namespaced", CONFORMS, "a custom reason namespaced <framework>:<reason>"),
            Variant("custom_plain", DEVIATES, "a custom reason without a <framework>: namespace"),
        ),
    ),
    Behaviour(
        "response_schema",
        "responseSchema",
        "The Interrupt type; Contract rule 6 (payload validation)",
        "responseSchema declares the expected resume payload (should be set for input_required; a valid "
        "JSON Schema, or the run is refused).",
        (
            Variant("present", CONFORMS, "declared a valid responseSchema"),
            Variant("with_edits", CONFORMS, "declared a valid responseSchema offering editedArgs (approve with edits)"),
            Variant("absent", NOTE, "declared no responseSchema; the inbox asks {approved: boolean} or free JSON"),
            Variant("absent_input_required", DEVIATES, "input_required without a responseSchema"),
        ),
    ),
    Behaviour(
        "expires_at",
        "expiresAt",
        "The Interrupt type; Contract rule 7 (expiry enforcement)",
        "expiresAt (optional, ISO 8601) bounds when a resume is still accepted.",
        (
            Variant("set", CONFORMS, "set expiresAt"),
            Variant("defaulted", NOTE, "set no expiresAt; the agent's default TTL applied"),
        ),
    ),
    Behaviour(
        "interrupt_id_unique",
        "Interrupt ids unique across the thread",
        "The Interrupt type (id: correlation key); Contract rules 2 and 5",
        "An interrupt id correlates interrupt, resume, idempotency and audit, so it should not repeat on a thread.",
        (
            Variant("unique", CONFORMS, "interrupt ids new on the thread"),
            Variant("thread_id", DEVIATES, "used the threadId as the interrupt id (it repeats on every pause)"),
            Variant("reused", DEVIATES, "reused an interrupt id from an earlier run of the thread"),
        ),
    ),
    Behaviour(
        "tool_result_filing",
        "Tool results filed against the original call",
        "Tool-bound interrupts",
        "In the resumed run the agent emits TOOL_CALL_RESULT against the original toolCallId.",
        (
            Variant("original_call", CONFORMS, "TOOL_CALL_RESULT named the interrupt's toolCallId"),
            Variant("named_call", NOTE, "TOOL_CALL_RESULT named the call the interrupt's metadata names"),
            Variant("missing", DEVIATES, "no TOOL_CALL_RESULT for the approved call in the resumed run"),
        ),
    ),
    Behaviour(
        "run_error",
        "RUN_ERROR answers",
        "Error handling; Contract rule 8",
        "RUN_ERROR is the sole error event; it ends a run that RUN_STARTED opened.",
        (
            Variant("with_run_started", CONFORMS, "answered RUN_ERROR after RUN_STARTED"),
            Variant("bare", NOTE, "answered a bare RUN_ERROR with no RUN_STARTED"),
        ),
    ),
    Behaviour(
        "replay",
        "Replays answered idempotently",
        "Contract rule 5 (idempotency)",
        "A resume with the same (threadId, interruptId, status, payload) must be safe to replay.",
        (
            Variant("answered", CONFORMS, "answered a resent resume (same runId) without error"),
            Variant("run_error", DEVIATES, "answered a resent resume with RUN_ERROR"),
        ),
    ),
    Behaviour(
        "reemitted_tool_calls",
        "TOOL_CALL_* in resumed runs",
        "Tool-bound interrupts",
        "The agent does not re-emit TOOL_CALL_START/ARGS/END for the original call in the resumed run.",
        (
            Variant("not_reemitted", CONFORMS, "did not re-emit the original call"),
            Variant(
                "reemitted", DEVIATES, "re-emitted the original TOOL_CALL_* events (kept as events, not proposals)"
            ),
        ),
    ),
)

BY_KEY: dict[str, Behaviour] = {behaviour.key: behaviour for behaviour in BEHAVIOURS}
