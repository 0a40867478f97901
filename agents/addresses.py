"""The client's address, for the login lockout (django-axes) and the API throttles.

By default it is the socket's address (``REMOTE_ADDR``) and ``X-Forwarded-For`` is ignored: anyone can send that
header, so trusting it would let an attacker rotate addresses past a lockout, or lock a victim out by sending the
victim's address. Behind a reverse proxy a setting names the proxies:

- ``INBOX_TRUSTED_PROXY_COUNT = n``: the last ``n`` hops (the socket's peer and the ``n - 1`` right-most
  ``X-Forwarded-For`` entries) are proxies; the entry before them is the client.
- ``INBOX_TRUSTED_PROXIES = ["10.0.0.0/8", …]``: walking from the socket's peer leftwards through
  ``X-Forwarded-For``, the first address outside those networks is the client. A request whose peer is not a
  trusted proxy is taken at its socket address.

Only the right-most entries are ever read: those a trusted proxy appended. An entry that is not an IP address
falls back to the socket's address.
"""

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
