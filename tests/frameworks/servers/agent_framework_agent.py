"""A Microsoft Agent Framework agent served by ``agent-framework-ag-ui``, with a scripted chat client.

The client proposes ``send_email`` from the user's message; the tool has ``approval_mode="always_require"``,
so the run ends with a ``tool_call`` interrupt (the real toolCallId, a schema with ``editedArgs``).

Run: ``.venv/frameworks/agent-framework/bin/python -m tests.frameworks.servers.agent_framework_agent --port N``.
The snippet in docs/agents/agent-framework.md is this file's block between the ``docs`` markers.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator, Sequence
from typing import Any

from tests.frameworks.servers.common import app_with, email_args, record_sent, serve  # isort: skip

from agent_framework import (
    Agent,
    BaseChatClient,
    ChatResponse,
    ChatResponseUpdate,
    Content,
    Message,
    ResponseStream,
    tool,
)
from agent_framework._tools import FunctionInvocationLayer
from agent_framework_ag_ui import add_agent_framework_fastapi_endpoint
from fastapi import FastAPI
from starlette.routing import Mount


class ScriptedChatClient(FunctionInvocationLayer, BaseChatClient):
    """Proposes send_email for the user's message; after the tool's result, says what happened."""

    def _reply(self, messages: Sequence[Message]) -> list[Content]:
        last = messages[-1]
        results = [c for c in last.contents if c.type == "function_result"]
        if results:
            return [Content.from_text(f"Done: {results[-1].result}")]
        prompt = " ".join(c.text or "" for c in last.contents if c.type == "text")
        return [
            Content.from_function_call(
                call_id=f"call-{uuid.uuid4().hex[:12]}", name="send_email", arguments=json.dumps(email_args(prompt))
            )
        ]

    def _inner_get_response(self, *, messages, stream: bool, options, **kwargs: Any):
        contents = self._reply(messages)
        if stream:

            async def updates() -> AsyncIterator[ChatResponseUpdate]:
                yield ChatResponseUpdate(role="assistant", contents=contents)

            return ResponseStream(updates(), finalizer=ChatResponse.from_updates)

        async def respond() -> ChatResponse:
            return ChatResponse(messages=[Message(role="assistant", contents=contents)])

        return respond()


# --- docs/agents/agent-framework.md ---
@tool(name="send_email", description="Send an email", approval_mode="always_require")
def send_email(to: str, subject: str, body: str) -> str:
    return record_sent("", {"to": to, "subject": subject, "body": body})


agent = Agent(name="mailer", instructions="Send the emails asked for.", client=ScriptedChatClient(), tools=[send_email])
api = FastAPI()
add_agent_framework_fastapi_endpoint(api, agent, "/", single_user=True)
# --- end of snippet ---

app = app_with([Mount("/", app=api)])

if __name__ == "__main__":
    serve(app)
