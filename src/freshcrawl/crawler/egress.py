"""The egress policy: which hosts and addresses the crawler may reach.

A crawler fed URLs by other people is a server-side request forgery (SSRF) risk: a URL, or a
redirect, that names an address inside the operator's network or a cloud metadata service would
make the crawler fetch it. By default freshcrawl refuses

- addresses that are not globally reachable: private (10/8, 172.16/12, 192.168/16, fc00::/7),
  shared (100.64/10), link-local (169.254/16, fe80::/10), reserved, documentation, unspecified
  (0.0.0.0, ::), and multicast, IPv4 inside IPv6 (``::ffff:10.0.0.1``, ``64:ff9b::a00:1``, 6to4)
  judged by the IPv4 address it carries;
- cloud metadata services, by address (:data:`METADATA_ADDRESSES`) and by name
  (:data:`METADATA_HOSTS`);
- loopback (127/8, ::1, ``localhost``), except for a URL whose own host is a loopback address or
  name: a rehearsal against a local test web. A redirect from another host, or a name of another
  host that resolves to loopback, is refused.

The policy is checked where URLs come in (:func:`check_url_host`, used by ``crawl add``, the REST
and gRPC APIs) and on the resolved address of every connection the fetcher opens
(:func:`check_address`, through :class:`EgressResolver` and :func:`egress_socket_factory`),
redirect hops included, so a name that resolves to a private address, or changes its answer
between two look-ups (DNS rebinding), does not get through. ``allow_private=True`` lifts the policy
(an intranet crawl).
"""

from __future__ import annotations

import contextvars
import ipaddress
import socket
from typing import Any

from aiohttp.abc import AbstractResolver, ResolveResult

from freshcrawl.errors import EgressRefused

__all__ = [
    "METADATA_ADDRESSES",
    "METADATA_HOSTS",
    "EgressBlocked",
    "EgressResolver",
    "address_verdict",
    "check_address",
    "check_url_host",
    "egress_socket_factory",
    "is_loopback_host",
    "loopback_allowed",
]

#: Host names of cloud metadata services (GCP, AWS, Azure, OpenStack, Alibaba, Oracle, ...).
METADATA_HOSTS = frozenset(
    {
        "metadata",
        "metadata.google.internal",
        "metadata.goog",
        "instance-data",
        "instance-data.ec2.internal",
        "metadata.azure.internal",
        "metadata.tencentyun.com",
        "metadata.platformequinix.com",
        "metadata.packet.net",
    }
)

#: Addresses of cloud metadata services; refused even where the range itself would be allowed.
METADATA_ADDRESSES = frozenset(
    ipaddress.ip_address(a)
    for a in (
        "169.254.169.254",  # AWS, GCP, Azure, OpenStack, Oracle, DigitalOcean
        "169.254.170.2",  # AWS ECS task metadata
        "fd00:ec2::254",  # AWS IMDS over IPv6
        "100.100.100.200",  # Alibaba Cloud
        "168.63.129.16",  # Azure WireServer (a public address)
    )
)

_NAT64 = ipaddress.ip_network("64:ff9b::/96")
_Address = ipaddress.IPv4Address | ipaddress.IPv6Address


class EgressBlocked(OSError):
    """A connection the egress policy refused (raised inside the fetcher's connector only)."""


def _embedded_v4(ip: _Address) -> ipaddress.IPv4Address | None:
    if isinstance(ip, ipaddress.IPv4Address):
        return None
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    if ip.sixtofour is not None:
        return ip.sixtofour
    if ip in _NAT64:
        return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    return None


def address_verdict(address: str | _Address) -> str | None:
    """Why the default policy refuses an address, or None when it is a public address.

    Parameters
    ----------
    address : str or ipaddress.IPv4Address or ipaddress.IPv6Address
        An IP address (an IPv6 scope such as ``%eth0`` is ignored).

    Returns
    -------
    str or None
        ``"metadata"``, ``"loopback"``, ``"unspecified"``, ``"link-local"``, ``"multicast"``,
        ``"private"``, ``"reserved"`` (any other range that is not globally reachable), or None.

    Raises
    ------
    ValueError
        If `address` is not an IP address.

    Examples
    --------
    >>> address_verdict("169.254.169.254"), address_verdict("10.0.0.1"), address_verdict("::1")
    ('metadata', 'private', 'loopback')
    >>> address_verdict("::ffff:192.168.0.1"), address_verdict("93.184.215.14") is None
    ('private', True)
    """
    ip = address if not isinstance(address, str) else ipaddress.ip_address(address.split("%", 1)[0])
    inner = _embedded_v4(ip)
    if inner is not None:
        return address_verdict(inner)
    if ip in METADATA_ADDRESSES:
        return "metadata"
    if ip.is_loopback:
        return "loopback"
    if ip.is_unspecified:
        return "unspecified"
    if ip.is_link_local:
        return "link-local"
    if ip.is_multicast:
        return "multicast"
    if ip.is_private:
        return "private"
    if ip.is_reserved or not ip.is_global:
        return "reserved"
    return None


def _ip(host: str) -> _Address | None:
    try:
        return ipaddress.ip_address(host.strip("[]").split("%", 1)[0])
    except ValueError:
        return None


