"""Where an answer is on its way back to the agent: one ``Delivery`` state per run, read from its ``Resume`` row.

Every page, row, e-mail and API answer draws it the same way. The states (``waiting``, ``queued``, ``sending``,
``retrying``, ``delivered``, ``delivered-reply-broke-protocol``, ``delivered-result-unknown``, ``failed``,
``expired``, ``none``) and what each means: docs/resumes.md."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.utils import timezone

from inbox.core.text import readable_times
from inbox.models import InboxItem, Resume

WAITING, QUEUED, SENDING, RETRYING = "waiting", "queued", "sending", "retrying"
DELIVERED, UNKNOWN, FAILED, EXPIRED, NONE = "delivered", "delivered-result-unknown", "failed", "expired", "none"
# Delivered (the agent took the input and answered), but its reply broke the protocol (a reply on another thread,
# an event the SDK rejects, a run the inbox refuses): the results it reported are filed, nothing is sent again.
BROKE_PROTOCOL = "delivered-reply-broke-protocol"
# The note a delivered row carries in that case (``Resume.last_error``), followed by what the reply broke.
BROKE_PROTOCOL_NOTE = "The agent's reply broke the protocol: "


def broke_protocol_note(reason: str, filed: int) -> str:
    """The note of a resume delivered whose reply broke the protocol: why, and how many tool results were kept."""
    kept = (
        f" The {filed} tool result{'s' if filed != 1 else ''} it reported before that {'are' if filed != 1 else 'is'} filed."
        if filed
        else " It reported no tool result."
    )
    return f"{BROKE_PROTOCOL_NOTE}{reason.strip().rstrip('.')}.{kept}"


# The list's "Delivery" filter: the outbox row's states, in the words the rows use.
FILTER_LABELS = {
    Resume.State.PENDING: "Queued or retrying",
    Resume.State.SENDING: "Sending",
    Resume.State.DELIVERED: "Delivered",
    Resume.State.ACCEPTED: "Delivered, result unknown",
    Resume.State.FAILED: "Failed: needs a person",
    Resume.State.EXPIRED: "Expired before sending",
}

# Transport errors as people say them; the recorded message follows in full.
_WORDS = [
    (re.compile(r"connection refused|errno 111", re.I), "nothing accepts connections at the agent's address"),
    (re.compile(r"timed out|timeout", re.I), "the agent did not answer in time"),
    (
        re.compile(r"name or service not known|nodename nor servname|temporary failure in name resolution", re.I),
        "the agent's host name does not resolve",
    ),
    (re.compile(r"HTTP 5\d\d"), "the agent's server answered with an error"),
    (re.compile(r"HTTP 4\d\d"), "the agent refused the request"),
    (re.compile(r"worker lost", re.I), "the worker sending it stopped"),
]


# The RUN_ERROR note of inbox.resumes.services.
_RUN_ERROR = re.compile(
    r"^The agent answered RUN_ERROR(?: to the resume sent at "
    r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:\d\d| [A-Za-z0-9+-]+)?)?: (?P<said>.*)$",
    re.S,
)


def run_error_said(error: str) -> str | None:
    """What the agent said when it answered a resume with ``RUN_ERROR`` (None: the error is not that)."""
    found = _RUN_ERROR.match((error or "").strip())
    return found.group("said").strip().rstrip(".") if found else None


def error_in_words(error: str) -> str:
    """``error`` with a plain reason in front when it is a known transport failure, times readable, and an
    agent's ``RUN_ERROR`` said as what happened with what the agent said quoted."""
    error = readable_times((error or "").strip().rstrip("."))
    said = run_error_said(error)
    if said is not None:
        return f"the agent took the answer and ended its run with an error: “{said or 'no message'}”"
    for pattern, words in _WORDS:
        if pattern.search(error):
            return f"{words} ({error})"
    return error


# Answers ahead are counted up to this many ("10,000+ ahead"): the count stays cheap however long the backlog.
AHEAD_COUNTED = 10_000


