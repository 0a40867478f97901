"""Recording the append-only audit log. Services call these inside their transaction."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import connection, models
from django.utils import timezone

from agents.models import Agent
from inbox.core.sql import column_of
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


def audit_insert_sql(*, source: str, verb: str, data: dict, actor: Actor, now: datetime) -> tuple[str, list[Any]]:
    """``INSERT INTO auditevent ... SELECT ... FROM <source>``: one ``verb`` AuditEvent about each item of
    ``source`` (a FROM clause whose rows have the items' ``id``, ``agent_id`` and ``thread_id``), all with the
    same ``data``. For sweeps: building 100k ORM objects for ``bulk_create`` takes seconds; this takes a
    fraction of one."""
    audit = AuditEvent._meta
    quote = connection.ops.quote_name
    columns = ", ".join(
        quote(column_of(AuditEvent, name))
        for name in (
            "actor_type",
            "actor_user",
            "actor_agent",
            "actor_label",
            "verb",
            "object_type",
            "object_id",
            "agent",
            "thread",
            "data",
            "created_at",
        )
    )
    cast = "CAST(%s AS jsonb)" if connection.vendor == "postgresql" else "%s"
    sql = (
        f"INSERT INTO {quote(audit.db_table)} ({columns}) "
        f"SELECT %s, CAST(%s AS bigint), CAST(%s AS bigint), %s, %s, %s, CAST({quote('id')} AS varchar(64)), "
        f"{quote('agent_id')}, {quote('thread_id')}, {cast}, %s "
        f"FROM {source}"
    )
    params = [
        actor.type,
        actor.user.pk if actor.user is not None else None,
        actor.agent.pk if actor.agent is not None else None,
        actor.label,
        verb,
        "inboxitem",
        json.dumps(data),
        audit.get_field("created_at").get_db_prep_value(now, connection),
    ]
    return sql, params
