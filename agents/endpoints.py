"""Where the inbox may send requests to agents (and team webhooks): never inside its own network, unless a setting
says so.

An endpoint is http(s) without credentials in the URL and resolves only to public addresses, unless they lie in
``INBOX_AGENT_ALLOWED_NETWORKS``. It is checked when saved and again at each send: ``target`` resolves the name
once and the request connects to the checked address (docs/security.md)."""

from __future__ import annotations

import functools
import ipaddress
import socket
import ssl
from dataclasses import dataclass, field
from urllib.parse import urlsplit, urlunsplit

import httpx
from django.conf import settings
from django.core.exceptions import ValidationError

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
Network = ipaddress.IPv4Network | ipaddress.IPv6Network


class EndpointRefused(Exception):
    """The endpoint may not be called. ``resolvable`` is False when its name did not resolve (maybe later)."""

    def __init__(self, message: str, *, resolvable: bool = True) -> None:
        super().__init__(message)
        self.message = message
        self.resolvable = resolvable


@dataclass(frozen=True)
class Target:
    """A checked endpoint: the URL to request (the host replaced by the checked address), and the headers and
    httpx extensions that keep the original name for HTTP and TLS."""

    url: str
    headers: dict[str, str] = field(default_factory=dict)
    extensions: dict[str, str] = field(default_factory=dict)


@functools.cache
def tls_context() -> ssl.SSLContext:
    """The certificate checks of every send to an agent or a team webhook: httpx's own (certifi's roots, no
    environment), built once per process. A client built with the default builds it again, reading the whole CA
    bundle: about 22 ms of CPU before a byte is sent, on every resume and every webhook call of a burst. The
    context is only read once built (OpenSSL shares it between connections and threads)."""
    return httpx.create_ssl_context(trust_env=False)


def allowed_networks() -> list[Network]:
    return [ipaddress.ip_network(net, strict=False) for net in settings.INBOX_AGENT_ALLOWED_NETWORKS]


def _unmapped(address: Address) -> Address:
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


def check_address(address: Address, networks: list[Network] | None = None) -> None:
    """Refuse (``EndpointRefused``) an address that is not public and not in an allowed network."""
    address = _unmapped(address)
    networks = allowed_networks() if networks is None else networks
    if any(address in net for net in networks if net.version == address.version):
        return
    if address.is_global and not address.is_multicast:
        return
    kind = next(
        (
            name
            for name, flag in (
                ("loopback", address.is_loopback),
                ("link-local (cloud metadata lives there)", address.is_link_local),
                ("unspecified", address.is_unspecified),
                ("multicast", address.is_multicast),
                ("private", address.is_private),
            )
            if flag
        ),
        "not public",
    )
    raise EndpointRefused(
        f"{address} is a {kind} address; the inbox calls agents and team webhooks only on public addresses "
        "(INBOX_AGENT_ALLOWED_NETWORKS names networks to allow)."
    )


def _parts(url: str) -> tuple[str, str, int]:
    """Scheme, host and port of an endpoint URL; refuses what is not http(s) or carries a user part."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise EndpointRefused(f"Not a valid URL: {exc}.") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise EndpointRefused("Must be an http or https URL with a host.")
    if "@" in parts.netloc:
        raise EndpointRefused(
            "Must not contain a user or password (user:pw@host); send credentials in the auth header."
        )
    return parts.scheme, parts.hostname, port or (443 if parts.scheme == "https" else 80)


def _resolve(host: str, port: int) -> list[Address]:
    try:
        return [ipaddress.ip_address(host)]
    except ValueError:
        pass
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError) as exc:
        raise EndpointRefused(f"{host} does not resolve: {exc}", resolvable=False) from None
    addresses: list[Address] = []
    for info in infos:
        address = ipaddress.ip_address(str(info[4][0]).partition("%")[0])
        if address not in addresses:
            addresses.append(address)
    if not addresses:
        raise EndpointRefused(f"{host} does not resolve to any address", resolvable=False)
    return addresses


def target(url: str) -> Target:
    """Resolve ``url``'s host once, check every address it resolves to, and return the request to make to the
    first. Raises ``EndpointRefused``."""
    scheme, host, port = _parts(url)
    addresses = _resolve(host, port)
    networks = allowed_networks()
    for address in addresses:
        check_address(address, networks)
    chosen = addresses[0]
    literal = f"[{chosen}]" if chosen.version == 6 else str(chosen)
    parts = urlsplit(url)
    netloc = literal + (f":{parts.port}" if parts.port else "")
    pinned = urlunsplit(parts._replace(netloc=netloc))
    original = parts.netloc
    extensions = {"sni_hostname": host} if scheme == "https" else {}
    return Target(url=pinned, headers={"Host": original}, extensions=extensions)


def validate_endpoint_url(url: str) -> None:
    """The check when an endpoint is saved: ``ValidationError`` naming the reason. A name that does not resolve
    yet is accepted (it is checked again at every send)."""
    if not url:
        return
    try:
        target(url)
    except EndpointRefused as refused:
        if refused.resolvable:
            raise ValidationError(refused.message, code="endpoint_refused") from None
