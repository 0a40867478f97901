"""A real LangGraph graph (no LLM, in-memory checkpointer) served by ag-ui-langgraph, for the integration tests.

``propose`` reads the user's message ("Email bob@example.com subject: Lunch body: Are we on?") and proposes a
``sendEmail`` tool call; the ``sendEmail`` tool asks for approval with ``interrupt()`` (reason ``tool_call``,
edits allowed) and, when approved, "sends" the email — recording the arguments it actually used, which
``GET /record`` returns so a test can check what the agent executed. ``respond`` says what happened.

Run: ``python -m tests.integration.langgraph_app --port 8123`` (needs fastapi, for
``ag_ui_langgraph.add_langgraph_fastapi_endpoint``).
"""

from __future__ import annotations

import argparse
import json
import re
import uuid
from typing import Annotated, Any

from ag_ui_langgraph import LangGraphAgent, add_langgraph_fastapi_endpoint
from fastapi import FastAPI
from langchain_core.callbacks.manager import dispatch_custom_event
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import InjectedToolCallId, tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode
from langgraph.types import interrupt

CANCELLED = "__agui_cancelled__"  # ag-ui-langgraph's resume value for a cancelled interrupt
EMAIL_SCHEMA = {
    "type": "object",
    "properties": {
        "approved": {"type": "boolean"},
        "editedArgs": {
            "type": "object",
            "description": "Full replacement of the tool args. Not merged.",
            "properties": {"to": {"type": "string"}, "subject": {"type": "string"}, "body": {"type": "string"}},
        },
    },
    "required": ["approved"],
}

# The agent's own record of what it did: every sendEmail call that actually ran, and every decision seen.
RECORD: dict[str, list] = {"sent": [], "decisions": []}


@tool("sendEmail")
def send_email(to: str, subject: str, body: str, tool_call_id: Annotated[str, InjectedToolCallId]) -> str:
    """Send an email, after a person approved it."""
    answer: Any = interrupt(
        {
            "reason": "tool_call",
            "toolCallId": tool_call_id,
            "message": f"Send email to {to} with subject '{subject}'?",
            "responseSchema": EMAIL_SCHEMA,
        }
    )
    RECORD["decisions"].append({"toolCallId": tool_call_id, "answer": answer})
    if isinstance(answer, dict) and answer.get(CANCELLED):
        return json.dumps({"status": "cancelled", "sent": False, "toolCallId": tool_call_id})
    if not (isinstance(answer, dict) and answer.get("approved") is True):
        return json.dumps({"status": "denied", "sent": False, "toolCallId": tool_call_id})
    edited = answer.get("editedArgs")
    args = edited if isinstance(edited, dict) else {"to": to, "subject": subject, "body": body}
    RECORD["sent"].append({"toolCallId": tool_call_id, "args": args})
    return json.dumps(
        {"status": "sent", "sent": True, "toolCallId": tool_call_id, "edited": bool(edited), "args": args}
    )


def propose(state: MessagesState, config: RunnableConfig) -> dict:
    text = next((m.content for m in reversed(state["messages"]) if isinstance(m, HumanMessage)), "")
    text = text if isinstance(text, str) else ""
    to = (re.findall(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+", text) or ["bob@example.com"])[0]
    subject = (re.search(r"subject:\s*(.*?)\s*(?:body:|$)", text) or [None, "Hello"])[1]
    body = (re.search(r"body:\s*(.*)$", text) or [None, "Hi!"])[1]
    args = {"to": to, "subject": subject, "body": body}
    call_id = f"call_{uuid.uuid4().hex[:16]}"
    # A node without an LLM emits no tool-call events by itself: emit the proposal for AG-UI clients.
    dispatch_custom_event("manually_emit_tool_call", {"id": call_id, "name": "sendEmail", "args": args}, config=config)
    message = AIMessage(
        content="",
        id=f"msg-{uuid.uuid4().hex[:12]}",
        tool_calls=[{"name": "sendEmail", "args": args, "id": call_id, "type": "tool_call"}],
    )
    return {"messages": [message]}


def respond(state: MessagesState) -> dict:
    results = [json.loads(m.content) for m in state["messages"] if isinstance(m, ToolMessage)]
    last = results[-1] if results else {"status": "nothing"}
    return {"messages": [AIMessage(content=f"Email {last['status']}.", id=f"msg-{uuid.uuid4().hex[:12]}")]}


def build_graph():
    graph = StateGraph(MessagesState)
    graph.add_node("propose", propose)
    graph.add_node("tools", ToolNode([send_email]))
    graph.add_node("respond", respond)
    graph.add_edge(START, "propose")
    graph.add_edge("propose", "tools")
    graph.add_edge("tools", "respond")
    graph.add_edge("respond", END)
    return graph.compile(checkpointer=InMemorySaver())


# --- docs/agents/langgraph.md ---
app = FastAPI()
add_langgraph_fastapi_endpoint(
    app, LangGraphAgent(name="mailer", graph=build_graph(), emit_interrupt_outcome=True), path="/"
)
# --- end of snippet ---


@app.get("/record")
def record() -> dict:
    return RECORD


@app.get("/healthz")
def healthz() -> str:
    return "ok"


if __name__ == "__main__":
    import uvicorn

    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    options = parser.parse_args()
    uvicorn.run(app, host="127.0.0.1", port=options.port, log_level="warning")
