"""Escalation: an item nobody decided in time gains a second team or a named person as deciders.

``escalation_sweep`` (beat) fires each enabled ``EscalationRule`` step on the items due, step 1 before step 2, in
one set-based statement per step whose unique (item, rule) row is the claim; the target is told by
e-mail notices written in the firing's transaction (sent after its commit, retried from their rows) and a live
push. The rules and what they change: docs/teams.md. Below: the rules' reads and writes."""

from __future__ import annotations

import json
import logging
import uuid
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.db import connection, transaction
from django.db.models import Exists, OuterRef, Q, QuerySet
from django.utils import timezone

from agents.models import Agent
from inbox import access
from inbox.access import approvers_of
from inbox.audit.record import Actor, audit, audit_insert_sql
from inbox.core.errors import ApplicationError
from inbox.core.sql import column_of, id_set
from inbox.live import push as live
from inbox.models import (
    BusinessHours,
    Escalation,
    EscalationRule,
    InboxItem,
    Notice,
    NotificationPreference,
    TeamWebhook,
)
from inbox.teams import outbox
from inbox.teams.away import away_of
from inbox.teams.hours import clock_start, hours_of_agent, hours_of_team
from inbox.teams.hours import is_open as hours_is_open
from inbox.teams.mail import absolute_url, email_message
from inbox.teams.summaries import item_summary, with_decision_links
from inbox.teams.webhooks import WEBHOOK_ITEMS

log = logging.getLogger(__name__)


# Above this many items fired by one rule, pages get one ``items.escalated`` summary per audience.
LIVE_PER_ITEM_LIMIT = 200
# How many of the fired items an email names (the rest are counted).
EMAIL_NAMES_AT_MOST = 10


def due_items(
    rule: EscalationRule,
    *,
    now: datetime,
    previous: EscalationRule | None = None,
    hours: BusinessHours | None = None,
) -> QuerySet[InboxItem]:
    """The open items of the rule's scope that it is time to escalate and that it has not escalated yet. Step 1's
    clock starts when the item arrived, step 2's when step 1 fired on it; with business ``hours`` the clock counts
    only working minutes, and nothing is due while the team is closed (``inbox.teams.hours``)."""
    items = InboxItem.objects.filter(status=InboxItem.Status.OPEN)
    if not hours_is_open(hours, now):
        return items.none()
    if rule.agent_id is not None:
        items = items.filter(agent_id=rule.agent_id)
    else:
        # The team's items: those a policy routed to it, and the unrouted items of its agents.
        assert rule.team_id is not None  # a rule's scope is its team or its agent (a check constraint)
        agents = Agent.teams.through.objects.filter(group_id=rule.team_id).values("agent_id")
        items = items.filter(Q(routed_team_id=rule.team_id) | Q(routed_team__isnull=True, agent_id__in=agents))
    fired_before = Escalation.objects.filter(item=OuterRef("pk"), rule_id=previous.pk) if previous else None
    if rule.after_minutes is not None:
        start = clock_start(hours, now=now, minutes=rule.after_minutes)
        if start is None:  # business hours with no working day
            return items.none()
        if fired_before is None:
            items = items.filter(created_at__lte=start)
        else:  # step 2 gives the previous step its time: its clock starts when that step fired on the item
            items = items.filter(Exists(fired_before.filter(fired_at__lte=start)))
    else:
        deadline = now + timedelta(minutes=rule.before_deadline_minutes or 0)
        items = items.filter(expires_at__gt=now, expires_at__lte=deadline)
        if fired_before is not None:  # never both steps in one sweep: the previous step's target gets a turn
            items = items.filter(Exists(fired_before.filter(fired_at__lt=now)))
    return items.exclude(Exists(Escalation.objects.filter(item=OuterRef("pk"), rule_id=rule.pk)))


def hours_of_rule(rule: EscalationRule) -> BusinessHours | None:
    """The business hours a rule's clock keeps: its team's, or its agent's (``inbox.teams.hours``)."""
    return hours_of_team(rule.team_id) if rule.team_id is not None else hours_of_agent(rule.agent_id or 0)


@dataclass(frozen=True)
class Target:
    """Whom a rule step adds to an item's deciders when it fires: its team or its person, or, while that person is
    away, the delegate they named (``inbox.teams.away``). ``already``: they decide the scope's items anyway, so
    the firing tells them and changes nothing in who may decide."""

    team_id: int | None
    user_id: int | None
    label: str
    away: str = ""  # the username of the away person the delegate stands in for
    already: bool = False

    @property
    def groups(self) -> list[str]:
        return [live.team_group(self.team_id)] if self.team_id else [live.personal_group(self.user_id or 0)]


