"""Write paths of auto-decision policies: saving and promoting them (audited, with the diff of an edit), and
applying them to a run's items at ingest.

``apply_policies_on_ingest`` receives ``run_ingested`` inside the ingest's transaction: shadow policies that
match record a ``PolicyMatch``, and the first enforced one that matches acts (approve or deny through
``decision_by_policy`` with every rule of a human decision, raise the quorum, or route). docs/policies.md."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.contrib.auth import get_user_model
from django.db import transaction
from django.db.models import Q

from agents.models import Agent
from inbox.audit.record import Actor, audit
from inbox.decisions.rules import DecisionError
from inbox.decisions.services import DecidedBy, decision_by_policy
from inbox.decisions.shapes import asks_for_answer, bulk_payload
from inbox.live import push as live
from inbox.models import InboxItem, Run
from inbox.models.policies import Policy, PolicyMatch
from inbox.policies import permissions
from inbox.policies.schema import policy_matches, validate_policy_schema
from inbox.policies.selectors import backtest_evidence, latest_backtest

# The fields a policy's editor sets; ``version``, the service account and the timestamps are the service's.
EDITABLE = (
    "name",
    "description",
    "agent",
    "team",
    "position",
    "enabled",
    "reason",
    "tool_name",
    "subject",
    "match_schema",
    "action",
    "approvals",
    "route_team",
    "counts_as_approver",
    "mode",
)
MAX_REQUIRED_APPROVALS = 20


def _invalid(errors: list[dict]) -> DecisionError:
    first = errors[0]
    return DecisionError(400, "invalid_policy", f"{first['path']}: {first['message']}", errors, field=first["path"])


def check_policy(policy: Policy) -> None:
    """Every rule a policy's fields must follow; raises a 400 naming each offending field."""
    errors: list[dict] = []
    if not policy.name.strip():
        errors.append({"path": "name", "message": "is required"})
    if (policy.agent_id is None) == (policy.team_id is None):
        errors.append({"path": "agent", "message": "name exactly one of agent or team"})
    if policy.action not in Policy.Action.values:
        errors.append({"path": "action", "message": f"must be one of {', '.join(Policy.Action.values)}"})
    if policy.mode not in Policy.Mode.values:
        errors.append({"path": "mode", "message": f"must be one of {', '.join(Policy.Mode.values)}"})
    if policy.subject not in Policy.Subject.values:
        errors.append({"path": "subject", "message": f"must be one of {', '.join(Policy.Subject.values)}"})
    if policy.action == Policy.Action.REQUIRE_APPROVALS:
        if not policy.approvals or not 2 <= policy.approvals <= MAX_REQUIRED_APPROVALS:
            errors.append({"path": "approvals", "message": f"must be between 2 and {MAX_REQUIRED_APPROVALS}"})
    elif policy.approvals is not None:
        errors.append({"path": "approvals", "message": "only for the action require_approvals"})
    if policy.action == Policy.Action.ROUTE and policy.route_team_id is None:
        errors.append({"path": "routeTeam", "message": "the team to route to is required"})
    elif policy.action != Policy.Action.ROUTE and policy.route_team_id is not None:
        errors.append({"path": "routeTeam", "message": "only for the action route"})
    if policy.tool_name and policy.reason not in ("", "tool_call"):
        errors.append({"path": "toolName", "message": "a tool name only matches reason tool_call"})
    errors += [
        {"path": "matchSchema" + (f".{e['path']}" if e["path"] else ""), "message": e["message"]}
        for e in validate_policy_schema(policy.match_schema)
    ]
    clash = Policy.objects.filter(name=policy.name).exclude(pk=policy.pk).exists()
    if clash:
        errors.append({"path": "name", "message": "another policy has this name"})
    User = get_user_model()
    others = User.objects.filter(username=policy.actor_label)
    if policy.service_user_id is not None:  # a new policy has no account yet
        others = others.exclude(pk=policy.service_user_id)
    taken = others.exists()
    if taken and not clash:
        errors.append({"path": "name", "message": f"the account name {policy.actor_label!r} is taken"})
    if errors:
        raise _invalid(errors)


def _sync_service_user(policy: Policy) -> None:
    """The policy's service account: inactive, no password, no email and no team, so it can never log in,
    see anything or be notified; named ``policy:<name>`` so every decision it makes says who made it."""
    User = get_user_model()
    current = policy.service_user if policy.service_user_id is not None else None
    if current is None:
        user = User(username=policy.actor_label, is_active=False, first_name=policy.name[:150])
        user.set_unusable_password()
        user.save()
        policy.service_user = user
    elif current.username != policy.actor_label:
        current.username = policy.actor_label
        current.first_name = policy.name[:150]
        current.save(update_fields=["username", "first_name"])


def _diff(before: dict, after: dict) -> dict[str, list[Any]]:
    return {key: [before.get(key), after[key]] for key in after if before.get(key) != after[key]}


