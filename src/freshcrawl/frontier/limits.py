"""Bounds on what the outside world may hand a crawl: one place for REST, gRPC and ``crawl add``.

Every value that enters a crawl from a client (a URL to add, a visit's report, a lease request)
goes through the checks of this module, so that the REST API, the URLFrontier gRPC API and the
command line accept and refuse the same things. Each check returns the value to use or raises a
``ValueError`` whose message names the field, the bound with its unit, and what was received.

=====================  ===========================================================================
field                  accepted
=====================  ===========================================================================
URL                    absolute http(s), at most :data:`MAX_URL_CHARS` characters once normalised,
                       a valid host name or IP address, valid Unicode, no user name or password,
                       a host the egress policy allows (:mod:`freshcrawl.crawler.egress`)
report time            ``started_at``, ``fetched_at``: within [now - 7 days, now + 5 min]
next-visit floor       ``refetch_not_before``: at most now + 366 days
lease                  ``lease_s``, ``delay_requestable``: in (0, 86,400] seconds
durations              ``elapsed_s``, a queue's delay: in [0, 86,400] seconds
Retry-After            in [0, 10^7] seconds
HTTP status            100-599
sizes                  ``n_bytes``: an integer in [0, 2^53]
request body           at most :data:`DEFAULT_MAX_BODY_BYTES` (REST: 413 before the rest is read;
                       gRPC: a message over it is refused RESOURCE_EXHAUSTED)
=====================  ===========================================================================
"""

from __future__ import annotations

import math
import time

from yarl import URL

from freshcrawl.crawler.egress import check_url_host
from freshcrawl.crawler.urls import normalize_url
from freshcrawl.units import SECONDS_PER_DAY

__all__ = [
    "DEFAULT_MAX_BODY_BYTES",
    "MAX_DURATION_S",
    "MAX_FUTURE_S",
    "MAX_LEASE_S",
    "MAX_NOT_BEFORE_S",
    "MAX_PAST_S",
    "MAX_RETRY_AFTER_S",
    "MAX_SIZE",
    "MAX_URL_CHARS",
    "check_duration",
    "check_lease",
    "check_not_before",
    "check_report_time",
    "check_retry_after",
    "check_size",
    "check_status",
    "check_text",
    "check_url",
]

#: Oldest report time accepted, seconds before now (7 days).
MAX_PAST_S = 7 * SECONDS_PER_DAY
#: Latest report time accepted, seconds after now (5 minutes of clock skew).
MAX_FUTURE_S = 300.0
#: Longest lease, seconds (1 day).
MAX_LEASE_S = SECONDS_PER_DAY
#: Longest duration of a visit or delay of a queue, seconds (1 day).
MAX_DURATION_S = SECONDS_PER_DAY
#: Furthest next-visit floor a client may set, seconds after now (366 days).
MAX_NOT_BEFORE_S = 366 * SECONDS_PER_DAY
#: Longest Retry-After taken, seconds.
MAX_RETRY_AFTER_S = 1e7
#: Largest size (bytes) taken: the largest integer a float (and JSON) holds exactly.
MAX_SIZE = 2**53
#: Longest URL, characters (normalised; PostgreSQL indexes the column, browsers stop near here).
MAX_URL_CHARS = 2048
#: Default cap on a request body (REST) or message (gRPC), bytes (16 MiB).
DEFAULT_MAX_BODY_BYTES = 16 * 1024 * 1024