def target_of(rule: EscalationRule, *, now: datetime) -> Target:
    if rule.to_team_id is not None:
        return Target(rule.to_team_id, None, rule.target_label)
    status = away_of(rule.to_user, now=now)
    if status is not None and status.delegate.is_active:
        name = rule.target_label
        return Target(None, status.delegate_id, f"{status.delegate.get_username()} (for {name}, away)", away=name)
    return Target(None, rule.to_user_id, rule.target_label)


def _target_decides(rule: EscalationRule, target: Target) -> bool:
    """Access is checked when the rule fires: its target (or their delegate) still decides the scope's items."""
    if target.team_id is not None:  # a team target is the rule's own (``target_of``)
        return already_decides(team=rule.team, agent=rule.agent, to_team=rule.to_team)
    if target.user_id is None:
        return False
    person = get_user_model().objects.filter(pk=target.user_id, is_active=True).first()
    return person is not None and already_decides(team=rule.team, agent=rule.agent, to_user=person)


def _fire_sql(rule: EscalationRule, target: Target, items: QuerySet[InboxItem], now: datetime) -> tuple[str, list[Any]]:
    """``INSERT INTO escalation ... SELECT <the due items> ON CONFLICT DO NOTHING RETURNING item_id``."""
    meta = Escalation._meta
    quote = connection.ops.quote_name
    columns = ", ".join(
        quote(column_of(Escalation, name))
        for name in ("item", "rule", "step", "to_team", "to_user", "target_label", "why", "fired_at")
    )
    select_sql, select_params = items.order_by().values("pk").query.sql_with_params()
    item_column = quote(column_of(Escalation, "item"))
    rule_column = quote(column_of(Escalation, "rule"))
    sql = (
        f"INSERT INTO {quote(meta.db_table)} ({columns}) "
        f"SELECT {quote('id')}, %s, %s, CAST(%s AS bigint), CAST(%s AS bigint), %s, %s, %s "
        # The WHERE also keeps SQLite from reading ON CONFLICT as a join's ON.
        f"FROM {quote(InboxItem._meta.db_table)} WHERE {quote('id')} IN ({select_sql}) "
        f"ON CONFLICT ({item_column}, {rule_column}) DO NOTHING RETURNING {item_column}"
    )
    params = [
        rule.pk,
        rule.step,
        target.team_id,
        target.user_id,
        target.label,
        rule.why,
        meta.get_field("fired_at").get_db_prep_value(now, connection),
        *select_params,
    ]
    return sql, params


def rule_fire(
    rule: EscalationRule,
    *,
    now: datetime,
    previous: EscalationRule | None = None,
    target: Target | None = None,
    hours: BusinessHours | None = None,
) -> list[int]:
    """Fire one rule step on every item due: the Escalation rows and their AuditEvents, in one statement on
    PostgreSQL. Call inside a transaction. Returns the ids of the items this call escalated."""
    target = target or target_of(rule, now=now)
    due = due_items(rule, now=now, previous=previous, hours=hours)
    fire_sql, fire_params = _fire_sql(rule, target, due, now)
    actor = Actor.system("escalation")
    data = {"to": target.label, "why": rule.why, "step": rule.step, "rule": rule.pk}
    if target.already:
        data["alreadyDecides"] = True
    quote = connection.ops.quote_name
    items_table = quote(InboxItem._meta.db_table)
    if connection.vendor == "postgresql":
        source = f"{items_table} WHERE {quote('id')} IN (SELECT {quote('item_id')} FROM fired)"
        audit_sql, audit_params = audit_insert_sql(
            source=source, verb="item.escalated", data=data, actor=actor, now=now
        )
        sql = f"WITH fired AS ({fire_sql}), logged AS ({audit_sql}) SELECT * FROM fired"
        with connection.cursor() as cursor:
            cursor.execute(sql, [*fire_params, *audit_params])
            return [row[0] for row in cursor.fetchall()]
    with connection.cursor() as cursor:
        cursor.execute(fire_sql, fire_params)
        fired = [row[0] for row in cursor.fetchall()]
    if fired:
        ids = id_set(fired)
        source = f"{items_table} WHERE {quote('id')} IN ({ids.sql})"
        audit_sql, audit_params = audit_insert_sql(
            source=source, verb="item.escalated", data=data, actor=actor, now=now
        )
        with connection.cursor() as cursor:
            cursor.execute(audit_sql, [*audit_params, *ids.params])
    return fired


