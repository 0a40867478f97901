"""Starting a run through the API as a client sees it: the 202, then the worker's part run here, then the start."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any


@dataclass
class StartOutcome:
    """What ``POST /api/v1/agents/<slug>/runs`` came to: ``status_code`` and ``json()`` are the refusal when the
    request was refused or the start failed (its ``error``), else 201 and the run."""

    status_code: int
    body: dict[str, Any]
    start: dict[str, Any] | None = None
    content: bytes = b""  # the last response's body, as the client read it

    def json(self) -> dict[str, Any]:
        return self.body


def start_run(client: Any, slug: str, body: dict[str, Any], **extra: Any) -> StartOutcome:
    """POST a start, do the worker's part in this process (``run_start_finish``), and GET the start."""
    from inbox.ingest.start import run_start_finish

    response = client.post(
        f"/api/v1/agents/{slug}/runs", data=json.dumps(body), content_type="application/json", **extra
    )
    if response.status_code != 202:
        return StartOutcome(response.status_code, response.json(), content=response.content)
    queued = response.json()
    assert queued["state"] == "pending" and response["Location"] == queued["url"], queued
    run_start_finish(queued["id"])
    polled = client.get(queued["url"], **extra)
    start = polled.json()
    if start["state"] == "failed":
        error = start["error"]
        body = {k: v for k, v in error.items() if k != "status"}
        return StartOutcome(error["status"], body, start, polled.content)
    assert start["state"] == "done", start
    return StartOutcome(201, start["run"], start, polled.content)
