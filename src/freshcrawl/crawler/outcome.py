"""What crosses the boundary between the frontier and the fetcher.

The frontier hands the fetcher a :class:`FetchRequest` (a due visit with what is known of the page's
last copy); the fetcher answers with a :class:`FetchOutcome` and never raises for anything a server
does. Robots.txt is fetched by the fetcher (:class:`RobotsOutcome`) and interpreted by
:class:`freshcrawl.crawler.robots.RobotsRules`; the frontier stores both and knows nothing of HTTP.

Times are seconds since the Unix epoch (``time.time()``), durations in seconds.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from freshcrawl.crawler.capture import HttpCapture

__all__ = [
    "Outcome",
    "ErrorKind",
    "FetchRequest",
    "FetchOutcome",
    "RobotsOutcome",
    "THROTTLE_STATUSES",
    "classify",
    "status_error",
]


class Outcome(enum.Enum):
    """What a visit tells the estimators (docs/design.md, "The live layer").

    ``CHANGED`` and ``UNCHANGED`` are observations I_k = 1 and 0. ``FIRST`` is a successful fetch of a
    page with no previous copy to compare with (no observation, but the page now has a copy).
    ``NO_INFO`` is anything else: an error, 429/503, a timeout, a robots.txt disallow.
    """

    CHANGED = "changed"
    UNCHANGED = "unchanged"
    FIRST = "first"
    NO_INFO = "no-info"


class ErrorKind(enum.Enum):
    """Why a visit gave no information, grouped by what the crawler should do about it.

    ``THROTTLED``: 429 or 503, the host asks us to slow down (Retry-After, back-off for the host).
    ``SERVER``: another 5xx (back-off for the host). ``NETWORK``: timeout, connection refused or reset,
    DNS (back-off for the host). ``PAGE``: a 4xx or a page-level problem (redirect loop, too many
    redirects, a redirect off http/https): counts against the page, not the host. ``CONTENT``: the
    body was refused (over the size cap, undecodable): counts against the page. ``ROBOTS``: the page
    is disallowed by robots.txt and was not fetched.
    """

    THROTTLED = "throttled"
    SERVER = "server"
    NETWORK = "network"
    PAGE = "page"
    CONTENT = "content"
    ROBOTS = "robots"


@dataclass(frozen=True, slots=True)
class FetchRequest:
    """A due visit.

    Attributes
    ----------
    url : str
        Normalised absolute http(s) URL.
    etag : str or None
        ETag of the last copy, sent as If-None-Match.
    last_modified : str or None
        Last-Modified of the last copy (the header's text), sent as If-Modified-Since.
    signature : str or None
        Content signature of the last copy (hex), None when the page has no copy yet.
    hop_delay_s : float
        Seconds to wait before following a redirect (the host's politeness delay), so that the hops
        of one visit keep the delay between them.
    keep_body : bool
        Return the decoded body with the outcome (a sitemap or a feed, read by the frontier). Such a
        body is read up to the larger of the fetcher's cap and ``KEPT_BODY_MAX_BYTES`` (the sitemap
        protocol's 50 MB); a longer one is kept up to one byte past that, not refused as too large.
    """

    url: str
    etag: str | None = None
    last_modified: str | None = None
    signature: str | None = None
    hop_delay_s: float = 0.0
    keep_body: bool = False


@dataclass(frozen=True, slots=True)
class FetchOutcome:
    """The result of one visit; every field is plain data, ready to be stored.

    Attributes
    ----------
    url : str
        The requested URL.
    outcome : Outcome
        Changed, unchanged, first copy or no information.
    why : str
        Short machine-readable reason: ``"not-modified"`` (304), ``"same-signature"``,
        ``"new-signature"``, ``"first-copy"``, ``"http-<status>"``, ``"timeout"``,
        ``"connect-error"``, ``"reset"``, ``"too-large"``, ``"too-many-redirects"``,
        ``"bad-scheme"``, ``"robots"``, ...
    started_at : float
        When the request was sent, seconds since the epoch.
    elapsed_s : float
        Seconds from sending the request to the end of the body (or the error).
    status : int or None
        Final HTTP status, None when no response arrived.
    n_bytes : int
        Body bytes read (decompressed).
    etag, last_modified : str or None
        Validators of the new copy (those of the request when the answer was 304, None on errors).
    signature : str or None
        Signature of the new copy (the request's on 304, None on errors).
    error : ErrorKind or None
        Set exactly when ``outcome`` is ``NO_INFO``.
    retry_after_s : float or None
        Seconds the server asked us to wait (Retry-After, seconds or HTTP date, converted), if any.
    final_url : str or None
        URL after redirects, when it differs from ``url``.
    capture : HttpCapture or None
        The request and response as sent and received, for an archive: set by a fetcher that keeps
        copies, for a 2xx answer whose body was read in full and for a 304; None otherwise.
    body : bytes or None
        The decoded body of a 2xx answer when the request asked for it (``keep_body``); None
        otherwise.
    """

    url: str
    outcome: Outcome
    why: str
    started_at: float
    elapsed_s: float
    status: int | None = None
    n_bytes: int = 0
    etag: str | None = None
    last_modified: str | None = None
    signature: str | None = None
    error: ErrorKind | None = None
    retry_after_s: float | None = None
    final_url: str | None = None
    capture: HttpCapture | None = None
    body: bytes | None = None


@dataclass(frozen=True, slots=True)
class RobotsOutcome:
    """The result of fetching ``<origin>/robots.txt`` (RFC 9309 Sec. 2.3).

    Attributes
    ----------
    origin : str
        ``scheme://host[:port]``.
    status : int or None
        Final HTTP status after at most five redirects; None when unreachable (network error,
        timeout, too many redirects).
    text : str or None
        The body (at most 500 KiB, decoded as UTF-8 with replacement) when status is 2xx.
    fetched_at : float
        Seconds since the epoch.
    elapsed_s : float
        Seconds the request took.
    why : str
        ``"ok"``, ``"http-<status>"``, ``"timeout"``, ``"connect-error"``, ...
    retry_after_s : float or None
        Retry-After of a 429/503 answer, seconds.
    """

    origin: str
    status: int | None
    text: str | None
    fetched_at: float
    elapsed_s: float
    why: str
    retry_after_s: float | None = None


#: Statuses with which a host asks the crawler to slow down (RFC 6585 Sec. 4, RFC 9110 Sec. 15.6.4).
THROTTLE_STATUSES = frozenset({429, 503})


def status_error(status: int | None) -> ErrorKind | None:
    """Why a final HTTP status gives no information; None for 2xx and 304 (they may give some).

    None (no answer) is ``NETWORK``, 429 and 503 ``THROTTLED``, another 5xx ``SERVER``, anything
    else (1xx, 3xx other than 304, 4xx) ``PAGE``. The one classification of statuses: the fetcher's,
    the service's for a worker's report and the frontier's for robots.txt use it.

    Examples
    --------
    >>> [status_error(s) for s in (200, 304, None, 429, 502, 404)]  # doctest: +NORMALIZE_WHITESPACE
    [None, None, <ErrorKind.NETWORK: 'network'>, <ErrorKind.THROTTLED: 'throttled'>,
     <ErrorKind.SERVER: 'server'>, <ErrorKind.PAGE: 'page'>]
    """
    if status is None:
        return ErrorKind.NETWORK
    if 200 <= status < 300 or status == 304:
        return None
    if status in THROTTLE_STATUSES:
        return ErrorKind.THROTTLED
    if status >= 500:
        return ErrorKind.SERVER
    return ErrorKind.PAGE


def classify(
    status: int | None,
    signature: str | None,
    previous_signature: str | None,
    *,
    conditional: bool,
    no_answer: str = "network",
) -> tuple[Outcome, ErrorKind | None, str]:
    """What a visit's final answer tells: ``(outcome, error, why)`` (docs/design.md, "The live layer").

    Parameters
    ----------
    status : int or None
        Final HTTP status; None when no answer came.
    signature : str or None
        Content signature of the body read (2xx); None when there is none.
    previous_signature : str or None
        Signature of the page's last copy; None when it has none.
    conditional : bool
        Whether the request was conditional (it sent a validator of a copy): a 304 to any other
        request is ``unexpected-304``.
    no_answer : str, default="network"
        ``why`` when no answer came (``"timeout"``, ``"connect-error"``, ...).

    Returns
    -------
    tuple
        :class:`Outcome`, :class:`ErrorKind` (set exactly when the outcome is ``NO_INFO``) and the
        short reason (see :attr:`FetchOutcome.why`).

    Examples
    --------
    >>> classify(304, None, "a", conditional=True)[0].value
    'unchanged'
    >>> classify(200, "b", "a", conditional=True)[2], classify(503, None, "a", conditional=True)[1].value
    ('new-signature', 'throttled')
    """
    if status == 304:
        if not conditional:
            return Outcome.NO_INFO, ErrorKind.PAGE, "unexpected-304"
        return Outcome.UNCHANGED, None, "not-modified"
    error = status_error(status)
    if error is not None:
        return Outcome.NO_INFO, error, no_answer if status is None else f"http-{status}"
    if signature is None:
        return Outcome.NO_INFO, ErrorKind.CONTENT, "no-signature"
    if previous_signature is None:
        return Outcome.FIRST, None, "first-copy"
    if signature == previous_signature:
        return Outcome.UNCHANGED, None, "same-signature"
    return Outcome.CHANGED, None, "new-signature"
