"""API throttles, counted in the ``shared`` cache (Redis) so a limit holds across web processes.

- ``FailedAuthThrottle``: failed token authentications per client address (``INBOX_FAILED_AUTH_RATE``, the
  address from ``agents.addresses.client_address``). Past it, a wrong token from that address is answered 429
  until the window moves on; a valid token is never refused, so guessing from behind someone's NAT cannot stall
  that network's agents and approvers (a token is 256 random bits: the throttle bounds the load, not the odds).
- ``IngestThrottle``: ``POST /api/v1/runs`` per agent (``INBOX_INGEST_RATE``).
"""

from __future__ import annotations

import logging
from typing import Any

from django.conf import settings
from django.core.cache import caches
from redis.exceptions import RedisError
from rest_framework import exceptions
from rest_framework.throttling import SimpleRateThrottle

from agents.addresses import client_address

log = logging.getLogger(__name__)


class _FailOpenCache:
    """The throttle cache, failing open: while Redis is unreachable a limit is not counted (and logged), so an
    outage of the counter never turns into an outage of the API (the rest of the request still needs Redis
    only where it really does)."""

    def __init__(self, cache: Any) -> None:
        self._cache = cache

    def get(self, key: str, default: Any = None) -> Any:
        try:
            return self._cache.get(key, default)
        except RedisError as exc:
            log.warning("throttle cache unreachable, not counting: %s", exc)
            return default

    def set(self, key: str, value: Any, timeout: float | None = None) -> None:
        try:
            self._cache.set(key, value, timeout)
        except RedisError as exc:
            log.warning("throttle cache unreachable, not counting: %s", exc)

    def count(self, key: str, window: int, timeout: int) -> tuple[int, int] | None:
        """Add one to window ``window``'s counter of ``key`` (kept ``timeout`` seconds) and return it with the
        previous window's, in one round trip; None while Redis is unreachable."""
        current_key, previous_key = self._cache.make_key(f"{key}_{window}"), self._cache.make_key(f"{key}_{window - 1}")
        try:
            pipe = self._cache._cache.get_client(current_key, write=True).pipeline(transaction=False)
            pipe.incr(current_key)
            pipe.expire(current_key, timeout)
            pipe.get(previous_key)
            current, _, previous = pipe.execute()
        except RedisError as exc:
            log.warning("throttle cache unreachable, not counting: %s", exc)
            return None
        return current, int(previous or 0)


class _SettingRateThrottle(SimpleRateThrottle):
    setting = ""
    cache: Any  # a _FailOpenCache over the "shared" cache

    def __init__(self) -> None:
        self.cache = _FailOpenCache(caches["shared"])
        super().__init__()

    def get_rate(self) -> str:
        return getattr(settings, self.setting)


class FailedAuthThrottle(_SettingRateThrottle):
    scope = "failed_auth"
    setting = "INBOX_FAILED_AUTH_RATE"
    # Set by SimpleRateThrottle.__init__ from the rate (djangorestframework-stubs do not declare them).
    num_requests: int
    duration: int

    def get_ident(self, request) -> str:
        return client_address(request)

    def get_cache_key(self, request, view=None) -> str:
        return self.cache_format % {"scope": self.scope, "ident": self.get_ident(request)}

    def check(self, request) -> None:
        """Refuse (429) a client whose failures already reached the rate; records nothing."""
        self.key = self.get_cache_key(request)
        self.history = self.cache.get(self.key, [])
        self.now = self.timer()
        while self.history and self.history[-1] <= self.now - self.duration:
            self.history.pop()
        if len(self.history) >= self.num_requests:
            raise exceptions.Throttled(self.wait(), detail="Too many failed authentications from this address.")

    def record_failure(self, request) -> None:
        self.check(request)
        self.history.insert(0, self.now)
        self.cache.set(self.key, self.history, self.duration)


class IngestThrottle(_SettingRateThrottle):
    """A sliding-window counter per agent: one Redis round trip per request (``INCR`` this window's counter, read
    the previous window's), where DRF's ``SimpleRateThrottle`` reads and writes back a pickled list of every
    request's timestamp (up to 6,000 per agent at the default rate, twice per ingest). The estimate weighs the
    previous window by how much of it still overlaps the last ``duration`` seconds. A refused request counts
    too: an agent that keeps posting while refused stays refused."""

    scope = "ingest"
    setting = "INBOX_INGEST_RATE"
    num_requests: int
    duration: int

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
        counts = self.cache.count(key, int(now // self.duration), 2 * self.duration)
        if counts is None:
            return True
        current, previous = counts
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
    FailedAuthThrottle().record_failure(request)
    return error
