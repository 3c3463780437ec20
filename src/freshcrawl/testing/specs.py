"""What the test web serves: hosts, pages and faults, as plain validated values.

A host is a loopback address ``127.0.0.{2+i}`` (its name is that address) with a robots.txt; a page is a
path on a host that changes as a Poisson process of a known rate, in changes per **second**, and may
carry a :class:`Fault`. :func:`make_pages` draws a population of pages whose rates are log-uniform over
a range.

Every check names the field, the expectation with its unit and the value received.
"""

from __future__ import annotations

import ipaddress
import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from freshcrawl._validation import check_int

__all__ = [
    "ANNOUNCE_MODES",
    "FAULT_KINDS",
    "MAX_HOSTS",
    "ROBOTS_FAULTS",
    "Fault",
    "HostSpec",
    "Page",
    "PageSpec",
    "host_name",
    "make_pages",
]

#: every page fault, with what a request to the page then gets
FAULT_KINDS: dict[str, str] = {
    "429": "429 Too Many Requests without Retry-After",
    "429-seconds": "429 with Retry-After in seconds (retry_after_s)",
    "429-date": "429 with Retry-After as an HTTP date (now + retry_after_s, rounded up)",
    "503": "503 Service Unavailable without Retry-After",
    "503-seconds": "503 with Retry-After in seconds (retry_after_s)",
    "500": "500 Internal Server Error",
    "404": "404 Not Found",
    "410": "410 Gone",
    "timeout": "no answer: the connection hangs for the server's max_hang_s, then is aborted",
    "slow-body": "200 whose body drips over duration_s seconds",
    "oversized": "200 with Content-Length size_bytes (> 10 MiB by default), streamed",
    "oversized-chunked": "200 of size_bytes, streamed chunked without Content-Length",
    "gzip-bomb": "200, Content-Encoding: gzip, about 1 MiB on the wire and 1 GiB decompressed",
    "redirect-loop": "302 to ?loop=1, which redirects back: an endless loop",
    "redirect-ftp": "301 to an ftp: URL",
    "reset": "the connection is reset (TCP RST) before any answer",
    "pdf": "200 application/pdf whose bytes change with the version",
    "png": "200 image/png whose pixels change with the version",
    "noisy": "200 HTML with a timestamp, session token and ad id new on every request; no validators",
}

#: every robots.txt fault of a host
#: what a host's sitemap (``/sitemap.xml``, listed in its robots.txt) and feed (``/feed.xml``) say
#: of its pages' changes
ANNOUNCE_MODES: dict[str, str] = {
    "honest": "each page's <lastmod> / entry date is the time of its last change",
    "bumped": "every date is the time of the request (bumped on every render)",
    "frozen": "every date is the server's start (never updated)",
    "future": "every date is a day after the request (in the future)",
}

ROBOTS_FAULTS: dict[str, str] = {
    "5xx": "robots.txt answers 503 (RFC 9309: the whole host is disallowed)",
    "404": "robots.txt answers 404 (RFC 9309: no restrictions)",
    "timeout": "robots.txt never answers (the whole host is disallowed)",
    "malformed": "robots.txt is binary garbage (no valid rule: no restrictions)",
    "redirect": "robots.txt redirects (301) to /robots-redirected.txt, which serves the rules",
}

#: hosts are 127.0.0.2 .. 127.0.0.254
MAX_HOSTS = 253

_DEFAULT_OVERSIZE = 12 * 1024 * 1024


def host_name(i: int) -> str:
    """Name (and loopback address) of host ``i``: ``"127.0.0.{2+i}"``.

    Raises
    ------
    TypeError
        If ``i`` is not an integer.
    ValueError
        If ``i`` is not in ``0 .. MAX_HOSTS-1``.

    Examples
    --------
    >>> host_name(0)
    '127.0.0.2'
    """
    return f"127.0.0.{2 + check_int('host index', i, high=MAX_HOSTS - 1)}"