@transaction.atomic
def policy_create(*, user, fields: dict[str, Any]) -> Policy:
    policy = Policy(created_by=user, **{key: value for key, value in fields.items() if key in EDITABLE})
    policy.name = (policy.name or "").strip()
    check_policy(policy)
    permissions.check_scope(user, policy)
    permissions.check_new(user, policy)
    _sync_service_user(policy)
    policy.save()
    audit(actor=Actor.for_user(user), verb="policy.created", obj=policy, agent=policy.agent, data=policy.snapshot())
    return policy


@transaction.atomic
def policy_update(*, user, policy_id: int, fields: dict[str, Any]) -> Policy:
    """Change some fields; a change bumps the version, and the audit log records the diff."""
    policy = Policy.objects.select_for_update(of=("self",)).select_related("service_user").get(pk=policy_id)
    permissions.check_scope(user, policy)
    was = Policy(mode=policy.mode, version=policy.version, pk=policy.pk)
    before = policy.snapshot()
    for key, value in fields.items():
        if key in EDITABLE:
            setattr(policy, key, value.strip() if key == "name" and isinstance(value, str) else value)
    check_policy(policy)
    changes = _diff(before, policy.snapshot())
    if not changes:
        return policy
    evidence = latest_backtest(policy, version=policy.version)
    # A lead's change: of a policy they may write, to one they may write; a promotion is a second lead's.
    promoted_by = permissions.check_change(
        user, was, {key: after for key, (_before, after) in changes.items()}, evidence=evidence
    )
    permissions.check_scope(user, policy)
    promoted = set(changes) == {"mode"} and policy.mode == Policy.Mode.ENFORCE
    data: dict[str, Any] = {"name": policy.name, "version": policy.version + 1, "changes": changes}
    if promoted:
        # The evidence it was promoted on: the latest backtest of the version it was (None when never tested). The
        # policy keeps the link (``evidence``) after its version moves on; the audit log records it too.
        policy.evidence = evidence
        data["backtest"] = backtest_evidence(evidence)
        data["promotedBy"] = promoted_by or "staff"
        author_id = permissions.version_author(was)
        author = get_user_model().objects.filter(pk=author_id).first() if author_id is not None else None
        data["versionBy"] = author.get_username() if author is not None else None
    policy.version += 1
    _sync_service_user(policy)
    policy.save()
    verb = "policy.promoted" if promoted else "policy.updated"
    audit(actor=Actor.for_user(user), verb=verb, obj=policy, agent=policy.agent, data=data)
    return policy


def policy_promote(*, user, policy_id: int) -> Policy:
    """Shadow → enforce, from the policy's page; the audit log records the version's latest backtest."""
    return policy_update(user=user, policy_id=policy_id, fields={"mode": Policy.Mode.ENFORCE})


# --- applying policies at ingest ---------------------------------------------------------------------


def policies_for_agent(agent: Agent) -> list[Policy]:
    """The enabled policies that apply to the agent's items, in order: its own and its teams'. One query, run at
    every ingest: a policy is scoped to an agent or to a team (never both), so joining the teams' agents finds each
    policy once. Its service account and route team load when it acts."""
    return list(Policy.objects.filter(Q(agent=agent) | Q(team__agents=agent), enabled=True).order_by("position", "pk"))


def policy_subject(policy: Policy, *, tool_call: Any, metadata: Any) -> Any:
    """What the policy's schema checks: the interrupt's metadata, or the proposed tool call's arguments."""
    if policy.subject == Policy.Subject.METADATA:
        return metadata if metadata is not None else {}
    args = (tool_call or {}).get("args")
    return args if args is not None else {}


def policy_applies_to(
    policy: Policy, *, reason: str, tool_call: Any, metadata: Any, matches: Callable[[Any], bool] | None = None
) -> bool:
    """Whether the policy matches an interrupt with this reason, tool call and metadata (at ingest and in a
    backtest, which reads only these columns and passes ``matches``, its schema's ``policy_matcher``)."""
    if policy.reason and policy.reason != reason:
        return False
    if policy.tool_name and (reason != "tool_call" or policy.tool_name != (tool_call or {}).get("name", "")):
        return False
    if policy.subject == Policy.Subject.ARGUMENTS and policy.match_schema is not None and tool_call is None:
        return False  # nothing to check the arguments schema against
    subject = policy_subject(policy, tool_call=tool_call, metadata=metadata)
    return matches(subject) if matches is not None else policy_matches(policy.match_schema, subject)


def policy_applies(policy: Policy, item: InboxItem) -> bool:
    return policy_applies_to(policy, reason=item.reason, tool_call=item.tool_call, metadata=item.metadata)


def _payload_of(policy: Policy, item: InboxItem) -> Any:
    """What the policy's approve / deny sends: the item's own yes/no shape (``inbox.decisions.shapes``: a Claude
    Agent SDK approval takes ``{"behavior": "allow"}``), None for a question (refused: it stays with people), the
    spec's ``{approved}`` otherwise (the decision service then refuses what the item cannot take)."""
    if policy.action not in (Policy.Action.APPROVE, Policy.Action.DENY):
        return None
    approve = policy.action == Policy.Action.APPROVE
    answer = bulk_payload(item, "approve" if approve else "deny")
    if answer is None and asks_for_answer(item):
        return None  # a question: no yes or no answers it
    return answer[1] if answer is not None else {"approved": approve}


