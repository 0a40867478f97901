"""docs/reliability.md says what the code does: every mechanism it promises names the tests that check it, and
every test it cites exists (a renamed or deleted test leaves the promise unchecked, and this fails)."""

from __future__ import annotations

import re

from tests.conftest import ROOT

DOC = ROOT / "docs" / "reliability.md"
REFERENCE = re.compile(r"`(tests/[\w/]+\.py)::(\w+)`")


def _section(text: str, title: str) -> str:
    start = text.index(f"## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end != -1 else None]


def test_every_test_the_page_cites_exists():
    references = REFERENCE.findall(DOC.read_text())
    assert len(references) > 20
    missing = []
    for path, name in references:
        source = ROOT / path
        if not source.exists() or not re.search(rf"^\s*def {name}\(", source.read_text(), re.MULTILINE):
            missing.append(f"{path}::{name}")
    assert not missing, f"docs/reliability.md cites tests that do not exist: {missing}"


def test_every_mechanism_names_what_checks_it():
    text = DOC.read_text()
    mechanisms = re.findall(r"^\| \*\*(.+?)\*\*", _section(text, "The mechanisms"), re.MULTILINE)
    checked = dict(re.findall(r"^- \*\*(.+?)\*\* — (.+)$", _section(text, "Checked by"), re.MULTILINE))
    assert len(mechanisms) >= 10
    unchecked = [name for name in mechanisms if not REFERENCE.search(checked.get(name, ""))]
    assert not unchecked, f"mechanisms of docs/reliability.md without a test in 'Checked by': {unchecked}"
