"""An item a policy routes to another team is that team's: its members hear of it live (list pages, the
item's decision and its run's resume), and its decisions are in their exports, filed under their team."""

from __future__ import annotations

import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth.models import Group
from django.test import Client

from inbox.decisions.services import decision_submit
from inbox.live import push as live
from inbox.models import InboxItem
from inbox.policies.services import policy_create
from tests.helpers.exports import read_csv
from tests.helpers.websockets import connected, session_cookie
from tests.helpers.websockets import run_scenario as run_async
from tests.policies.runs import post_tool_run

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def refunds_to_finance(staff, agent, dave):
    return policy_create(
        user=staff,
        fields={
            "name": "Refunds to finance",
            "agent": agent.agent,
            "tool_name": "refundPayment",
            "action": "route",
            "route_team": Group.objects.get(name="finance"),
            "mode": "enforce",
        },
    )


def test_the_routed_team_hears_the_item_arrive_and_its_decision(ingest, agent, dave, refunds_to_finance):
    cookie = session_cookie(dave)  # finance only: not a member of the agent's team
    post = sync_to_async(post_tool_run)

    async def scenario() -> None:
        socket = await connected(cookie)
        run = await post(ingest, agent, "t1", "r1", ("refundPayment", {"amount": 10}), ("sendEmail", {"to": "a@b"}))
        refund = await sync_to_async(InboxItem.objects.get)(run=run, position=0)
        message = await socket.receive_json_from(timeout=5)
        assert message["event"] == "item.created" and message["payload"]["item"] == refund.pk
        await sync_to_async(decision_submit)(
            item_id=refund.pk, user=dave, status="resolved", payload={"approved": True}
        )
        message = await socket.receive_json_from(timeout=5)
        assert message["event"] == "item.decided" and message["payload"]["item"] == refund.pk
        # Nothing about the e-mail item (the agent's team's): the next message is the marker.
        await sync_to_async(live.send_now)([f"inbox.user.{dave.pk}"], "marker", {})
        assert (await socket.receive_json_from(timeout=5))["event"] == "marker"
        await socket.disconnect()

    run_async(scenario)


def test_the_routed_teams_decisions_are_in_its_export_under_its_name(ingest, agent, dave, alice, refunds_to_finance):
    run = post_tool_run(ingest, agent, "t1", "r1", ("refundPayment", {"amount": 10}), ("sendEmail", {"to": "a@b"}))
    refund, email = InboxItem.objects.get(run=run, position=0), InboxItem.objects.get(run=run, position=1)
    decision_submit(item_id=refund.pk, user=dave, status="resolved", payload={"approved": True})
    decision_submit(item_id=email.pk, user=alice, status="resolved", payload={"approved": False})

    def exported(user, query: str = "") -> list[str]:
        client = Client()
        client.force_login(user)
        response = client.get(f"/audit/export/decisions.csv?{query}")
        assert response.status_code == 200
        return [row["interrupt_id"] for row in read_csv(response)]

    assert exported(dave) == [refund.interrupt_id]
    assert exported(dave, "team=finance") == [refund.interrupt_id]
    assert exported(alice) == [email.interrupt_id]  # the routed item is finance's, not the agent's team's
    assert exported(alice, "team=ops") == [email.interrupt_id]
