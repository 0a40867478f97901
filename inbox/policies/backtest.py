"""Backtesting a policy: what it would have done to the items people decided in a period.

``backtest_start`` checks the period and the policy (saved, or a form's unsaved draft) and stores a
``PolicyBacktest``; ``backtest_run`` reads it, at once for a short period or on a worker in chunks;
``backtest_requeue_stalled`` (beat) starts again one whose worker died. What it counts and how it recovers:
docs/policies.md."""

from __future__ import annotations

import logging
from collections import Counter
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import transaction
from django.db.models import Exists, OuterRef, QuerySet
from django.utils import timezone

from agents.models import Agent
from inbox import limits
from inbox.core.errors import ApplicationError
from inbox.core.queue import send_on_commit, waiting
from inbox.models import InboxItem
from inbox.models.policies import BacktestFinding, Policy, PolicyBacktest
from inbox.policies.permissions import check_scope
from inbox.policies.schema import policy_matcher
from inbox.policies.selectors import agrees
from inbox.policies.services import EDITABLE, check_policy, policy_applies_to

log = logging.getLogger(__name__)

APPROVALS = InboxItem.APPROVALS


def check_backtest_days(days: Any) -> int:
    """The period in whole days, 1 to ``MAX_BACKTEST_DAYS`` (the default when not given); a 400 naming ``days``."""
    if days is None or days == "":
        return limits.BACKTEST_DEFAULT_DAYS
    try:
        value = int(days)
    except (TypeError, ValueError):
        value = 0
    if isinstance(days, bool) or str(value) != str(days).strip() or not 1 <= value <= limits.MAX_BACKTEST_DAYS:
        message = f"must be a whole number of days from 1 to {limits.MAX_BACKTEST_DAYS}"
        raise ApplicationError(
            400, "invalid_period", f"days: {message}.", errors=[{"path": "days", "message": message}]
        )
    return value


def draft_of(policy: Policy, fields: dict[str, Any]) -> Policy:
    """The policy with the form's unsaved values, checked as a save would check them (a 400 naming the field);
    never saved."""
    draft = Policy.objects.select_related("agent", "team", "route_team").get(pk=policy.pk)
    for key, value in fields.items():
        if key in EDITABLE:
            setattr(draft, key, value.strip() if key == "name" and isinstance(value, str) else value)
    check_policy(draft)
    return draft


def rules_of(policy: Policy) -> dict[str, Any]:
    """What a backtest tests and shows: the policy's snapshot, with its scope's ids."""
    return {**policy.snapshot(), "agentId": policy.agent_id, "teamId": policy.team_id}


def tested_policy(backtest: PolicyBacktest) -> Policy:
    """The (unsaved) policy a backtest's rules describe."""
    return policy_from_rules(backtest.rules)


def policy_from_rules(rules: dict[str, Any]) -> Policy:
    """The (unsaved) policy ``rules_of`` describes."""
    return Policy(
        name=rules["name"],
        agent_id=rules["agentId"],
        team_id=rules["teamId"],
        reason=rules["reason"],
        tool_name=rules["toolName"],
        subject=rules["subject"],
        match_schema=rules["matchSchema"],
        action=rules["action"],
        approvals=rules["approvals"],
    )


def people_decided(policy: Policy, since: Any, until: Any) -> QuerySet[InboxItem]:
    """The items people decided in [since, until) for the policy's agent, or the agents of its team."""
    accounts = Policy.objects.filter(service_user__isnull=False).values("service_user")
    items = InboxItem.objects.filter(status__in=InboxItem.DECIDED, decided_at__gte=since, decided_at__lt=until).exclude(
        decided_by__in=accounts
    )
    if policy.agent_id is not None:
        return items.filter(agent_id=policy.agent_id)
    return items.filter(agent_id__in=list(Agent.objects.filter(teams=policy.team_id).values_list("pk", flat=True)))


def candidates(policy: Policy, items: QuerySet[InboxItem]) -> QuerySet[InboxItem]:
    """The items whose reason and tool the policy names: the database reads those; the schema is Python's."""
    if policy.reason:
        items = items.filter(reason=policy.reason)
    if policy.tool_name:
        items = items.filter(reason="tool_call", tool_call__name=policy.tool_name)
    return items


