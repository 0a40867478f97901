"""A wrong or unknown token is a 401 with ``WWW-Authenticate`` (it was a 403 on the approvers' API: DRF gives the
401 only when the first authentication class names a challenge), for agent tokens and approvers' API tokens."""

from __future__ import annotations

import pytest
from django.test import Client


@pytest.mark.parametrize(
    ("path", "header", "challenge"),
    [
        ("/api/v1/items", "Token not-a-real-key", "Token"),
        ("/api/v1/away", "Token not-a-real-key", "Token"),
        ("/api/v1/items", "Bearer not-an-approver-token", "Token"),
        ("/api/v1/agent", "Bearer not-a-real-token", "Bearer"),
        ("/api/v1/agent/escalation-rules", "Bearer not-a-real-token", "Bearer"),
    ],
)
def test_a_wrong_token_is_401_with_its_challenge(db, path, header, challenge):
    response = Client().get(path, HTTP_AUTHORIZATION=header)
    assert response.status_code == 401, (response.status_code, response.content)
    assert response["WWW-Authenticate"].startswith(challenge)


def test_no_credentials_on_the_api_is_401_too(db):
    response = Client().get("/api/v1/items")
    assert response.status_code == 401
    assert response["WWW-Authenticate"] == "Token"
