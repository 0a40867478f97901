"""A policy's rule in words on its pages (issue 48): the page showed the raw JSON Schema; now one condition a
line, as a person says it, with the JSON behind "As JSON Schema". Nothing is dropped: a keyword without words is
named with its value."""

from __future__ import annotations

import html
import json
import re

import pytest

from inbox.models import Policy
from inbox.policies.words import clauses, pattern_words
from tests.policies.test_policy_api_and_pages import INTERNAL


def said(schema) -> list[str]:
    return [f"{clause.field} {clause.words}".strip() for clause in clauses(schema)]


def test_the_usual_rules_read_as_sentences():
    assert said(INTERNAL) == ["to is text", "to ends with “@ourco.com”", "to is given"]
    assert said(
        {
            "properties": {
                "amount": {"type": "number", "exclusiveMinimum": 0, "maximum": 500},
                "currency": {"enum": ["EUR", "USD"]},
                "priority": {"const": "low"},
                "cc": {"type": "array", "maxItems": 0},
                "tags": {"items": {"type": "string", "minLength": 2}},
            },
            "not": {"properties": {"to": {"pattern": "^ceo@"}}, "required": ["to"]},
        }
    ) == [
        "amount is a number",
        "amount is more than 0",
        "amount is at most 500",
        "currency is one of “EUR” or “USD”",
        "priority is “low”",
        "cc is a list",
        "cc has at most 0 entries",
        "tags[each] is text",
        "tags[each] has at least 2 characters",
        "does not hold: to starts with “ceo@” and to is given",
    ]
    assert said({"anyOf": [{"required": ["a"]}, {"required": ["b"]}]}) == [
        "at least one of these holds: (1) a is given; (2) b is given"
    ]
    assert said(True) == [] and said(False) == ["never matches"]


def test_a_pattern_is_words_only_when_it_is_plain_text():
    assert pattern_words("^refund$") == "is exactly “refund”"
    assert pattern_words("invoice") == "contains “invoice”"
    assert pattern_words("@ourco\\.com$") == "ends with “@ourco.com”"
    assert pattern_words("^[a-z]+@ourco\\.com$") == "matches the pattern ^[a-z]+@ourco\\.com$"


def test_a_rule_without_words_is_named_not_dropped():
    assert said({"if": {"required": ["x"]}, "then": {"required": ["y"]}}) == [
        'satisfies the JSON Schema rule “if”: {"required": ["x"]}',
        'satisfies the JSON Schema rule “then”: {"required": ["y"]}',
    ]


@pytest.mark.django_db
def test_the_policy_page_says_the_rule_in_words_with_the_json_behind_a_summary(client, staff, agent):
    policy = Policy.objects.create(
        name="Internal email",
        agent=agent.agent,
        reason="tool_call",
        tool_name="sendEmail",
        match_schema=INTERNAL,
        action=Policy.Action.APPROVE,
    )
    client.force_login(staff)
    page = client.get(f"/policies/{policy.pk}/").content.decode()
    rule = page.split("data-policy-rule>", 1)[1].split("</section>", 1)[0]
    words = rule.split("<details", 1)[0]
    lines = [re.sub(r"<[^>]+>", "", line).strip() for line in re.findall(r"<li>(.*?)</li>", words)]
    assert "Tool arguments match when:" in words
    # In the schema's order, which PostgreSQL's jsonb does not keep: the same lines on either database.
    assert sorted(lines) == sorted(["to is text", "to ends with “@ourco.com”", "to is given"])
    assert '"properties"' not in words and "&quot;properties&quot;" not in words  # no JSON in the words
    json_part = rule.split("<details", 1)[1]
    assert "<summary>As JSON Schema</summary>" in json_part
    assert json.loads(html.unescape(json_part.split('">', 2)[2].split("</pre>")[0])) == INTERNAL
