"""Writes to the agent registry: registering and changing agents, issuing, rotating and revoking their ingest
tokens. Every entry point (the admin, the management commands, the agent pages) goes through these.

Each write runs in one transaction and sends its ``agents.signals`` signal inside it, so the audit record commits
with the change; secrets are recorded only as set or not set (the endpoint's password as ``***``)."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import timedelta
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from agents.durations import format_duration
from agents.endpoints import validate_endpoint_url
from agents.models import Agent, AgentToken
from agents.signals import agent_changed, token_issued, tokens_revoked

SECRET_FIELDS = frozenset({"auth_header_value"})


def redact_url(url: str) -> str:
    """The URL with the password of its user part (``https://user:pass@host``) replaced by ``***``."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return url
    if parts.password is None:
        return url
    host = parts.netloc.rpartition("@")[2]
    return urlunsplit(parts._replace(netloc=f"{parts.username}:***@{host}"))


def endpoint_host(url: str) -> str:
    """The host (and port) of an endpoint URL, without its user part: what lists show."""
    try:
        return urlsplit(url).netloc.rpartition("@")[2]
    except ValueError:
        return ""


def _recorded(field: str, value: Any) -> Any:
    """A setting's value as the audit log keeps it: JSON, readable, and never a secret."""
    if field in SECRET_FIELDS:
        return "set" if value else "not set"
    if field == "endpoint_url":
        return redact_url(value)
    if isinstance(value, timedelta):
        return format_duration(value)
    if field == "teams":
        return sorted(group.name for group in value)
    return value


def _changes(before: dict[str, Any], after: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """``{field: {"before": ..., "after": ...}}`` for the fields whose value differs."""
    return {
        field: {"before": _recorded(field, before[field]), "after": _recorded(field, after[field])}
        for field in after
        if before[field] != after[field]
    }


@transaction.atomic
def agent_register(
    *,
    slug: str,
    name: str = "",
    endpoint_url: str = "",
    auth_header_value: str = "",
    default_ttl: timedelta | None = None,
    user: Any = None,
    via: str = "",
) -> tuple[Agent, str]:
    """Create an agent (validated as the admin form validates it) and its first ingest token. Returns the
    agent and the raw token, which is shown once and never stored. Raises ``ValidationError``."""
    agent = Agent(slug=slug, name=name or slug, endpoint_url=endpoint_url, auth_header_value=auth_header_value)
    if default_ttl is not None:
        agent.default_ttl = default_ttl
    agent.full_clean()
    _check_endpoint(endpoint_url)
    agent.save()
    given = {"endpoint_url": endpoint_url, "auth_header_value": auth_header_value, "default_ttl": default_ttl}
    fields = ["slug", "name", *(field for field, value in given.items() if value)]
    agent_changed.send(sender=Agent, agent=agent, change="created", fields=fields, user=user, via=via)
    _, raw = _issue(agent, label=f"created by {via}" if via else "created", revoked=None, user=user, via=via)
    return agent, raw


@transaction.atomic
def agent_ensure(
    *, slug: str, name: str, endpoint_url: str, description: str = "", user: Any = None, via: str = ""
) -> tuple[Agent, bool]:
    """Create the agent, or bring its name and endpoint to these values (idempotent: an agent already so
    writes nothing). Returns the agent and whether it was created. Raises ``ValidationError``."""
    _check_endpoint(endpoint_url)
    agent, created = Agent.objects.select_for_update().get_or_create(
        slug=slug, defaults={"name": name, "endpoint_url": endpoint_url, "description": description}
    )
    changes: dict[str, dict[str, Any]] = {}
    if created:
        fields = ["slug", "name", "endpoint_url", "description"]
    else:
        wanted = {"name": name, "endpoint_url": endpoint_url}
        changes = _changes({field: getattr(agent, field) for field in wanted}, wanted)
        fields = list(changes)
        if not fields:
            return agent, False
        for field in fields:
            setattr(agent, field, wanted[field])
        agent.save(update_fields=fields)
    change = "created" if created else "changed"
    agent_changed.send(sender=Agent, agent=agent, change=change, fields=fields, changes=changes, user=user, via=via)
    return agent, created


@transaction.atomic
def agent_save(agent: Agent, *, created: bool, fields: list[str], user: Any = None, via: str = "") -> Agent:
    """Save an agent edited in a form (the admin). ``fields`` names what changed; the audit record has the
    before and after values of those that are columns (the form saves the teams after this)."""
    changes: dict[str, dict[str, Any]] = {}
    if not created:
        columns = [field for field in fields if field != "teams"]
        stored = Agent.objects.select_for_update().filter(pk=agent.pk).values(*columns).get() if columns else {}
        changes = _changes(stored, {field: getattr(agent, field) for field in columns})
    agent.save()
    change = "created" if created else "changed"
    agent_changed.send(sender=Agent, agent=agent, change=change, fields=fields, changes=changes, user=user, via=via)
    return agent


def _check_endpoint(endpoint_url: str) -> None:
    """The endpoint check of ``agents.endpoints`` as a ``ValidationError`` on ``endpoint_url``."""
    try:
        validate_endpoint_url(endpoint_url)
    except ValidationError as error:
        raise ValidationError({"endpoint_url": error.messages}) from None


def _settings(agent: Agent, fields: Iterable[str]) -> dict[str, Any]:
    """The agent's values of these fields; the teams as a set of groups (they compare by id)."""
    return {field: frozenset(agent.teams.all()) if field == "teams" else getattr(agent, field) for field in fields}


@transaction.atomic
def agent_update(agent: Agent, *, values: dict[str, Any], user: Any = None, via: str = "") -> list[str]:
    """Change settings of an agent (the agent page): ``values`` maps field names to their new values, the
    teams as groups. Validated as the model validates (``ValidationError``, nothing written). Returns the
    names of the fields that changed, in the order given; when none did, nothing is written or audited."""
    locked = Agent.objects.select_for_update().get(pk=agent.pk)
    wanted = {field: frozenset(value) if field == "teams" else value for field, value in values.items()}
    changes = _changes(_settings(locked, wanted), wanted)
    if not changes:
        return []
    columns = [field for field in changes if field != "teams"]
    for field in columns:
        setattr(locked, field, wanted[field])
    locked.full_clean()
    if columns:
        locked.save(update_fields=columns)
    if "teams" in changes:
        locked.teams.set(wanted["teams"])
    for field in columns:
        setattr(agent, field, wanted[field])
    fields = list(changes)
    agent_changed.send(sender=Agent, agent=locked, change="changed", fields=fields, changes=changes, user=user, via=via)
    return fields


@transaction.atomic
def agent_set_enabled(agent: Agent, *, enabled: bool, user: Any = None, via: str = "") -> None:
    """Enable or disable an agent (a disabled agent's ingest is refused with 403)."""
    Agent.objects.filter(pk=agent.pk).update(enabled=enabled)
    agent.enabled = enabled
    change = "enabled" if enabled else "disabled"
    agent_changed.send(sender=Agent, agent=agent, change=change, fields=["enabled"], user=user, via=via)


def _issue(
    agent: Agent, *, label: str, revoked: list[AgentToken] | None, user: Any, via: str
) -> tuple[AgentToken, str]:
    token, raw = agent.issue_token(label=label)
    token_issued.send(
        sender=Agent,
        agent=agent,
        token=token,
        rotated=revoked is not None,
        revoked=revoked or [],
        user=user,
        via=via,
    )
    return token, raw


@transaction.atomic
def token_issue(agent: Agent, *, label: str = "issued", user: Any = None, via: str = "") -> str:
    """A further ingest token beside the live ones. Returns the raw token (shown once)."""
    return _issue(agent, label=label, revoked=None, user=user, via=via)[1]


@transaction.atomic
def tokens_rotate(agent: Agent, *, label: str = "rotated", user: Any = None, via: str = "") -> str:
    """Revoke every live token of the agent and issue a new one. Returns the raw token (shown once)."""
    live = list(AgentToken.objects.select_for_update().filter(agent=agent, revoked_at__isnull=True))
    AgentToken.objects.filter(pk__in=[token.pk for token in live]).update(revoked_at=timezone.now())
    return _issue(agent, label=label, revoked=live, user=user, via=via)[1]


@transaction.atomic
def tokens_revoke(agent: Agent, *, prefix: str | None = None, user: Any = None, via: str = "") -> list[AgentToken]:
    """Revoke the agent's live tokens, or only those whose prefix starts with ``prefix``. Returns them
    (an empty list when none matched)."""
    live = AgentToken.objects.select_for_update().filter(agent=agent, revoked_at__isnull=True)
    if prefix:
        live = live.filter(prefix__startswith=prefix)
    return _revoke(agent, list(live), all_live=not prefix, user=user, via=via)


@transaction.atomic
def token_list_revoke(tokens: Iterable[AgentToken], *, user: Any = None, via: str = "") -> list[AgentToken]:
    """Revoke the given tokens (those still live), agent by agent. Returns the tokens revoked."""
    by_agent: dict[int, list[AgentToken]] = {}
    pks = [token.pk for token in tokens]
    live = AgentToken.objects.select_for_update().filter(pk__in=pks, revoked_at__isnull=True).select_related("agent")
    for token in live.order_by("agent_id", "pk"):
        by_agent.setdefault(token.agent_id, []).append(token)
    revoked: list[AgentToken] = []
    for agent_tokens in by_agent.values():
        revoked += _revoke(agent_tokens[0].agent, agent_tokens, all_live=False, user=user, via=via)
    return revoked


def _revoke(agent: Agent, tokens: list[AgentToken], *, all_live: bool, user: Any, via: str) -> list[AgentToken]:
    now = timezone.now()
    AgentToken.objects.filter(pk__in=[token.pk for token in tokens]).update(revoked_at=now)
    for token in tokens:
        token.revoked_at = now
    if tokens:
        tokens_revoked.send(sender=Agent, agent=agent, tokens=tokens, all_live=all_live, user=user, via=via)
    return tokens
