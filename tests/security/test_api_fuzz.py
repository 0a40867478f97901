"""Schemathesis against the inbox's own OpenAPI document: every operation, generated requests sent with an
agent token and with an approver token, over real HTTP to the whole product. No request may answer a
server error.

Bounded: ``INBOX_FUZZ_EXAMPLES`` examples per operation (100 by default; each is sent with both tokens).
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


@pytest.mark.timeout(1800)
def test_no_operation_answers_a_server_error(live_asgi, agent, ingest, alice):
    assert ingest(agent, spec_example("parallel_interrupts")).status_code == 201  # something to find
    _, approver_key = ApiToken.issue(alice)
    identities = {"agent": agent.auth["HTTP_AUTHORIZATION"], "approver": f"Token {approver_key}"}
    document = httpx.get(f"{live_asgi}/api/schema/?format=json", timeout=30).json()
    schema = schemathesis.openapi.from_dict(document)
    server_errors: list[str] = []
    operations = 0

    for result in schema.get_all_operations():
        operation = result.ok()
        operations += 1

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

    assert operations >= 10
    assert not server_errors, f"{len(server_errors)} server errors:\n" + "\n".join(server_errors[:40])
