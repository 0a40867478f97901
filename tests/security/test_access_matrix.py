"""Every URL has a written rule, and this test holds it: each URL pattern of the URLconf and each operation of
the OpenAPI schema has a row in ``tests/security/access_matrix.py``, and each row's statuses are what each
role gets. A new page or endpoint cannot land without its row (``test_a_url_added_without_a_row_fails``)."""

from __future__ import annotations

import json
import re
import sys
import types
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.db import transaction
from django.http import HttpResponse
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver, path
from django.utils import timezone
from drf_spectacular.generators import SchemaGenerator
from rest_framework.response import Response
from rest_framework.views import APIView

from inbox.decisions.links import make_token
from inbox.listing.saved_views import saved_view_create
from inbox.models import EscalationRule, InboxItem, ItemSearchText, Resume, TeamLead
from inbox.models.policies import PolicyBacktest
from inbox.models.starts import RunStart
from inbox.policies.backtest import rules_of
from inbox.policies.services import policy_create
from inbox.teams.away import away_set
from tests.factories import UserFactory, interrupted_run
from tests.security import access_matrix
from tests.security.access_matrix import OPERATIONS, PAGES, PREFIX_ROWS, ROLES, Row

ROOT = Path(__file__).resolve().parents[2]
API_PREFIX = "api/v1/"


# --- what the URLconf and the schema hold ----------------------------------------------------------------


def url_patterns(urlconf: Any = None) -> list[tuple[str, str]]:
    """``(key, route)`` of every URL pattern: its key is ``namespace:name``, its name, or ``/`` and its route."""

    def walk(patterns: list, prefix: str, namespace: str | None):
        for pattern in patterns:
            if isinstance(pattern, URLResolver):
                inner = ":".join(part for part in (namespace, pattern.namespace) if part) or None
                yield from walk(pattern.url_patterns, prefix + str(pattern.pattern), inner)
            elif isinstance(pattern, URLPattern):
                route = prefix + str(pattern.pattern)
                name = f"{namespace}:{pattern.name}" if namespace and pattern.name else pattern.name
                yield (name or f"/{route}", route)

    return list(walk(get_resolver(urlconf).url_patterns, "", None))


def api_operations(urlconf: Any = None) -> list[str]:
    """``METHOD /path`` of every operation of the OpenAPI schema."""
    schema = SchemaGenerator(urlconf=urlconf).get_schema(request=None, public=True)
    methods = ("get", "post", "put", "patch", "delete")
    return [
        f"{method.upper()} {route}" for route, item in schema["paths"].items() for method in item if method in methods
    ]


def _shape(route: str) -> str:
    """A route with its parameters blanked: ``api/v1/items/<id:pk>`` and ``/api/v1/items/{id}`` agree."""
    route = re.sub(r"<[^>]+>", "{}", route.lstrip("/"))
    return re.sub(r"\{[^}]*\}", "{}", route)


def missing_rows(urlconf: Any = None) -> list[str]:
    """The URL patterns and operations the matrix has no row for."""
    page_keys = {row.key for row in PAGES}
    operation_keys = {row.key for row in OPERATIONS}
    operations = api_operations(urlconf)
    operation_shapes = {_shape(op.split(" ", 1)[1]) for op in operations}
    missing = []
    for key, route in url_patterns(urlconf):
        if any(route.startswith(prefix) for prefix in PREFIX_ROWS):
            continue
        if route.startswith(API_PREFIX):
            if _shape(route) not in operation_shapes:
                missing.append(f"URL {route} (no operation in the schema)")
            continue
        if key not in page_keys:
            missing.append(f"URL {key} ({route})")
    missing += [f"operation {op}" for op in operations if op not in operation_keys]
    return missing


def test_every_url_pattern_and_api_operation_has_a_row(db):
    assert missing_rows() == []


def test_every_row_names_a_url_or_operation_that_exists(db):
    keys = {key for key, _route in url_patterns()} | set(PREFIX_ROWS.values())
    assert [row.key for row in PAGES if row.key not in keys] == []
    operations = set(api_operations())
    assert [row.key for row in OPERATIONS if row.key not in operations] == []
    every = [row.key for row in [*PAGES, *OPERATIONS]]
    assert len(every) == len(set(every)), "a key has two rows"


# --- the test of the test -----------------------------------------------------------------------------


def _page(request):
    return HttpResponse("new")


class _NewApi(APIView):
    def get(self, request):
        return Response({})


def test_a_url_added_without_a_row_fails(db):
    """A urlconf with one more page and one more API operation: the check names both."""
    from config import urls

    module = types.ModuleType("tests.security._urls_with_a_new_page")
    module.urlpatterns = [  # type: ignore[attr-defined]
        path("inbox/a-new-page/", _page, name="a_new_page"),
        path("api/v1/a-new-endpoint", _NewApi.as_view(), name="api-a-new-endpoint"),
        *urls.urlpatterns,
    ]
    sys.modules[module.__name__] = module
    try:
        missing = missing_rows(module.__name__)
    finally:
        del sys.modules[module.__name__]
    assert missing == ["URL a_new_page (inbox/a-new-page/)", "operation GET /api/v1/a-new-endpoint"]


# --- the statuses ---------------------------------------------------------------------------------------