def check_backtests_in_progress(user: Any) -> None:
    """One person has at most ``MAX_BACKTESTS_IN_PROGRESS`` backtests queued or running (429 past it). Call inside
    a transaction: the person's row is locked, so two requests at once count each other."""
    get_user_model().objects.select_for_update().filter(pk=user.pk).first()
    in_progress = PolicyBacktest.objects.filter(
        requested_by_id=user.pk, state__in=[PolicyBacktest.State.PENDING, PolicyBacktest.State.RUNNING]
    ).count()
    if in_progress >= limits.MAX_BACKTESTS_IN_PROGRESS:
        raise ApplicationError(
            429,
            "too_many_backtests",
            f"You have {in_progress} backtests queued or running; start another when one of them has finished.",
            limit=limits.MAX_BACKTESTS_IN_PROGRESS,
        )


def backtest_start(
    *, user: Any, policy: Policy, days: Any = None, draft_fields: dict[str, Any] | None = None
) -> PolicyBacktest:
    """Check and store a backtest of the policy (``draft_fields``: the form's unsaved values), read it at once when
    the period is small, else queue it for a worker (on commit)."""
    period = check_backtest_days(days)
    tested = policy if draft_fields is None else draft_of(policy, draft_fields)
    check_scope(user, tested)  # staff, or a lead of the policy's team (inbox.policies.permissions)
    until = timezone.now()
    since = until - timedelta(days=period)
    with transaction.atomic():
        check_backtests_in_progress(user)
        backtest = PolicyBacktest.objects.create(
            policy=policy,
            policy_version=policy.version,
            draft=draft_fields is not None,
            rules=rules_of(tested),
            days=period,
            since=since,
            until=until,
            requested_by=user,
        )
    return _run_or_queue(backtest, candidates(tested, people_decided(tested, since, until)).count())


def _run_or_queue(backtest: PolicyBacktest, items: int) -> PolicyBacktest:
    """A backtest of few items is read at once; a longer one is queued for a worker (recorded as failed if its
    queue cannot be reached)."""
    if items <= limits.BACKTEST_INLINE_ITEMS:
        backtest_run(backtest.pk)
        backtest.refresh_from_db()
        return backtest

    def unqueued() -> None:
        PolicyBacktest.objects.filter(pk=backtest.pk, state=PolicyBacktest.State.PENDING).update(
            state=PolicyBacktest.State.FAILED,
            error="The inbox could not queue the backtest (its queue is unreachable). Try again shortly.",
            finished_at=timezone.now(),
        )

    send_on_commit("inbox.tasks.backtest_policy", [backtest.pk], when_unqueued=unqueued, mark=_mark(backtest.pk))
    return backtest


def _mark(backtest_id: int) -> str:
    """The mark a backtest's message is recorded under while it waits in the broker (``inbox.core.queue``)."""
    return f"backtest:{backtest_id}"


class _Superseded(Exception):
    """The backtest was started again under a newer attempt: this reading stops and writes nothing more."""


def backtest_run(backtest_id: int) -> str:
    """Claim a pending backtest and read its items (a worker's task, or the request for a small period)."""
    claimed = PolicyBacktest.objects.filter(pk=backtest_id, state=PolicyBacktest.State.PENDING).update(
        state=PolicyBacktest.State.RUNNING, progress_at=timezone.now()
    )
    if claimed != 1:
        return "gone"
    backtest = PolicyBacktest.objects.get(pk=backtest_id)
    try:
        if backtest.ordered_set:
            _read_set(backtest)
        else:
            _read(backtest)
    except _Superseded:
        return "superseded"
    except Exception as error:
        log.exception("backtest %s failed", backtest_id)
        _holding(backtest).update(
            state=PolicyBacktest.State.FAILED, error=f"The backtest stopped: {error}", finished_at=timezone.now()
        )
        return "failed"
    return "done"


BACKTEST_MAX_ATTEMPTS = 3


