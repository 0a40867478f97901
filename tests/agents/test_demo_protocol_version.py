"""The bundled demo agent declares the AG-UI version it speaks on every run it opens, as a 1.0 producer must
(``ag_ui.core.version``: ``RUN_STARTED.protocolVersion``), new runs and resumed ones alike."""

from __future__ import annotations

from agents.demo import DemoAgent


def test_the_demo_agent_declares_ag_ui_1_0_on_run_started():
    demo = DemoAgent()
    paused = demo.handle(
        {"threadId": "t-v", "runId": "r-1", "messages": [{"id": "u1", "role": "user", "content": "email"}]}
    )
    started = paused[0].model_dump(mode="json", by_alias=True, exclude_none=True)
    assert (started["type"], started["protocolVersion"]) == ("RUN_STARTED", "1.0")
    interrupt = paused[-1].outcome.interrupts[0]
    resumed = demo.handle(
        {
            "threadId": "t-v",
            "runId": "r-2",
            "messages": [],
            "resume": [{"interruptId": interrupt.id, "status": "resolved", "payload": {"approved": True}}],
        }
    )
    assert resumed[0].model_dump(mode="json", by_alias=True)["protocolVersion"] == "1.0"
