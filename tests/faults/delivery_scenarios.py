"""Fault-suite scenarios for slow agents: one copy of a resume at a time, whatever the agent does for 150 s.

``Suite`` (tests/faults/suite.py) inherits these; they use its helpers (``new_runs``, ``decide``, ``settle``,
``demo_record``) and the demo agent's ``POST /pace`` with a thread prefix, so only these runs are slow.

- **silent-150s**: the agent executes the resume at once, then says nothing, not even its response headers, for
  150 s. The inbox gives up after ``INBOX_AGENT_READ_TIMEOUT`` and the resume ends ``failed`` (a person decides
  whether to send it again): for the whole 150 s it holds the copy, no second one is sent.
- **keepalive-150s**: the agent answers 200 and streams keep-alives for 150 s before its events. The inbox cuts
  the reply at ``INBOX_AGENT_STREAM_DEADLINE`` and the resume ends ``accepted`` (delivered, result unknown):
  one copy, never resent, never ``failed``.
"""

from __future__ import annotations

import time
from typing import Any

SLOW_SECONDS = 150.0


class DeliveryScenarios:
    """Mixin of ``tests.faults.suite.Suite``."""

    def _slow_agent(self: Any, name: str, scenario: str, proves: str, *, silent: bool, expect: str, knob: str) -> Any:
        from django.db import close_old_connections

        from inbox.models import Resume
        from tests.faults.suite import Row

        row = Row(scenario, proves)
        row.expect_states = (expect,)
        prefix = f"{scenario}-"
        self.http.post(
            self.cluster.demo_url + "pace",
            json={"resumeSeconds": SLOW_SECONDS, "silent": silent, "threadPrefix": prefix},
            timeout=5,
        )
        threads = self.new_runs(row, 2)
        for thread_id in threads:
            self.decide(row.scenario, thread_id)
        decided = time.monotonic()
        ended_at: dict[str, float] = {}
        most_copies = 0
        copies: dict[str, int] = {}
        # For as long as the agent holds its copy (and a few sweeps more), count what it received.
        while time.monotonic() < decided + SLOW_SECONDS + 5:
            close_old_connections()
            received = [r for r in self.demo_record()["requests"] if r.get("resume") and r["threadId"] in threads]
            copies = {t: sum(1 for r in received if r["threadId"] == t) for t in threads}
            most_copies = max([most_copies, *copies.values()])
            for thread_id, state in Resume.objects.filter(thread__thread_id__in=threads).values_list(
                "thread__thread_id", "state"
            ):
                if state not in ("pending", "sending"):
                    ended_at.setdefault(thread_id, time.monotonic() - decided)
            if len(ended_at) == len(threads) and name in self.watching:
                self.watching[name].set()  # the other scenarios may run beside the rest of the watch (Suite.run)
            time.sleep(2)
        self.http.post(self.cluster.demo_url + "pace", json={"resumeSeconds": 0, "threadPrefix": prefix}, timeout=5)
        self.settle(row, timeout=10)
        resumes = list(Resume.objects.filter(thread__thread_id__in=threads).values_list("state", "attempts"))
        if most_copies > 1:
            row.failures.append(f"the agent received {most_copies} copies of one resume while it held the first")
        if sorted(copies.values()) != [1] * len(row.threads):
            row.failures.append(f"copies the agent received per run: {sorted(copies.values())}, expected one each")
        for state, attempts in resumes:
            if state != expect or attempts != 1:
                row.failures.append(f"a resume ended {state} after {attempts} attempt(s), documented: {expect}, 1")
        ends = ", ".join(f"{seconds:.0f} s" for seconds in sorted(ended_at.values())) or "never"
        row.recovery = f"{expect} at {ends} ({knob} {self.cluster.env.get(knob, '?')} s); 1 copy each over 150 s"
        return row

    def scenario_silent_agent_150s(self: Any) -> Any:
        return self._slow_agent(
            "silent_agent_150s",
            "silent-150s",
            "an agent silent for 150 s gets one copy while it holds it; the resume ends failed, for a person",
            silent=True,
            expect="failed",
            knob="INBOX_AGENT_READ_TIMEOUT",
        )

    def scenario_keepalive_agent_150s(self: Any) -> Any:
        return self._slow_agent(
            "keepalive_agent_150s",
            "keepalive-150s",
            "an agent sending keep-alives for 150 s gets one copy; the resume ends accepted (result unknown)",
            silent=False,
            expect="accepted",
            knob="INBOX_AGENT_STREAM_DEADLINE",
        )
