"""A realistic mixed load on the inbox, for Locust (run by ``bench/mixed_load.py``, which sets everything up).

- ``AgentUser`` (one per registered agent): runs a scenario on the demo agent and posts the run (1–3
  interrupts) to ``POST /api/v1/runs``; a share carry ``expiresAt`` a minute ahead, so the sweep has work too.
- ``Approver``: logged in (a session made beforehand), keeps a websocket open on ``/ws/inbox/`` (reading what the
  server pushes), lists the inbox, opens items and decides them through the item form. Approvers pick among
  the first rows of the same list, so some race on one item: the loser gets the expected 409.

Configuration comes from the environment (``INBOX_LOAD_TOKENS``: comma-separated agent tokens;
``INBOX_LOAD_SESSIONS``: comma-separated session keys of logged-in approvers; ``INBOX_LOAD_DEMO_URL``). At the end it prints the
sustained decisions per second. Every request goes to the ``--host`` given (127.0.0.1).
"""

from __future__ import annotations

import itertools
import json
import os
import random
import re
import threading
import time
import uuid

import gevent
import websocket
from locust import HttpUser, between, events, task

TOKENS = [t for t in os.environ.get("INBOX_LOAD_TOKENS", "").split(",") if t]
SESSIONS = [s for s in os.environ.get("INBOX_LOAD_SESSIONS", "").split(",") if s]
DEMO_URL = os.environ.get("INBOX_LOAD_DEMO_URL", "")
EXPIRING_SHARE = 0.2
ITEM_LINK = re.compile(r'data-item-id="(\d+)" data-status="open"')
CSRF_INPUT = re.compile(r'name="csrfmiddlewaretoken" value="([^"]+)"')

_tokens = itertools.cycle(TOKENS)
_sessions = itertools.cycle(SESSIONS)
_lock = threading.Lock()
_decisions = {"stored": 0, "conflicts": 0, "first": 0.0, "last": 0.0}


def _next(source: itertools.cycle) -> str:
    with _lock:
        return next(source)


class AgentUser(HttpUser):
    """An agent with a relay beside it: it runs a scenario on the demo agent (which interrupts with 1 or 3
    tool calls), then posts that run's events to the inbox. The inbox later resumes the run on the demo agent,
    which knows the thread and answers as an agent would."""

    weight = 20
    wait_time = between(1.0, 3.0)

    def on_start(self) -> None:
        self.token = _next(_tokens)

    @task
    def post_run(self) -> None:
        thread, run = f"load-{uuid.uuid4().hex[:12]}", f"run-{uuid.uuid4().hex[:8]}"
        scenario = random.choice(["email", "parallel", "chain"])  # 1, 3, or 1 then 1 more after the resume
        props = {"ttlSeconds": 60} if random.random() < EXPIRING_SHARE else {}
        run_input = {
            "threadId": thread,
            "runId": run,
            "state": {},
            "messages": [{"id": f"m-{run}", "role": "user", "content": scenario}],
            "tools": [],
            "context": [],
            "forwardedProps": props,
        }
        answer = self.client.post(
            DEMO_URL, json=run_input, headers={"Accept": "text/event-stream"}, name="agent: run on the demo agent"
        )
        events_ = [json.loads(line[5:]) for line in answer.text.splitlines() if line.startswith("data:")]
        if not events_:
            return
        self.client.post(
            "/api/v1/runs",
            json={"events": events_},
            headers={"Authorization": f"Bearer {self.token}"},
            name="POST /api/v1/runs",
        )


class Approver(HttpUser):
    weight = 50
    wait_time = between(0.5, 2.0)

    def on_start(self) -> None:
        # Logged in already (bench/mixed_load.py made the session): the browser's session cookie.
        self.client.cookies.set("sessionid", _next(_sessions), domain="127.0.0.1")
        self.socket: websocket.WebSocket | None = None
        self.reader = gevent.spawn(self._listen)

    def on_stop(self) -> None:
        self.reader.kill()
        if self.socket is not None:
            self.socket.close()

    def _listen(self) -> None:
        """The live page's websocket: open it and read what the server pushes, as a browser tab does."""
        cookies = "; ".join(f"{c.name}={c.value}" for c in self.client.cookies)
        url = self.host.replace("http://", "ws://") + "/ws/inbox/"
        started = time.perf_counter()
        try:
            self.socket = websocket.create_connection(url, header=[f"Cookie: {cookies}"], origin=self.host)
        except Exception as exc:  # noqa: BLE001 - reported as a Locust failure
            events.request.fire(
                request_type="WS", name="/ws/inbox/ connect", response_time=0, response_length=0, exception=exc
            )
            return
        events.request.fire(
            request_type="WS",
            name="/ws/inbox/ connect",
            response_time=(time.perf_counter() - started) * 1000,
            response_length=0,
            exception=None,
        )
        while True:
            try:
                message = self.socket.recv()
            except Exception:  # noqa: BLE001 - the socket closed at the end of the run
                return
            events.request.fire(
                request_type="WS", name="/ws/inbox/ message", response_time=0, response_length=len(message or "")
            )

    @task
    def work_the_inbox(self) -> None:
        listing = self.client.get("/inbox/", name="GET /inbox/")
        ids = ITEM_LINK.findall(listing.text)[:5]  # the first rows: several approvers race for them
        if not ids:
            return
        pk = random.choice(ids)
        page = self.client.get(f"/inbox/items/{pk}/", name="GET /inbox/items/<id>/")
        match = CSRF_INPUT.search(page.text)
        if page.status_code != 200 or match is None:
            return
        with self.client.post(
            f"/inbox/items/{pk}/decide/",
            data={"action": "approve", "csrfmiddlewaretoken": match.group(1)},
            headers={"Referer": f"{self.host}/inbox/items/{pk}/"},
            allow_redirects=False,
            name="POST /inbox/items/<id>/decide/",
            catch_response=True,
        ) as response:
            now = time.time()
            with _lock:
                if response.status_code == 302:
                    _decisions["stored"] += 1
                    _decisions["first"] = _decisions["first"] or now
                    _decisions["last"] = now
                    response.success()
                elif response.status_code == 409:  # another approver decided it first, or it expired
                    _decisions["conflicts"] += 1
                    response.success()
                else:
                    response.failure(f"unexpected {response.status_code}")
        if response.status_code == 302:
            self.client.get(f"/inbox/items/{pk}/", name="GET /inbox/items/<id>/ (after deciding)")

    @task(2)
    def glance(self) -> None:
        self.client.get("/inbox/?tab=decided", name="GET /inbox/?tab=decided")


@events.quitting.add_listener
def report(environment, **_kwargs) -> None:
    span = max(1e-9, _decisions["last"] - _decisions["first"])
    print(
        f"decisions stored: {_decisions['stored']}, expected 409s (raced or expired): {_decisions['conflicts']}, "
        f"sustained {_decisions['stored'] / span:.1f} decisions/s over {span:.0f} s"
    )
