"""For agent authors: park a run's interrupts in the Approval Inbox, without Django (``httpx`` and
``ag-ui-protocol`` only).

``post_run`` POSTs one run's AG-UI events to ``<base_url>/api/v1/runs``; ``forward_interrupts`` /
``aforward_interrupts`` wrap an agent's event stream and post the run when it ends with an interrupt. How to use
them, and what ``run_input`` and ``include_messages`` do: docs/agent-client.md."""

from __future__ import annotations

import json
from collections.abc import AsyncIterable, AsyncIterator, Callable, Iterable, Iterator
from typing import Any

import httpx

_DROPPED_TYPES = {"RAW"}


class InboxError(Exception):
    """The inbox refused the run (status and its JSON error body) or could not be reached (status None)."""

    def __init__(self, message: str, *, status: int | None = None, body: Any = None):
        super().__init__(message)
        self.status = status
        self.body = body


def to_dict(event: Any) -> dict | None:
    """An AG-UI event as the wire dict (camelCase), from an SDK model, a dict, or an SSE ``data:`` string."""
    if hasattr(event, "model_dump"):
        return event.model_dump(mode="json", by_alias=True)
    if isinstance(event, dict):
        return event
    if isinstance(event, bytes):
        event = event.decode()
    if isinstance(event, str):
        data = [line[5:].removeprefix(" ") for line in event.splitlines() if line.startswith("data:")]
        return json.loads("\n".join(data)) if data else None
    raise TypeError(f"not an AG-UI event: {type(event).__name__}")


def _slim(events: Iterable[Any]) -> list[dict]:
    slim = []
    for event in events:
        data = to_dict(event)
        if not data or data.get("type") in _DROPPED_TYPES:
            continue
        slim.append({key: value for key, value in data.items() if key != "rawEvent"})
    return slim


def with_messages(events: list[dict], *, run_input: Any = None, include_messages: bool = True) -> list[dict]:
    """The run's events with the conversation the inbox needs to resume it (see the module docstring)."""
    if not include_messages:
        kept = []
        for event in events:
            if event.get("type") == "MESSAGES_SNAPSHOT":
                continue
            if event.get("type") == "RUN_STARTED" and isinstance(event.get("input"), dict):
                event = {**event, "input": {**event["input"], "messages": []}}
            kept.append(event)
        return kept
    if run_input is None:
        return events
    data = to_dict(run_input)
    started = next((i for i, event in enumerate(events) if event.get("type") == "RUN_STARTED"), None)
    if started is not None:
        if events[started].get("input") is None:
            events = [*events[:started], {**events[started], "input": data}, *events[started + 1 :]]
        return events
    finished = events[-1] if events else {}
    thread_id = finished.get("threadId") or (data or {}).get("threadId")
    run_id = finished.get("runId") or (data or {}).get("runId")
    return [{"type": "RUN_STARTED", "threadId": thread_id, "runId": run_id, "input": data}, *events]


def _request(
    base_url: str, token: str, events: Iterable[Any], *, run_input: Any = None, include_messages: bool = True
) -> tuple[str, dict, dict]:
    url = base_url.rstrip("/") + "/api/v1/runs"
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    slim = with_messages(_slim(events), run_input=run_input, include_messages=include_messages)
    return url, headers, {"events": slim}


def _answer(response: httpx.Response) -> dict:
    try:
        body = response.json()
    except ValueError:
        body = response.text
    if response.status_code >= 400:
        detail = body.get("detail") if isinstance(body, dict) else body
        raise InboxError(
            f"The inbox answered HTTP {response.status_code}: {detail}", status=response.status_code, body=body
        )
    return body


def post_run(
    events: Iterable[Any],
    *,
    base_url: str,
    token: str,
    timeout: float = 30.0,
    run_input: Any = None,
    include_messages: bool = True,
) -> dict:
    """POST one run (its events, ending with RUN_FINISHED) to the inbox. Returns the inbox's answer;
    raises ``InboxError``. Posting the same run twice is safe: the inbox answers 200 with the same run.
    ``run_input``: the RunAgentInput the run answered, posted as ``RUN_STARTED.input`` when the events do not
    echo one (the conversation a resume needs); ``include_messages=False`` leaves the conversation out."""
    url, headers, body = _request(base_url, token, events, run_input=run_input, include_messages=include_messages)
    try:
        response = httpx.post(url, json=body, headers=headers, timeout=timeout)
    except httpx.HTTPError as exc:
        raise InboxError(f"Could not reach the inbox at {url}: {exc}") from exc
    return _answer(response)


async def apost_run(
    events: Iterable[Any],
    *,
    base_url: str,
    token: str,
    timeout: float = 30.0,
    run_input: Any = None,
    include_messages: bool = True,
) -> dict:
    """``post_run`` for async code."""
    url, headers, body = _request(base_url, token, events, run_input=run_input, include_messages=include_messages)
    try:
        async with httpx.AsyncClient(timeout=timeout) as client:
            response = await client.post(url, json=body, headers=headers)
    except httpx.HTTPError as exc:
        raise InboxError(f"Could not reach the inbox at {url}: {exc}") from exc
    return _answer(response)


def _is_interrupt_finish(data: dict | None) -> bool:
    return (
        data is not None
        and data.get("type") == "RUN_FINISHED"
        and (data.get("outcome") or {}).get("type") == "interrupt"
    )


def forward_interrupts(
    stream: Iterable[Any],
    *,
    base_url: str,
    token: str,
    on_posted: Callable[[dict], None] | None = None,
    run_input: Any = None,
    include_messages: bool = True,
) -> Iterator[Any]:
    """Yield every event of ``stream`` unchanged; post the run to the inbox when it ends in an interrupt.

    The post happens before the RUN_FINISHED event is passed on, so by the time a client sees the
    interrupt, the inbox has its items. ``on_posted`` receives the inbox's answer.
    """
    seen: list[Any] = []
    for event in stream:
        seen.append(event)
        data = to_dict(event)
        if data and data.get("type") == "RUN_STARTED" and len(seen) > 1:
            seen = [event]  # one stream may carry several runs: keep the current one
        if _is_interrupt_finish(data):
            answer = post_run(
                seen, base_url=base_url, token=token, run_input=run_input, include_messages=include_messages
            )
            if on_posted:
                on_posted(answer)
        yield event


async def aforward_interrupts(
    stream: AsyncIterable[Any],
    *,
    base_url: str,
    token: str,
    on_posted: Callable[[dict], None] | None = None,
    run_input: Any = None,
    include_messages: bool = True,
) -> AsyncIterator[Any]:
    """``forward_interrupts`` for async streams."""
    seen: list[Any] = []
    async for event in stream:
        seen.append(event)
        data = to_dict(event)
        if data and data.get("type") == "RUN_STARTED" and len(seen) > 1:
            seen = [event]
        if _is_interrupt_finish(data):
            answer = await apost_run(
                seen, base_url=base_url, token=token, run_input=run_input, include_messages=include_messages
            )
            if on_posted:
                on_posted(answer)
        yield event
