"""One person's backtests are bounded: past ``MAX_BACKTESTS_IN_PROGRESS`` queued or running, another is 429 (API
and page) and stores nothing; another person, or the same one once one has finished, may start one."""

from __future__ import annotations

import json

import pytest
from django.test import Client
from django.utils import timezone

from inbox import limits
from inbox.models.policies import Policy, PolicyBacktest
from inbox.policies.services import policy_create
from tests.factories import UserFactory


@pytest.fixture
def policy(staff, agent) -> Policy:
    return policy_create(user=staff, fields={"name": "Machine", "agent": agent.agent, "action": "approve"})


def queued(policy: Policy, user, count: int) -> list[PolicyBacktest]:
    now = timezone.now()
    return [
        PolicyBacktest.objects.create(
            policy=policy, policy_version=policy.version, rules={}, days=30, since=now, until=now, requested_by=user
        )
        for _ in range(count)
    ]


def start(client: Client, policy: Policy):
    return client.post(
        f"/api/v1/policies/{policy.pk}/backtests", data=json.dumps({"days": 30}), content_type="application/json"
    )


def test_a_person_with_backtests_in_progress_up_to_the_bound_is_refused_another(policy, staff):
    waiting = queued(policy, staff, limits.MAX_BACKTESTS_IN_PROGRESS)
    client = Client()
    client.force_login(staff)

    response = start(client, policy)

    assert response.status_code == 429, response.content
    assert response.json()["error"] == "too_many_backtests"
    assert PolicyBacktest.objects.count() == limits.MAX_BACKTESTS_IN_PROGRESS
    page = client.post(f"/policies/{policy.pk}/backtests/", {"days": "30"})
    assert page.status_code == 429
    assert PolicyBacktest.objects.count() == limits.MAX_BACKTESTS_IN_PROGRESS

    other = Client()
    other.force_login(UserFactory(username="other-staff", is_staff=True))
    assert start(other, policy).status_code in (201, 202)
    PolicyBacktest.objects.filter(pk=waiting[0].pk).update(state=PolicyBacktest.State.DONE)
    assert start(client, policy).status_code in (201, 202)