@pytest.fixture
def world(agent, team, alice, bob, carol, staff) -> dict[str, Any]:
    """The objects the rows' paths name, and a client per role: ``anonymous`` (nothing), ``agent`` (its token, no
    session), ``approver`` (alice, of ops, the agent's team), ``other`` (carol, of another team), ``delegate``
    (dele, of ops, whom bob named while away), ``staff`` and ``lead`` (lena, who leads ops)."""
    dele = UserFactory(username="dele", teams=[team])
    lena = UserFactory(username="lena", teams=[team])
    TeamLead.objects.create(team=team, user=lena)
    UserFactory(username="tess", teams=[team])
    now = timezone.now()
    away_set(user=bob, starts_at=now - timedelta(hours=1), ends_at=now + timedelta(days=3), delegate=dele, set_by=bob)
    run = interrupted_run(agent.agent, "t-matrix-1", "r-matrix-1", 60)
    item = run.items.get()
    InboxItem.objects.filter(pk=item.pk).update(tool_call_id="call-matrix")
    ItemSearchText.objects.filter(item=item).update(tool_call_id="call-matrix")
    policy = policy_create(user=staff, fields={"name": "Machine", "agent": agent.agent, "action": "approve"})
    failed_run = interrupted_run(agent.agent, "t-matrix-2", "r-matrix-2", 60)
    failed_run.items.update(status=InboxItem.Status.RESOLVED, outcome=InboxItem.Outcome.APPROVED, decided_at=now)
    Resume.objects.create(
        run=failed_run,
        thread=failed_run.thread,
        agent=agent.agent,
        next_run_id="r-matrix-2-next",
        input={},
        state=Resume.State.FAILED,
    )
    objects = {
        "item": item.pk,
        "run": run.pk,
        "failed_run": failed_run.pk,
        "thread": run.thread_id,
        "tool_call": "call-matrix",
        "agent": agent.agent.slug,
        "view": saved_view_create(user=alice, name="Mine", query="tab=all").pk,
        "rule": EscalationRule.objects.create(team=team, after_minutes=30, to_team=team, created_by=alice).pk,
        "agent_rule": EscalationRule.objects.create(
            agent=agent.agent, after_minutes=30, to_user=alice, created_by=staff
        ).pk,
        "policy": policy.pk,
        "backtest": PolicyBacktest.objects.create(
            policy=policy,
            policy_version=policy.version,
            rules=rules_of(policy),
            days=30,
            since=now,
            until=now,
            requested_by=staff,
            state=PolicyBacktest.State.DONE,
        ).pk,
        "set_backtest": PolicyBacktest.objects.create(
            policy=None,
            ordered_set=True,
            policy_version=0,
            rules={"policies": [], "candidate": None},
            days=30,
            since=now,
            until=now,
            requested_by=staff,
            state=PolicyBacktest.State.DONE,
        ).pk,
        "start": RunStart.objects.create(agent=agent.agent, user=alice, thread_id="t-start", run_input={}).pk,
        "link": make_token(item=item, action="approve", user=alice),
    }
    clients = {
        "anonymous": Client(raise_request_exception=False),
        "agent": Client(raise_request_exception=False, **agent.auth),
    }
    for role, user in (("approver", alice), ("other", carol), ("delegate", dele), ("staff", staff), ("lead", lena)):
        clients[role] = Client(raise_request_exception=False)
        clients[role].force_login(user)
    return {"objects": objects, "clients": clients}


def _fill(value: Any, objects: dict[str, Any]) -> Any:
    """The row's body or path with ``{name}`` replaced (an id alone becomes a number)."""
    if isinstance(value, str):
        whole = re.fullmatch(r"\{(\w+)\}", value)
        if whole and isinstance(objects.get(whole.group(1)), int):
            return objects[whole.group(1)]
        return re.sub(r"\{(\w+)\}", lambda match: str(objects[match.group(1)]), value)
    if isinstance(value, list):
        return [_fill(each, objects) for each in value]
    if isinstance(value, dict):
        return {key: _fill(each, objects) for key, each in value.items()}
    return value


def _body(row: Row, objects: dict[str, Any]) -> Any:
    if row.body == "away":
        now = timezone.now()
        return {"from": now.isoformat(), "until": (now + timedelta(days=2)).isoformat(), "delegate": "tess"}
    return _fill(row.body, objects)


def request_as(client: Client, row: Row, objects: dict[str, Any]) -> int:
    """The status ``client`` gets for the row's request; whatever it changed is rolled back."""
    target = _fill(row.path, objects)
    body = _body(row, objects)
    method = getattr(client, row.method.lower())
    with transaction.atomic():
        if row.key.split(" ", 1)[0] == row.method and row.key.split(" ", 1)[-1].startswith("/api/"):
            data = json.dumps(body if body is not None else {}) if row.method != "GET" else None
            response = method(target, data=data, content_type="application/json") if data else method(target)
        elif row.method == "GET":
            response = method(target)
        else:
            response = method(target, body or {})
        transaction.set_rollback(True)
    return response.status_code


@pytest.mark.parametrize("row", [*PAGES, *OPERATIONS], ids=lambda row: f"{row.method} {row.key}")
def test_each_role_gets_the_status_the_matrix_gives(row: Row, world):
    seen = {role: request_as(world["clients"][role], row, world["objects"]) for role in ROLES}

    assert seen == row.expected()


def test_docs_print_the_matrix():
    doc = (ROOT / "docs" / "security.md").read_text()
    assert access_matrix.markdown_table() in doc, "run `python -m tests.security.access_matrix` and paste its table"
