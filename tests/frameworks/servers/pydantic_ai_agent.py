"""A Pydantic AI agent served by its AG-UI adapter (``AGUIAdapter``), with a deterministic ``FunctionModel``.

The model proposes ``sendEmail`` from the user's message; the tool has ``requires_approval=True``, so the
run ends with an interrupt (``id`` = ``"int-" + toolCallId``, ``reason: tool_call``, schema
``{approved, editedArgs, reason}``). The agent keeps no history of its own (the adapter's default): the
resume must carry the conversation, which the inbox rebuilds (no MESSAGES_SNAPSHOT is ever sent).

A message that asks for a chart ("Show the chart") gets ``showChart`` proposed instead: a tool the agent defers
to its client (``CallDeferred``), so the run ends with outcome success naming the call in ``pendingToolCallIds``
-- which the adapter sends only to a client that declared AG-UI 1.0 (``RunAgentInput.protocolVersion``).

Run: ``.venv/frameworks/pydantic-ai/bin/python -m tests.frameworks.servers.pydantic_ai_agent --port N``.
The snippet in docs/agents/pydantic-ai.md is this file's ``agent`` / ``send_email`` / ``run`` block.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator

from tests.frameworks.servers.common import app_with, email_args, record_sent, serve  # isort: skip

from pydantic_ai import Agent, CallDeferred, DeferredToolRequests, RunContext
from pydantic_ai.messages import ModelMessage, ModelRequest, ToolReturnPart, UserPromptPart
from pydantic_ai.models.function import AgentInfo, DeltaToolCall, DeltaToolCalls, FunctionModel
from pydantic_ai.ui.ag_ui import AGUIAdapter
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route


async def scripted_model(messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[str | DeltaToolCalls]:
    """Propose sendEmail for the user's message; after the tool's answer, say what happened."""
    last = messages[-1]
    returns = (
        [part for part in last.parts if isinstance(part, ToolReturnPart)] if isinstance(last, ModelRequest) else []
    )
    if returns:
        yield f"Done: {returns[-1].model_response_str()}"
        return
    prompt = next(
        (part.content for m in reversed(messages) for part in m.parts if isinstance(part, UserPromptPart)), ""
    )
    import json

    if "chart" in str(prompt).lower():
        yield {0: DeltaToolCall(name="showChart", json_args="{}", tool_call_id=f"call-{uuid.uuid4().hex[:12]}")}
        return
    args = email_args(prompt if isinstance(prompt, str) else str(prompt))
    yield {0: DeltaToolCall(name="sendEmail", json_args=json.dumps(args), tool_call_id=f"call-{uuid.uuid4().hex[:12]}")}


# --- docs/agents/pydantic-ai.md ---
agent = Agent(FunctionModel(stream_function=scripted_model), output_type=[str, DeferredToolRequests])


@agent.tool(requires_approval=True, name="sendEmail")
def send_email(ctx: RunContext[None], to: str, subject: str, body: str) -> str:
    """Send an email, once a person approved it."""
    return record_sent(ctx.tool_call_id, {"to": to, "subject": subject, "body": body})


async def run(request: Request) -> Response:
    return await AGUIAdapter.dispatch_request(request, agent=agent)


# --- end of snippet ---


@agent.tool_plain(name="showChart")
def show_chart() -> str:
    """Show a chart: the client's to run (a frontend tool), so the run leaves the call pending."""
    raise CallDeferred


app = app_with([Route("/", run, methods=["POST"])])

if __name__ == "__main__":
    serve(app)