def backtest_requeue_stalled() -> list[int]:
    """Beat's recovery sweep: queue again each unfinished backtest without progress for
    ``INBOX_BACKTEST_STALL_SECONDS``: a running one (its worker died) from the start, under the next attempt; a
    pending one (its queue message was lost, not one still waiting in its queue) as it is. A reading that stalled ``BACKTEST_MAX_ATTEMPTS`` times
    fails. Returns the ids queued again (a queue that is unreachable now is tried at the next stall)."""
    now = timezone.now()
    stalled = PolicyBacktest.objects.filter(
        state__in=[PolicyBacktest.State.PENDING, PolicyBacktest.State.RUNNING],
        progress_at__lt=now - timedelta(seconds=settings.INBOX_BACKTEST_STALL_SECONDS),
    )
    queued: list[int] = []
    found = list(stalled.values_list("pk", flat=True))
    try:  # a pending one still waiting in a long queue has not stalled: it is left alone
        in_queue = {int(mark.split(":")[1]) for mark in waiting(_mark(pk) for pk in found)}
    except Exception:  # noqa: BLE001 - Redis is unreachable: nothing can be queued now; the next sweep tries again
        return queued
    for pk in found:
        with transaction.atomic():
            backtest = PolicyBacktest.objects.select_for_update().filter(pk=pk).first()
            if backtest is None or backtest.is_finished:
                continue
            if backtest.state == PolicyBacktest.State.PENDING and pk in in_queue:
                continue
            if backtest.state == PolicyBacktest.State.PENDING:  # its queue message was lost: no reading to undo
                PolicyBacktest.objects.filter(pk=pk).update(progress_at=now)
            elif backtest.attempt + 1 >= BACKTEST_MAX_ATTEMPTS:
                PolicyBacktest.objects.filter(pk=pk).update(
                    state=PolicyBacktest.State.FAILED,
                    attempt=backtest.attempt + 1,
                    error=f"Its worker stopped {BACKTEST_MAX_ATTEMPTS} times while reading the items.",
                    finished_at=now,
                )
                continue
            else:
                backtest.findings.all().delete()
                PolicyBacktest.objects.filter(pk=pk).update(
                    state=PolicyBacktest.State.PENDING, attempt=backtest.attempt + 1, progress_at=now, scanned=0
                )
                log.warning("backtest %s stopped making progress: started again", pk)
            send_on_commit("inbox.tasks.backtest_policy", [pk], when_unqueued=lambda: None, mark=_mark(pk))
            queued.append(pk)
    return queued


def _holding(backtest: PolicyBacktest) -> QuerySet[PolicyBacktest]:
    """The backtest's row while this reading (``backtest.attempt``) still holds it."""
    return PolicyBacktest.objects.filter(pk=backtest.pk, attempt=backtest.attempt, state=PolicyBacktest.State.RUNNING)


def _progress(backtest: PolicyBacktest, findings: list[BacktestFinding], **counts: Any) -> None:
    """Write a chunk's findings and counts, unless a newer reading took the backtest over (``_Superseded``). The
    update locks the row first, so a sweep that starts it again waits for this commit and removes these findings
    with the rest."""
    with transaction.atomic():
        if not _holding(backtest).update(progress_at=timezone.now(), **counts):
            raise _Superseded
        BacktestFinding.objects.bulk_create(findings)


def backtest_rows(policy: Policy, since: Any, until: Any) -> QuerySet[InboxItem, tuple[Any, ...]]:
    """The candidates' columns a backtest reads: id, reason, tool call, metadata, what people decided and, for an
    approve policy, whether a person denied the agent's follow-up (``denied_next``)."""
    rows = candidates(policy, people_decided(policy, since, until))
    columns = ["pk", "reason", "tool_call", "metadata", "outcome"]
    if policy.action == Policy.Action.APPROVE:
        accounts = Policy.objects.filter(service_user__isnull=False).values("service_user")
        denied_next = InboxItem.objects.filter(
            run_id=OuterRef("run__resume__resumed_run"), outcome=InboxItem.Outcome.DENIED
        ).exclude(decided_by__in=accounts)
        rows = rows.annotate(denied_next=Exists(denied_next))
        columns.append("denied_next")
    return rows.order_by().values_list(*columns)


