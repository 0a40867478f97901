"""The whole loop with a real Celery worker on real Redis and the demo agent in a subprocess:
decisions → Resume row → dispatch task queued on commit → the agent's resumed run → shown on the run."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from inbox.decisions.services import decision_submit
from inbox.ingest.start import run_start
from inbox.models import InboxItem, Resume, Run
from inbox.resumes.services import resume_requeue_stuck
from tests.agent_servers import AgentProcess, Reply, wait_for
from tests.conftest import free_port

pytestmark = [pytest.mark.worker, pytest.mark.integration]

FAST_RETRIES = {
    "INBOX_RESUME_BACKOFF_BASE": "0.2",
    "INBOX_RESUME_BACKOFF_CAP": "0.5",
}


def resume_in(run: Run, *states: str, timeout: float = 30) -> Resume:
    return wait_for(
        lambda: Resume.objects.filter(run=run, state__in=states).first(),
        timeout=timeout,
        what=f"the resume of {run.run_id} to be {'/'.join(states)}",
    )


def resumes_received(agent: AgentProcess) -> list[dict]:
    return [request for request in agent.record()["requests"] if request["resume"]]


def test_parallel_approve_approve_cancel_is_delivered_by_the_worker(demo, demo_agent, alice, client, start_worker):
    start_worker()
    run = run_start(agent=demo.agent, user=alice, message="parallel").run
    first, second, third = run.items.order_by("position")
    decision_submit(item_id=first.pk, user=alice, status="resolved", payload={"approved": True})
    decision_submit(item_id=second.pk, user=alice, status="resolved", payload={"approved": True})
    decision_submit(item_id=third.pk, user=alice, status="cancelled")

    resume = resume_in(run, "delivered")
    assert [call["toolCallId"] for call in demo_agent.record()["executed"]] == [first.tool_call_id, second.tool_call_id]
    # What the run page's API shows.
    client.force_login(alice)
    shown = client.get(f"/api/v1/runs/{run.pk}").json()
    assert shown["resume"]["state"] == "delivered"
    assert shown["resume"]["attempts"] == 1
    assert shown["resume"]["input"] == resume.input
    assert shown["resume"]["resumedRun"]["outcome"] == "success"
    assert [event["type"] for event in shown["resume"]["resumedRun"]["events"]][-1] == "RUN_FINISHED"
    results = {item["interruptId"]: item["tool_result"] for item in shown["items"]}
    assert results[third.interrupt_id] is None and results[first.interrupt_id]["runId"] == resume.next_run_id


def test_a_two_step_chain_finishes_through_the_worker(demo, demo_agent, alice, start_worker):
    start_worker()
    run = run_start(agent=demo.agent, user=alice, message="chain").run
    decision_submit(item_id=run.items.get().pk, user=alice, status="resolved", payload={"approved": True})
    second = resume_in(run, "delivered").resumed_run
    step2 = second.items.get()
    assert (step2.reason, step2.status) == ("confirmation", "open")
    decision_submit(item_id=step2.pk, user=alice, status="resolved", payload={"approved": True})
    third = resume_in(second, "delivered").resumed_run
    assert third.outcome == "success"
    assert [call["name"] for call in demo_agent.record()["executed"]] == ["createInvoice", "sendInvoice"]


def test_an_agent_that_is_down_gets_the_resume_once_it_is_back(make_agent, alice, start_worker, tmp_path):
    agent_process = AgentProcess(free_port(), state_file=tmp_path / "demo-state.pickle", log_dir=tmp_path).start()
    try:
        agent = make_agent("demo", endpoint=agent_process.url).agent
        run = run_start(agent=agent, user=alice, message="email").run
        agent_process.stop()
        start_worker(extra_env=FAST_RETRIES)
        decision_submit(item_id=run.items.get().pk, user=alice, status="resolved", payload={"approved": True})

        wait_for(
            lambda: Resume.objects.filter(run=run, state="pending", attempts__gte=2).exists(),
            what="two failed attempts",
        )
        assert "Could not reach the agent" in Resume.objects.get(run=run).last_error
        agent_process.start()

        resume = resume_in(run, "delivered")
        assert resume.attempts >= 3
        assert len(resumes_received(agent_process)) == 1
        assert [r["kind"] for r in agent_process.record()["runs"]] == ["start", "resume"]
        assert len(agent_process.record()["executed"]) == 1
    finally:
        agent_process.stop()


def test_run_error_is_shown_and_an_operator_retry_sends_the_same_run_id(
    demo, demo_agent, alice, staff, client, start_worker
):
    start_worker()
    run = run_start(agent=demo.agent, user=alice, message="email").run
    demo_agent.reset()  # the agent lost the thread: it cannot correlate the resume
    decision_submit(item_id=run.items.get().pk, user=alice, status="resolved", payload={"approved": True})

    resume = resume_in(run, "failed")
    assert "Cannot correlate the resume" in resume.last_error
    client.force_login(staff)
    shown = client.get(f"/api/v1/runs/{run.pk}").json()["resume"]
    assert shown["state"] == "failed" and "Cannot correlate" in shown["last_error"]

    response = client.post(f"/api/v1/runs/{run.pk}/resume/retry")
    assert response.status_code == 202, response.content
    wait_for(lambda: len(resumes_received(demo_agent)) == 2, what="the retried resume at the agent")
    resume_in(run, "failed")
    first, again = resumes_received(demo_agent)
    assert first["runId"] == again["runId"] == resume.next_run_id
    assert first["input"] == again["input"]
    assert client.post(f"/api/v1/runs/{run.pk}/resume/retry").status_code == 202  # still failed: allowed


def test_an_item_that_expires_before_the_send_expires_the_resume(demo, demo_agent, alice, start_worker):
    run = run_start(agent=demo.agent, user=alice, message="email").run
    decision_submit(item_id=run.items.get().pk, user=alice, status="resolved", payload={"approved": True})
    assert Resume.objects.get(run=run).state == "pending"
    InboxItem.objects.filter(run=run).update(expires_at=timezone.now() - timedelta(seconds=1))
    start_worker()  # picks up the dispatch queued at the decision

    resume = resume_in(run, "expired")
    assert "not sent" in resume.last_error and "the resume was never sent" in resume.last_error
    assert resumes_received(demo_agent) == []


def test_a_worker_killed_mid_send_loses_its_lease_and_the_resume_is_sent_once_more(
    demo, demo_agent, alice, start_worker, scripted
):
    run = run_start(agent=demo.agent, user=alice, message="email").run
    hanging = scripted(Reply(hang=True))
    type(demo.agent).objects.filter(pk=demo.agent.pk).update(endpoint_url=hanging.url)
    lease = {"INBOX_RESUME_LEASE_SECONDS": "2", "INBOX_RESUME_LEASE_RENEW_SECONDS": "0.5"}
    worker = start_worker(extra_env=lease)
    decision_submit(item_id=run.items.get().pk, user=alice, status="resolved", payload={"approved": True})

    wait_for(lambda: hanging.received, what="the worker to claim and send")
    # While the worker lives, its lease is renewed and nothing is requeued, however long the agent takes.
    first_lease = Resume.objects.get(run=run).lease_until
    wait_for(lambda: Resume.objects.get(run=run).lease_until > first_lease + timedelta(seconds=1), what="a renewal")
    assert resume_requeue_stuck() == 0
    worker.kill()
    type(demo.agent).objects.filter(pk=demo.agent.pk).update(endpoint_url=demo_agent.url)

    wait_for(lambda: Resume.objects.get(run=run).lease_until < timezone.now(), what="the lease to lapse")
    assert resume_requeue_stuck() == 1
    start_worker()
    resume = resume_in(run, "delivered")
    assert resume.attempts == 2
    (delivered,) = resumes_received(demo_agent)
    assert hanging.received == [delivered["input"]] == [resume.input]
    assert len(demo_agent.record()["executed"]) == 1
