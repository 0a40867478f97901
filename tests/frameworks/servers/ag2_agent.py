"""An ag2 agent served by ``ag2.ag_ui.AGUIStream``, its model ``ag2.testing.TestConfig`` (a script, no LLM).

- "Email …": the model calls ``sendEmail``, whose ``approval_required()`` middleware asks a person. With no
  ``hitl_hook`` the stream puts the question to the client: the run ends with an interrupt
  (``reason: tool_call``, the call's ``toolCallId``, schema ``{"type": ["string", "boolean"]}``, an
  ``expiresAt`` and ``metadata.ag2.proof``). ``true`` / ``"y"`` lets the call run, anything else refuses it.
- "Budget …": the model calls ``requestBudget``, whose body asks itself with ``context.input(...)``
  (``reason: input_required``, schema ``{"type": "string"}``, no toolCallId).

The question is held by the serving process (a suspended coroutine): the resume must reach this process,
and a restart loses it. ``AG2_REQUIRE_RESUME_PROOF=1`` starts the stream with ``require_resume_proof=True``.

Run: ``.venv/frameworks/ag2/bin/python -m tests.frameworks.servers.ag2_agent --port N``. The snippet in
docs/agents/ag2.md is this file's block between the ``docs`` markers.
"""

from __future__ import annotations

import json
import os
import re

from tests.frameworks.servers.common import RECORD, app_with, email_args, record_sent, serve  # isort: skip

from ag2 import Agent, Context, tool
from ag2.ag_ui import AGUIStream, RunAgentInput, read_run_input
from ag2.events import ToolCallEvent
from ag2.middleware import approval_required
from ag2.testing import TestConfig
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

REQUIRE_PROOF = os.environ.get("AG2_REQUIRE_RESUME_PROOF") == "1"
RECORD["budgets"] = []


def scripted_model(incoming: RunAgentInput) -> TestConfig:
    """One tool call read from the user's last message, then a closing reply: the "LLM" of one turn."""
    prompt = next((m.content for m in reversed(incoming.messages) if m.role == "user"), "")
    prompt = prompt if isinstance(prompt, str) else ""
    if prompt.lower().startswith("budget"):
        call = ToolCallEvent(
            name="requestBudget", arguments=json.dumps({"amount": int(re.sub(r"\D", "", prompt) or 0)})
        )
    else:
        call = ToolCallEvent(name="sendEmail", arguments=json.dumps(email_args(prompt)))
    return TestConfig(call, "Done.")


# --- docs/agents/ag2.md ---
@tool(name="sendEmail", middleware=[approval_required()])
def send_email(to: str, subject: str, body: str, context: Context) -> str:
    """Send an email, once a person approved it."""
    return record_sent(context.tool_call_id or "", {"to": to, "subject": subject, "body": body})


@tool(name="requestBudget")
async def request_budget(amount: int, context: Context) -> str:
    """Ask a person about a budget in the tool's own words: an input_required interrupt."""
    answer = await context.input(f"Approve a budget of {amount}? Answer yes or no.")
    RECORD["budgets"].append({"amount": amount, "answer": answer})
    return f"budget {amount} {'approved' if answer.strip().lower() in ('yes', 'y') else 'refused'}"


agent = Agent("mailer", "You send e-mails.", tools=[send_email, request_budget])
stream = AGUIStream(agent, require_resume_proof=REQUIRE_PROOF)


async def run(request: Request) -> Response:
    try:
        incoming = read_run_input(await request.body())
    except ValueError:
        return JSONResponse({"error": "invalid RunAgentInput"}, status_code=400)
    events = stream.dispatch(incoming, config=scripted_model(incoming), accept=request.headers.get("accept"))
    return StreamingResponse(events, media_type="text/event-stream")


# --- end of snippet ---

app = app_with([Route("/", run, methods=["POST"])])

if __name__ == "__main__":
    serve(app)
