"""``inbox.core.instances.build`` makes the instance ``Model(**values)`` makes: same attributes, same cached related
objects (so reading them costs no query), same defaults, and the same refusal of a name the model lacks."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import models

from agents.models import Agent
from inbox.core.instances import build
from inbox.core.sql import first_pk
from inbox.models import AuditEvent, InboxItem, ItemSearchText, Run, Thread

NOW = datetime(2026, 12, 3, 12, 0, tzinfo=UTC)


def state(instance: models.Model) -> tuple[dict[str, Any], dict[str, Any], bool]:
    """An instance's attributes, its cached related objects (by identity) and whether it is unsaved."""
    values = {name: value for name, value in instance.__dict__.items() if name != "_state"}
    cached = {name: id(value) for name, value in instance._state.fields_cache.items()}
    return values, cached, instance._state.adding


def test_each_model_an_ingest_builds_is_built_as_its_constructor_builds_it() -> None:
    agent = Agent(pk=7, slug="a")
    user = User(pk=3, username="u")
    thread = Thread(pk=11, agent=agent, thread_id="t-1", created_at=NOW, updated_at=NOW)
    run = Run(pk=21, agent=agent, thread=thread, run_id="r-1", created_at=NOW)
    item = InboxItem(pk=31, agent=agent, thread=thread, run=run, interrupt_id="i-1", expires_at=NOW, created_at=NOW)
    cases: list[tuple[type[models.Model], dict[str, Any]]] = [
        (Thread, {"agent": agent, "thread_id": "t-2", "created_at": NOW, "updated_at": NOW}),
        (Run, {"pk": 22, "agent": agent, "thread": thread, "run_id": "r-2", "events": [{"type": "RUN_STARTED"}]}),
        (
            InboxItem,
            {"pk": None, "agent": agent, "thread": thread, "run": run, "interrupt_id": "i-2", "metadata": None},
        ),
        (ItemSearchText, {"item": item, "agent": agent, "text": "send", "tool_call_id": "tc-1"}),
        (
            AuditEvent,
            {"actor_user": user, "actor_agent": None, "agent_id": 7, "thread_id": 11, "verb": "x", "data": {}},
        ),
    ]
    for model, values in cases:
        made, built = model(**values), build(model, **values)
        made_values, made_cache, made_adding = state(made)
        built_values, built_cache, built_adding = state(built)
        # Defaults that call a function (a created_at of now) differ by the call's moment: compare them apart.
        for name in ("created_at", "updated_at"):
            if name in made_values and name not in values:
                assert abs((made_values.pop(name) - built_values.pop(name)).total_seconds()) < 5
        assert (built_values, built_cache, built_adding) == (made_values, made_cache, made_adding), model.__name__


def test_related_objects_it_was_given_are_read_without_a_query() -> None:
    """No database access is allowed here: a query would raise."""
    agent, thread = Agent(pk=7, slug="a"), Thread(pk=11, thread_id="t-1")
    run = build(Run, pk=21, agent=agent, thread=thread, run_id="r-1")
    item = build(InboxItem, pk=31, agent=agent, thread=thread, run=run, interrupt_id="i-1")
    search = build(ItemSearchText, item=item, agent=agent, text="send")
    assert (item.run, item.thread, item.agent, run.agent) == (run, thread, agent, agent)
    assert (search.item, search.pk, item.search_text) == (item, 31, search)  # both sides of a one-to-one
    assert (item.run_id, item.thread_id, item.agent_id) == (21, 11, 7)


def test_a_key_the_statement_computes_goes_to_the_foreign_keys() -> None:
    thread = build(Thread, pk=first_pk(Thread), thread_id="t-1")
    run = build(Run, thread=thread, run_id="r-1")
    assert run.thread_id is thread.pk and run.thread is thread


def test_a_name_the_model_lacks_is_refused() -> None:
    with pytest.raises(TypeError, match="nope"):
        Run(nope=1)
    with pytest.raises(TypeError, match="nope"):
        build(Run, run_id="r-1", nope=1)
