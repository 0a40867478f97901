"""Two inputs that were 500s: a form body on the API (the stream was read before the view) and a huge number
against ``multipleOf`` (``OverflowError`` inside jsonschema). Both are 4xx JSON bodies naming the field."""

from __future__ import annotations

import json

import pytest
from django.test import Client

from inbox.models import InboxItem
from tests.security.conftest import stored

RUN = {
    "type": "RUN_FINISHED",
    "threadId": "t-m",
    "runId": "r-m",
    "outcome": {"type": "interrupt", "interrupts": [{"id": "i-m", "reason": "confirmation"}]},
}
MULTIPART = b'--x\r\nContent-Disposition: form-data; name="events"\r\n\r\n[]\r\n--x--\r\n'
FORM_BODIES = {
    "multipart_json_body": ("multipart/form-data; boundary=x", json.dumps(RUN).encode()),
    "multipart_form_body": ("multipart/form-data; boundary=x", MULTIPART),
    "urlencoded": ("application/x-www-form-urlencoded", b"type=RUN_FINISHED&threadId=t-m"),
}


@pytest.fixture
def web(client: Client) -> Client:
    """The test client as a browser or agent sees the server: an exception is a 500 response, not a raise."""
    client.raise_request_exception = False
    return client


@pytest.mark.parametrize("case", list(FORM_BODIES))
def test_a_form_body_on_the_ingest_is_415(case, agent, web):
    content_type, body = FORM_BODIES[case]
    before = stored()
    response = web.post("/api/v1/runs", data=body, content_type=content_type, **agent.auth)
    assert response.status_code == 415, response.content[:300]
    assert response.json()["field"] == "Content-Type"
    assert response.json()["error"] == "unsupported_media_type"
    assert stored() == before


@pytest.mark.parametrize("case", list(FORM_BODIES))
def test_a_form_body_on_the_decision_api_is_415(case, agent, ingest, web, alice):
    assert ingest(agent, RUN).status_code == 201
    item = InboxItem.objects.get()
    web.force_login(alice)
    content_type, body = FORM_BODIES[case]
    response = web.post(f"/api/v1/items/{item.pk}/decision", data=body, content_type=content_type)
    assert response.status_code == 415, response.content[:300]
    assert response.json()["field"] == "Content-Type"
    item.refresh_from_db()
    assert item.status == InboxItem.Status.OPEN


def test_a_form_body_with_a_session_and_csrf_checks_is_4xx(agent, ingest, alice):
    """A browser's session on the API: the CSRF check reads the form itself, before any parser. (A guard: this
    was a 4xx before the API became JSON-only, and must stay one.)"""
    assert ingest(agent, RUN).status_code == 201
    item = InboxItem.objects.get()
    browser = Client(enforce_csrf_checks=True, raise_request_exception=False)
    browser.force_login(alice)
    for content_type, body in FORM_BODIES.values():
        response = browser.post(f"/api/v1/items/{item.pk}/decision", data=body, content_type=content_type)
        assert 400 <= response.status_code < 500, (content_type, response.status_code, response.content[:300])
        assert response["Content-Type"].startswith("application/json"), response.content[:300]


# --- huge numbers -------------------------------------------------------------------------------------
HUGE = 10**400
NUMBERS = {
    "multiple_of_a_fraction": ({"type": "number", "multipleOf": 0.01}, HUGE, ""),
    "multiple_of_a_fraction_in_a_field": (
        {"type": "object", "properties": {"amount": {"type": "number", "multipleOf": 0.01}}},
        {"amount": HUGE},
        "amount",
    ),
    "multiple_of_a_huge_integer": (
        {"type": "object", "properties": {"amount": {"multipleOf": HUGE}}},
        {"amount": 1.5},
        "amount",
    ),
    # Guards rather than fixes: Python compares an int with a float exactly, so these never overflowed; a
    # comparison through float() would.
    "minimum": ({"type": "object", "properties": {"n": {"minimum": HUGE}}}, {"n": 1.5}, "n"),
    "exclusive_minimum": ({"type": "object", "properties": {"n": {"exclusiveMinimum": HUGE}}}, {"n": 1e308}, "n"),
}


@pytest.mark.parametrize("case", list(NUMBERS))
def test_a_huge_number_is_a_400_naming_the_field(case, agent, ingest, web, alice):
    schema, payload, field = NUMBERS[case]
    run = json.loads(json.dumps(RUN))
    run["outcome"]["interrupts"][0] |= {"reason": "input_required", "responseSchema": schema}
    assert ingest(agent, run).status_code == 201, "the schema itself is acceptable"
    item = InboxItem.objects.get()
    web.force_login(alice)
    before = stored()
    response = web.post(
        f"/api/v1/items/{item.pk}/decision",
        data=json.dumps({"status": "resolved", "payload": payload}),
        content_type="application/json",
    )
    assert response.status_code == 400, response.content[:300]
    assert response.json()["error"] == "invalid_payload"
    assert response.json()["errors"][0]["path"] == field
    assert stored() == before


def test_a_huge_multiple_is_still_accepted_when_it_is_one(agent, ingest, web, alice):
    run = json.loads(json.dumps(RUN))
    run["outcome"]["interrupts"][0] |= {"reason": "input_required", "responseSchema": {"multipleOf": 0.5}}
    assert ingest(agent, run).status_code == 201
    web.force_login(alice)
    response = web.post(
        f"/api/v1/items/{InboxItem.objects.get().pk}/decision",
        data=json.dumps({"status": "resolved", "payload": HUGE}),
        content_type="application/json",
    )
    assert response.status_code == 201, response.content[:300]