@dataclass(frozen=True)
class Delivery:
    state: str
    attempts: int = 0
    last_error: str = ""
    next_try_at: datetime | None = None
    delivered_at: datetime | None = None
    ahead: int | None = None  # due and not yet sent: the answers due before it that also wait to be sent

    @property
    def behind(self) -> bool:
        """Due, and waiting behind other answers: delivery is behind."""
        return self.state in (QUEUED, RETRYING) and bool(self.ahead)

    @property
    def ahead_words(self) -> str:
        return f"{self.ahead:,}{'+' if (self.ahead or 0) >= AHEAD_COUNTED else ''}"

    @property
    def attempt(self) -> int:
        """The attempt being made (sending) or coming next (queued, retrying)."""
        return self.attempts if self.state == SENDING else self.attempts + 1

    @property
    def error_words(self) -> str:
        return error_in_words(self.last_error)

    @property
    def _run_error_words(self) -> str | None:
        said = run_error_said(readable_times(self.last_error))
        return None if said is None else f"“{said}”" if said else "no message"

    @property
    def needs_person(self) -> bool:
        return self.state == FAILED

    @property
    def label(self) -> str:
        if self.behind:
            return f"Waiting to send: {self.ahead_words} ahead"
        return {
            WAITING: "Waiting for the run",
            QUEUED: "Queued",
            SENDING: f"Sending (attempt {self.attempt})" if self.attempt > 1 else "Sending",
            RETRYING: f"Retrying (attempt {self.attempt})",
            DELIVERED: "Delivered",
            BROKE_PROTOCOL: "Delivered; the agent's reply broke the protocol",
            UNKNOWN: "Delivered, result unknown",
            FAILED: "Failed: needs a person",
            EXPIRED: "Expired before sending",
            NONE: "Not sent",
        }.get(self.state, self.state)

    @property
    def sentence(self) -> str:
        """One plain sentence (or two) on where the answer is, with the reason when it did not arrive."""
        if self.behind:
            waiting = (
                f"Delivery is behind: {self.ahead_words} answer{'s' if self.ahead != 1 else ''} due before this one "
                "wait to be sent first; it goes as soon as a worker reaches it."
            )
            if self.state == RETRYING:
                failed = error_in_words(self.last_error) or "no reason recorded"
                return f"Attempt {self.attempts} did not reach the agent: {failed}. {waiting}"
            return waiting
        tries = f" after {self.attempts} attempt{'s' if self.attempts != 1 else ''}" if self.attempts else ""
        error = error_in_words(self.last_error)
        when = (
            f" at {timezone.localtime(self.next_try_at):%Y-%m-%d %H:%M:%S %Z}".rstrip() if self.next_try_at else " soon"
        )
        return {
            WAITING: "The answer goes back to the agent when the run's other interrupts are decided.",
            QUEUED: f"The answer is queued to go back to the agent{when}, once no decision of it can be undone."
            if self.next_try_at
            else "The answer is queued to go back to the agent.",
            SENDING: f"The answer is being sent to the agent (attempt {self.attempt}).",
            RETRYING: f"Attempt {self.attempts} did not reach the agent: {error or 'no reason recorded'}. "
            f"Attempt {self.attempt} is due{when}.",
            # A note on a delivered row: delivered by an earlier copy whose reply was cut (the resend was refused).
            DELIVERED: f"The agent received the answer: {self.last_error}"
            if self.last_error
            else "The agent received the answer and continued its run.",
            BROKE_PROTOCOL: "The agent received the answer; its reply broke the protocol: "
            f"{self.last_error.removeprefix(BROKE_PROTOCOL_NOTE)} It is not sent again (a second copy could run it "
            "twice).",
            UNKNOWN: "The agent accepted the answer, but its reply was cut before it ended, so what it did is not "
            f"known: {error or 'no reason recorded'}. It is not sent again by itself.",
            FAILED: (
                f"The agent could not act on the answer: it ended its run with an error ({run_said}). "
                if (run_said := self._run_error_words) is not None
                else f"The answer did not reach the agent{tries}: {error or 'no reason recorded'}. "
            )
            + "It is not sent again by itself: check the agent, then retry sending on the run page.",
            EXPIRED: f"The answer was not delivered: {error or 'an interrupt of the run expired first'}.",
            NONE: "No answer was sent to the agent: the run was closed without a resume.",
        }.get(self.state, "")

    def as_api(self) -> dict[str, Any]:
        """The ``delivery`` object of the API's items and runs."""
        return {
            "state": self.state,
            "label": self.label,
            "sentence": self.sentence,
            "attempts": self.attempts,
            "lastError": self.last_error or None,
            "nextTryAt": self.next_try_at.isoformat() if self.next_try_at else None,
            "deliveredAt": self.delivered_at.isoformat() if self.delivered_at else None,
            "needsPerson": self.needs_person,
            "ahead": self.ahead,
        }


