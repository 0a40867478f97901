"""API throttles: DRF's ``SimpleRateThrottle`` counted in the ``shared`` cache (Redis), so a limit holds across web
processes, and failing open: while Redis is unreachable nothing is counted (logged) and the API still answers.

- ``FailedAuthThrottle``: failed token authentications per client address (``INBOX_FAILED_AUTH_RATE``), counted
  only once a credential was found wrong (``failing``); a valid token is never refused.
- ``IngestThrottle``: ``POST /api/v1/runs`` per agent (``INBOX_INGEST_RATE``), a sliding-window counter.
"""

from __future__ import annotations

import logging
from typing import Any, cast

from django.conf import settings
from django.core.cache import caches
from redis.exceptions import RedisError
from rest_framework import exceptions
from rest_framework.throttling import SimpleRateThrottle

from agents.addresses import client_address

log = logging.getLogger(__name__)


class _FailOpenCache:
    """The ``shared`` cache through Django's public cache API; a call that cannot reach Redis is logged and
    answers as if nothing had been counted."""

    def __init__(self) -> None:
        self.backend = caches["shared"]

    def _unreachable(self, exc: Exception) -> None:
        log.warning("throttle cache unreachable, not counting: %s", exc)

    def get(self, key: str, default: Any = None) -> Any:
        try:
            return self.backend.get(key, default)
        except RedisError as exc:
            self._unreachable(exc)
            return default

    def set(self, key: str, value: Any, timeout: float | None = None) -> None:
        try:
            self.backend.set(key, value, timeout)
        except RedisError as exc:
            self._unreachable(exc)

    def count(self, key: str, timeout: int) -> int | None:
        """Add one to the counter ``key`` (created to last ``timeout`` seconds) and return it; None while Redis
        is unreachable."""
        try:
            self.backend.add(key, 0, timeout)
            return self.backend.incr(key)
        except ValueError:  # expired between the two calls: this is its first count
            self.set(key, 1, timeout)
            return 1
        except RedisError as exc:
            self._unreachable(exc)
            return None


class _SettingRateThrottle(SimpleRateThrottle):
    """A rate read from a setting (at construction, so ``override_settings`` applies) into DRF's throttle."""

    setting = ""
    cache: Any
    # Set by SimpleRateThrottle.__init__ from the rate (djangorestframework-stubs do not declare them).
    num_requests: int
    duration: int

    def __init__(self) -> None:
        self.cache = _FailOpenCache()
        super().__init__()

    def get_rate(self) -> str:
        return getattr(settings, self.setting)


class FailedAuthThrottle(_SettingRateThrottle):
    """DRF's sliding log of failures per client address: a failure past the rate is refused and not recorded."""

    scope = "failed_auth"
    setting = "INBOX_FAILED_AUTH_RATE"

    def get_cache_key(self, request, view=None) -> str:
        return self.cache_format % {"scope": self.scope, "ident": client_address(request)}


class IngestThrottle(_SettingRateThrottle):
    """Counts per agent and window (one counter each, not DRF's list of every request's time): the estimate is
    this window's count plus the previous window's weighted by the share of it that overlaps the last
    ``duration`` seconds. A refused request counts too: an agent that keeps posting while refused stays refused."""

    scope = "ingest"
    setting = "INBOX_INGEST_RATE"

    def get_cache_key(self, request, view) -> str | None:
        agent = getattr(request, "auth", None)
        if agent is None or not hasattr(agent, "slug"):
            return None
        return self.cache_format % {"scope": self.scope, "ident": agent.pk}

    def allow_request(self, request, view) -> bool:
        if self.rate is None:
            return True
        key = self.get_cache_key(request, view)
        if key is None:
            return True
        now = self.timer()
        window = int(now // self.duration)
        current = self.cache.count(f"{key}_{window}", 2 * self.duration)
        if current is None:
            return True
        previous = int(self.cache.get(f"{key}_{window - 1}", 0) or 0)
        overlap = 1.0 - (now % self.duration) / self.duration  # the share of the previous window still counted
        if previous * overlap + current <= self.num_requests:
            return True
        # Until the estimate is back under the rate: later in this window while the previous one fades out of
        # it, or else once this window is over.
        if current < self.num_requests and previous:
            self._wait = max(0.0, (overlap - (self.num_requests - current) / previous) * self.duration)
        else:
            self._wait = overlap * self.duration
        return False

    def wait(self) -> float:
        return getattr(self, "_wait", float(self.duration))


def failing(request, error: exceptions.APIException) -> exceptions.APIException:
    """Count a failed authentication against the client's address and return ``error`` to raise; past the rate
    this raises 429 instead. Called only once a credential was found wrong, never before it is looked up."""
    throttle, no_view = FailedAuthThrottle(), cast(Any, None)  # counted while authenticating, before any view
    if not throttle.allow_request(request, no_view):
        raise exceptions.Throttled(throttle.wait(), detail="Too many failed authentications from this address.")
    return error
