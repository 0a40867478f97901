"""The inbox as an AG-UI client: POST a ``RunAgentInput`` to an agent and read its SSE reply.

It sends only to ``agent.endpoint_url``, at the address ``agents.endpoints.target`` checked for this send, and
reads the reply as untrusted input, bounded while reading (deadline, byte and event caps; docs/configuration.md).
Each ``data:`` payload is checked against the SDK's ``Event`` union; an error reply's body is logged, never put
in the error's message."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterator
from typing import Any

import httpx
from ag_ui.core import Event, EventType
from django.conf import settings
from pydantic import TypeAdapter, ValidationError

from agents import endpoints
from agents.models import Agent

log = logging.getLogger(__name__)

_event_adapter: TypeAdapter = TypeAdapter(Event)
_TERMINAL = {EventType.RUN_FINISHED, EventType.RUN_ERROR}
_TERMINAL_TYPES = {kind.value for kind in _TERMINAL}
# Transient HTTP answers: worth another attempt later. Any other 4xx is a request the agent refuses.
_RETRYABLE_STATUS = {408, 425, 429}


class AgentCallError(Exception):
    """The agent could not be asked, or answered something that is not one AG-UI run.

    ``retryable`` is True for failures after which the agent cannot be working on the input (connection
    refused, a connect or write timeout, 5xx, a stream the agent cut before its terminal event): the same input
    may be sent again. False for a reply that will not improve by resending (a 4xx, not an event stream, events
    the SDK rejects), and for an agent that may still be working on it: ``timeout`` (the input was sent and the
    agent said nothing for ``INBOX_AGENT_READ_TIMEOUT``: before its headers, or after its 200) and ``deadline``
    (still replying at ``INBOX_AGENT_STREAM_DEADLINE``). A second copy would overlap the first.

    ``kind`` says what went wrong (``transport``, ``http_status``, ``not_event_stream``, ``timeout`` (silent
    past the read timeout), ``deadline``, ``over_limits``, ``invalid_event``, ``ended_early``); ``event_index``
    is the index of the event at fault, when one is; ``accepted`` is True once the agent had answered 200 with
    an event stream (it took the input: what it did with it is unknown); ``events`` holds the events read before
    the failure (each a valid AG-UI event but the last, which may be the one at fault), so what the agent did
    report (a TOOL_CALL_RESULT before a cut, say) is not lost with the rest of the reply.
    """

    def __init__(
        self,
        message: str,
        *,
        retryable: bool,
        status: int | None = None,
        kind: str = "transport",
        event_index: int | None = None,
        accepted: bool = False,
        events: list[dict] | None = None,
    ):
        super().__init__(message)
        self.message = message
        self.retryable = retryable
        self.status = status
        self.kind = kind
        self.event_index = event_index
        self.accepted = accepted
        self.events: list[dict] = events or []


def _timeout() -> httpx.Timeout:
    # No single read may outlast the whole stream's deadline.
    read = min(settings.INBOX_AGENT_READ_TIMEOUT, settings.INBOX_AGENT_STREAM_DEADLINE)
    return httpx.Timeout(
        connect=settings.INBOX_AGENT_CONNECT_TIMEOUT,
        read=read,
        write=read,
        pool=settings.INBOX_AGENT_CONNECT_TIMEOUT,
    )


def request_headers(agent: Agent) -> dict[str, str]:
    # Uncompressed: the SSE lines are split, and the byte caps counted, on the raw bytes.
    headers = {"Content-Type": "application/json", "Accept": "text/event-stream", "Accept-Encoding": "identity"}
    if agent.auth_header_name and agent.auth_header_value:
        headers[agent.auth_header_name] = agent.auth_header_value
    return headers


def run_agent(*, agent: Agent, run_input: dict[str, Any], client: httpx.Client | None = None) -> list[dict]:
    """Send one RunAgentInput (camelCase dict) and return the reply's events, ending with
    RUN_FINISHED or RUN_ERROR. Raises ``AgentCallError``."""
    if not agent.endpoint_url:
        raise AgentCallError(f"Agent {agent.slug!r} has no AG-UI endpoint URL.", retryable=False)
    try:
        destination = endpoints.target(agent.endpoint_url)
    except endpoints.EndpointRefused as refused:
        # A name that does not resolve may resolve later (retryable); a refused address will not change by itself.
        raise AgentCallError(
            f"The agent's endpoint is refused: {refused.message}", retryable=not refused.resolvable
        ) from None
    own_client = client is None
    http = client or httpx.Client(
        timeout=_timeout(), follow_redirects=False, trust_env=False, verify=endpoints.tls_context()
    )
    try:
        return _post_and_read(http, agent, run_input, destination)
    finally:
        if own_client:
            http.close()


def _post_and_read(
    http: httpx.Client, agent: Agent, run_input: dict[str, Any], destination: endpoints.Target
) -> list[dict]:
    url = agent.endpoint_url
    started = time.monotonic()
    headers = {**request_headers(agent), **destination.headers}
    accepted = False
    received: list[dict] = []  # the reply's events as they are read, kept when the reply fails part-way
    try:
        with http.stream(
            "POST", destination.url, json=run_input, headers=headers, extensions=destination.extensions
        ) as response:
            if response.status_code >= 400:
                excerpt = _excerpt(response)
                log.warning("agent %s answered HTTP %s: %r", agent.slug, response.status_code, excerpt)
                retryable = response.status_code >= 500 or response.status_code in _RETRYABLE_STATUS
                raise AgentCallError(
                    f"The agent answered HTTP {response.status_code} (its reply is in the web or worker log)",
                    retryable=retryable,
                    status=response.status_code,
                    kind="http_status",
                )
            content_type = response.headers.get("content-type", "")
            if content_type.partition(";")[0].strip().lower() != "text/event-stream":
                raise AgentCallError(
                    "The agent did not answer with an event stream: expected the response's Content-Type to be "
                    f"'text/event-stream', got {content_type!r}",
                    retryable=False,
                    kind="not_event_stream",
                )
            encoding = response.headers.get("content-encoding", "identity").strip().lower()
            if encoding not in ("", "identity"):
                raise AgentCallError(
                    f"The agent answered with Content-Encoding {encoding!r}; the inbox asked for identity.",
                    retryable=False,
                    kind="not_event_stream",
                )
            accepted = True
            return _read_events(_data_payloads(response, started=started), received)
    except AgentCallError as error:
        error.accepted = error.accepted or accepted
        error.events = error.events or list(received)
        raise
    except httpx.ReadTimeout:
        # Silent for longer than the read timeout (it hangs), with the whole input sent: it may be working on it.
        read = _timeout().read
        if accepted:
            message = f"The agent accepted the input, then sent nothing for {read:g} s (the read timeout)."
        else:
            message = (
                f"The agent at {url} was sent the input and did not answer within {read:g} s (the read timeout); "
                "it may still act on it."
            )
        raise AgentCallError(
            message, retryable=False, kind="timeout", accepted=accepted, events=list(received)
        ) from None
    except httpx.TimeoutException as exc:
        # A connect, write or pool timeout: the agent never had the whole input.
        raise AgentCallError(
            f"Timed out talking to the agent at {url}: {type(exc).__name__}",
            retryable=True,
            kind="transport",
            accepted=accepted,
            events=list(received),
        ) from None
    except httpx.TransportError as exc:
        # Connection refused, reset, DNS, a stream cut mid-body: nothing was answered, so resend later.
        raise AgentCallError(
            f"Could not reach the agent at {url}: {exc or type(exc).__name__}",
            retryable=True,
            accepted=accepted,
            events=list(received),
        ) from None


def _excerpt(response: httpx.Response) -> str:
    """The first few hundred bytes of an error body, never the whole of it."""
    head = b""
    for chunk in response.iter_raw():
        head += chunk
        if len(head) >= 300:
            break
    return head[:300].decode("utf-8", "replace").strip()


def _lines(response: httpx.Response, *, started: float) -> Iterator[bytes]:
    """The body's lines (terminator removed), enforcing the deadline and the byte caps as bytes arrive."""
    deadline = settings.INBOX_AGENT_STREAM_DEADLINE
    max_total, max_line = settings.INBOX_AGENT_REPLY_MAX_BYTES, settings.INBOX_AGENT_LINE_MAX_BYTES
    total = 0
    pending = b""
    # No chunk_size: httpx would hold bytes back until a whole chunk has arrived; each read is checked as it comes.
    for chunk in response.iter_raw():
        elapsed = time.monotonic() - started
        if elapsed > deadline:
            raise AgentCallError(
                f"The agent's reply did not finish within the {deadline:g} s deadline "
                f"({total} bytes read in {elapsed:.0f} s).",
                retryable=False,
                kind="deadline",
            )
        total += len(chunk)
        if total > max_total:
            raise AgentCallError(
                f"The agent's reply is larger than the {max_total} bytes the inbox accepts for one run.",
                retryable=False,
                kind="over_limits",
            )
        lines = (pending + chunk).splitlines(keepends=True)
        # The last piece may be a partial line, or end in a CR whose LF is in the next chunk.
        pending = lines.pop() if lines and not lines[-1].endswith(b"\n") else b""
        if len(pending) > max_line:
            raise AgentCallError(
                f"A line of the agent's reply is longer than the {max_line} bytes the inbox accepts.",
                retryable=False,
                kind="over_limits",
            )
        for line in lines:
            line = line.rstrip(b"\r\n")
            if len(line) > max_line:
                raise AgentCallError(
                    f"A line of the agent's reply is longer than the {max_line} bytes the inbox accepts.",
                    retryable=False,
                    kind="over_limits",
                )
            yield line
    if pending:
        yield pending.rstrip(b"\r")


