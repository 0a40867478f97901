"""Websocket routes."""

from __future__ import annotations

from django.urls import path

from inbox.web.consumers import InboxConsumer

LIVE_PATH = "ws/inbox/"

websocket_urlpatterns: list = [
    path(LIVE_PATH, InboxConsumer.as_asgi()),
]
