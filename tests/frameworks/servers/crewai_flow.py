"""A CrewAI Flow served by ``ag-ui-crewai`` with ``emit_interrupt_outcome=True``: two ``@human_feedback``
steps, so one thread pauses twice. No LLM: the steps are plain Python.

The adapter names each pause's interrupt after the flow id, which is the AG-UI ``threadId``: both pauses of a
thread carry the same interrupt id (``reason: crewai:human_feedback``).

Run: ``.venv/frameworks/crewai/bin/python -m tests.frameworks.servers.crewai_flow --port N``. The snippet in
docs/agents/crewai.md is this file's block between the ``docs`` markers.
"""

from __future__ import annotations

from typing import Any

from tests.frameworks.servers.common import RECORD, app_with, serve  # isort: skip

from ag_ui_crewai import add_crewai_flow_fastapi_endpoint, agui_feedback_provider
from crewai.flow.flow import Flow, listen, start
from crewai.flow.human_feedback import human_feedback
from fastapi import FastAPI
from starlette.routing import Mount


# --- docs/agents/crewai.md ---
class PublishFlow(Flow):
    @start()
    @human_feedback(message="Approve this outline?", provider=agui_feedback_provider)
    def outline(self) -> str:
        return "1. Intro 2. Body 3. Close"

    @listen(outline)
    @human_feedback(message="Publish this draft?", provider=agui_feedback_provider)
    def draft(self, review: Any) -> str:
        RECORD["sent"].append({"toolCallId": "outline", "args": {"feedback": getattr(review, "feedback", None)}})
        return "Draft following the outline"

    @listen(draft)
    def publish(self, review: Any) -> str:
        RECORD["sent"].append({"toolCallId": "draft", "args": {"feedback": getattr(review, "feedback", None)}})
        return "published"


api = FastAPI()
add_crewai_flow_fastapi_endpoint(api, PublishFlow(), "/", emit_interrupt_outcome=True)
# --- end of snippet ---

app = app_with([Mount("/", app=api)])

if __name__ == "__main__":
    serve(app)
