import logging
import os
import time
from typing import Any

from celery import Celery
from celery.signals import (
    beat_init,
    before_task_publish,
    celeryd_init,
    task_postrun,
    task_prerun,
    task_received,
    worker_process_init,
)

import config.broker  # noqa: F401  (registers the broker transport's name before any connection is made)

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

app = Celery("inbox")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()

# Workers and beat record heartbeats for /healthz (signal handlers and the beat scheduler).
import config.heartbeat  # noqa: E402, F401

# Seconds a worker or beat process keeps its PostgreSQL connection between tasks (Django's CONN_MAX_AGE).
WORKER_CONN_MAX_AGE = 600


@celeryd_init.connect
@beat_init.connect
def drop_connection_pool(**kwargs) -> None:
    """Workers and beat use a plain connection per process, never the web processes' pool.

    A prefork worker forks its children from this process: a psycopg pool (its sockets and its maintenance
    threads) must not be inherited across fork, and Celery's Django fixup closes the pool after every task
    anyway. Runs in the parent before any child exists; every connection wrapper reads the same settings
    dict, so children start without a pool. Each process keeps its own connection across tasks instead
    (``CONN_MAX_AGE``, health-checked before reuse: see ``tasks_reuse_connections``): a new PostgreSQL session
    per task (a backend process started, its catalog caches filled again) cost more than the task itself.
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
        for config_dict in (db_config, connection.settings_dict):
            config_dict["CONN_MAX_AGE"] = WORKER_CONN_MAX_AGE
            config_dict["CONN_HEALTH_CHECKS"] = True


@task_prerun.connect
@task_postrun.connect
def tasks_reuse_connections(task: Any = None, **kwargs: Any) -> None:
    """A task is a unit of work like a request, and its database connections are handled as Django handles a
    request's: before and after it, those that broke, hit an error or outlived ``CONN_MAX_AGE`` are closed, and
    a kept one is health-checked before its first use. Celery's Django fixup would close every connection
    after every task; ``CELERY_DB_REUSE_MAX`` (settings) leaves that to this handler. A task run eagerly (in
    the caller's process, perhaps inside its transaction) leaves the caller's connection alone, as the fixup
    does."""
    from django.db import close_old_connections

    if task is not None and getattr(task.request, "is_eager", False):
        return
    close_old_connections()


@worker_process_init.connect
def freeze_worker_objects(**kwargs) -> None:
    """Each pool process, once started: what is loaded so far lives as long as the process (config.startup)."""
    from config.startup import freeze_loaded_objects

    freeze_loaded_objects()


# The header that says when a message was published: /healthz reads the age of each queue's oldest (config.health).
SENT_AT_HEADER = "inbox_sent_at"

log = logging.getLogger(__name__)


@before_task_publish.connect
def stamp_sent_at(headers: dict[str, Any] | None = None, **kwargs: Any) -> None:
    if headers is not None:
        headers.setdefault(SENT_AT_HEADER, time.time())


@task_received.connect
def unmark_received(request: Any = None, **kwargs: Any) -> None:
    """A message sent with a mark (``inbox.core.queue.send_marked``) is no longer waiting in the broker once a worker
    has it: its mark goes, at once, not when it runs (a message held for its countdown by a worker that then dies
    must be sent again by the sweep)."""
    key = (getattr(request, "request_dict", None) or {}).get("inbox_mark")
    if not key:
        return
    from inbox.core.queue import received

    try:
        received(key, request.id)
    except Exception:  # noqa: BLE001 - Redis went away: the mark went with it, or lapses
        log.warning("could not clear the queue mark of %s", request.id, exc_info=True)
