"""Reading what an approver submitted on the item and run pages: a decision form's POST becomes the
``(status, payload)`` the decision service validates (``read_decision``, ``run_choice_payload``), with the
comment and the edited arguments bounded as any answer is. A form that cannot even become a payload is a
``DecisionInputError``; whether the answer is valid is the service's question (``inbox.decisions.rules``)."""

from __future__ import annotations

from typing import Any

from django.http import QueryDict

from inbox.core import safe_json
from inbox.core.errors import ApplicationError
from inbox.decisions.forms import answer_in_words, decision_ui, offers_text_answer
from inbox.decisions.shapes import bulk_payload
from inbox.limits import MAX_ANSWER_BYTES, MAX_DECISION_COMMENT, MAX_JSON_DEPTH
from inbox.models import InboxItem

ACTIONS = ("approve", "deny", "edit", "answer", "text", "cancel")


class DecisionInputError(ApplicationError):
    """A form that could not even be turned into a payload (bad JSON, unknown action)."""

    def __init__(self, message: str, errors: list[dict] | None = None):
        super().__init__(400, "invalid_input", message, errors=errors)


def prune_empty(value: Any) -> Any:
    """A form's empty inputs mean "not answered": drop null and "" members of objects, so a required
    field left blank is reported as missing rather than as the wrong type."""
    if isinstance(value, dict):
        return {key: prune_empty(sub) for key, sub in value.items() if sub is not None and sub != ""}
    if isinstance(value, list):
        return [prune_empty(sub) for sub in value]
    return value


def _parse_json(text: str, path: str) -> Any:
    if len(text.encode(errors="surrogatepass")) > MAX_ANSWER_BYTES:
        raise DecisionInputError("The answer is too large.", [{"path": path, "message": "The answer is too large."}])
    try:
        return safe_json.loads(text, path, max_depth=MAX_JSON_DEPTH)
    except safe_json.UnsafeJson as exc:
        raise DecisionInputError(exc.message, [{"path": exc.path, "message": exc.message}]) from None


def parse_edited_args(text: str) -> Any:
    """The "Approve with edits" JSON, bounded as a submitted answer is (``DecisionInputError`` naming the problem)."""
    return _parse_json(text, "editedArgs")


def read_comment(post: QueryDict) -> str:
    comment = post.get("comment", "").strip()
    if len(comment) > MAX_DECISION_COMMENT:
        raise DecisionInputError(f"The comment is longer than {MAX_DECISION_COMMENT} characters.")
    problem = safe_json.text_problem(comment)
    if problem is not None:
        raise DecisionInputError(f"The comment {problem[1]}.", [{"path": "comment", "message": problem[1]}])
    return comment


def read_decision(item: InboxItem, post: QueryDict) -> tuple[str, Any]:
    """``(status, payload)`` from a submitted decision form."""
    action = post.get("action", "")
    if action not in ACTIONS:
        raise DecisionInputError(f"Unknown action {action!r}.", [{"path": "action", "message": "Unknown action."}])
    if action == "cancel":
        return "cancelled", None
    ui = decision_ui(item)
    if action == "text":
        if ui.mode != "question" and not offers_text_answer(item):
            raise DecisionInputError("This item does not take a free-text answer.")
        text = post.get("answer_text", "").strip()
        if not text:
            raise DecisionInputError(
                "Write an answer before sending it.", [{"path": "answer_text", "message": "This field is required."}]
            )
        # In the shape the agent reads: the bare text for a string schema, Strands and CrewAI; {"answer": …} else.
        return "resolved", answer_in_words(item, text)
    if ui.mode == "question" and action in ("approve", "deny", "edit"):
        raise DecisionInputError("This item asks a question: answer it in words, it cannot be approved or denied.")
    if action in ("approve", "deny", "edit"):
        if ui.shape is None:
            raise DecisionInputError("This item needs an answer, not a yes/no.")
        if action == "edit":
            if not ui.offers_edits:
                raise DecisionInputError(
                    "This item does not offer edits: its responseSchema has no editedArgs.",
                    [{"path": "editedArgs", "message": "not offered by this interrupt's responseSchema"}],
                )
            key = ui.shape.edit_key or "editedArgs"
            return "resolved", ui.shape.with_edits(_parse_json(post.get("edited_args", ""), key))
        return "resolved", ui.shape.payload(action == "approve")
    answer = _parse_json(post.get("answer", "") or "null", "")
    return "resolved", prune_empty(answer) if ui.mode == "form" else answer


def run_choice_payload(item: InboxItem, choice: str) -> tuple[str, Any] | None:
    """A run page choice (approve / deny / cancel / "" for later) as ``(status, payload)``."""
    if choice == "cancel":
        return "cancelled", None
    if choice in ("approve", "deny"):
        answer = bulk_payload(item, choice)
        if answer is None:
            raise DecisionInputError(f"{item.interrupt_id} needs an answer: decide it on its own page.")
        return answer
    if choice:
        raise DecisionInputError(f"Unknown choice {choice!r} for {item.interrupt_id}.")
    return None
