"""Recording the append-only audit log. Services call these inside their transaction."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db import models
from django.utils import timezone

from agents.models import Agent
from inbox.models import AuditEvent


@dataclass(frozen=True)
class Actor:
    type: str
    label: str
    user: Any = None
    agent: Agent | None = None

    @classmethod
    def for_user(cls, user: Any) -> Actor:
        return cls(AuditEvent.ActorType.USER, user.get_username(), user=user)

    @classmethod
    def for_agent(cls, agent: Agent) -> Actor:
        return cls(AuditEvent.ActorType.AGENT, agent.slug, agent=agent)

    @classmethod
    def system(cls, label: str = "system") -> Actor:
        return cls(AuditEvent.ActorType.SYSTEM, label)


def _object_type(obj: models.Model) -> str:
    return obj._meta.model_name or obj.__class__.__name__.lower()


def audit_event(
    *,
    actor: Actor,
    verb: str,
    obj: models.Model,
    data: dict | None = None,
    agent=None,
    thread=None,
    created_at=None,
) -> AuditEvent:
    """An unsaved AuditEvent; pass a list of them to ``audit_record``. The agent and thread default to the
    object's own, read by id so that building many events never loads a related row."""
    return AuditEvent(
        actor_type=actor.type,
        actor_user=actor.user,
        actor_agent=actor.agent,
        actor_label=actor.label,
        verb=verb,
        object_type=_object_type(obj),
        object_id=str(obj.pk),
        agent_id=agent.pk if agent is not None else getattr(obj, "agent_id", None),
        thread_id=thread.pk if thread is not None else getattr(obj, "thread_id", None),
        data=data or {},
        created_at=created_at or timezone.now(),
    )


def audit_record(*events: AuditEvent) -> None:
    AuditEvent.objects.bulk_create(events)


def audit(*, actor: Actor, verb: str, obj: models.Model, data: dict | None = None, agent=None, thread=None) -> None:
    audit_record(audit_event(actor=actor, verb=verb, obj=obj, data=data, agent=agent, thread=thread))
