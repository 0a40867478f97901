"""A long backtest goes to a real Celery worker: the request answers at once (202), the worker reads the items and
the API then gives the same result a short backtest gives at once."""

from __future__ import annotations

import json

import pytest

from inbox import limits
from inbox.models.policies import PolicyBacktest
from tests.agent_servers import wait_for
from tests.policies.history import internal_email_with_history

pytestmark = [pytest.mark.worker]


def test_a_queued_backtest_is_read_by_the_worker(
    transactional_db, agent, alice, staff, client, start_worker, monkeypatch
):
    policy = internal_email_with_history(staff, agent.agent, alice)
    monkeypatch.setattr(limits, "BACKTEST_INLINE_ITEMS", 1)
    client.force_login(staff)
    start_worker()
    response = client.post(
        f"/api/v1/policies/{policy.pk}/backtests", data=json.dumps({"days": 30}), content_type="application/json"
    )
    assert response.status_code == 202, response.content
    url = response.json()["url"]
    done = wait_for(
        lambda: (body := client.get(url).json())["state"] == "done" and body,
        timeout=60,
        what="the worker to finish the backtest",
    )
    assert (done["decided"], done["matched"], done["agreed"], done["disagreed"], done["foundWrong"]) == (8, 5, 2, 3, 1)
    assert done["scanned"] == done["total"] == 6 and done["percent"] == 100
    assert PolicyBacktest.objects.get().findings.count() == 4