def _data_payloads(response: httpx.Response, *, started: float) -> Iterator[str]:
    """The ``data`` of each server-sent event (the SSE rules: ``data:`` lines joined by newlines, dispatched
    by a blank line; comments and other fields ignored)."""
    data: list[str] = []
    for raw in _lines(response, started=started):
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            message = f"The agent's reply is not UTF-8: {exc.reason} at byte {exc.start} of a line."
            raise AgentCallError(message, retryable=False, kind="invalid_event") from None
        if not line:
            if data:
                yield "\n".join(data)
                data = []
            continue
        if line.startswith(":"):
            continue
        field, _, value = line.partition(":")
        if field == "data":
            data.append(value.removeprefix(" "))
    if data:
        yield "\n".join(data)


def _read_events(payloads: Iterator[str], events: list[dict]) -> list[dict]:
    """Read the payloads into ``events`` (the caller's list: it keeps what was read when this raises)."""
    max_events = settings.INBOX_AGENT_REPLY_MAX_EVENTS
    for data in payloads:
        if not data:
            continue
        if len(events) >= max_events:
            raise AgentCallError(
                f"The agent's reply has more than the {max_events} events the inbox accepts for one run.",
                retryable=False,
                kind="over_limits",
            )
        try:
            raw = json.loads(data)
        except (json.JSONDecodeError, ValueError) as exc:
            raise AgentCallError(
                f"Event {len(events)} of the reply is not JSON: {exc}",
                retryable=False,
                kind="invalid_event",
                event_index=len(events),
            ) from None
        if isinstance(raw, dict) and raw.get("type") in _TERMINAL_TYPES:
            # The run's last event: ``inbox.agui.reader.read_run`` checks it against the spec's contract and the
            # SDK, and names the rule it breaks (an interrupt without id, an outcome {type: error}, ...).
            events.append(raw)
            return events
        try:
            event = _event_adapter.validate_python(raw)
        except ValidationError as exc:
            first = exc.errors()[0] if exc.errors() else {"msg": str(exc), "loc": ()}
            where = ".".join(str(part) for part in first.get("loc", ()))
            raise AgentCallError(
                f"Event {len(events)} of the reply is not an AG-UI event ({where}: {first['msg']}).",
                retryable=False,
                kind="invalid_event",
                event_index=len(events),
            ) from None
        events.append(raw)
        if event.type in _TERMINAL:
            return events
    raise AgentCallError(
        "The agent's stream ended before RUN_FINISHED or RUN_ERROR." if events else "The agent sent no events.",
        retryable=True,
        kind="ended_early",
        event_index=len(events) or None,
    )
