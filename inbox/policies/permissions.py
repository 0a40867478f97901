"""Who may write which policies: staff, any; a team lead (``TeamLead``), the shadow policies of the teams they lead
and of those teams' agents. A lead's policy decides nothing until it is promoted to enforce, which needs staff or
a second lead (not the one who wrote its version) with a finished backtest of that version as evidence; a lead
never widens who decides an item (a route goes only to a team they lead that decides the items already).
docs/policies.md."""

from __future__ import annotations

from typing import Any

from django.db.models import Q, QuerySet

from inbox import access
from inbox.decisions.rules import DecisionError
from inbox.models import AuditEvent
from inbox.models.policies import Policy

# What a lead may change on an enforced policy by themselves: taking it out of force.
STANDING_DOWN = {"mode": Policy.Mode.SHADOW, "enabled": False}


def _refuse(field: str, message: str, *, status: int = 403) -> DecisionError:
    return DecisionError(
        status, "not_allowed", f"{field}: {message}", [{"path": field, "message": message}], field=field
    )


def may_manage_policies(user: Any) -> bool:
    """Staff, or a lead of some team: the policy pages and the policy API open to them."""
    return access.sees_everything(user) or access.leads_a_team(user)


def policies_managed_by(user: Any) -> QuerySet[Policy]:
    """Every policy for staff; a lead's teams' and their agents' for a lead; none for anyone else."""
    policies = Policy.objects.all()
    if access.sees_everything(user):
        return policies
    if not user.is_authenticated:
        return policies.none()
    led = access.led_team_ids(user)
    return policies.filter(Q(team__in=led) | Q(agent__teams__in=led)).distinct()


def check_scope(user: Any, policy: Policy) -> None:
    """``policy`` (saved or not) is one ``user`` may write: a 403 naming ``agent`` or ``team`` otherwise; and a
    lead's route goes to a team they lead whose members decide the items already."""
    if access.sees_everything(user):
        return
    led = set(access.led_team_ids(user).values_list("team_id", flat=True))
    if policy.team_id is not None:
        if policy.team_id not in led:
            raise _refuse("team", "you lead no such team: a lead writes the policies of the teams they lead")
        deciders = {policy.team_id}
    else:
        agent_teams = (
            set(policy.agent.teams.values_list("pk", flat=True)) if policy.agent_id and policy.agent else set()
        )
        if not agent_teams & led:
            raise _refuse("agent", "not an agent of a team you lead")
        deciders = agent_teams
    if policy.action == Policy.Action.ROUTE and policy.route_team_id is not None:
        if policy.route_team_id not in led or policy.route_team_id not in deciders:
            raise _refuse(
                "routeTeam",
                "a lead routes only to a team they lead that decides these items already; only staff hand items "
                "to another team",
            )


def version_author(policy: Policy) -> int | None:
    """Who wrote the policy's current version (its creation or its latest change), from the audit log."""
    event = (
        AuditEvent.objects.filter(
            object_type="policy", object_id=str(policy.pk), verb__in=["policy.created", "policy.updated"]
        )
        .order_by("-pk")
        .first()
    )
    return event.actor_user_id if event is not None else None


def check_change(user: Any, before: Policy, fields: dict[str, Any], *, evidence: Any) -> str | None:
    """Whether ``user`` may make this change to ``before`` (``fields``: the changed values). Returns who
    promotes when it is a promotion ("staff" or "second lead"), else None; a 403 naming the field when refused."""
    promotes = fields.get("mode") == Policy.Mode.ENFORCE and before.mode != Policy.Mode.ENFORCE
    if access.sees_everything(user):
        return "staff" if promotes else None
    if before.mode == Policy.Mode.ENFORCE:
        standing_down = all(key in STANDING_DOWN and STANDING_DOWN[key] == value for key, value in fields.items())
        if not standing_down:
            raise _refuse(
                "mode",
                "this policy decides items: a lead may put it back to shadow or disable it; staff change it",
            )
        return None
    if not promotes:
        return None
    if set(fields) != {"mode"}:
        raise _refuse("mode", "promote the saved version alone, after its backtest: save other changes first")
    if version_author(before) == user.pk:
        raise _refuse(
            "mode",
            "you wrote this version: a second lead of the team, or staff, promotes it after reading its backtest",
        )
    if evidence is None:
        raise _refuse(
            "mode", f"backtest version {before.version} first: a lead promotes on a finished backtest", status=409
        )
    return "second lead"


def check_new(user: Any, policy: Policy) -> None:
    """A lead's new policy starts in shadow: it is promoted later, by someone else."""
    if not access.sees_everything(user) and policy.mode == Policy.Mode.ENFORCE:
        raise _refuse("mode", "a lead's policy starts in shadow; a second lead or staff promotes it")
