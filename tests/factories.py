"""Test data built straight in the database (factory-boy), for tests where HTTP ingest is not the point.

Tests about ingest itself, or about what a posted run looks like, keep posting through the API (the
``ingest`` fixture); the rest build the rows they need here: ``AgentFactory(teams=[team])``,
``InboxItemFactory(run=..., expires_at=...)``, or a whole interrupted run with ``interrupted_run``.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from types import SimpleNamespace
from typing import Any

import factory
from django.contrib.auth.models import Group, User
from django.utils import timezone
from factory.django import DjangoModelFactory, Password

from agents.models import Agent
from inbox.decisions.shapes import outcome_for
from inbox.expiry.services import SIBLING_NOTE
from inbox.models import Decision, InboxItem, ItemSearchText, Run, Thread

PASSWORD = "correct-horse-battery"


def _add_groups(field: str) -> Any:
    """A post-generation hook adding the given groups (``teams=[...]``) to a many-to-many field."""

    def add(obj: Any, create: bool, extracted: list[Group] | None, **_kwargs: Any) -> None:
        if create and extracted:
            getattr(obj, field).add(*extracted)

    return factory.PostGeneration(add)


class TeamFactory(DjangoModelFactory):
    """A team is a Django group."""

    class Meta:
        model = Group
        django_get_or_create = ("name",)

    name = factory.Sequence(lambda n: f"team-{n}")


class UserFactory(DjangoModelFactory):
    """An approver (``teams=[...]`` to put them in teams), with the suite's password."""

    class Meta:
        model = User
        django_get_or_create = ("username",)
        skip_postgeneration_save = True

    username = factory.Sequence(lambda n: f"user-{n}")
    email = factory.LazyAttribute(lambda user: f"{user.username}@example.com")
    password = Password(PASSWORD)
    teams = _add_groups("groups")


class AgentFactory(DjangoModelFactory):
    """A registered agent (``teams=[...]`` for the teams that decide its items); no token (``issue_token()``)."""

    class Meta:
        model = Agent
        django_get_or_create = ("slug",)
        skip_postgeneration_save = True

    slug = factory.Sequence(lambda n: f"agent-{n}")
    name = factory.LazyAttribute(lambda agent: agent.slug.replace("-", " ").title())
    endpoint_url = "http://127.0.0.1:9/agent"
    teams = _add_groups("teams")


class ThreadFactory(DjangoModelFactory):
    class Meta:
        model = Thread
        django_get_or_create = ("agent", "thread_id")

    agent = factory.SubFactory(AgentFactory)
    thread_id = factory.Sequence(lambda n: f"thread-{n}")


class RunFactory(DjangoModelFactory):
    """A stored run; by default one that ended with an interrupt outcome."""

    class Meta:
        model = Run

    agent = factory.SubFactory(AgentFactory)
    thread = factory.SubFactory(ThreadFactory, agent=factory.SelfAttribute("..agent"))
    run_id = factory.Sequence(lambda n: f"run-{n}")
    outcome = Run.Outcome.INTERRUPT
    created_at = factory.LazyFunction(timezone.now)


def _judged(item: Any, status: str, payload: Any) -> str:
    """``outcome_for`` of an item being built (its declared fields; the proposal's arguments from ``tool_call``)."""
    tool_call = getattr(item, "tool_call", None)
    view = SimpleNamespace(
        response_schema=getattr(item, "response_schema", None),
        reason=item.reason,
        tool_call_id=getattr(item, "tool_call_id", ""),
        proposed_args=tool_call.get("args") if isinstance(tool_call, dict) else None,
        metadata=getattr(item, "metadata", None) or {},
        message=getattr(item, "message", ""),
    )
    return str(outcome_for(view, status, payload))


