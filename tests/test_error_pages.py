"""A missing page, a refused page and a failure look like the product (header, a way back), and the API's
unknown addresses answer JSON, not an HTML page a client cannot read."""

from __future__ import annotations

import pytest
from django.test import Client, override_settings
from django.urls import path

from config import urls as root_urls


def test_a_missing_page_is_the_styled_404_with_a_way_back(client: Client, alice) -> None:
    client.force_login(alice)
    response = client.get("/inbox/no-such-page/")
    assert response.status_code == 404
    html = response.content.decode()
    assert 'class="topbar"' in html and "Page not found" in html
    assert 'href="/inbox/"' in html and "Go to the inbox" in html


def test_an_unknown_api_address_answers_json(client: Client, db) -> None:
    response = client.get("/api/v1/no-such-thing")
    assert response.status_code == 404
    assert response.json()["error"] == "not_found"


def test_a_refused_page_is_the_styled_403(client: Client, alice, agent) -> None:
    client.force_login(alice)  # sees the agent, but only staff change its settings
    response = client.post(f"/agents/{agent.agent.slug}/settings/", {"name": "x"})
    assert response.status_code == 403
    html = response.content.decode()
    assert "You cannot open this page" in html and 'class="topbar"' in html


def _boom(request):
    raise RuntimeError("boom")


urlpatterns = [path("boom/", _boom), path("api/boom/", _boom), *root_urls.urlpatterns]
handler500 = root_urls.handler500


@pytest.mark.django_db
@override_settings(ROOT_URLCONF=__name__)
def test_a_failure_is_the_styled_500_and_json_under_the_api() -> None:
    client = Client(raise_request_exception=False)
    page = client.get("/boom/")
    assert page.status_code == 500
    assert "Something went wrong on our side" in page.content.decode()
    api = client.get("/api/boom/")
    assert api.status_code == 500 and api.json()["error"] == "server_error"
