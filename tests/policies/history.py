"""Decided items as a month of use leaves them, for the backtest tests: each named for what a backtest of the
"Internal email" policy (approve sendEmail to @ourco.com) must make of it."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.utils import timezone

from agents.models import Agent
from inbox.models import InboxItem, Resume
from tests.factories import InboxItemFactory, RunFactory

INTERNAL = {"type": "object", "properties": {"to": {"type": "string", "pattern": "@ourco\\.com$"}}, "required": ["to"]}


def decided_item(
    agent: Agent,
    name: str,
    *,
    tool: str = "sendEmail",
    to: str = "",
    status: str = InboxItem.Status.RESOLVED,
    payload: Any = None,
    days_ago: float = 2,
    by: Any = None,
    run: Any = None,
    schema: Any = None,
) -> InboxItem:
    moment = timezone.now() - timedelta(days=days_ago)
    run = run or RunFactory(agent=agent, run_id=f"run-{name}", created_at=moment)
    decided = status != InboxItem.Status.OPEN
    return InboxItemFactory(
        run=run,
        position=0,
        reason="tool_call",
        message=f"{tool} for {name}?",
        tool_call_id=f"tc-{name}",
        tool_call={"id": f"tc-{name}", "name": tool, "args": {"to": to or f"{name}@ourco.com"}},
        response_schema=schema,
        created_at=moment - timedelta(minutes=5),
        expires_at=moment + timedelta(hours=1),
        status=status,
        response_payload=payload if decided else None,
        decided_at=moment if decided else None,
        decided_by=by if decided else None,
    )


APPROVED = {"approved": True}
DENIED = {"approved": False}
# A schema that offers edits: only then is an answer with editedArgs an approval with edits.
EDITS = {
    "type": "object",
    "properties": {"approved": {"type": "boolean"}, "editedArgs": {"type": "object"}},
    "required": ["approved"],
}


def seed_history(agent: Agent, other_agent: Agent, person: Any, policy_account: Any) -> dict[str, InboxItem]:
    """The history, by name. In the last 30 days people decided, for ``agent``: ann, bob, cy, dee (sendEmail to
    @ourco.com: approved, denied, approved with edits, cancelled), eve (to @evil.com, denied), hal (a payInvoice,
    approved), jo (approved; the run that answered its resume asked again and a person denied that: kay).
    Not in the backtest: fay (41 days ago), gus (open), ian (decided by a policy), oto (another agent)."""
    items = {
        "ann": decided_item(agent, "ann", payload=APPROVED, by=person),
        "bob": decided_item(agent, "bob", payload=DENIED, by=person),
        "cy": decided_item(
            agent, "cy", payload={"approved": True, "editedArgs": {"to": "x@ourco.com"}}, by=person, schema=EDITS
        ),
        "dee": decided_item(agent, "dee", status=InboxItem.Status.CANCELLED, by=person),
        "eve": decided_item(agent, "eve", to="eve@evil.com", payload=DENIED, by=person),
        "hal": decided_item(agent, "hal", tool="payInvoice", payload=APPROVED, by=person),
        "jo": decided_item(agent, "jo", payload=APPROVED, by=person, days_ago=3),
        "fay": decided_item(agent, "fay", payload=APPROVED, by=person, days_ago=41),
        "gus": decided_item(agent, "gus", status=InboxItem.Status.OPEN),
        "ian": decided_item(agent, "ian", payload=APPROVED, by=policy_account),
        "oto": decided_item(other_agent, "oto", payload=APPROVED, by=person),
    }
    follow_up_run = RunFactory(agent=agent, thread=items["jo"].thread, run_id="run-jo-resumed", source="resume")
    Resume.objects.create(
        run=items["jo"].run,
        thread=items["jo"].thread,
        agent=agent,
        next_run_id="run-jo-resumed",
        input={},
        state=Resume.State.DELIVERED,
        resumed_run=follow_up_run,
    )
    items["kay"] = decided_item(agent, "kay", tool="payInvoice", payload=DENIED, by=person, run=follow_up_run)
    return items


def internal_email_with_history(staff: Any, agent: Agent, person: Any) -> Any:
    """The "Internal email" policy (shadow: approve sendEmail to @ourco.com) over ``seed_history``, whose policy-made
    decision (ian) is another policy's."""
    from inbox.policies.services import policy_create
    from tests.factories import AgentFactory

    policy = policy_create(
        user=staff,
        fields={
            "name": "Internal email",
            "agent": agent,
            "reason": "tool_call",
            "tool_name": "sendEmail",
            "match_schema": INTERNAL,
            "action": "approve",
        },
    )
    machine = policy_create(user=staff, fields={"name": "Machine", "agent": agent, "action": "approve"})
    seed_history(agent, AgentFactory(slug="other"), person, machine.service_user)
    return policy
