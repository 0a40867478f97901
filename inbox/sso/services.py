"""What a single sign-on login does to the inbox's users: find or create the user for a provider subject,
keep their name and email, and make their mapped teams follow the groups claim (audited when it changes)."""

from __future__ import annotations

import re
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.db import transaction
from django.utils import timezone

from inbox.audit.record import Actor, audit
from inbox.models.sso import SSOIdentity, TeamClaimMapping


def claim_values(claims: dict[str, Any]) -> list[str]:
    """The groups claim as a list of strings (providers send a list, some a space- or comma-separated string)."""
    value = claims.get(settings.OIDC_GROUPS_CLAIM)
    if isinstance(value, str):
        return [part for part in re.split(r"[\s,]+", value) if part]
    if isinstance(value, list):
        return [str(part) for part in value if isinstance(part, str | int)]
    return []


def _free_username(claims: dict[str, Any]) -> str:
    User = get_user_model()
    wanted = claims.get("preferred_username") or (claims.get("email") or "").split("@")[0] or claims["sub"]
    base = re.sub(r"[^\w.@+-]", "-", str(wanted))[:140] or "user"
    name, suffix = base, 1
    while User.objects.filter(username__iexact=name).exists():
        suffix += 1
        name = f"{base}-{suffix}"
    return name


def _details(user: Any, claims: dict[str, Any]) -> list[str]:
    changed = []
    for field, claim in (("email", "email"), ("first_name", "given_name"), ("last_name", "family_name")):
        value = claims.get(claim)
        if isinstance(value, str) and value[:150] != getattr(user, field):
            setattr(user, field, value[:150] if field != "email" else value[:254])
            changed.append(field)
    return changed


@transaction.atomic
def sso_login(*, issuer: str, claims: dict[str, Any]) -> Any:
    """The user for this provider subject, created on first login; their mapped teams follow the claim."""
    User = get_user_model()
    subject = str(claims["sub"])
    identity = (
        SSOIdentity.objects.select_for_update().select_related("user").filter(issuer=issuer, subject=subject).first()
    )
    if identity is None:
        user = User(username=_free_username(claims))
        _details(user, claims)
        user.set_unusable_password()
        user.save()
        identity = SSOIdentity.objects.create(user=user, issuer=issuer, subject=subject)
        audit(
            actor=Actor.system("sso"),
            verb="user.created_by_sso",
            obj=user,
            data={"username": user.username, "issuer": issuer, "subject": subject, "email": user.email},
        )
    else:
        user = identity.user
        changed = _details(user, claims)
        if changed:
            user.save(update_fields=changed)
        identity.last_login_at = timezone.now()
        identity.save(update_fields=["last_login_at"])
    sync_teams(user=user, values=claim_values(claims))
    return user


def sync_teams(*, user: Any, values: list[str]) -> tuple[list[str], list[str]]:
    """Add the user to every mapped team whose claim value they carry and remove them from every mapped team
    whose value they lost; teams without a mapping are left alone. Returns (added, removed) team names."""
    mappings = list(TeamClaimMapping.objects.select_related("team"))
    managed = {mapping.team_id for mapping in mappings}
    wanted = {mapping.team_id for mapping in mappings if mapping.claim_value in values}
    current = set(user.groups.filter(pk__in=managed).values_list("pk", flat=True))
    to_add, to_remove = wanted - current, current - wanted
    if not to_add and not to_remove:
        return [], []
    user.groups.add(*to_add)
    user.groups.remove(*to_remove)
    names = dict(Group.objects.filter(pk__in=to_add | to_remove).values_list("pk", "name"))
    added, removed = sorted(names[pk] for pk in to_add), sorted(names[pk] for pk in to_remove)
    audit(
        actor=Actor.system("sso"),
        verb="user.teams_synced",
        obj=user,
        data={"user": user.get_username(), "added": added, "removed": removed, "claim": values},
    )
    return added, removed
