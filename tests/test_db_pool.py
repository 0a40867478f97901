"""The web processes' connection pool never reaches a Celery worker or beat (they fork)."""

from __future__ import annotations

import copy

from django.conf import settings
from django.db import connections

from config.celery import drop_connection_pool


def test_a_worker_drops_the_pool_before_it_forks_and_keeps_every_other_option():
    saved = copy.deepcopy(settings.DATABASES["default"])
    connection = connections["default"]
    saved_options = dict(connection.settings_dict.get("OPTIONS", {}))
    options = settings.DATABASES["default"].setdefault("OPTIONS", {})
    try:
        options["pool"] = {"min_size": 1, "max_size": 2}
        connection.settings_dict.setdefault("OPTIONS", {})["pool"] = options["pool"]
        drop_connection_pool()
        assert "pool" not in settings.DATABASES["default"]["OPTIONS"]
        assert "pool" not in connection.settings_dict["OPTIONS"]
        assert {k: v for k, v in settings.DATABASES["default"]["OPTIONS"].items()} == {
            k: v for k, v in saved.get("OPTIONS", {}).items() if k != "pool"
        }
    finally:
        settings.DATABASES["default"].clear()
        settings.DATABASES["default"].update(saved)
        connection.settings_dict["OPTIONS"] = saved_options
