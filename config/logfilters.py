"""Logging filters named in ``LOGGING`` (config/settings.py). Nothing here imports Django or the app: logging is
configured while Django sets up."""

from __future__ import annotations

import logging

PROBE_PATHS = frozenset({"/healthz"})


class QuietProbes(logging.Filter):
    """Keeps ``django.request``'s "Service Unavailable: /healthz" lines out of the log. A probe (a load balancer,
    `make run`'s launcher) asks every few seconds and reads the answer's body, which says what is down; logging each
    503 as an error put one line a probe in the log: 189 of them before `make run`'s ready banner while the workers
    started."""

    def filter(self, record: logging.LogRecord) -> bool:
        request = getattr(record, "request", None)
        return getattr(request, "path", None) not in PROBE_PATHS
