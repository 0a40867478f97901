"""A Google ADK agent served by ``ag-ui-adk`` with ``emit_interrupt_outcome=True``, with a deterministic
``BaseLlm`` subclass.

The model calls ``send_email``, a ``FunctionTool(..., require_confirmation=True)``: ADK pauses on its synthetic
``adk_request_confirmation`` call, which the adapter reports as ``reason: "confirmation"`` (``id`` and
``toolCallId`` = the synthetic call, no schema) with the real call in ``metadata.adk.originalFunctionCall``.

Run: ``.venv/frameworks/adk/bin/python -m tests.frameworks.servers.adk_agent --port N``. The snippet in
docs/agents/adk.md is this file's block between the ``docs`` markers.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncGenerator

from tests.frameworks.servers.common import app_with, email_args, record_sent, serve  # isort: skip

from ag_ui_adk import ADKAgent, add_adk_fastapi_endpoint
from fastapi import FastAPI
from google.adk.agents import LlmAgent
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.tools import FunctionTool, ToolContext
from google.genai import types
from starlette.routing import Mount


class ScriptedLlm(BaseLlm):
    """Calls send_email for the user's message; after the tool's answer, says what happened."""

    async def generate_content_async(self, llm_request: LlmRequest, stream: bool = False) -> AsyncGenerator:
        last = llm_request.contents[-1]
        responses = [part.function_response for part in last.parts or [] if part.function_response]
        if responses:
            text = f"Done: {responses[-1].response}"
            yield LlmResponse(content=types.Content(role="model", parts=[types.Part(text=text)]))
            return
        prompt = " ".join(part.text or "" for part in last.parts or [])
        call = types.FunctionCall(id=f"adk-{uuid.uuid4().hex[:12]}", name="send_email", args=email_args(prompt))
        yield LlmResponse(content=types.Content(role="model", parts=[types.Part(function_call=call)]))


# --- docs/agents/adk.md ---
def send_email(to: str, subject: str, body: str, tool_context: ToolContext) -> str:
    """Send an email."""
    return record_sent(tool_context.function_call_id, {"to": to, "subject": subject, "body": body})


mailer = LlmAgent(
    name="mailer",
    model=ScriptedLlm(model="scripted"),
    instruction="Send the emails you are asked to send.",
    tools=[FunctionTool(send_email, require_confirmation=True)],
)
agent = ADKAgent(adk_agent=mailer, app_name="mailer", user_id="inbox", emit_interrupt_outcome=True)
api = FastAPI()
add_adk_fastapi_endpoint(api, agent, path="/")
# --- end of snippet ---

app = app_with([Mount("/", app=api)])

if __name__ == "__main__":
    serve(app)
