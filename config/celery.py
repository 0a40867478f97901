import os

from celery import Celery
from celery.signals import beat_init, celeryd_init, worker_process_init

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

app = Celery("inbox")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()

# Workers and beat record heartbeats for /healthz (signal handlers and the beat scheduler).
import config.heartbeat  # noqa: E402, F401


@celeryd_init.connect
@beat_init.connect
def drop_connection_pool(**kwargs) -> None:
    """Workers and beat use a plain connection per task, never the web processes' pool.

    A prefork worker forks its children from this process: a psycopg pool (its sockets and its maintenance
    threads) must not be inherited across fork, and Celery's Django fixup closes the pool after every task
    anyway. Runs in the parent before any child exists; every connection wrapper reads the same settings
    dict, so children start without a pool.
    """
    from django.conf import settings
    from django.db import connections

    for alias, db_config in settings.DATABASES.items():
        if not db_config.get("OPTIONS", {}).get("pool"):
            continue
        connection = connections[alias]
        connection.close()
        close_pool = getattr(connection, "close_pool", None)  # PostgreSQL's wrapper only
        if close_pool is not None and alias in getattr(connection, "_connection_pools", {}):
            close_pool()
        db_config["OPTIONS"].pop("pool")
        connection.settings_dict.get("OPTIONS", {}).pop("pool", None)


@worker_process_init.connect
def freeze_worker_objects(**kwargs) -> None:
    """Each pool process, once started: what is loaded so far lives as long as the process (config.startup)."""
    from config.startup import freeze_loaded_objects

    freeze_loaded_objects()