def _number(field: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{field} must be a number; got {type(value).__name__}")
    x = float(value)
    if not math.isfinite(x):
        raise ValueError(f"{field} must be a finite number; got {value!r}")
    return x


def _seconds(field: str, value: object, high: float, *, zero: bool = True) -> float:
    """``value`` as seconds if in [0, high] (``(0, high]`` unless ``zero``); ValueError naming ``field``."""
    x = _number(field, value)
    if not (0 <= x if zero else 0 < x) or x > high:
        raise ValueError(
            f"{field} must be in {'[' if zero else '('}0, {high:.0f}] seconds; got {value!r}"
        )
    return x


def check_text(value: str, *, field: str = "text") -> str:
    """Return `value` if it holds no NUL character and no lone surrogate (it is valid Unicode).

    Raises
    ------
    ValueError
        Naming `field` and the index of the first bad character.

    Examples
    --------
    >>> check_text("abc")
    'abc'
    >>> check_text("a\\ud800", field="etag")
    Traceback (most recent call last):
    ...
    ValueError: etag must be valid Unicode text; got a lone surrogate at index 1
    """
    if "\x00" in value:
        raise ValueError(
            f"{field} must not contain NUL characters; got one at index {value.index(chr(0))}"
        )
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as err:
        raise ValueError(
            f"{field} must be valid Unicode text; got a lone surrogate at index {err.start}"
        ) from None
    return value


def check_url(url: str, *, allow_private: bool = False, field: str = "url") -> str:
    """The normalised form of a URL a client hands the crawl, or a ValueError saying why not.

    Parameters
    ----------
    url : str
        An absolute http(s) URL.
    allow_private : bool, default=False
        Lift the egress policy (private, link-local, reserved and metadata hosts accepted).
    field : str, default="url"
        The name used in error messages.

    Returns
    -------
    str
        :func:`~freshcrawl.crawler.urls.normalize_url` of `url`.

    Raises
    ------
    TypeError
        If `url` is not a str.
    ValueError
        If the URL is malformed, too long, holds a NUL or a lone surrogate, has a host that is not
        a valid host name or IP address, carries a user name or password, or has a host the egress
        policy refuses (:class:`~freshcrawl.errors.EgressRefused`, a ValueError).

    Examples
    --------
    >>> check_url("HTTP://Example.COM/a/../b")
    'http://example.com/b'
    >>> check_url("http://user:secret@example.com/")
    Traceback (most recent call last):
    ...
    ValueError: url must not carry a user name or password (credentials are not stored); got http://***@example.com/
    >>> check_url("http://169.254.169.254/latest/meta-data/")
    Traceback (most recent call last):
    ...
    freshcrawl.errors.EgressRefused: url: host 169.254.169.254 is a metadata address: refused by the egress policy (allow it with --allow-private)
    """
    if not isinstance(url, str):
        raise TypeError(f"{field} must be a str; got {type(url).__name__}")
    if len(url) > MAX_URL_CHARS:
        raise ValueError(f"{field} must be at most {MAX_URL_CHARS} characters; got {len(url)}")
    check_text(url, field=field)
    try:
        key = normalize_url(url)
    except ValueError as err:
        msg = str(err)
        raise ValueError(msg if field == "url" else f"{field}: {msg}") from None
    if len(key) > MAX_URL_CHARS:
        raise ValueError(
            f"{field} must be at most {MAX_URL_CHARS} characters once normalised; got {len(key)}"
        )
    parsed = URL(key)
    if parsed.raw_user is not None or parsed.raw_password is not None:
        shown = str(parsed.with_user(None))
        shown = shown.replace("://", "://***@", 1)
        raise ValueError(
            f"{field} must not carry a user name or password (credentials are not stored); got {shown}"
        )
    try:
        check_url_host(parsed.raw_host or "", allow_private=allow_private)
    except ValueError as err:
        raise type(err)(f"{field}: {err}") from None
    return key


def check_report_time(
    value: float, *, now: float | None = None, field: str = "started_at"
) -> float:
    """A report's time (seconds since the epoch) if within [now - 7 days, now + 5 min].

    Raises
    ------
    TypeError
        If `value` is not a number.
    ValueError
        If it is not finite or outside the window (the message gives the window).

    Examples
    --------
    >>> check_report_time(1000.0, now=1000.0)
    1000.0
    >>> check_report_time(1.0, now=1e9)
    Traceback (most recent call last):
    ...
    ValueError: started_at must be within [now - 7 days, now + 5 min] (seconds since the epoch, 999395200 to 1000000300); got 1.0
    """
    x = _number(field, value)
    now = time.time() if now is None else float(now)
    low, high = now - MAX_PAST_S, now + MAX_FUTURE_S
    if not low <= x <= high:
        raise ValueError(
            f"{field} must be within [now - 7 days, now + 5 min] (seconds since the epoch, "
            f"{low:.0f} to {high:.0f}); got {value!r}"
        )
    return x


def check_not_before(
    value: float, *, now: float | None = None, field: str = "refetch_not_before"
) -> float:
    """A next-visit floor (seconds since the epoch) if it is at most now + 366 days.

    Raises
    ------
    TypeError, ValueError
        If `value` is not a finite number, is negative or lies too far ahead.
    """
    x = _number(field, value)
    now = time.time() if now is None else float(now)
    if not 0 <= x <= now + MAX_NOT_BEFORE_S:
        raise ValueError(
            f"{field} must be >= 0 and at most now + 366 days (seconds since the epoch, up to "
            f"{now + MAX_NOT_BEFORE_S:.0f}); got {value!r}"
        )
    return x


def check_lease(value: float, *, field: str = "lease_s") -> float:
    """A lease length if in (0, 86,400] seconds.

    Examples
    --------
    >>> check_lease(30)
    30.0
    >>> check_lease(2**32 - 1, field="delay_requestable")
    Traceback (most recent call last):
    ...
    ValueError: delay_requestable must be in (0, 86400] seconds; got 4294967295
    """
    return _seconds(field, value, MAX_LEASE_S, zero=False)


def check_duration(value: float, *, field: str = "elapsed_s") -> float:
    """A duration (a visit's, a queue's delay) if in [0, 86,400] seconds."""
    return _seconds(field, value, MAX_DURATION_S)


def check_retry_after(value: float, *, field: str = "retry_after_s") -> float:
    """A Retry-After in [0, 10^7] seconds."""
    return _seconds(field, value, MAX_RETRY_AFTER_S)


def check_status(value: int, *, field: str = "status") -> int:
    """An HTTP status code if an integer in 100-599.

    Examples
    --------
    >>> check_status(304)
    304
    >>> check_status(999)
    Traceback (most recent call last):
    ...
    ValueError: status must be an HTTP status code in 100-599; got 999
    """
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{field} must be an integer HTTP status code; got {type(value).__name__}")
    if not 100 <= value <= 599:
        raise ValueError(f"{field} must be an HTTP status code in 100-599; got {value!r}")
    return value


def check_size(value: float, *, field: str = "n_bytes") -> int:
    """A size in bytes if a whole number in [0, 2^53].

    Examples
    --------
    >>> check_size(1024.0)
    1024
    >>> check_size(1e300)
    Traceback (most recent call last):
    ...
    ValueError: n_bytes must be a whole number of bytes in [0, 2^53]; got 1e+300
    """
    x = _number(field, value)
    if not (0 <= x <= MAX_SIZE and x == int(x)):
        raise ValueError(f"{field} must be a whole number of bytes in [0, 2^53]; got {value!r}")
    return int(x)