def delivery_from(
    state: str | None,
    *,
    attempts: int = 0,
    last_error: str = "",
    next_attempt_at: datetime | None = None,
    delivered_at: datetime | None = None,
    run_has_open: bool = False,
) -> Delivery:
    """The delivery a resume row in ``state`` (None: the run has none) stands for."""
    attempts = attempts or 0

    def delivery(key: str, next_try_at: datetime | None = None, ahead: int | None = None) -> Delivery:
        return Delivery(
            key,
            attempts=attempts,
            last_error=last_error or "",
            next_try_at=next_try_at,
            delivered_at=delivered_at,
            ahead=ahead,
        )

    if state is None:
        return delivery(WAITING if run_has_open else NONE)
    if state == Resume.State.PENDING:
        now = timezone.now()
        due = next_attempt_at is not None and next_attempt_at <= now
        ahead = answers_ahead(next_attempt_at) if due and next_attempt_at is not None else None
        if attempts:
            return delivery(RETRYING, next_try_at=next_attempt_at, ahead=ahead)
        held = next_attempt_at if next_attempt_at is not None and next_attempt_at > now else None
        return delivery(QUEUED, next_try_at=held, ahead=ahead)
    if state == Resume.State.DELIVERED and (last_error or "").startswith(BROKE_PROTOCOL_NOTE):
        return delivery(BROKE_PROTOCOL)
    keys: dict[str, str] = {
        Resume.State.SENDING: SENDING,
        Resume.State.DELIVERED: DELIVERED,
        Resume.State.ACCEPTED: UNKNOWN,
        Resume.State.FAILED: FAILED,
        Resume.State.EXPIRED: EXPIRED,
    }
    return delivery(keys.get(state, state))


def answers_ahead(due: datetime) -> int:
    """How many answers due before ``due`` wait to be sent (pending, not yet claimed by a worker), counted up to
    ``AHEAD_COUNTED`` (on the index of ``(state, next_attempt_at)``)."""
    earlier = Resume.objects.filter(state=Resume.State.PENDING, next_attempt_at__lt=due).values("pk")
    return earlier[:AHEAD_COUNTED].count()


def delivery_of_resume(resume: Resume | None, *, run_has_open: bool = False) -> Delivery:
    if resume is None:
        return delivery_from(None, run_has_open=run_has_open)
    return delivery_from(
        resume.state,
        attempts=resume.attempts,
        last_error=resume.last_error,
        next_attempt_at=resume.next_attempt_at,
        delivered_at=resume.delivered_at,
    )


# The columns ``inbox.listing.selectors.with_truth`` annotates on an item (and ``detail.run_items`` sets).
ITEM_FIELDS = ("delivery", "delivery_error", "delivery_attempts", "delivery_next_at", "delivery_at")


def delivery_of_item(item: InboxItem) -> Delivery:
    """An item's delivery: from the annotations of ``with_truth`` when it has them, else from the database."""
    if hasattr(item, "delivery") and hasattr(item, "delivery_next_at"):
        state, error, attempts, next_at, at = (getattr(item, name) for name in ITEM_FIELDS)
    else:
        found = (
            Resume.objects.filter(run_id=item.run_id)
            .values_list("state", "last_error", "attempts", "next_attempt_at", "delivered_at")
            .first()
        )
        state, error, attempts, next_at, at = found or (None, "", 0, None, None)
    has_open: bool | None = False
    if state is None:
        has_open = getattr(item, "run_has_open", None)
        if has_open is None:
            has_open = InboxItem.objects.filter(run_id=item.run_id, status=InboxItem.Status.OPEN).exists()
    return delivery_from(
        state,
        attempts=attempts or 0,
        last_error=error or "",
        next_attempt_at=next_at,
        delivered_at=at,
        run_has_open=bool(has_open),
    )


@dataclass(frozen=True)
class AgentDelivery:
    """An agent's side of delivery: its newest resume's delivery (None: nothing sent to it yet) and when it last
    answered the inbox (a reply read from it: a resumed run, a run started from the inbox, or a resume it
    accepted whose reply was cut)."""

    last: Delivery | None
    last_answered_at: datetime | None


def agent_deliveries(agent_ids: list[int]) -> dict[int, AgentDelivery]:
    """``AgentDelivery`` per agent id, in three queries whatever the number of agents."""
    from django.db.models import Max, OuterRef, Subquery

    from agents.models import Agent
    from inbox.models import Run

    newest_pk = Resume.objects.filter(agent_id=OuterRef("pk")).order_by("-created_at", "-pk").values("pk")[:1]
    pks = Agent.objects.filter(pk__in=agent_ids).annotate(newest=Subquery(newest_pk)).values_list("newest", flat=True)
    newest = {resume.agent_id: resume for resume in Resume.objects.filter(pk__in=[pk for pk in pks if pk])}
    replies = dict(
        Run.objects.filter(agent_id__in=agent_ids, source__in=[Run.Source.RESUME, Run.Source.STARTED])
        .values("agent_id")
        .annotate(at=Max("created_at"))
        .values_list("agent_id", "at")
    )
    accepted = dict(
        Resume.objects.filter(agent_id__in=agent_ids, delivered_at__isnull=False)
        .values("agent_id")
        .annotate(at=Max("delivered_at"))
        .values_list("agent_id", "at")
    )
    found = {}
    for agent_id in agent_ids:
        moments = [moment for moment in (replies.get(agent_id), accepted.get(agent_id)) if moment is not None]
        resume = newest.get(agent_id)
        found[agent_id] = AgentDelivery(
            last=delivery_of_resume(resume) if resume is not None else None,
            last_answered_at=max(moments) if moments else None,
        )
    return found
