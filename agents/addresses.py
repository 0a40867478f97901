"""The client's address, for the login lockout (django-axes) and the API throttles.

The socket's address (``REMOTE_ADDR``) unless a setting names the reverse proxies in front
(``INBOX_TRUSTED_PROXY_COUNT`` or ``INBOX_TRUSTED_PROXIES``): then the ``X-Forwarded-For`` entry those proxies
appended, never one the client could have sent (docs/security.md, docs/configuration.md)."""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence
from typing import Any

from django.conf import settings

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


def _parse(value: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        address = ipaddress.ip_address(value.strip())
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


def trusted_networks() -> list[Network]:
    return [ipaddress.ip_network(net, strict=False) for net in getattr(settings, "INBOX_TRUSTED_PROXIES", ())]


def _chain(meta: Any) -> list[str]:
    """The hops as the last proxy saw them: X-Forwarded-For's entries, then the socket's peer."""
    forwarded = meta.get("HTTP_X_FORWARDED_FOR", "") or ""
    return [entry.strip() for entry in forwarded.split(",") if entry.strip()] + [meta.get("REMOTE_ADDR", "") or ""]


def address_from(meta: Any, *, count: int = 0, networks: Sequence[Network] = ()) -> str:
    """The client's address from a request's ``META`` under the given proxy configuration."""
    remote = meta.get("REMOTE_ADDR", "") or ""
    if not count and not networks:
        return remote
    chain = _chain(meta)
    if count:
        candidate = chain[max(0, len(chain) - 1 - count)]
    else:
        candidate = chain[0]
        for entry in reversed(chain):
            address = _parse(entry)
            if address is None or not any(address in net for net in networks):
                candidate = entry
                break
    address = _parse(candidate)
    return str(address) if address is not None else remote


def client_address(request: Any) -> str:
    """The client's address of a Django (or DRF) request under the project's settings (see the module)."""
    meta = request.META
    return address_from(
        meta, count=int(getattr(settings, "INBOX_TRUSTED_PROXY_COUNT", 0) or 0), networks=trusted_networks()
    )