def apply_policies_on_ingest(*, run: Run, items: list[InboxItem], **signal: Any) -> None:
    """Receives ``run_ingested``, inside the ingest transaction once the run's items are stored. Updates the given
    item objects in place when a policy decided, routed or re-counted them (the ingest's answer shows them)."""
    open_items = [item for item in items if item.status == InboxItem.Status.OPEN]
    if not open_items:
        return
    policies = policies_for_agent(run.agent)
    if not policies:
        return
    for item in open_items:
        item.agent = run.agent
        item.run = run
        for policy in policies:
            if not policy_applies(policy, item):
                continue
            if policy.mode == Policy.Mode.SHADOW:
                _record_shadow(policy, item)
                continue
            _enforce(policy, item)
            break  # the first enforced policy that matches handles the item
    for item in open_items:
        item.refresh_from_db(
            fields=[
                "status",
                "response_payload",
                "decided_by",
                "decided_at",
                "decision_comment",
                "status_note",
                "approvals_required",
                "routed_team",
            ]
        )


def _match(policy: Policy, item: InboxItem, outcome: str, **fields: Any) -> PolicyMatch:
    return PolicyMatch.objects.create(
        policy=policy,
        policy_version=policy.version,
        item=item,
        mode=policy.mode,
        action=policy.action,
        outcome=outcome,
        payload=_payload_of(policy, item),
        **fields,
    )


def _policy_data(policy: Policy) -> dict[str, Any]:
    return {"policy": policy.name, "policyId": policy.pk, "policyVersion": policy.version}


def _record_shadow(policy: Policy, item: InboxItem) -> None:
    _match(policy, item, PolicyMatch.Outcome.SHADOW)
    audit(
        actor=Actor.system(policy.actor_label),
        verb="policy.shadow_matched",
        obj=item,
        data={**_policy_data(policy), "action": policy.action, "wouldDo": policy.action_label},
    )


def _enforce(policy: Policy, item: InboxItem) -> None:
    actor = Actor.system(policy.actor_label)
    if policy.action in (Policy.Action.APPROVE, Policy.Action.DENY):
        payload = _payload_of(policy, item)
        try:
            if payload is None:
                raise DecisionError(
                    400, "asks_a_question", "The item asks a question: a policy's yes or no cannot answer it."
                )
            outcome = decision_by_policy(
                item_id=item.pk,
                user=policy.service_user,
                status="resolved",
                payload=payload,
                comment=f"{'Approved' if policy.action == Policy.Action.APPROVE else 'Denied'} by policy {policy.name} "
                f"(version {policy.version}).",
                decided_by=DecidedBy(
                    label=policy.actor_label,
                    audit_data=_policy_data(policy),
                    counts_as_approver=policy.counts_as_approver,
                ),
            )
        except DecisionError as error:
            _match(policy, item, PolicyMatch.Outcome.REFUSED, note=f"{error.code}: {error.message}")
            audit(
                actor=actor,
                verb="policy.refused",
                obj=item,
                data={**_policy_data(policy), "error": error.code, "detail": error.message, "errors": error.errors},
            )
            return
        if outcome.closed:
            result = PolicyMatch.Outcome.DECIDED
        elif outcome.decision.counts:
            result = PolicyMatch.Outcome.VOTED
        else:
            result = PolicyMatch.Outcome.RECORDED
        _match(policy, item, result, decision=outcome.decision)
        return
    if policy.action == Policy.Action.REQUIRE_APPROVALS:
        before = item.required_approvals
        InboxItem.objects.filter(pk=item.pk).update(approvals_required=max(before, policy.approvals or 1))
        _match(policy, item, PolicyMatch.Outcome.RAISED, note=f"{before} → {max(before, policy.approvals or 1)}")
        audit(
            actor=actor,
            verb="policy.quorum_raised",
            obj=item,
            data={**_policy_data(policy), "from": before, "to": max(before, policy.approvals or 1)},
        )
        return
    team = policy.route_team
    if team is None:  # refused when the policy is saved (``_validate``); a route without a team does nothing
        return
    InboxItem.objects.filter(pk=item.pk).update(routed_team=team)
    item.routed_team = team
    # The routed team's open lists show it live (ingest announced it to the agent's teams only).
    live.publish_on_commit(
        [live.team_group(team.pk)],
        "item.created",
        {"item": item.pk, "run": item.run_id, "status": item.status, "reason": item.reason},
    )
    _match(policy, item, PolicyMatch.Outcome.ROUTED, note=f"to {team.name}")
    audit(
        actor=actor,
        verb="policy.routed",
        obj=item,
        data={**_policy_data(policy), "team": team.name},
    )