def is_loopback_host(host: str) -> bool:
    """Whether a URL's host is a loopback address or name (``localhost``, ``*.localhost``, RFC 6761).

    Examples
    --------
    >>> is_loopback_host("127.0.0.2"), is_loopback_host("[::1]"), is_loopback_host("a.localhost")
    (True, True, True)
    >>> is_loopback_host("example.com")
    False
    """
    name = host.lower().rstrip(".")
    ip = _ip(name)
    if ip is not None:
        return address_verdict(ip) == "loopback"
    return name == "localhost" or name.endswith(".localhost")


def check_url_host(host: str, *, allow_private: bool = False) -> None:
    """Refuse a URL's host that the egress policy forbids, before any look-up.

    An address is judged by :func:`address_verdict` (loopback allowed: the URL's own host); a name
    is refused when it is a cloud metadata name. Other names are judged when the fetcher connects.

    Parameters
    ----------
    host : str
        The URL's host (lowercase; IDNA form; an IPv6 address with or without brackets).
    allow_private : bool, default=False
        Lift the policy (an intranet crawl).

    Raises
    ------
    EgressRefused
        (a ValueError) If the policy forbids the host; the message says why.

    Examples
    --------
    >>> check_url_host("127.0.0.2")
    >>> check_url_host("10.0.0.1")
    Traceback (most recent call last):
    ...
    freshcrawl.errors.EgressRefused: host 10.0.0.1 is a private address: refused by the egress policy (allow it with --allow-private)
    """
    if allow_private:
        return
    name = host.lower().rstrip(".")
    ip = _ip(name)
    if ip is None:
        if name in METADATA_HOSTS:
            raise EgressRefused(f"host {host} is a cloud metadata name: {_ADVICE}")
        return
    why = address_verdict(ip)
    if why is not None and why != "loopback":
        raise EgressRefused(f"host {host} is {_ARTICLE.get(why, 'a')} {why} address: {_ADVICE}")


_ADVICE = "refused by the egress policy (allow it with --allow-private)"
_ARTICLE = {"unspecified": "an"}


def check_address(address: str, *, loopback_ok: bool, allow_private: bool = False) -> None:
    """Refuse a connection to `address` that the egress policy forbids.

    Parameters
    ----------
    address : str
        The resolved IP address about to be connected to.
    loopback_ok : bool
        Whether the visit started at a URL whose own host is loopback (only then is loopback
        reachable).
    allow_private : bool, default=False
        Lift the policy.

    Raises
    ------
    EgressBlocked
        (an OSError) If the policy forbids the address.
    """
    if allow_private:
        return
    why = address_verdict(address)
    if why is None or (why == "loopback" and loopback_ok):
        return
    raise EgressBlocked(f"connection to {address} ({why}) refused by the egress policy")


#: Whether the connection being opened serves a visit that started on a loopback host.
loopback_allowed: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "freshcrawl_loopback_allowed", default=False
)


class EgressResolver(AbstractResolver):
    """An aiohttp resolver that drops the addresses the egress policy forbids.

    Wraps another resolver (aiohttp's default); a name whose every address is forbidden raises
    :class:`EgressBlocked` (aiohttp reports it as a DNS error whose cause is this one). Loopback
    answers are kept only for a loopback name (``localhost``) during a visit that started on a
    loopback host (:data:`loopback_allowed`).

    Parameters
    ----------
    allow_private : bool, default=False
        Lift the policy (every address is kept).
    inner : aiohttp.abc.AbstractResolver, optional
        The resolver asked; default ``aiohttp.DefaultResolver()``.
    """

    def __init__(
        self, *, allow_private: bool = False, inner: AbstractResolver | None = None
    ) -> None:
        if inner is None:
            from aiohttp import DefaultResolver

            inner = DefaultResolver()
        self.inner = inner
        self.allow_private = bool(allow_private)

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        """Resolve `host` through the inner resolver and keep the addresses the policy allows."""
        found = await self.inner.resolve(host, port, family)
        if self.allow_private:
            return found
        loopback_ok = loopback_allowed.get() and is_loopback_host(host)
        kept, refused = [], []
        for item in found:
            try:
                check_address(item["host"], loopback_ok=loopback_ok)
            except EgressBlocked:
                refused.append(item["host"])
                continue
            kept.append(item)
        if not kept:
            raise EgressBlocked(
                f"{host} resolves only to addresses the egress policy refuses ({', '.join(refused)})"
            )
        return kept

    async def close(self) -> None:
        """Close the inner resolver."""
        await self.inner.close()


def egress_socket_factory(allow_private: bool = False) -> Any:
    """A ``socket_factory`` for ``aiohttp.TCPConnector``: the last check, on every connection.

    The factory receives the address about to be connected to (after any resolver and any DNS
    cache) and raises :class:`EgressBlocked` for a forbidden one, before a socket exists.

    Parameters
    ----------
    allow_private : bool, default=False
        Lift the policy.

    Returns
    -------
    callable
        ``addr_info -> socket.socket`` (aiohappyeyeballs' ``SocketFactoryType``).
    """

    def factory(addr_info: Any) -> socket.socket:
        family, type_, proto, _, sockaddr = addr_info
        check_address(sockaddr[0], loopback_ok=loopback_allowed.get(), allow_private=allow_private)
        return socket.socket(family=family, type=type_, proto=proto)

    return factory