def escalation_sweep(*, now: datetime | None = None) -> int:
    """Beat task body: fire every enabled rule step that is due, step 1 before step 2, each in its own
    transaction. Step 2 counts from step 1's firing, so one sweep never climbs both steps of an item; a rule of a
    team with business hours fires only while it works. Returns how many escalations fired."""
    now = now or timezone.now()
    rules = list(
        EscalationRule.objects.filter(enabled=True)
        .select_related("team", "agent", "to_team", "to_user", "created_by")
        .order_by("step", "pk")
    )
    firsts = {(rule.team_id, rule.agent_id): rule for rule in rules if rule.step == 1}
    total = 0
    for rule in rules:
        previous = None
        if rule.step > 1:
            previous = firsts.get((rule.team_id, rule.agent_id))
            if previous is None:  # a second step without an enabled first one never fires
                continue
        hours = hours_of_rule(rule)
        if not hours_is_open(hours, now):
            continue  # closed: the clock stands still and resumes at opening (``clock_start``)
        target = target_of(rule, now=now)
        decides = _target_decides(rule, target)
        if not decides and not _rule_creator_may_grant(rule):
            log.warning("escalation rule %s skipped: %s may not decide its items", rule.pk, target.label)
            continue
        target = replace(target, already=decides)
        with transaction.atomic():
            fired = rule_fire(rule, now=now, previous=previous, target=target, hours=hours)
            if fired:
                _announce_on_commit(rule, target, fired, now=now)
        total += len(fired)
    if total:
        log.info("escalation sweep fired %d escalation(s)", total)
    return total


def sentence_of(rule: EscalationRule, target: Target, *, now: datetime) -> str:
    """What the pages say of a firing; a target who decides the items anyway is told that nothing changed."""
    sentence = f"Escalated to {target.label} at {timezone.localtime(now):%H:%M} — {rule.why}"
    if target.already:
        sentence += f" ({target.label} already decides these items: a nudge, no change in who may decide)"
    return sentence


def _announce_on_commit(rule: EscalationRule, target: Target, fired: list[int], *, now: datetime) -> None:
    items = list(
        InboxItem.objects.filter(pk__in=id_set(fired[: LIVE_PER_ITEM_LIMIT + 1]))
        .select_related("agent", "thread", "run")
        .order_by("pk")
    )
    sentence = sentence_of(rule, target, now=now)
    target_groups = target.groups
    if len(fired) <= LIVE_PER_ITEM_LIMIT:
        live.publish_many_on_commit(
            [
                (
                    live.groups_for(
                        agent_id=item.agent_id, item_id=item.pk, run_id=item.run_id, team_ids=[item.routed_team_id]
                    )
                    + target_groups,
                    "item.escalated",
                    {"item": item.pk, "run": item.run_id, "to": target.label, "message": sentence},
                )
                for item in items
            ]
        )
    else:
        summary = {"count": len(fired), "to": target.label, "message": rule.why}
        live.publish_many_on_commit([([live.STAFF_GROUP, *target_groups], "items.escalated", summary)])
    # The notices are rows of the firing's transaction: a worker killed after the commit leaves them to the sweep.
    notices = _webhook_notices(rule, target, items, count=len(fired), sentence=sentence)
    recipients = _recipients(target)
    named = items[:EMAIL_NAMES_AT_MOST]
    if recipients:
        context = {
            "rule": rule,
            "target": target,
            "count": len(fired),
            "more": len(fired) - len(named),
            "items": [{"item": item, "url": absolute_url(item.get_absolute_url())} for item in named],
        }
        what = named[0].short_title if len(fired) == 1 else f"{len(fired)} items"
        subject = f"[Inbox] Escalated to {target.label}: {what}"
        notices += outbox.email_notices(
            Notice.Kind.ESCALATION,
            [(user, email_message(user, subject, "escalated", context)) for user in recipients],
        )
    outbox.deliver_on_commit(notices)


def webhook_teams(rule: EscalationRule, target: Target) -> list[int]:
    """Whose webhooks hear of a firing: the target team's; for a person, the team (or the agent's teams) whose
    items they are, so its channel sees who was called."""
    if target.team_id is not None:
        return [target.team_id]
    if rule.team_id is not None:
        return [rule.team_id]
    return list(Agent.teams.through.objects.filter(agent_id=rule.agent_id or 0).values_list("group_id", flat=True))


