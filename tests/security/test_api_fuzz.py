"""Schemathesis against the inbox's own OpenAPI document: every operation, generated requests sent with an
agent token and with an approver token, over real HTTP to the whole product. No request may answer a
server error.

Bounded: ``INBOX_FUZZ_EXAMPLES`` examples per operation (100 by default; each is sent with both tokens). One
test per operation, listed from the schema generator at collection, so that pytest-xdist shares them out; each
test fetches the document the server serves and fuzzes that operation from it.
"""

from __future__ import annotations

import os

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings

from inbox.models import ApiToken
from tests.conftest import spec_example

EXAMPLES = int(os.environ.get("INBOX_FUZZ_EXAMPLES", "100"))


def _operations() -> list[tuple[str, str]]:
    """(method, path) of every operation in the OpenAPI document, as drf-spectacular generates it."""
    from drf_spectacular.generators import SchemaGenerator

    document = SchemaGenerator().get_schema(request=None, public=True)
    return sorted((method.upper(), path) for path, item in document["paths"].items() for method in item)


OPERATIONS = _operations()


def test_the_fuzz_covers_every_operation():
    assert len(OPERATIONS) >= 20
    assert ("POST", "/api/v1/runs") in OPERATIONS
    assert ("POST", "/api/v1/items/{id}/decision") in OPERATIONS


@pytest.mark.timeout(900)
@pytest.mark.parametrize(("method", "path"), OPERATIONS, ids=[f"{m} {p}" for m, p in OPERATIONS])
def test_no_operation_answers_a_server_error(method, path, live_asgi, agent, ingest, alice):
    assert ingest(agent, spec_example("parallel_interrupts")).status_code == 201  # something to find
    _, approver_key = ApiToken.issue(alice)
    identities = {"agent": agent.auth["HTTP_AUTHORIZATION"], "approver": f"Token {approver_key}"}
    document = httpx.get(f"{live_asgi}/api/schema/?format=json", timeout=30).json()
    schema = schemathesis.openapi.from_dict(document)
    server_errors: list[str] = []
    operation = schema[path][method]

    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(case=operation.as_strategy())
    def send(case) -> None:
        for who, authorization in identities.items():
            response = case.call(base_url=live_asgi, headers={"Authorization": authorization}, timeout=30)
            if response.status_code >= 500:
                server_errors.append(
                    f"{response.status_code} {case.method} {case.formatted_path} as {who}: "
                    f"body={case.body!r:.300} query={case.query!r:.200}"
                )

    send()
    assert not server_errors, f"{len(server_errors)} server errors:\n" + "\n".join(server_errors[:40])
