"""Read change announcements from bytes the fetcher fetched: sitemaps and feeds.

Sitemaps (sitemaps.org protocol 0.9: ``<urlset>`` with ``<lastmod>``, ``<changefreq>``,
``<priority>``; ``<sitemapindex>``; plain-text lists; RSS and Atom used as sitemaps; gzip) are parsed
by ultimate-sitemap-parser, feeds (RSS 0.9x-2.0, Atom, JSON Feed 1.1) by feedparser. Neither library
fetches anything here: freshcrawl's fetcher fetches a sitemap or a feed as it fetches any page (same
budget, politeness, robots.txt, conditional requests), and these functions read its body.

Bad input is a recorded outcome, never an exception: :class:`ParsedSource` holds what could be read
and a list of ``problems``, each naming the line, the element or the entry at fault. The protocol's
limits (:data:`SITEMAP_MAX_URLS` URLs, :data:`SITEMAP_MAX_BYTES` bytes uncompressed) are enforced by
reading up to them and saying so. A date without a time zone is taken as UTC, and counted in
``problems``.

References
----------
.. [1] sitemaps.org, "Sitemaps XML format", protocol 0.9 (limits: 50,000 URLs, 50 MB uncompressed).
.. [2] W3C, "Date and Time Formats" (the ``lastmod`` format); RFC 4287 (Atom), RSS 2.0, JSON Feed 1.1.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import math
import xml.parsers.expat
import zlib
from dataclasses import dataclass, field

__all__ = [
    "CHANGEFREQ_PER_DAY",
    "SITEMAP_MAX_BYTES",
    "SITEMAP_MAX_URLS",
    "Entry",
    "ParsedSource",
    "parse_announced_time",
    "parse_date",
    "parse_feed",
    "parse_sitemap",
]

#: Most URLs a sitemap may list (sitemaps.org); more are not read.
SITEMAP_MAX_URLS = 50_000
#: Most bytes of a sitemap, uncompressed (sitemaps.org: 50 MB = 52,428,800 bytes); more are not read.
SITEMAP_MAX_BYTES = 52_428_800

#: ``<changefreq>`` as a change rate, changes per day (``never``: once in ten years, a prior only).
CHANGEFREQ_PER_DAY = {
    "always": 24.0 * 60,
    "hourly": 24.0,
    "daily": 1.0,
    "weekly": 1.0 / 7,
    "monthly": 1.0 / 30,
    "yearly": 1.0 / 365,
    "never": 1.0 / 3650,
}


@dataclass(frozen=True, slots=True)
class Entry:
    """One URL a source lists.

    Attributes
    ----------
    url : str
        The URL as the source gives it.
    changed_at : float or None
        When the source says it last changed (``lastmod``, an entry's updated or published date),
        seconds since the epoch; None when it gives no (readable) date.
    changefreq : str or None
        ``<changefreq>`` (``always`` ... ``never``), sitemaps only.
    priority : float or None
        ``<priority>`` in [0, 1], sitemaps only.
    """

    url: str
    changed_at: float | None = None
    changefreq: str | None = None
    priority: float | None = None


@dataclass(slots=True)
class ParsedSource:
    """What a sitemap or a feed says.

    Attributes
    ----------
    kind : str
        ``"sitemap"``, ``"sitemap-index"`` or ``"feed"``; ``"invalid"`` when nothing could be read.
    entries : list of Entry
        The URLs listed (at most :data:`SITEMAP_MAX_URLS` for a sitemap).
    children : list of str
        Sitemaps listed by a sitemap index.
    problems : list of str
        Each problem met, naming its line, element or entry: malformed XML (``"line 7, column 3:
        mismatched tag"``), limits reached, dates without a time zone (taken as UTC).
    n_naive_dates : int
        Dates read without a time zone, taken as UTC.
    truncated : bool
        Whether a limit stopped the reading.
    """

    kind: str
    entries: list[Entry] = field(default_factory=list)
    children: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    n_naive_dates: int = 0
    truncated: bool = False

    @property
    def why(self) -> str:
        """One line for a report: the kind, the counts and the first problems."""
        head = f"{self.kind}: {len(self.entries)} URLs"
        if self.children:
            head += f", {len(self.children)} sitemaps"
        if self.problems:
            head += "; " + "; ".join(self.problems[:3])
            if len(self.problems) > 3:
                head += f"; and {len(self.problems) - 3} more problems"
        return head


def parse_date(text: str) -> tuple[float, bool] | None:
    """Read a W3C/ISO 8601 or RFC 2822 date: ``(seconds since the epoch, had no time zone)``.

    A date without a time zone is taken as UTC (the second item is then True). None when it cannot
    be read.

    Examples
    --------
    >>> parse_date("2026-11-28T10:00:00Z")
    (1795860000.0, False)
    >>> parse_date("2026-11-28")
    (1795824000.0, True)
    >>> parse_date("Sat, 28 Nov 2026 10:00:00 +0000")
    (1795860000.0, False)
    >>> parse_date("yesterday") is None
    True
    """
    text = (text or "").strip()
    if not text:
        return None
    when = None
    try:
        when = dt.datetime.fromisoformat(
            text.replace("Z", "+00:00") if text.endswith("Z") else text
        )
    except ValueError:
        from email.utils import parsedate_to_datetime

        try:
            when = parsedate_to_datetime(text)
        except (TypeError, ValueError, IndexError):
            return None
    naive = when.tzinfo is None
    if naive:
        when = when.replace(tzinfo=dt.UTC)
    t = when.timestamp()
    return (t, naive) if math.isfinite(t) else None


def parse_announced_time(text: str) -> tuple[float, bool] | None:
    """A change time as clients send it: :func:`parse_date`'s forms, seconds since the epoch (a
    number; above 1e11 it is taken as milliseconds), or a date ``dateutil`` reads (Java's
    ``Date.toString()``, as StormCrawler's feed parser writes ``feed.publishedDate``).

    Returns ``(seconds since the epoch, had no time zone)`` or None.

    Examples
    --------
    >>> parse_announced_time("1795860000")
    (1795860000.0, False)
    >>> parse_announced_time("Sat Nov 28 10:00:00 UTC 2026")
    (1795860000.0, False)
    """
    text = (text or "").strip()
    got = parse_date(text)
    if got is not None:
        return got
    try:
        value = float(text)
    except ValueError:
        value = None
    if value is not None:
        if not math.isfinite(value) or value < 0:
            return None
        return (value / 1000.0 if value > 1e11 else value, False)
    from dateutil import parser as date_parser

    try:
        when = date_parser.parse(text)
    except (ValueError, OverflowError):
        return None
    naive = when.tzinfo is None
    if naive:
        when = when.replace(tzinfo=dt.UTC)
    return (when.timestamp(), naive)


def _ungzip(body: bytes, out: ParsedSource) -> bytes:
    """Gunzip a gzip body (magic bytes 1f 8b), at most :data:`SITEMAP_MAX_BYTES` of it."""
    if body[:2] != b"\x1f\x8b":
        data = body
    else:
        d = zlib.decompressobj(16 + zlib.MAX_WBITS)
        try:
            data = d.decompress(body, SITEMAP_MAX_BYTES + 1)
        except zlib.error as err:
            out.problems.append(f"gzip: {err}")
            data = b""
    if len(data) > SITEMAP_MAX_BYTES:
        out.problems.append(
            f"over {SITEMAP_MAX_BYTES:,} bytes uncompressed (the protocol's limit): read up to the limit"
        )
        out.truncated = True
        data = data[:SITEMAP_MAX_BYTES]
    return data


def _xml_problem(data: bytes) -> str | None:
    """The first well-formedness error of an XML document, with its line and column; None if fine."""
    parser = xml.parsers.expat.ParserCreate()
    try:
        parser.Parse(data, True)
    except xml.parsers.expat.ExpatError as err:
        return (
            f"line {err.lineno}, column {err.offset + 1}: {xml.parsers.expat.ErrorString(err.code)}"
        )
    return None


def _note_naive(out: ParsedSource) -> None:
    if out.n_naive_dates:
        out.problems.append(f"{out.n_naive_dates} dates without a time zone, taken as UTC")


def parse_sitemap(body: bytes) -> ParsedSource:
    """Parse a fetched sitemap (XML, index, plain text, RSS/Atom; gzip or not).

    Parameters
    ----------
    body : bytes
        The body as fetched (Content-Encoding already decoded; a ``.gz`` file's gzip is undone here).

    Returns
    -------
    ParsedSource
        Up to :data:`SITEMAP_MAX_URLS` entries; for an index, its sitemaps in ``children``. Malformed
        XML is read up to its first error, which is reported with its line and column.
    """
    from usp.objects.sitemap import AbstractIndexSitemap, InvalidSitemap
    from usp.tree import sitemap_from_str

    out = ParsedSource("sitemap")
    data = _ungzip(body, out)
    text = data.decode("utf-8", errors="replace")
    if text[:200].lstrip().startswith("<"):
        problem = _xml_problem(data)
        if problem is not None:
            out.problems.append(problem)
    usp_log = logging.getLogger("usp")
    level = usp_log.level
    usp_log.setLevel(logging.CRITICAL)  # its messages are in `problems`
    try:
        tree = sitemap_from_str(text)
    finally:
        usp_log.setLevel(level)
    if isinstance(tree, InvalidSitemap):
        out.kind = "invalid"
        if not out.problems:
            out.problems.append(
                "not a sitemap (no <urlset>, <sitemapindex>, RSS, Atom or URL list)"
            )
        return out
    if isinstance(tree, AbstractIndexSitemap):
        out.kind = "sitemap-index"
        out.children = [s.url for s in tree.sub_sitemaps][:SITEMAP_MAX_URLS]
        return out
    n = 0
    for page in tree.all_pages():
        n += 1
        if n > SITEMAP_MAX_URLS:
            continue
        changed_at = None
        if page.last_modified is not None:
            when = page.last_modified
            if when.tzinfo is None:
                out.n_naive_dates += 1
                when = when.replace(tzinfo=dt.UTC)
            changed_at = when.timestamp()
        freq = page.change_frequency.value if page.change_frequency is not None else None
        prio = float(page.priority) if page.priority is not None else None
        out.entries.append(Entry(page.url, changed_at, freq, prio))
    if n == 0:
        out.problems.append("no URL found")
    if n > SITEMAP_MAX_URLS:
        out.truncated = True
        out.problems.append(
            f"{n:,} URLs, over the protocol's limit of {SITEMAP_MAX_URLS:,}: read the first {SITEMAP_MAX_URLS:,}"
        )
    _note_naive(out)
    return out


def parse_feed(body: bytes) -> ParsedSource:
    """Parse a fetched RSS, Atom or JSON feed: each entry's link and its updated (else published) date.

    Returns
    -------
    ParsedSource
        ``kind="feed"``; a feed that feedparser reads only in part (it is not well-formed) keeps what
        was read and reports the error with its line; ``"invalid"`` when nothing could be read.
    """
    out = ParsedSource("feed")
    data = _ungzip(body, out)
    if data.lstrip()[:1] == b"{":
        return _parse_json_feed(data, out)
    import feedparser

    parsed = feedparser.parse(data, sanitize_html=False, resolve_relative_uris=False)
    if parsed.get("bozo"):
        err = parsed.get("bozo_exception")
        line = getattr(err, "getLineNumber", None)
        where = f"line {line()}: " if callable(line) else ""
        out.problems.append(f"{where}{getattr(err, 'getMessage', lambda: str(err))()}")
    if not parsed.get("version") and not parsed.entries:
        out.kind = "invalid"
        if not out.problems:
            out.problems.append("not a feed (no RSS, Atom or JSON Feed)")
        return out
    for i, item in enumerate(parsed.entries, start=1):
        link = item.get("link")
        if not link:
            out.problems.append(f"entry {i}: no link")
            continue
        # dict.get: feedparser's own get maps a missing "updated" to "published" with a warning
        raw = dict.get(item, "updated") or dict.get(item, "published")
        changed_at = None
        if raw:
            got = parse_date(raw)
            if got is None:
                parsed_struct = dict.get(item, "updated_parsed") or dict.get(
                    item, "published_parsed"
                )
                if (
                    parsed_struct is not None
                ):  # feedparser read a date the W3C and RFC 2822 forms do not
                    import calendar

                    got = (float(calendar.timegm(parsed_struct)), False)
            if got is None:
                out.problems.append(f"entry {i}: unreadable date {raw!r}")
            else:
                changed_at = got[0]
                out.n_naive_dates += got[1]
        out.entries.append(Entry(link, changed_at))
    _note_naive(out)
    return out


def _parse_json_feed(data: bytes, out: ParsedSource) -> ParsedSource:
    """JSON Feed 1.1 (jsonfeed.org): ``items[].url`` with ``date_modified`` or ``date_published``."""
    try:
        doc = json.loads(data)
    except ValueError as err:
        out.kind = "invalid"
        out.problems.append(f"JSON: {err}")
        return out
    items = doc.get("items") if isinstance(doc, dict) else None
    if not isinstance(items, list):
        out.kind = "invalid"
        out.problems.append("JSON feed without an 'items' list")
        return out
    for i, item in enumerate(items, start=1):
        url = item.get("url") if isinstance(item, dict) else None
        if not isinstance(url, str) or not url:
            out.problems.append(f"item {i}: no url")
            continue
        raw = item.get("date_modified") or item.get("date_published")
        changed_at = None
        if raw:
            got = parse_date(str(raw))
            if got is None:
                out.problems.append(f"item {i}: unreadable date {raw!r}")
            else:
                changed_at = got[0]
                out.n_naive_dates += got[1]
        out.entries.append(Entry(url, changed_at))
    _note_naive(out)
    return out
