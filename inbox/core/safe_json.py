"""JSON from untrusted senders (agents, browsers, API clients), read so that nothing downstream can fail on it.

``loads`` refuses what the standard library accepts but the product cannot store or process (NaN and infinities,
overlong integers, nesting past ``max_depth``, NUL characters, lone surrogates); ``check_value`` and
``check_text`` apply the same rules to decoded values. Each refusal is an ``UnsafeJson`` naming its path."""

from __future__ import annotations

import json
import math
import re
from typing import Any

_BAD_CHARS = re.compile("[\x00\ud800-\udfff]")


class UnsafeJson(ValueError):
    """A value the inbox refuses: ``path`` names it (``events[0].outcome``), ``rule`` says why."""

    def __init__(self, path: str, rule: str, message: str):
        super().__init__(message)
        self.path = path
        self.rule = rule
        self.message = message


def _join(path: str, part: str | int) -> str:
    if isinstance(part, int):
        return f"{path}[{part}]"
    return f"{path}.{part}" if path else part


class _Refused:
    """Stands in for a number the parser met but the inbox refuses, until ``check_value`` finds its path."""

    def __init__(self, rule: str, what: str):
        self.rule = rule
        self.what = what


def _constant(name: str) -> _Refused:
    return _Refused("finite_number", f"is {name}, which is not a JSON number; only finite numbers are accepted")


def _float(text: str) -> float | _Refused:
    value = float(text)
    if math.isinf(value):
        return _Refused("finite_number", f"is a number too large to store ({text[:20]}…)")
    return value


def _int(text: str) -> int | _Refused:
    try:
        return int(text)
    except ValueError:  # Python refuses to convert integers over 4,300 digits
        return _Refused("integer_digits", f"is an integer of {len(text)} digits, which is too long")


def text_problem(text: str) -> tuple[str, str] | None:
    """``(rule, message)`` when ``text`` holds a character the inbox cannot store, else None."""
    bad = _BAD_CHARS.search(text)
    if bad is None:
        return None
    if bad.group() == "\x00":
        return "no_nul", "must not contain the NUL character (\\u0000)"
    return "no_lone_surrogate", f"must not contain a lone UTF-16 surrogate (\\u{ord(bad.group()):04x})"


def check_text(text: str, path: str) -> None:
    problem = text_problem(text)
    if problem is not None:
        raise UnsafeJson(path, problem[0], f"{path or 'The value'} {problem[1]}.")


def check_value(value: Any, path: str = "", *, max_depth: int) -> None:
    """Depth, strings (keys too) and numbers of a decoded JSON value, walked without recursion."""
    if not _clean(value, max_depth, strings=True):
        _check_with_paths(value, path, max_depth=max_depth)


def _clean(value: Any, max_depth: int, *, strings: bool) -> bool:
    """True when ``value`` holds nothing ``_check_with_paths`` refuses: the common case, walked without
    building a path per node (that walk cost most of reading a body). ``strings=False`` skips looking at
    strings and keys, for text known to hold none that could be refused. False means "look again", with paths."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    bad = _BAD_CHARS.search
    while stack:
        current, depth = stack.pop()
        kind = type(current)
        if kind is dict:
            if depth > max_depth:
                return False
            if strings and any(type(key) is not str or bad(key) for key in current):
                return False
            items = current.values()
        elif kind is list:
            if depth > max_depth:
                return False
            items = current
        elif kind is str:
            if strings and bad(current):
                return False
            continue
        elif kind is float:
            if not math.isfinite(current):
                return False
            continue
        elif kind is int or kind is bool or current is None:
            continue
        else:
            return False  # a _Refused placeholder, or a type the authority should judge
        for sub in items:
            sub_kind = type(sub)
            if sub_kind is dict or sub_kind is list:
                stack.append((sub, depth + 1))
            elif sub_kind is str:
                if strings and bad(sub):
                    return False
            elif sub_kind is float:
                if not math.isfinite(sub):
                    return False
            elif not (sub_kind is int or sub_kind is bool or sub is None):
                return False
    return True


def _check_with_paths(value: Any, path: str = "", *, max_depth: int) -> None:
    """The authority: walks every node with its path and raises ``UnsafeJson`` for the first refusal."""
    stack: list[tuple[Any, str, int]] = [(value, path, 1)]
    while stack:
        current, where, depth = stack.pop()
        if isinstance(current, str):
            check_text(current, where)
        elif isinstance(current, _Refused):
            raise UnsafeJson(where, current.rule, f"{where or 'The value'} {current.what}.")
        elif isinstance(current, float):
            if not math.isfinite(current):
                raise UnsafeJson(where, "finite_number", f"{where or 'The value'} must be a finite number.")
        elif isinstance(current, dict | list):
            if depth > max_depth:
                raise UnsafeJson(
                    where, "max_depth", f"{where or 'The value'} is nested deeper than {max_depth} levels."
                )
            if isinstance(current, dict):
                for key, sub in current.items():
                    problem = text_problem(key) if isinstance(key, str) else None
                    if problem is not None:
                        rule, message = problem
                        raise UnsafeJson(where, rule, f"A key of {where or 'the value'} {message}.")
                    stack.append((sub, _join(where, str(key)), depth + 1))
            else:
                stack.extend((sub, _join(where, index), depth + 1) for index, sub in enumerate(current))


def loads(data: str | bytes, path: str = "", *, max_depth: int) -> Any:
    """``json.loads`` for untrusted input. Raises ``UnsafeJson`` (not valid JSON too: rule ``json``)."""
    try:
        text = data.decode("utf-8") if isinstance(data, bytes) else data
    except UnicodeDecodeError as exc:
        raise UnsafeJson(path, "utf8", f"{path or 'The body'} is not valid UTF-8: {exc.reason}.") from None
    try:
        value = json.loads(text, parse_constant=_constant, parse_float=_float, parse_int=_int)
    except RecursionError:
        raise UnsafeJson(
            path, "max_depth", f"{path or 'The value'} is nested deeper than {max_depth} levels."
        ) from None
    except json.JSONDecodeError as exc:
        raise UnsafeJson(path, "json", f"Not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno}).") from None
    # A NUL or a surrogate can only reach a decoded string through a \u escape (strict parsing refuses raw
    # control characters, and bytes decode strictly as UTF-8), or raw in a str the caller passed: without
    # either, only depth and numbers are left to check.
    strings = "\\u" in text or (not isinstance(data, bytes) and _BAD_CHARS.search(text) is not None)
    if not _clean(value, max_depth, strings=strings):
        _check_with_paths(value, path, max_depth=max_depth)
    return value
