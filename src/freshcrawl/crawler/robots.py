"""robots.txt rules of one origin (RFC 9309), built from a fetch result; no HTTP here.

How the answer to ``GET /robots.txt`` becomes rules (RFC 9309 Sec. 2.3.1; docs/design.md, "The live
layer")::

    status                          rules
    2xx                             the file, parsed by protego (malformed lines are skipped)
    4xx except 429                  "unavailable": everything is allowed
    429, 5xx, None (unreachable)    "unreachable": everything is disallowed until a retry succeeds
    anything else (1xx, 3xx)        "unreachable" too (a redirect that could not be followed)

429 is the one 4xx treated as unreachable: it asks the crawler to slow down, not that the file is
absent, and allowing everything on it would send requests to a host that asked for fewer.
Rules are kept at most :data:`ROBOTS_MAX_AGE_S` seconds (RFC 9309 Sec. 2.4).
"""

from __future__ import annotations

import math

from protego import Protego
from yarl import URL

from freshcrawl.crawler.outcome import RobotsOutcome

__all__ = ["ROBOTS_MAX_AGE_S", "PRODUCT_TOKEN", "RobotsRules"]

#: Seconds a robots.txt answer may be used before it is fetched again (RFC 9309 Sec. 2.4: 24 h).
ROBOTS_MAX_AGE_S = 86400

#: The product token freshcrawl matches against robots.txt user-agent lines.
PRODUCT_TOKEN = "freshcrawl"


class RobotsRules:
    """What robots.txt allows freshcrawl to fetch on one origin.

    Parameters
    ----------
    status : int or None
        Final HTTP status of ``GET /robots.txt``; None when the file was unreachable (network
        error, timeout, too many redirects).
    text : str or None, default=None
        The body when `status` is 2xx (None is read as an empty file); ignored otherwise.
    user_agent : str, default="freshcrawl"
        The product token matched against ``User-agent`` lines (case-insensitively); rules of the
        ``*`` group apply when no group names it.
    origin : str or None, default=None
        ``scheme://host[:port]`` the rules belong to; when given, :meth:`allowed` refuses URLs of
        other origins.

    Attributes
    ----------
    status : int or None
        As given.
    mode : {"parsed", "allow-all", "disallow-all"}
        How the rules were decided (see the module docstring).

    Raises
    ------
    TypeError
        If `status` is not an int or None, or `text` is not a str or None.

    Examples
    --------
    >>> rules = RobotsRules(200, "User-agent: *\\nDisallow: /private\\nCrawl-delay: 2.5\\n")
    >>> rules.allowed("https://example.com/private/a"), rules.allowed("https://example.com/")
    (False, True)
    >>> rules.crawl_delay
    2.5
    >>> RobotsRules(404).allowed("https://example.com/private/a")
    True
    >>> RobotsRules(None).allowed("https://example.com/")
    False
    """

    def __init__(
        self,
        status: int | None,
        text: str | None = None,
        *,
        user_agent: str = PRODUCT_TOKEN,
        origin: str | None = None,
    ) -> None:
        if status is not None and (not isinstance(status, int) or isinstance(status, bool)):
            raise TypeError(f"status must be an int HTTP status or None; got {status!r}")
        if text is not None and not isinstance(text, str):
            raise TypeError(f"text must be a str or None; got {type(text).__name__}")
        self.status = status
        self.user_agent = user_agent
        self.origin = _origin_of(origin) if origin is not None else None
        self._parser: Protego | None = None
        if status is not None and 200 <= status < 300:
            self.mode = "parsed"
            self._parser = Protego.parse(text or "")
        elif status is not None and 400 <= status < 500 and status != 429:
            self.mode = "allow-all"
        else:
            self.mode = "disallow-all"

    @classmethod
    def from_outcome(
        cls, outcome: RobotsOutcome, *, user_agent: str = PRODUCT_TOKEN
    ) -> RobotsRules:
        """Rules from the result of :meth:`freshcrawl.crawler.Fetcher.fetch_robots`.

        Parameters
        ----------
        outcome : RobotsOutcome
            The fetch result; its origin becomes the rules' origin.
        user_agent : str, default="freshcrawl"
            As in the constructor.

        Returns
        -------
        RobotsRules
        """
        return cls(outcome.status, outcome.text, user_agent=user_agent, origin=outcome.origin)

    def allowed(self, url: str) -> bool:
        """Whether freshcrawl may fetch `url`; ``/robots.txt`` itself is always allowed.

        Parameters
        ----------
        url : str
            Absolute http(s) URL on the rules' origin.

        Returns
        -------
        bool
            The longest matching rule decides; ``Allow`` wins a tie (RFC 9309 Sec. 2.2.2).

        Raises
        ------
        ValueError
            If `url` is not an absolute http(s) URL, or the rules know their origin and `url` is
            on another one.
        """
        parsed = URL(url)
        if parsed.scheme not in ("http", "https") or not parsed.raw_host:
            raise ValueError(f"url must be an absolute http(s) URL; got {url!r}")
        if self.origin is not None and _origin_of(url) != self.origin:
            raise ValueError(f"url {url!r} is not on the origin of these rules ({self.origin})")
        if parsed.raw_path == "/robots.txt":
            return True
        if self._parser is not None:
            return bool(self._parser.can_fetch(url, self.user_agent))
        return self.mode == "allow-all"

    @property
    def crawl_delay(self) -> float | None:
        """Crawl-delay for freshcrawl, in seconds, or None when the file sets none.

        Taken from the group of freshcrawl's product token, or from ``*`` when no group names
        it. A negative, non-numeric or non-finite value counts as none.
        """
        if self._parser is None:
            return None
        delay = self._parser.crawl_delay(self.user_agent)
        if delay is None:
            return None
        delay = float(delay)
        return delay if math.isfinite(delay) and delay >= 0 else None

    @property
    def sitemaps(self) -> list[str]:
        """The ``Sitemap:`` URLs the file lists (any group), in order; empty when none or not parsed.

        Examples
        --------
        >>> RobotsRules(200, "Sitemap: https://example.com/sitemap.xml\\n").sitemaps
        ['https://example.com/sitemap.xml']
        """
        if self._parser is None:
            return []
        return list(self._parser.sitemaps)

    def __repr__(self) -> str:
        return f"RobotsRules(status={self.status!r}, mode={self.mode!r}, origin={self.origin!r})"


def _origin_of(url: str) -> str:
    """``scheme://host[:port]`` of a URL, lowercased, without the scheme's default port."""
    parsed = URL(url)
    if parsed.scheme not in ("http", "https") or not parsed.raw_host:
        raise ValueError(f"origin must be an absolute http(s) URL; got {url!r}")
    return str(parsed.origin())
