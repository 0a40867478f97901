"""An AWS Strands agent served by ``ag-ui-strands``, with a deterministic ``Model`` subclass.

- "Email …": the model proposes ``sendEmail``; ``ToolBehavior(interrupt_on_call=True)`` pauses before the tool
  runs (``reason: tool_call``, schema ``{approved}``, the real toolCallId).
- "Budget …": the model calls ``requestBudget``, whose body asks a person itself with
  ``tool_context.interrupt("inbox:budget", reason=…)`` (``reason`` = that name, no schema, no toolCallId).
- "Ask …": the model calls ``ask_human``, which asks the question with ``tool_context.interrupt("ask_human",
  reason={"question": …})`` and uses the answer (``RECORD["sent"]``: what it received as the answer).

Run: ``.venv/frameworks/strands/bin/python -m tests.frameworks.servers.strands_agent --port N``. The snippet
in docs/agents/strands.md is this file's block between the ``docs`` markers.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import AsyncIterator
from typing import Any

from tests.frameworks.servers.common import RECORD, app_with, email_args, record_sent, serve  # isort: skip

from ag_ui_strands import StrandsAgent, StrandsAgentConfig, ToolBehavior, add_strands_fastapi_endpoint
from fastapi import FastAPI
from starlette.routing import Mount
from strands import Agent, tool
from strands.models.model import Model
from strands.types.tools import ToolContext

BUDGETS: list[dict] = []


class ScriptedModel(Model):
    """Proposes one tool call from the user's last message, then answers with the tool's result."""

    def update_config(self, **model_config: Any) -> None:
        pass

    def get_config(self) -> Any:
        return {}

    async def structured_output(self, output_model, prompt, system_prompt=None, **kwargs):  # pragma: no cover
        raise NotImplementedError
        yield {}

    async def stream(self, messages, tool_specs=None, system_prompt=None, **kwargs) -> AsyncIterator[dict]:
        last = messages[-1]
        results = [block["toolResult"] for block in last["content"] if "toolResult" in block]
        yield {"messageStart": {"role": "assistant"}}
        if results:
            text = " ".join(part.get("text", "") for part in results[-1].get("content", []))
            yield {"contentBlockDelta": {"delta": {"text": f"Done: {text}"}}}
            yield {"contentBlockStop": {}}
            yield {"messageStop": {"stopReason": "end_turn"}}
            return
        prompt = " ".join(block.get("text", "") for block in last["content"] if "text" in block)
        if prompt.lower().startswith("budget"):
            name, args = "requestBudget", {"amount": int(re.sub(r"\D", "", prompt) or 0)}
        elif prompt.lower().startswith("ask "):
            name, args = "ask_human", {"question": prompt[4:].strip()}
        else:
            name, args = "sendEmail", email_args(prompt)
        tool_use_id = f"tooluse-{uuid.uuid4().hex[:12]}"
        yield {"contentBlockStart": {"start": {"toolUse": {"toolUseId": tool_use_id, "name": name}}}}
        yield {"contentBlockDelta": {"delta": {"toolUse": {"input": json.dumps(args)}}}}
        yield {"contentBlockStop": {}}
        yield {"messageStop": {"stopReason": "tool_use"}}


# --- docs/agents/strands.md ---
@tool(name="sendEmail", context=True)
def send_email(to: str, subject: str, body: str, tool_context: ToolContext) -> str:
    """Send an email."""
    return record_sent(tool_context.tool_use["toolUseId"], {"to": to, "subject": subject, "body": body})


@tool(name="requestBudget", context=True)
def request_budget(amount: int, tool_context: ToolContext) -> str:
    """Ask a person to approve a budget: a named (non-tool) interrupt."""
    answer = tool_context.interrupt("inbox:budget", reason={"message": f"Approve a budget of {amount}?"})
    BUDGETS.append({"amount": amount, "answer": answer})
    if not isinstance(answer, dict) or answer.get("cancelled"):
        return "budget request cancelled"
    approved = (answer.get("response") or {}).get("approved")
    return f"budget {amount} {'approved' if approved else 'refused'}"


@tool(name="ask_human", context=True)
def ask_human(question: str, tool_context: ToolContext) -> str:
    """Ask a person a question and use the answer: a named interrupt whose reason carries the question."""
    answer = tool_context.interrupt("ask_human", reason={"question": question})
    if not isinstance(answer, dict) or answer.get("cancelled"):
        return "nobody answered"
    # The adapter hands the tool {"response": <the resume payload>}: the person's words, as the tool uses them.
    response = answer.get("response")
    RECORD["sent"].append({"toolCallId": tool_context.tool_use["toolUseId"], "args": {"answer": response}})
    return f"The person answered: {response}"


strands_agent = StrandsAgent(
    agent=Agent(model=ScriptedModel(), tools=[send_email, request_budget, ask_human]),
    name="mailer",
    config=StrandsAgentConfig(tool_behaviors={"sendEmail": ToolBehavior(interrupt_on_call=True)}),
)
api = FastAPI()
add_strands_fastapi_endpoint(api, strands_agent, "/")
# --- end of snippet ---

app = app_with([Mount("/", app=api)])

if __name__ == "__main__":
    serve(app)