def _check_loopback(name: str, value: str) -> str:
    try:
        addr = ipaddress.ip_address(value)
    except ValueError as err:
        raise ValueError(f"{name} must be an IPv4 address in 127.0.0.0/8; got {value!r}") from err
    if addr.version != 4 or not addr.is_loopback:
        raise ValueError(f"{name} must be an IPv4 address in 127.0.0.0/8; got {value!r}")
    return str(addr)


def _finite(
    name: str, value: object, *, low: float, high: float = math.inf, unit: str = ""
) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{name} must be a real number{unit}; got {type(value).__name__} {value!r}")
    v = float(value)
    if not (math.isfinite(v) and low <= v <= high):
        hi = "" if math.isinf(high) else f" and <= {high}"
        raise ValueError(f"{name} must be finite, >= {low}{hi}{unit}; got {value!r}")
    return v


@dataclass(frozen=True, slots=True)
class Fault:
    """A misbehaviour of one page.

    Parameters
    ----------
    kind : str
        One of :data:`FAULT_KINDS` (e.g. ``"429-seconds"``, ``"timeout"``, ``"gzip-bomb"``).
    probability : float, default=1.0
        Chance that a request gets the fault, in (0, 1]; otherwise it is served normally. Draws come
        from the server's seeded generator, in the order requests arrive.
    retry_after_s : float, default=5.0
        Seconds announced by ``429-seconds``, ``429-date`` and ``503-seconds``; must be >= 0.
    duration_s : float, default=5.0
        Seconds over which ``slow-body`` drips its body; must be > 0 (capped by the server's
        ``max_hang_s``).
    size_bytes : int, default=12 MiB
        Body size of ``oversized`` and ``oversized-chunked``; must be > 0.

    Raises
    ------
    ValueError
        If ``kind`` is unknown or a number is out of range (the message names the field).

    Examples
    --------
    >>> Fault("429-date", retry_after_s=30).kind
    '429-date'
    >>> Fault.coerce("500") == Fault("500")
    True
    """

    kind: str
    probability: float = 1.0
    retry_after_s: float = 5.0
    duration_s: float = 5.0
    size_bytes: int = _DEFAULT_OVERSIZE

    def __post_init__(self) -> None:
        if self.kind not in FAULT_KINDS:
            raise ValueError(
                f"fault.kind must be one of {', '.join(FAULT_KINDS)}; got {self.kind!r}"
            )
        p = _finite("fault.probability", self.probability, low=0.0, high=1.0)
        if p == 0.0:
            raise ValueError("fault.probability must be in (0, 1]; got 0 (use no fault instead)")
        _finite("fault.retry_after_s", self.retry_after_s, low=0.0, unit=" seconds")
        if _finite("fault.duration_s", self.duration_s, low=0.0, unit=" seconds") == 0.0:
            raise ValueError("fault.duration_s must be > 0 seconds; got 0")
        check_int("fault.size_bytes", self.size_bytes, low=1, what=" bytes")

    @classmethod
    def coerce(cls, fault: Fault | str | None) -> Fault | None:
        """Return ``fault`` as a :class:`Fault` (a string is a kind with default parameters)."""
        if fault is None or isinstance(fault, Fault):
            return fault
        if isinstance(fault, str):
            return cls(fault)
        raise TypeError(f"fault must be a Fault, a fault kind string or None; got {fault!r}")


