"""Request bodies are capped before Django reads them: an ASGI middleware in front of the whole site.

A body over ``INBOX_REQUEST_MAX_BYTES`` is answered 413 (at once from its ``Content-Length``, or as soon as a
chunked body grows past it), and one that has not fully arrived within ``INBOX_REQUEST_BODY_TIMEOUT`` 408; the
application then gets a disconnect (docs/security.md)."""

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
