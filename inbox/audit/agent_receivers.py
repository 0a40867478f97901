"""The audit record of changes to the agent registry. ``agents`` is the lower layer and knows nothing of
the inbox: its services send ``agents.signals`` inside their transaction, and these receivers (connected in
``InboxConfig.ready``) write the audit events in that same transaction."""

from __future__ import annotations

from typing import Any

from agents.models import Agent, AgentToken
from agents.signals import agent_changed, token_issued, tokens_revoked
from inbox.audit.record import Actor, audit, audit_event, audit_record


def _actor(user: Any, via: str) -> Actor:
    if user is not None and getattr(user, "is_authenticated", False):
        return Actor.for_user(user)
    return Actor.system(via or "system")


def _without_secrets(changes: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Defence in depth: whatever a sender passes, the auth header value is logged as set or not set."""

    def shown(field: str, value: Any) -> Any:
        if field != "auth_header_value" or value in ("set", "not set"):
            return value
        return "set" if value else "not set"

    return {field: {side: shown(field, value) for side, value in diff.items()} for field, diff in changes.items()}


def on_agent_changed(
    *,
    agent: Agent,
    change: str,
    fields: list[str],
    changes: dict[str, dict[str, Any]] | None = None,
    user: Any = None,
    via: str = "",
    **kwargs: Any,
) -> None:
    # Who changed what: the field names, and their values before and after where the sender gave them. The
    # sender (agents.services) never puts a secret there: the auth header value is only "set" / "not set".
    data: dict[str, Any] | None = None
    if change in ("created", "changed"):
        data = {"fields": fields, "changes": _without_secrets(changes)} if changes else {"fields": fields}
    audit(actor=_actor(user, via), verb=f"agent.{change}", obj=agent, agent=agent, data=data)


def on_token_issued(
    *,
    agent: Agent,
    token: AgentToken,
    rotated: bool,
    revoked: list[AgentToken],
    user: Any = None,
    via: str = "",
    **kwargs: Any,
) -> None:
    if rotated:
        data = {"prefix": token.prefix, "revoked": [old.prefix for old in revoked]}
        audit(actor=_actor(user, via), verb="agent.tokens_rotated", obj=agent, agent=agent, data=data)
    else:
        audit(actor=_actor(user, via), verb="agent.token_issued", obj=agent, agent=agent, data={"prefix": token.prefix})


def on_tokens_revoked(
    *, agent: Agent, tokens: list[AgentToken], all_live: bool, user: Any = None, via: str = "", **kwargs: Any
) -> None:
    actor = _actor(user, via)
    if all_live:
        data = {"prefixes": [token.prefix for token in tokens]}
        audit(actor=actor, verb="agent.tokens_revoked", obj=agent, agent=agent, data=data)
        return
    audit_record(
        *(
            audit_event(actor=actor, verb="agent.token_revoked", obj=agent, agent=agent, data={"prefix": token.prefix})
            for token in tokens
        )
    )


def connect() -> None:
    agent_changed.connect(on_agent_changed, sender=Agent, dispatch_uid="inbox.audit.agent_changed")
    token_issued.connect(on_token_issued, sender=Agent, dispatch_uid="inbox.audit.token_issued")
    tokens_revoked.connect(on_tokens_revoked, sender=Agent, dispatch_uid="inbox.audit.tokens_revoked")