def _read(backtest: PolicyBacktest) -> None:
    policy = tested_policy(backtest)
    decided = people_decided(policy, backtest.since, backtest.until)
    total = candidates(policy, decided).count()
    decided_count = decided.count() if policy.reason or policy.tool_name else total
    _progress(backtest, [], total=total, decided=decided_count)
    approve = policy.action == Policy.Action.APPROVE
    outcomes: Counter[str] = Counter()
    compared = agreed = found_wrong = scanned = 0
    findings: list[BacktestFinding] = []
    matches = policy_matcher(policy.match_schema)
    rows = backtest_rows(policy, backtest.since, backtest.until)
    for row in rows.iterator(chunk_size=limits.BACKTEST_CHUNK):
        scanned += 1
        pk, reason, tool_call, metadata, outcome = row[:5]
        if policy_applies_to(policy, reason=reason, tool_call=tool_call, metadata=metadata, matches=matches):
            outcomes[outcome] += 1
            verdict = agrees(policy.action, outcome)
            if verdict is not None:
                compared += 1
                agreed += verdict
                if not verdict:
                    findings.append(BacktestFinding(backtest=backtest, item_id=pk, kind=BacktestFinding.Kind.DISAGREED))
            if approve and row[5] and outcome in APPROVALS:
                found_wrong += 1
                findings.append(BacktestFinding(backtest=backtest, item_id=pk, kind=BacktestFinding.Kind.FOUND_WRONG))
        if scanned % limits.BACKTEST_CHUNK == 0:
            _progress(backtest, findings, scanned=scanned)
            findings.clear()
    _progress(
        backtest,
        findings,
        state=PolicyBacktest.State.DONE,
        scanned=scanned,
        matched=sum(outcomes.values()),
        compared=compared,
        agreed=agreed,
        found_wrong=found_wrong,
        outcomes=dict(outcomes),
        finished_at=timezone.now(),
    )


# --- the ordered set of enforced policies ------------------------------------------------------------------


def enforced_in_order(candidate: Policy | None = None) -> list[Policy]:
    """The enabled enforced policies in the order ingest runs them (``position``, then id), with ``candidate`` (a
    shadow or disabled policy) among them at its position as if it were enforced."""
    policies = list(
        Policy.objects.filter(enabled=True, mode=Policy.Mode.ENFORCE)
        .select_related("agent", "team", "route_team")
        .order_by("position", "pk")
    )
    if candidate is not None and all(policy.pk != candidate.pk for policy in policies):
        policies.append(candidate)
        policies.sort(key=lambda policy: (policy.position, policy.pk))
    return policies


def set_rules_of(policies: list[Policy], candidate: Policy | None) -> dict[str, Any]:
    """What a backtest of the ordered set tests and shows: each policy's rules with its id and version, in order."""
    return {
        "policies": [
            {
                **rules_of(policy),
                "id": policy.pk,
                "version": policy.version,
                "candidate": candidate is not None and policy.pk == candidate.pk,
            }
            for policy in policies
        ],
        "candidate": candidate.pk if candidate is not None else None,
    }


def _set_policies(backtest: PolicyBacktest) -> list[tuple[int, Policy]]:
    return [(int(rules["id"]), policy_from_rules(rules)) for rules in backtest.rules["policies"]]


def _set_scope(policies: list[tuple[int, Policy]]) -> dict[int, list[tuple[int, Policy]]]:
    """Per agent id, the set's policies that apply to its items, in the set's order."""
    team_agents: dict[int, list[int]] = {}
    for team_id in {policy.team_id for _, policy in policies if policy.team_id is not None}:
        team_agents[team_id] = list(Agent.objects.filter(teams=team_id).values_list("pk", flat=True))
    scope: dict[int, list[tuple[int, Policy]]] = {}
    for pk, policy in policies:
        agents = [policy.agent_id] if policy.agent_id is not None else team_agents.get(policy.team_id or 0, [])
        for agent_id in agents:
            scope.setdefault(agent_id, []).append((pk, policy))
    return scope


def set_decided(backtest: PolicyBacktest) -> QuerySet[InboxItem]:
    """The items people decided in the backtest's period for the agents any policy of the set applies to."""
    accounts = Policy.objects.filter(service_user__isnull=False).values("service_user")
    agents = list(_set_scope(_set_policies(backtest)))
    return InboxItem.objects.filter(
        status__in=InboxItem.DECIDED, decided_at__gte=backtest.since, decided_at__lt=backtest.until, agent_id__in=agents
    ).exclude(decided_by__in=accounts)