@dataclass(frozen=True, slots=True)
class HostSpec:
    """A host's robots.txt and port.

    Parameters
    ----------
    disallow : sequence of str, default=()
        ``Disallow`` paths of the ``User-agent: *`` group (RFC 9309 patterns: ``*`` and a final ``$``).
    allow : sequence of str, default=()
        ``Allow`` paths of the same group; the longest matching rule wins, Allow on a tie.
    crawl_delay : float or None, default=None
        ``Crawl-delay`` in seconds, > 0.
    robots_fault : str or None, default=None
        One of :data:`ROBOTS_FAULTS`.
    port : int, default=0
        TCP port; 0 lets the OS choose.
    announce : str or None, default=None
        One of :data:`ANNOUNCE_MODES`: the host serves ``/sitemap.xml`` (listed in its robots.txt)
        and ``/feed.xml`` (RSS 2.0) over its pages, with dates as the mode says; None serves neither.

    Raises
    ------
    ValueError
        If a path does not start with ``/``, the delay is not > 0, the fault is unknown or the port is
        out of range.

    Examples
    --------
    >>> HostSpec(disallow=["/private/"], crawl_delay=0.5).disallow
    ('/private/',)
    """

    disallow: Sequence[str] = ()
    allow: Sequence[str] = ()
    crawl_delay: float | None = None
    robots_fault: str | None = None
    port: int = 0
    announce: str | None = None

    def __post_init__(self) -> None:
        for name in ("disallow", "allow"):
            value = getattr(self, name)
            if isinstance(value, str):
                raise TypeError(
                    f"host.{name} must be a sequence of paths, not a string; got {value!r}"
                )
            paths = tuple(value)
            for p in paths:
                if not isinstance(p, str) or not p.startswith("/") or any(c in p for c in "\r\n#"):
                    raise ValueError(
                        f"host.{name} entries must be paths starting with '/' without newlines or "
                        f"'#'; got {p!r}"
                    )
            object.__setattr__(self, name, paths)
        if self.crawl_delay is not None:
            d = _finite("host.crawl_delay", self.crawl_delay, low=0.0, unit=" seconds")
            if d == 0.0:
                raise ValueError("host.crawl_delay must be > 0 seconds or None; got 0")
        if self.robots_fault is not None and self.robots_fault not in ROBOTS_FAULTS:
            raise ValueError(
                f"host.robots_fault must be None or one of {', '.join(ROBOTS_FAULTS)}; "
                f"got {self.robots_fault!r}"
            )
        check_int("host.port", self.port, high=65535)
        if self.announce is not None and self.announce not in ANNOUNCE_MODES:
            raise ValueError(
                f"host.announce must be None or one of {', '.join(ANNOUNCE_MODES)}; got {self.announce!r}"
            )

    def robots_txt(self) -> str:
        """The robots.txt this host serves when it has no robots fault."""
        lines = ["# robots.txt of the freshcrawl test web", "User-agent: *"]
        lines += [f"Allow: {p}" for p in self.allow]
        lines += [f"Disallow: {p}" for p in self.disallow]
        if self.crawl_delay is not None:
            lines.append(f"Crawl-delay: {self.crawl_delay:g}")
        return "\n".join(lines) + "\n"


@dataclass(frozen=True, slots=True)
class PageSpec:
    """A page to serve.

    Parameters
    ----------
    host : str
        Host name, ``"127.0.0.{2+i}"`` (see :func:`host_name`).
    path : str
        Absolute path starting with ``/``, without query or fragment; not ``/robots.txt``.
    rate : float
        Change rate, changes per **second**, finite and >= 0 (0: never changes).
    fault : Fault, str or None, default=None
        Fault at start (a string is a fault kind with default parameters).
    weight : float, default=1.0
        Importance weight for the freshness audit, finite and >= 0.

    Raises
    ------
    ValueError
        If a field is malformed (the message names it).

    Examples
    --------
    >>> PageSpec("127.0.0.2", "/a", rate=0.01, fault="500").fault.kind
    '500'
    """

    host: str
    path: str
    rate: float
    fault: Fault | str | None = None
    weight: float = 1.0

    def __post_init__(self) -> None:
        if not isinstance(self.host, str):
            raise TypeError(
                f"page.host must be a host name string like '127.0.0.2'; got {self.host!r}"
            )
        _check_loopback("page.host", self.host)
        if (
            not isinstance(self.path, str)
            or not self.path.startswith("/")
            or any(c in self.path for c in "?# \r\n\t")
        ):
            raise ValueError(
                f"page.path must start with '/' and contain no query, fragment or whitespace; "
                f"got {self.path!r}"
            )
        if self.path in ("/robots.txt", "/robots-redirected.txt"):
            raise ValueError(f"page.path must not be a robots.txt path; got {self.path!r}")
        object.__setattr__(
            self, "rate", _finite("page.rate", self.rate, low=0.0, unit=" changes per second")
        )
        object.__setattr__(self, "weight", _finite("page.weight", self.weight, low=0.0))
        object.__setattr__(self, "fault", Fault.coerce(self.fault))