class InboxItemFactory(DjangoModelFactory):
    """One interrupt of a run: an open confirmation expiring in an hour unless told otherwise."""

    class Meta:
        model = InboxItem
        skip_postgeneration_save = True  # search_text writes its own row; the item needs no second save

    run = factory.SubFactory(RunFactory)
    agent = factory.SelfAttribute("run.agent")
    thread = factory.SelfAttribute("run.thread")
    position = factory.Sequence(lambda n: n)
    interrupt_id = factory.LazyAttribute(lambda item: f"{item.run.run_id}-i{item.position + 1}")
    reason = "confirmation"
    message = "Proceed?"
    expires_at = factory.LazyFunction(lambda: timezone.now() + timedelta(hours=1))
    expires_at_defaulted = False
    created_at = factory.LazyFunction(timezone.now)
    status = InboxItem.Status.OPEN
    response_payload = None
    # What the decision service or expiry stores with the status (``outcome_for``), unless told otherwise.
    outcome = factory.LazyAttribute(lambda item: _judged(item, item.status, item.response_payload))
    # The interrupt as the agent sent it (an interrupt whose expiry came from the agent's TTL had none).
    raw = factory.LazyAttribute(
        lambda item: (
            {"id": item.interrupt_id, "reason": item.reason, "message": item.message}
            | ({} if item.expires_at_defaulted else {"expiresAt": item.expires_at.isoformat().replace("+00:00", "Z")})
        )
    )

    @factory.post_generation
    def search_text(item: InboxItem, create: bool, extracted: Any, **_kwargs: Any) -> None:
        """The row the ingest writes beside every item (text search, the tool-call trail)."""
        if create:
            ItemSearchText.objects.create(
                item=item,
                agent_id=item.agent_id,
                text=ItemSearchText.text_of(item, item.thread.thread_id),
                tool_call_id=item.tool_call_id,
            )


class DecisionFactory(DjangoModelFactory):
    """One approver's answer; by default an approval that closed the item (the item itself is not updated)."""

    class Meta:
        model = Decision

    item = factory.SubFactory(InboxItemFactory)
    user = factory.SubFactory(UserFactory)
    status = Decision.Status.RESOLVED
    payload = factory.LazyFunction(lambda: {"approved": True})
    final = True
    # As the decision service judges it (``outcome_for``), unless told otherwise.
    outcome = factory.LazyAttribute(lambda decision: str(outcome_for(decision.item, decision.status, decision.payload)))
    created_at = factory.LazyFunction(timezone.now)


def interrupted_run(
    agent: Agent, thread_id: str, run_id: str, *expires_in_minutes: float | None, now: datetime | None = None
) -> Run:
    """A run as ingest stores one that ended with one confirmation interrupt per given lifetime, in minutes
    from ``now`` (None: the agent's default TTL). Interrupts already past their expiry are stored expired,
    and so are their siblings (the run can never be resumed), and the run counts as announced when nothing of
    it is open, as ingest does."""
    now = now or timezone.now()
    expiries = [
        (now + agent.default_ttl, True) if minutes is None else (now + timedelta(minutes=minutes), False)
        for minutes in expires_in_minutes
    ]
    run = RunFactory(
        agent=agent,
        thread=ThreadFactory(agent=agent, thread_id=thread_id),
        run_id=run_id,
        created_at=now,
        notified_at=None if expiries and all(expires_at > now for expires_at, _ in expiries) else now,
    )
    dead_run = any(expires_at <= now for expires_at, _ in expiries)
    for position, (expires_at, defaulted) in enumerate(expiries):
        past = expires_at <= now
        note = "expiresAt was already past when the run was posted" if past else SIBLING_NOTE
        InboxItemFactory(
            run=run,
            position=position,
            message=f"Proceed with step {position + 1}?",
            expires_at=expires_at,
            expires_at_defaulted=defaulted,
            created_at=now,
            status=InboxItem.Status.EXPIRED if dead_run else InboxItem.Status.OPEN,
            outcome=InboxItem.Outcome.EXPIRED if dead_run else "",
            status_note=note if dead_run else "",
            decided_at=now if dead_run else None,
        )
    return run
