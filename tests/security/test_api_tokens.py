"""Approvers' API tokens are stored hashed, shown once and revocable."""

from __future__ import annotations

from io import StringIO

from django.core.management import call_command
from django.utils import timezone

from agents.models import hash_token
from inbox.models import ApiToken


def items(client, key: str):
    return client.get("/api/v1/items", HTTP_AUTHORIZATION=f"Token {key}")


def test_only_the_hash_is_stored_and_the_key_works_until_revoked(client, alice):
    token, key = ApiToken.issue(alice, label="ci")
    assert key.startswith("apt_") and token.token_hash == hash_token(key)
    assert not ApiToken.objects.filter(token_hash=key).exists()
    assert key not in str(list(ApiToken.objects.values()))
    assert items(client, key).status_code == 200

    ApiToken.objects.filter(pk=token.pk).update(revoked_at=timezone.now())
    assert items(client, key).status_code == 401


def test_the_admin_shows_a_new_token_once_and_lists_only_its_prefix(client, staff, alice):
    staff.is_superuser = True
    staff.save()
    client.force_login(staff)
    response = client.post("/admin/inbox/apitoken/add/", {"user": alice.pk, "label": "laptop"}, follow=True)
    assert response.status_code == 200
    token = ApiToken.objects.get(user=alice)
    shown = [str(m) for m in response.context["messages"]]
    key = shown[0].rsplit(" ", 1)[-1]
    assert token.token_hash == hash_token(key)

    listing = client.get("/admin/inbox/apitoken/").content.decode()
    assert token.prefix in listing and key not in listing
    assert items(client.__class__(), key).status_code == 200


def test_the_command_issues_a_token(client, alice):
    out = StringIO()
    call_command("api_token", "alice", "--label", "script", stdout=out)
    key = out.getvalue().strip().splitlines()[-1]
    assert items(client, key).status_code == 200