def _webhook_notices(
    rule: EscalationRule, target: Target, items: list[InboxItem], *, count: int, sentence: str
) -> list[Notice]:
    notices = []
    hooks = TeamWebhook.objects.filter(team__in=webhook_teams(rule, target), enabled=True).select_related("team")
    for webhook in hooks:
        key = uuid.uuid4()
        listed = items[:WEBHOOK_ITEMS]
        summaries = [with_decision_links(item_summary(item), item, team_id=webhook.team_id) for item in listed]
        lines = [f"{count} item(s) of {rule.scope_label} escalated to {target.label}: {rule.why}."]
        if target.already:
            lines.append(f"{target.label} already decides these items: a nudge, no change in who may decide.")
        lines += [
            f"• {s['toolName'] or s['reason']}: {s['message'] or s['interruptId']} — {s['url']}" for s in summaries
        ]
        if count > len(listed):
            lines.append(f"…and {count - len(listed)} more")
        body = {
            "event": "items.escalated",
            "deliveryId": str(key),
            "team": webhook.team.name,
            "scope": rule.scope_label,
            "step": rule.step,
            "to": target.label,
            "why": rule.why,
            "alreadyDecides": target.already,
            "message": sentence,
            "count": count,
            "items": summaries,
            "text": "\n".join(lines),
        }
        data = json.dumps(body, ensure_ascii=False).encode()
        notices.append(outbox.webhook_notice(Notice.Kind.ESCALATION, webhook, data, key=key, event="items.escalated"))
    return notices


def _recipients(target: Target) -> list[Any]:
    """Who is told: the target team's members who take mail at once, or the named person or their delegate (unless
    they turned mail off)."""
    if target.team_id is not None:
        users = approvers_of(0, team_id=target.team_id)
    else:
        assert target.user_id is not None  # a target is a team or a person
        users = (
            get_user_model()
            .objects.filter(pk=target.user_id, is_active=True)
            .exclude(email="")
            .exclude(inbox_prefs__email_mode=NotificationPreference.Mode.OFF)
        )
    return list(users.exclude(inbox_prefs__email_mode=NotificationPreference.Mode.DIGEST))


# --- the rules: who may set them, and the writes ----------------------------------------------------


def rules_visible_to(actor: Any) -> QuerySet[EscalationRule]:
    """The rules ``actor`` (a person, or an ``Agent`` calling with its token) may read and delete: an agent's
    own; staff every rule; a person those of their teams and of the agents they see."""
    rules = EscalationRule.objects.select_related("team", "agent", "to_team", "to_user").order_by("pk")
    if isinstance(actor, Agent):
        return rules.filter(agent=actor)
    if access.sees_everything(actor):
        return rules
    return rules.filter(Q(team__in=actor.groups.all()) | Q(agent__in=access.visible_agents(actor)))


def _refuse(field: str, message: str, *, status: int = 400) -> ApplicationError:
    return ApplicationError(
        status, "invalid_escalation_rule", f"{field}: {message}", errors=[{"path": field, "message": message}]
    )


def check_rule_scope(actor: Any, *, team: Group | None, agent: Agent | None) -> None:
    """``actor`` may set a rule on this team (a member, or staff) or agent (the agent itself, someone who sees
    it, or staff)."""
    if isinstance(actor, Agent):
        if team is not None or (agent is not None and agent.pk != actor.pk):
            raise _refuse("agent", "an agent sets rules on its own items only", status=403)
        return
    if access.sees_everything(actor):
        return
    if team is not None and not actor.groups.filter(pk=team.pk).exists():
        raise _refuse("team", f"you are not a member of {team.name}", status=403)
    if agent is not None and not access.visible_agents(actor).filter(pk=agent.pk).exists():
        raise _refuse("agent", f"no agent {agent.slug!r} among your teams' agents")


def already_decides(
    *, team: Group | None, agent: Agent | None, to_team: Group | None = None, to_user: Any = None
) -> bool:
    """Whether the target (``to_team`` or ``to_user``) may already decide every item of the scope (``team`` or
    ``agent``): staff decide everything; a team's items are its members'; an agent's items are its teams'
    members' (staff's alone when it has no team)."""
    if to_user is not None:
        if access.sees_everything(to_user):
            return True
        if team is not None:
            return to_user.groups.filter(pk=team.pk).exists()
        return agent is not None and agent.teams.filter(pk__in=to_user.groups.values("pk")).exists()
    if to_team is not None:
        if team is not None:
            return to_team.pk == team.pk
        return agent is not None and agent.teams.filter(pk=to_team.pk).exists()
    return False


