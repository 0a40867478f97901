"""The "connect your agent" pages (docs/agents/*.md): each page's code is the block the tests run (between
``# --- docs/agents/<page> ---`` markers in the agent server it names; ``// --- …`` in a TypeScript one), and the
README links every page."""

from __future__ import annotations

import re

import pytest

from tests.conftest import ROOT

PAGES = {
    "langgraph": "tests/integration/langgraph_app.py",
    "pydantic-ai": "tests/frameworks/servers/pydantic_ai_agent.py",
    "strands": "tests/frameworks/servers/strands_agent.py",
    "adk": "tests/frameworks/servers/adk_agent.py",
    "crewai": "tests/frameworks/servers/crewai_flow.py",
    "agent-framework": "tests/frameworks/servers/agent_framework_agent.py",
    "ag2": "tests/frameworks/servers/ag2_agent.py",
    "claude-managed-agents": "tests/frameworks/servers/claude_managed_agents_agent.py",
    "claude-sdk": "tests/frameworks/servers/claude_sdk_agent.py",
    "mastra": "tests/frameworks/servers/node/mastra_agent.ts",
    "copilotkit": "tests/frameworks/servers/node/copilotkit_agent.ts",
    "langgraph-js": "tests/frameworks/servers/node/langgraph_agent.ts",
}


@pytest.mark.parametrize("page", sorted(PAGES))
def test_the_snippet_on_each_page_is_the_code_the_tests_run(page: str) -> None:
    doc = (ROOT / "docs" / "agents" / f"{page}.md").read_text()
    shown = re.search(r"```(?:python|ts)\n(.*?)```", doc, re.S).group(1).strip()
    source = (ROOT / PAGES[page]).read_text()
    marker = "//" if PAGES[page].endswith(".ts") else "#"
    tested = re.search(
        rf"{marker} --- docs/agents/{re.escape(page)}\.md ---\n(.*?){marker} --- end of snippet ---", source, re.S
    )
    assert tested is not None, f"{PAGES[page]} has no marked block for {page}.md"
    assert shown == tested.group(1).strip()
    assert PAGES[page] in doc  # the page names the file its code is tested in


def test_the_readme_links_every_page() -> None:
    readme = (ROOT / "README.md").read_text()
    for page in PAGES:
        assert f"(docs/agents/{page}.md)" in readme, page