def backtest_start_set(*, user: Any, days: Any = None, candidate: Policy | None = None) -> PolicyBacktest:
    """Check and store a backtest of the enforced policies in order (with ``candidate`` among them as if it were
    enforced), read at once for a small period, else queued for a worker (on commit)."""
    period = check_backtest_days(days)
    if candidate is not None and candidate.enabled and candidate.mode == Policy.Mode.ENFORCE:
        candidate = None  # it is in the set already
    policies = enforced_in_order(candidate)
    if not policies:
        message = "no policy is enforced: promote one, or test a shadow policy in the order"
        raise ApplicationError(
            400, "no_policies", f"policy: {message}", errors=[{"path": "policy", "message": message}]
        )
    until = timezone.now()
    with transaction.atomic():
        check_backtests_in_progress(user)
        backtest = PolicyBacktest.objects.create(
            policy=None,
            ordered_set=True,
            policy_version=0,
            rules=set_rules_of(policies, candidate),
            days=period,
            since=until - timedelta(days=period),
            until=until,
            requested_by=user,
        )
    return _run_or_queue(backtest, set_decided(backtest).count())


def _read_set(backtest: PolicyBacktest) -> None:
    """Each item people decided goes to the first policy of the set that matches it (as at ingest); counted against
    what people decided, in total and per policy (``breakdown``)."""
    policies = _set_policies(backtest)
    scope = _set_scope(policies)
    matchers = {pk: policy_matcher(policy.match_schema) for pk, policy in policies}
    decided = set_decided(backtest)
    total = decided.count()
    _progress(backtest, [], total=total, decided=total)
    accounts = Policy.objects.filter(service_user__isnull=False).values("service_user")
    denied_next = InboxItem.objects.filter(
        run_id=OuterRef("run__resume__resumed_run"), outcome=InboxItem.Outcome.DENIED
    ).exclude(decided_by__in=accounts)
    rows = (
        decided.annotate(denied_next=Exists(denied_next))
        .order_by()
        .values_list("pk", "agent_id", "reason", "tool_call", "metadata", "outcome", "denied_next")
    )
    per_policy: dict[int, dict[str, Any]] = {
        pk: {"policy": pk, "name": policy.name, "matched": 0, "compared": 0, "agreed": 0, "foundWrong": 0}
        for pk, policy in policies
    }
    outcomes: Counter[str] = Counter()
    compared = agreed = found_wrong = scanned = 0
    findings: list[BacktestFinding] = []
    for pk, agent_id, reason, tool_call, metadata, outcome, was_denied_next in rows.iterator(
        chunk_size=limits.BACKTEST_CHUNK
    ):
        scanned += 1
        for policy_pk, policy in scope.get(agent_id, []):
            if not policy_applies_to(
                policy, reason=reason, tool_call=tool_call, metadata=metadata, matches=matchers[policy_pk]
            ):
                continue
            row = per_policy[policy_pk]
            row["matched"] += 1
            outcomes[outcome] += 1
            verdict = agrees(policy.action, outcome)
            if verdict is not None:
                compared += 1
                agreed += verdict
                row["compared"] += 1
                row["agreed"] += verdict
                if not verdict:
                    findings.append(
                        BacktestFinding(
                            backtest=backtest, item_id=pk, kind=BacktestFinding.Kind.DISAGREED, policy_id=policy_pk
                        )
                    )
            if policy.action == Policy.Action.APPROVE and was_denied_next and outcome in APPROVALS:
                found_wrong += 1
                row["foundWrong"] += 1
                findings.append(
                    BacktestFinding(
                        backtest=backtest, item_id=pk, kind=BacktestFinding.Kind.FOUND_WRONG, policy_id=policy_pk
                    )
                )
            break  # the first policy that matches acts
        if scanned % limits.BACKTEST_CHUNK == 0:
            _progress(backtest, findings, scanned=scanned)
            findings.clear()
    _progress(
        backtest,
        findings,
        state=PolicyBacktest.State.DONE,
        scanned=scanned,
        matched=sum(outcomes.values()),
        compared=compared,
        agreed=agreed,
        found_wrong=found_wrong,
        outcomes=dict(outcomes),
        breakdown=list(per_policy.values()),
        finished_at=timezone.now(),
    )