def grants_access(rule: EscalationRule) -> bool:
    """The rule hands the scope's items to someone who may not decide them otherwise (staff's to set)."""
    return not already_decides(team=rule.team, agent=rule.agent, to_team=rule.to_team, to_user=rule.to_user)


def rule_note(rule: EscalationRule) -> str:
    """What the rule changes in who decides, in words (shown by the API and the page)."""
    if grants_access(rule):
        return f"{rule.target_label} may decide {rule.scope_label}'s items once the rule fires: a grant of access."
    return (
        f"{rule.target_label} already decides {rule.scope_label}'s items: the rule tells them, and changes nothing "
        "in who may decide."
    )


def check_rule_target(actor: Any, fields: dict[str, Any]) -> None:
    """An agent's token names no people or teams (400 naming the field); a person who is not staff may only name
    people or teams who already decide the scope's items (403 naming the field)."""
    target = "toUser" if fields.get("to_user") is not None else "toTeam"
    if isinstance(actor, Agent):
        if fields.get("to_user") is not None or fields.get("to_team") is not None:
            raise _refuse(target, "an agent's token names no people or teams: the agent's team or staff set its rules")
        return
    if access.sees_everything(actor):
        return
    if not already_decides(
        team=fields.get("team"), agent=fields.get("agent"), to_team=fields.get("to_team"), to_user=fields.get("to_user")
    ):
        named = fields["to_user"].get_username() if fields.get("to_user") is not None else fields["to_team"].name
        raise _refuse(
            target,
            f"{named} may not decide these items now; only staff may set a rule that gives them access",
            status=403,
        )


def _rule_creator_may_grant(rule: EscalationRule) -> bool:
    return rule.created_by is not None and rule.created_by.is_active and rule.created_by.is_staff


@transaction.atomic
def escalation_rule_create(*, actor: Any, fields: dict[str, Any]) -> EscalationRule:
    """Store a rule step (``fields``: team or agent, step, after_minutes or before_deadline_minutes, to_team or
    to_user, enabled), audited as ``escalation_rule.created``, and as ``escalation_rule.access_granted`` when its
    target does not already decide the scope's items (staff only). A scope keeps one rule per step, and a step 2
    needs the scope's step 1."""
    if isinstance(actor, Agent):
        fields = {**fields, "agent": actor, "team": None}
    check_rule_scope(actor, team=fields.get("team"), agent=fields.get("agent"))
    scope = {"team": fields.get("team"), "agent": fields.get("agent")}
    step = fields.get("step", 1)
    existing = EscalationRule.objects.select_for_update().filter(**scope)
    if existing.filter(step=step).exists():
        raise _refuse("step", f"{_scope_name(scope)} has a step {step} already; delete it first", status=409)
    if step > 1 and not existing.filter(step=step - 1).exists():
        raise _refuse("step", f"step {step} goes after step {step - 1}, which {_scope_name(scope)} has not set")
    check_rule_target(actor, fields)
    rule = EscalationRule.objects.create(
        **fields, created_by=None if isinstance(actor, Agent) else actor, created_at=timezone.now()
    )
    _audit_rule(actor, rule, "escalation_rule.created")
    if grants_access(rule):
        _audit_rule(actor, rule, "escalation_rule.access_granted")
    return rule


@transaction.atomic
def escalation_rule_delete(*, actor: Any, rule: EscalationRule) -> None:
    """Delete a rule step (its step 2 with a step 1: a chain never starts at its second step), audited. Items it
    escalated keep their deciders."""
    chain = EscalationRule.objects.filter(Q(team_id=rule.team_id, agent_id=rule.agent_id), step__gte=rule.step)
    for step in chain.select_related("team", "agent", "to_team", "to_user"):
        _audit_rule(actor, step, "escalation_rule.deleted")
    chain.delete()  # the escalations they fired stay (Escalation.rule is set to NULL)


def _scope_name(scope: dict[str, Any]) -> str:
    if scope.get("team") is not None:
        return scope["team"].name
    agent = scope["agent"]
    return agent.name or agent.slug


def _audit_rule(actor: Any, rule: EscalationRule, verb: str) -> None:
    who = Actor.for_agent(actor) if isinstance(actor, Agent) else Actor.for_user(actor)
    data = {
        "scope": rule.scope_label,
        "step": rule.step,
        "to": rule.target_label,
        "why": rule.why,
        "enabled": rule.enabled,
    }
    audit(actor=who, verb=verb, obj=rule, data=data, agent=rule.agent)
