"""``safe_json`` first walks a value without building a path per node, and only walks it again with paths
when something may be refused: the two walks must agree on every value, and a refusal must name the same
path, rule and message as the path-building walk alone."""

from __future__ import annotations

import json

import pytest

from inbox.core import safe_json

DEPTH = 8


def nested_lists(levels: int) -> str:
    return "[" * levels + "]" * levels


def nested_dicts(levels: int) -> str:
    return '{"a":' * (levels - 1) + "{}" + "}" * (levels - 1)


REFUSED = {
    "nul in a value": ('{"events": [{"message": "a\\u0000b"}]}', "events[0].message", "no_nul"),
    "nul in a key": ('{"events": [{"a\\u0000": 1}]}', "events[0]", "no_nul"),
    "escaped lone surrogate": ('{"x": ["ok", "\\ud800"]}', "x[1]", "no_lone_surrogate"),
    "lists one level too deep": (nested_lists(DEPTH + 1), "[0]" * DEPTH, "max_depth"),
    "dicts one level too deep": (nested_dicts(DEPTH + 1), "a.a.a.a.a.a.a.a", "max_depth"),
    "NaN deep inside": ('{"events": [{"a": 1}, {"b": [1, NaN]}]}', "events[1].b[1]", "finite_number"),
    "Infinity": ('{"v": [-Infinity]}', "v[0]", "finite_number"),
    "a number too large": ('[{"x": 1e400}]', "[0].x", "finite_number"),
    "an integer too long": ('{"deep": [{"n": ' + "7" * 5000 + "}]}", "deep[0].n", "integer_digits"),
}

ACCEPTED = {
    "an escaped surrogate pair": '{"emoji": "\\ud83d\\ude00"}',
    "an escaped harmless character": '{"name": "caf\\u00e9", "t": "\\t"}',
    "lists exactly at the limit": nested_lists(DEPTH),
    "dicts exactly at the limit": nested_dicts(DEPTH),
    "empty containers": '{"a": [], "b": {}, "c": [[], {}]}',
    "a large flat array": json.dumps(list(range(20000)) + ["x"] * 1000 + [1.5, True, None]),
    "plain text": '{"type": "RUN_FINISHED", "threadId": "t", "runId": "r", "n": -0.0}',
}


def authority(text: str) -> safe_json.UnsafeJson | None:
    """What the path-building walk alone says about the decoded ``text``."""
    value = json.loads(text, parse_constant=safe_json._constant, parse_float=safe_json._float, parse_int=safe_json._int)
    try:
        safe_json._check_with_paths(value, max_depth=DEPTH)
    except safe_json.UnsafeJson as exc:
        return exc
    return None


def refusal(call) -> tuple[str, str, str] | None:
    try:
        call()
    except safe_json.UnsafeJson as exc:
        return exc.path, exc.rule, exc.message
    return None


@pytest.mark.parametrize("name", REFUSED)
def test_a_refusal_names_the_same_path_rule_and_message_as_the_walk_with_paths(name):
    text, path, rule = REFUSED[name]
    expected = authority(text)
    assert expected is not None and (expected.path, expected.rule) == (path, rule)
    for data in (text, text.encode()):
        assert refusal(lambda data=data: safe_json.loads(data, max_depth=DEPTH)) == (path, rule, expected.message)


@pytest.mark.parametrize("name", ACCEPTED)
def test_what_the_walk_with_paths_accepts_is_accepted(name):
    text = ACCEPTED[name]
    assert authority(text) is None
    for data in (text, text.encode()):
        assert safe_json.loads(data, max_depth=DEPTH) == json.loads(text)


def test_a_raw_lone_surrogate_in_a_str_is_refused_without_any_escape():
    """A str (not bytes) can hold a lone surrogate as it is, with no ``\\u`` in the text to hint at it."""
    text = '{"events": [{"message": "a\ud800b"}]}'
    assert "\\u" not in text
    assert refusal(lambda: safe_json.loads(text, max_depth=DEPTH))[:2] == ("events[0].message", "no_lone_surrogate")
    key = '{"ok": {"k\udfff": 1}}'
    assert refusal(lambda: safe_json.loads(key, max_depth=DEPTH))[:2] == ("ok", "no_lone_surrogate")


def test_check_value_of_a_decoded_value_names_the_path_deep_inside():
    value = {"events": [{"a": "fine"}, {"b": [{"c": "x\x00y"}]}]}
    assert refusal(lambda: safe_json.check_value(value, "body", max_depth=DEPTH))[:2] == (
        "body.events[1].b[0].c",
        "no_nul",
    )
    # Types JSON does not produce are judged by the walk with paths, which lets them through as before.
    assert safe_json.check_value({1: ("tuple",)}, max_depth=DEPTH) is None
    too_deep = [[[[[[[[[]]]]]]]]]
    assert refusal(lambda: safe_json.check_value(too_deep, max_depth=DEPTH))[1] == "max_depth"


def test_the_walk_without_paths_vouches_only_for_what_is_clean():
    """It must say "look again" for each kind of refusal, or a refusal would be missed."""
    for name, (text, _, _) in REFUSED.items():
        value = json.loads(
            text, parse_constant=safe_json._constant, parse_float=safe_json._float, parse_int=safe_json._int
        )
        assert not safe_json._clean(value, DEPTH, strings=True), name
    for name, text in ACCEPTED.items():
        assert safe_json._clean(json.loads(text), DEPTH, strings=True), name
