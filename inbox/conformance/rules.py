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
        "RUN_FINISHED carries outcome {type: success}, {type: interrupt, interrupts: [...]} with a non-empty "
        "array, or {type: cancelled} (ag-ui-protocol 1.0); an omitted outcome is the legacy shape, accepted as "
        "success. RUN_ERROR is the sole error event: there is no error outcome.",
        (
            Variant("interrupt", CONFORMS, "ended with an interrupt outcome"),
            Variant("success", CONFORMS, "ended with outcome {type: success}"),
            Variant(
                "success_pending_calls",
                CONFORMS,
                "ended with outcome {type: success} naming pendingToolCallIds (calls left for the client to answer)",
            ),
            Variant("cancelled", CONFORMS, "ended with outcome {type: cancelled}: stopped, neither done nor failed"),
            Variant("legacy_success", NOTE, "ended with RUN_FINISHED without outcome (legacy success)"),
            Variant("error", NOTE, "ended with RUN_ERROR"),
            Variant(
                "unknown_type",
                DEVIATES,
                "ended with an outcome type the spec does not define (the run was refused; RUN_ERROR is the sole "
                "error event)",
            ),
            Variant(
                "empty_interrupts",
                DEVIATES,
                "ended with an interrupt outcome whose interrupts array is empty or missing (the run was refused)",
            ),
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
            Variant(
                "messages_only",
                NOTE,
                "sent MESSAGES_SNAPSHOT only, and no state event in the run (an agent without shared state); the "
                "resume carries state {}",
            ),
            Variant(
                "messages_only_state_changed",
                DEVIATES,
                "sent MESSAGES_SNAPSHOT only although its state changed in the run (STATE_DELTA): the resume "
                "carries state {}",
            ),
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
            Variant("missing", DEVIATES, "a tool_call interrupt without toolCallId (the run was refused)"),
        ),
    ),
    Behaviour(
        "interrupt_reason",
        "Interrupt reasons",
        "Reason taxonomy",
        "reason is a core value (tool_call, input_required, confirmation) or a custom string, which agents should "
        "namespace as <framework>:<reason>. `core:` is reserved for future spec additions.",
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
            Variant(
                "custom_namespaced",
                NOTE,
                "a non-core reason, namespaced <framework>:<reason> (routed by toolCallId, schema and message); "
                "`core:` is reserved for future spec additions",
            ),
            Variant(
                "custom_plain",
                NOTE,
                "a non-core reason without the <framework>: namespace the spec recommends (routed by toolCallId, "
                "schema and message); `core:` is reserved for future spec additions",
            ),
            Variant(
                "core_prefix",
                DEVIATES,
                "a reason under the core: prefix that the spec does not define: `core:` is reserved for future spec "
                "additions",
            ),
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
            Variant(
                "invalid", DEVIATES, "declared a responseSchema that is not a usable JSON Schema (the run was refused)"
            ),
        ),
    ),
    Behaviour(
        "expires_at",
        "expiresAt",
        "The Interrupt type; Contract rule 7 (expiry enforcement)",
        "expiresAt (optional, ISO 8601) bounds when a resume is still accepted.",
        (
            Variant("set", CONFORMS, "set expiresAt"),
            Variant(
                "expired_on_arrival",
                DEVIATES,
                "set an expiresAt already past when the run arrived: nobody could answer it (the item closed expired)",
            ),
            Variant("defaulted", NOTE, "set no expiresAt; the agent's default TTL applied"),
            Variant("invalid", DEVIATES, "set an expiresAt that is not an ISO 8601 date-time (the run was refused)"),
        ),
    ),
    Behaviour(
        "interrupt_id_unique",
        "Interrupt ids present and unique",
        "The Interrupt type (id: correlation key); Contract rules 2 and 5",
        "Every interrupt has a non-empty id; an id correlates interrupt, resume, idempotency and audit, so it is "
        "unique in its run and should not repeat on a thread.",
        (
            Variant("unique", CONFORMS, "interrupt ids new on the thread"),
            Variant("missing", DEVIATES, "sent an interrupt without an id (the run was refused)"),
            Variant("empty", DEVIATES, "sent an interrupt with an empty id (the run was refused)"),
            Variant("duplicate", DEVIATES, "used one interrupt id twice in one run (the run was refused)"),
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
            Variant(
                "unknown_call",
                DEVIATES,
                "TOOL_CALL_RESULT for a toolCallId that no call or interrupt of the thread named",
            ),
        ),
    ),
    Behaviour(
        "run_error",
        "RUN_ERROR answers",
        "Error handling; Contract rule 8",
        "RUN_ERROR is the sole error event; it ends a run that RUN_STARTED opened.",
        (
            Variant("with_run_started", CONFORMS, "answered RUN_ERROR after RUN_STARTED"),
            Variant(
                "bare",
                DEVIATES,
                "answered a bare RUN_ERROR with no RUN_STARTED: every run opens with RUN_STARTED, an error run too",
            ),
        ),
    ),
    Behaviour(
        "replay",
        "Replays answered idempotently",
        "Contract rule 5 (idempotency)",
        "A resume with the same (threadId, interruptId, status, payload) must be safe to replay.",
        (
            Variant("answered", CONFORMS, "answered a resent resume (same runId) without error"),
            Variant(
                "run_error",
                CONFORMS,
                "answered a resent resume with RUN_ERROR: safe (nothing done twice), as the spec asks of an "
                "interruptId the agent can no longer correlate",
            ),
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
    Behaviour(
        "pending_interrupts",
        "Open interrupts block new runs",
        "Contract rule 4 (pending interrupts block new input)",
        "While a thread has unresolved interrupts, every run on it answers a resume addressing them; an agent given "
        "other input answers RUN_ERROR rather than finishing a new run.",
        (
            Variant("respected", CONFORMS, "ran nothing new on a thread while its interrupts were open"),
            Variant(
                "finished_while_open",
                DEVIATES,
                "finished a run on a thread whose interrupts were still open, without a resume: the inbox closed "
                "them as superseded",
            ),
            Variant(
                "interrupted_while_open",
                DEVIATES,
                "posted a new interrupted run on a thread whose interrupts were still open (refused with 409)",
            ),
        ),
    ),
    Behaviour(
        "same_thread",
        "Resumes answered on the same thread",
        "Contract rule 1 (same thread)",
        "The run that answers a resume uses the resume's threadId.",
        (
            Variant("same", CONFORMS, "answered each resume on its own threadId"),
            Variant("other_thread", DEVIATES, "answered a resume on another threadId (the reply was refused)"),
        ),
    ),
    Behaviour(
        "resume_linkage",
        "Resumed runs continue from the resume",
        "Contract rule 2 (resume linkage)",
        "The run that answers a resume continues from the interrupts resume[] names; it does not start over as if "
        "it were new input.",
        (
            Variant("continued", CONFORMS, "continued from the interrupts the resume answered"),
            Variant(
                "started_fresh",
                DEVIATES,
                "ignored the resume and started over: asked the same again instead of continuing",
            ),
        ),
    ),
    Behaviour(
        "event_stream",
        "Event streams the inbox can read",
        "Events; Lifecycle (one run, ended by RUN_FINISHED or RUN_ERROR)",
        "Every event is a valid AG-UI event; one run per stream, ended by RUN_FINISHED or RUN_ERROR, within the "
        "inbox's deadline.",
        (
            Variant("invalid_event", DEVIATES, "sent an event that is not a valid AG-UI event (refused)"),
            Variant(
                "not_one_run",
                DEVIATES,
                "sent a stream that is not one run ended by RUN_FINISHED or RUN_ERROR (refused)",
            ),
            Variant(
                "ended_early",
                DEVIATES,
                "closed its stream before RUN_FINISHED or RUN_ERROR (a crash, or a connection cut on the way); the "
                "tool results it sent before the cut are kept",
            ),
            Variant(
                "past_deadline",
                DEVIATES,
                "did not finish its reply within the inbox's deadline (hung or trickled; the reply was cut)",
            ),
            Variant("not_event_stream", DEVIATES, "did not answer with a text/event-stream"),
            Variant("over_limits", NOTE, "sent more than the inbox accepts for one run (size, lines or events; cut)"),
            Variant("refused", DEVIATES, "sent a run the inbox refused (the detail names the rule)"),
        ),
    ),
)

BY_KEY: dict[str, Behaviour] = {behaviour.key: behaviour for behaviour in BEHAVIOURS}
