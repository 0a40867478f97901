"""The inbox as an AG-UI client: POST a ``RunAgentInput`` to an agent and read its SSE reply.

Only ever POSTs to ``agent.endpoint_url``, which admins set; never to a URL taken from a request body.
Each ``data:`` payload is checked against the SDK's ``Event`` union as it arrives; the raw dicts are
returned so ``inbox.ingest.read_run`` can record the run exactly as it does for the ingest API.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
from ag_ui.core import Event, EventType
from django.conf import settings
from httpx_sse import SSEError, connect_sse
from pydantic import TypeAdapter, ValidationError

from agents.models import Agent

_event_adapter: TypeAdapter = TypeAdapter(Event)
_TERMINAL = {EventType.RUN_FINISHED, EventType.RUN_ERROR}
# A reply is one run; these bound what a misbehaving agent can make a worker hold in memory.
MAX_EVENTS = 20_000
MAX_BYTES = 20 * 1024 * 1024
# Transient HTTP answers: worth another attempt later. Any other 4xx is a request the agent refuses.
_RETRYABLE_STATUS = {408, 425, 429}


class AgentCallError(Exception):
    """The agent could not be asked, or answered something that is not one AG-UI run.

    ``retryable`` is True for transport failures (connection refused, timeouts, 5xx, a stream cut
    before its terminal event): the same input may be sent again. False for a reply that will not
    improve by resending (a 4xx, not an event stream, events the SDK rejects).
    """

    def __init__(self, message: str, *, retryable: bool, status: int | None = None):
        super().__init__(message)
        self.message = message
        self.retryable = retryable
        self.status = status


def _timeout() -> httpx.Timeout:
    return httpx.Timeout(
        connect=settings.INBOX_AGENT_CONNECT_TIMEOUT,
        read=settings.INBOX_AGENT_READ_TIMEOUT,
        write=settings.INBOX_AGENT_READ_TIMEOUT,
        pool=settings.INBOX_AGENT_CONNECT_TIMEOUT,
    )


def request_headers(agent: Agent) -> dict[str, str]:
    headers = {"Content-Type": "application/json"}
    if agent.auth_header_name and agent.auth_header_value:
        headers[agent.auth_header_name] = agent.auth_header_value
    return headers


def run_agent(*, agent: Agent, run_input: dict[str, Any], client: httpx.Client | None = None) -> list[dict]:
    """Send one RunAgentInput (camelCase dict) and return the reply's events, ending with
    RUN_FINISHED or RUN_ERROR. Raises ``AgentCallError``."""
    if not agent.endpoint_url:
        raise AgentCallError(f"Agent {agent.slug!r} has no AG-UI endpoint URL.", retryable=False)
    own_client = client is None
    http = client or httpx.Client(timeout=_timeout(), follow_redirects=False, trust_env=False)
    try:
        return _post_and_read(http, agent, run_input)
    finally:
        if own_client:
            http.close()


def _post_and_read(http: httpx.Client, agent: Agent, run_input: dict[str, Any]) -> list[dict]:
    url = agent.endpoint_url
    try:
        with connect_sse(http, "POST", url, json=run_input, headers=request_headers(agent)) as source:
            response = source.response
            if response.status_code >= 400:
                response.read()
                excerpt = response.text[:300].strip()
                retryable = response.status_code >= 500 or response.status_code in _RETRYABLE_STATUS
                raise AgentCallError(
                    f"The agent answered HTTP {response.status_code}" + (f": {excerpt}" if excerpt else ""),
                    retryable=retryable,
                    status=response.status_code,
                )
            return _read_events(source)
    except AgentCallError:
        raise
    except SSEError as exc:  # a subclass of httpx.TransportError, so it must come first
        raise AgentCallError(f"The agent did not answer with an event stream: {exc}", retryable=False) from None
    except httpx.TimeoutException as exc:
        raise AgentCallError(f"Timed out talking to the agent at {url}: {type(exc).__name__}", retryable=True) from None
    except httpx.TransportError as exc:
        # Connection refused, reset, DNS, a stream cut mid-body: nothing was answered, so resend later.
        raise AgentCallError(
            f"Could not reach the agent at {url}: {exc or type(exc).__name__}", retryable=True
        ) from None


def _read_events(source) -> list[dict]:
    events: list[dict] = []
    size = 0
    for sse in source.iter_sse():
        if not sse.data:
            continue
        size += len(sse.data)
        if size > MAX_BYTES or len(events) >= MAX_EVENTS:
            raise AgentCallError("The agent's reply is larger than the inbox accepts for one run.", retryable=False)
        try:
            raw = json.loads(sse.data)
        except json.JSONDecodeError as exc:
            raise AgentCallError(f"Event {len(events)} of the reply is not JSON: {exc}", retryable=False) from None
        try:
            event = _event_adapter.validate_python(raw)
        except ValidationError as exc:
            first = exc.errors()[0] if exc.errors() else {"msg": str(exc), "loc": ()}
            where = ".".join(str(part) for part in first.get("loc", ()))
            raise AgentCallError(
                f"Event {len(events)} of the reply is not an AG-UI event ({where}: {first['msg']}).", retryable=False
            ) from None
        events.append(raw)
        if event.type in _TERMINAL:
            return events
    raise AgentCallError(
        "The agent's stream ended before RUN_FINISHED or RUN_ERROR." if events else "The agent sent no events.",
        retryable=True,
    )
