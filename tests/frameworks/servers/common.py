"""What every framework agent server in tests/frameworks shares. Imported from the framework's own venv
(``.venv/frameworks/<name>``): nothing here may import Django, the inbox or the inbox's pinned packages
beyond Starlette and uvicorn, which every framework's AG-UI integration brings.

- ``email_args(text)`` reads "Email bob@example.com subject: Lunch body: Are we on?" into tool arguments,
  the deterministic "model" every server shares.
- ``RECORD`` is the agent's own record of what it did (``sent``: the sendEmail calls that actually ran,
  with the arguments used; ``seen``: every RunAgentInput the server received), served at ``GET /record``
  so a test checks what the agent executed, not what the inbox believes.
- ``serve(routes)`` runs a Starlette app with ``/healthz``, ``/record`` and ``/reset`` on 127.0.0.1.
"""

from __future__ import annotations

import argparse
import json
import os
import re
from typing import Any

# Offline by construction: litellm (CrewAI) and others must not try to download anything.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("OTEL_SDK_DISABLED", "true")
os.environ.setdefault("CREWAI_DISABLE_TELEMETRY", "true")
os.environ.setdefault("CREWAI_DISABLE_TRACKING", "true")
os.environ.setdefault("CREWAI_TRACING_ENABLED", "false")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import uvicorn  # noqa: E402
from starlette.applications import Starlette  # noqa: E402
from starlette.middleware import Middleware  # noqa: E402
from starlette.requests import Request  # noqa: E402
from starlette.responses import JSONResponse, PlainTextResponse  # noqa: E402
from starlette.routing import BaseRoute, Route  # noqa: E402
from starlette.types import ASGIApp, Receive, Scope, Send  # noqa: E402

RECORD: dict[str, list] = {"sent": [], "seen": []}
_EMAIL = re.compile(r"email\s+(?P<to>\S+)\s+subject:\s*(?P<subject>.*?)\s+body:\s*(?P<body>.*)$", re.I | re.S)


def email_args(text: str) -> dict[str, str]:
    match = _EMAIL.search(text or "")
    if not match:
        return {"to": "nobody@example.com", "subject": "(none)", "body": text or ""}
    return {key: value.strip() for key, value in match.groupdict().items()}


def record_sent(tool_call_id: str, args: dict[str, Any]) -> str:
    RECORD["sent"].append({"toolCallId": tool_call_id, "args": dict(args)})
    return json.dumps({"status": "sent", "to": args.get("to"), "args": dict(args)})


class _RecordInputs:
    """ASGI middleware keeping every POSTed body (the RunAgentInputs the inbox sent)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST" or scope["path"] in ("/reset",):
            await self.app(scope, receive, send)
            return
        chunks: list[bytes] = []
        more = True
        while more:
            message = await receive()
            chunks.append(message.get("body", b""))
            more = message.get("more_body", False)
        body = b"".join(chunks)
        try:
            RECORD["seen"].append(json.loads(body))
        except ValueError:
            RECORD["seen"].append({"unparsable": body.decode(errors="replace")})
        sent = False

        async def replay() -> dict:
            nonlocal sent
            if sent:
                return await receive()
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}

        await self.app(scope, replay, send)


async def _record(request: Request) -> JSONResponse:
    return JSONResponse(RECORD)


async def _reset(request: Request) -> JSONResponse:
    for entries in RECORD.values():
        entries.clear()
    return JSONResponse({"ok": True})


async def _healthz(request: Request) -> PlainTextResponse:
    return PlainTextResponse("ok")


def app_with(routes: list[BaseRoute]) -> Starlette:
    base = [Route("/healthz", _healthz), Route("/record", _record), Route("/reset", _reset, methods=["POST"])]
    return Starlette(routes=base + routes, middleware=[Middleware(_RecordInputs)])


def serve(app: ASGIApp) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args()
    uvicorn.run(app, host="127.0.0.1", port=args.port, log_level="warning")