@dataclass(frozen=True, slots=True)
class Page:
    """A page as served by a running test web.

    Attributes
    ----------
    index : int
        Position in :attr:`TestWeb.pages`.
    url : str
        ``http://<host>:<port><path>``.
    host : str
        Host name (its loopback address).
    port : int
        The host's port.
    path : str
        The page's path.
    rate : float
        Change rate, changes per second.
    fault : Fault or None
        The fault given at construction (see :meth:`TestWeb.fault` for the current one).
    weight : float
        Importance weight.
    """

    index: int
    url: str
    host: str
    port: int
    path: str
    rate: float
    fault: Fault | None = field(default=None)
    weight: float = 1.0


def make_pages(
    n_pages: int,
    n_hosts: int,
    rate_range: tuple[float, float] = (0.001, 0.1),
    *,
    seed: int | None = 0,
    weight_range: tuple[float, float] | None = None,
) -> list[PageSpec]:
    """Draw pages with log-uniform change rates, spread over hosts round-robin.

    Parameters
    ----------
    n_pages : int
        Number of pages, >= 1.
    n_hosts : int
        Number of hosts, in ``[1, MAX_HOSTS]``; page ``k`` is on host ``k % n_hosts`` at ``/page/k``.
    rate_range : (float, float), default=(0.001, 0.1)
        ``(lo, hi)`` change rates in changes per second, ``0 < lo <= hi``; rates are log-uniform on it.
    seed : int or None, default=0
        Seed of the rate (and weight) draws.
    weight_range : (float, float) or None, default=None
        If given, weights are uniform on it (``0 <= lo <= hi``); otherwise every weight is 1.

    Returns
    -------
    list of PageSpec, length n_pages
        Pages without faults.

    Raises
    ------
    TypeError
        If ``n_pages`` or ``n_hosts`` is not an integer.
    ValueError
        If a count or range is out of bounds (the message names it).

    Examples
    --------
    >>> pages = make_pages(6, 2, (0.01, 1.0), seed=1)
    >>> [p.host for p in pages[:3]], all(0.01 <= p.rate <= 1.0 for p in pages)
    (['127.0.0.2', '127.0.0.3', '127.0.0.2'], True)
    """
    check_int("n_pages", n_pages, low=1, high=10**7)
    check_int("n_hosts", n_hosts, low=1, high=MAX_HOSTS)
    lo, hi = _pair("rate_range", rate_range, " changes per second")
    if not 0 < lo <= hi:
        raise ValueError(
            f"rate_range must have 0 < lo <= hi changes per second; got {rate_range!r}"
        )
    rng = np.random.default_rng(seed)
    rates = np.exp(rng.uniform(math.log(lo), math.log(hi), size=n_pages))
    if weight_range is None:
        weights = np.ones(n_pages)
    else:
        wlo, whi = _pair("weight_range", weight_range, "")
        if not 0 <= wlo <= whi:
            raise ValueError(f"weight_range must have 0 <= lo <= hi; got {weight_range!r}")
        weights = rng.uniform(wlo, whi, size=n_pages)
    return [
        PageSpec(host_name(k % n_hosts), f"/page/{k}", float(rates[k]), None, float(weights[k]))
        for k in range(n_pages)
    ]


def _pair(name: str, value: object, unit: str) -> tuple[float, float]:
    try:
        lo, hi = value  # type: ignore[misc]
    except (TypeError, ValueError) as err:
        raise ValueError(f"{name} must be a pair (lo, hi){unit}; got {value!r}") from err
    return (
        _finite(f"{name}[0]", lo, low=0.0, unit=unit),
        _finite(f"{name}[1]", hi, low=0.0, unit=unit),
    )
