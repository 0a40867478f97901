"""Request bodies are capped before Django reads them: an ASGI middleware in front of the whole site.

A ``Content-Length`` over ``settings.INBOX_REQUEST_MAX_BYTES`` is answered 413 at once, without reading a byte
of the body. A body without one (chunked) is passed on as it arrives; the moment it grows past the limit the
application gets a disconnect instead of more body (Django then stops spooling it) and the client gets the 413.
Every endpoint is covered, authenticated or not: a 200 MiB anonymous upload costs the server at most the limit.

The whole body must also arrive within ``settings.INBOX_REQUEST_BODY_TIMEOUT`` seconds of the request's start: a
body trickled a byte at a time is answered 408 and the application gets a disconnect, so a slow client cannot
hold a request (and its thread) open for ever. Once the body is complete nothing is timed.
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

Scope = dict[str, Any]
Message = dict[str, Any]


def _too_large_body(limit: int) -> bytes:
    return json.dumps(
        {
            "error": "body_too_large",
            "detail": f"The request body is larger than the {limit}-byte limit (INBOX_REQUEST_MAX_BYTES).",
            "field": "body",
            "rule": "max_bytes",
        }
    ).encode()


def _timeout_body(seconds: float) -> bytes:
    return json.dumps(
        {
            "error": "body_timeout",
            "detail": f"The request body did not arrive within {seconds:g} s (INBOX_REQUEST_BODY_TIMEOUT).",
            "field": "body",
            "rule": "body_timeout",
        }
    ).encode()


class BodyLimitMiddleware:
    """``limit`` fixed, or None to read ``settings.INBOX_REQUEST_MAX_BYTES`` on each request."""

    def __init__(self, app, limit: int | None = None):
        self.app = app
        self._limit = limit

    @property
    def limit(self) -> int:
        from django.conf import settings

        return self._limit if self._limit is not None else settings.INBOX_REQUEST_MAX_BYTES

    async def __call__(self, scope: Scope, receive, send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = self.limit
        declared = None
        for name, value in scope.get("headers", []):
            if name == b"content-length":
                try:
                    declared = int(value)
                except ValueError:
                    declared = None
        if declared is not None and declared > limit:
            await self._reject(send, 413, _too_large_body(limit))
            return

        from django.conf import settings

        timeout = settings.INBOX_REQUEST_BODY_TIMEOUT
        deadline = time.monotonic() + timeout
        received = 0
        refused = False
        complete = False
        response_started = False

        async def limited_receive() -> Message:
            nonlocal received, refused, complete
            if refused:
                return {"type": "http.disconnect"}
            if complete:
                return await receive()  # waiting for the client to go away: not a body read
            try:
                message = await asyncio.wait_for(receive(), max(0.0, deadline - time.monotonic()))
            except TimeoutError:
                refused = True
                if not response_started:
                    await self._reject(send, 408, _timeout_body(timeout))
                return {"type": "http.disconnect"}
            if message["type"] == "http.request":
                complete = not message.get("more_body", False)
                received += len(message.get("body", b""))
                if received > limit:
                    refused = True
                    if not response_started:
                        await self._reject(send, 413, _too_large_body(limit))
                    return {"type": "http.disconnect"}
            return message

        async def guarded_send(message: Message) -> None:
            nonlocal response_started
            if refused and not response_started and message["type"] == "http.response.start":
                return  # the 413 was sent in its place
            if refused and message["type"] == "http.response.body" and not response_started:
                return
            if message["type"] == "http.response.start":
                response_started = True
            await send(message)

        await self.app(scope, limited_receive, guarded_send)

    async def _reject(self, send, status: int, body: bytes) -> None:
        await send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode()),
                    (b"connection", b"close"),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})
