"""A page's captures in a WARC directory, and the change between two of them.

:func:`page_captures` lists the response and revisit records of one URL, from the CDXJ index of
each closed file and from an index made on the spot of each file still being written (up to its
last whole record) or not indexed yet; :func:`page_diff` reads two captures' payloads from the WARC files and gives a
unified diff of their main text (as the ``text`` signature sees it, a line per paragraph) or of the
raw decoded body, as urlwatch and changedetection.io show changes.
"""

from __future__ import annotations

import bisect
import contextlib
import difflib
import json
import os
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path

from freshcrawl.archive.warc import CDXJ_SUFFIX, OPEN_SUFFIX, WARC_SUFFIX, iter_cdxj

__all__ = [
    "CaptureInfo",
    "PageDiff",
    "diff_bodies",
    "latest_diff",
    "page_captures",
    "page_diff",
    "page_history",
    "payload_at",
    "read_payload",
    "text_lines",
    "warc_directory",
]

#: Largest decoded body a diff reads (bytes).
_DIFF_MAX_BYTES = 64 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class CaptureInfo:
    """One capture of a page: a response record, or a revisit of an earlier response.

    Attributes
    ----------
    url : str
        ``WARC-Target-URI``.
    time : float
        ``WARC-Date`` (when the request was sent), seconds since the epoch.
    date : str
        ``WARC-Date`` as written (ISO 8601 UTC, microseconds).
    status : int or None
        HTTP status of the answer (200, 304, ...).
    kind : {"response", "revisit"}
        A new payload, or the same payload as the last response.
    profile : str or None
        Revisit profile (server-not-modified or identical-payload-digest), None for a response.
    digest : str
        ``WARC-Payload-Digest`` (``sha1:<base32>``); a revisit carries the digest it refers to.
    filename : str
        The WARC file (``*.warc.gz``, or ``*.warc.gz.open`` while written).
    offset, length : int
        The record's byte offset and compressed length in that file.
    """

    url: str
    time: float
    date: str
    status: int | None
    kind: str
    profile: str | None
    digest: str
    filename: str
    offset: int
    length: int

    def to_dict(self) -> dict:
        """The capture as a JSON-serialisable dict."""
        return asdict(self)


@dataclass(frozen=True, slots=True)
class PageDiff:
    """The change between two response captures of a page.

    Attributes
    ----------
    old, new : CaptureInfo
        The earlier and the later capture.
    mode : {"text", "raw"}
        Main text (a line per paragraph) or the raw decoded body.
    diff : str
        Unified diff (``difflib.unified_diff``, 3 lines of context), ``""`` when equal.
    added, removed : int
        Lines added and removed.
    """

    old: CaptureInfo
    new: CaptureInfo
    mode: str
    diff: str
    added: int
    removed: int

    def to_dict(self) -> dict:
        """The diff as a JSON-serialisable dict."""
        return {
            "old": self.old.to_dict(),
            "new": self.new.to_dict(),
            "mode": self.mode,
            "diff": self.diff,
            "added": self.added,
            "removed": self.removed,
        }


def _cdxj_of_open_file(path: Path) -> list[tuple[str, str, dict]]:
    """Index a file still being written, up to its last record that reads whole."""
    from cdxj_indexer.main import CDXJIndexer

    fd, tmp = tempfile.mkstemp(suffix=CDXJ_SUFFIX)
    os.close(fd)
    try:
        # a record cut by the writer ends the index there
        with open(path, "rb") as fh, contextlib.suppress(Exception):
            CDXJIndexer(tmp, [fh], filename=path.name).process_all()
        rows = []
        for line in Path(tmp).read_text(encoding="utf-8").splitlines():
            parts = line.split(" ", 2)
            if len(parts) == 3:
                rows.append((parts[0], parts[1], json.loads(parts[2])))
        return rows
    finally:
        os.unlink(tmp)


def _record_at(directory: Path, filename: str, offset: int):
    """The warcio record at `offset` of `filename` (its file stays open while it is read)."""
    from warcio.archiveiterator import ArchiveIterator

    path = directory / filename
    if not path.exists() and filename.endswith(OPEN_SUFFIX):  # closed since it was listed
        path = directory / filename[: -len(OPEN_SUFFIX)]
    fh = open(path, "rb")  # noqa: SIM115 - closed by the caller through the record's stream
    fh.seek(offset)
    return fh, next(iter(ArchiveIterator(fh)))


def page_captures(directory: str | os.PathLike, url: str) -> list[CaptureInfo]:
    """Every capture of `url` in the WARC files of `directory`, oldest first.

    Parameters
    ----------
    directory : str or path
        A crawl's ``--warc`` directory.
    url : str
        The page's URL as the crawl stores it (normalised).

    Returns
    -------
    list of CaptureInfo
        Empty when the directory holds no capture of `url`.

    Raises
    ------
    FileNotFoundError
        If `directory` does not exist.
    """
    directory = Path(directory)
    if not directory.is_dir():
        raise FileNotFoundError(f"no WARC directory {directory}")
    rows = [r for r in iter_cdxj(directory) if r[2].get("url") == url]
    unindexed = [
        p
        for p in sorted(directory.glob(f"*{WARC_SUFFIX}"))
        if not p.with_name(p.name[: -len(WARC_SUFFIX)] + CDXJ_SUFFIX).exists()
    ]
    for path in unindexed + sorted(directory.glob(f"*{WARC_SUFFIX}{OPEN_SUFFIX}")):
        rows.extend(r for r in _cdxj_of_open_file(path) if r[2].get("url") == url)
    out = []
    for _, _, row in rows:
        fh, record = _record_at(directory, row["filename"], int(row["offset"]))
        try:
            h = record.rec_headers
            date = h.get_header("WARC-Date")
            kind = h.get_header("WARC-Type")
            profile = h.get_header("WARC-Profile") if kind == "revisit" else None
            digest = h.get_header("WARC-Payload-Digest") or row.get("digest", "")
        finally:
            fh.close()
        status = row.get("status")
        out.append(
            CaptureInfo(
                url=url,
                time=_epoch(date),
                date=date,
                status=int(status) if status else None,
                kind=kind,
                profile=profile,
                digest=digest,
                filename=row["filename"],
                offset=int(row["offset"]),
                length=int(row["length"]),
            )
        )
    out.sort(key=lambda c: c.time)
    return out


def _epoch(date: str) -> float:
    import datetime

    text = date.rstrip("Z")
    fmt = "%Y-%m-%dT%H:%M:%S.%f" if "." in text else "%Y-%m-%dT%H:%M:%S"
    return datetime.datetime.strptime(text, fmt).replace(tzinfo=datetime.UTC).timestamp()


def read_payload(directory: str | os.PathLike, capture: CaptureInfo) -> tuple[bytes, str | None]:
    """The decoded body of a response capture and its Content-Type.

    Raises
    ------
    ValueError
        If `capture` is a revisit (it has no payload of its own).
    """
    if capture.kind != "response":
        raise ValueError(f"a {capture.kind} record has no payload; read the response it refers to")
    return payload_at(directory, capture.filename, capture.offset)


def payload_at(
    directory: str | os.PathLike, filename: str, offset: int
) -> tuple[bytes, str | None]:
    """The decoded body and Content-Type of the response record at `offset` of `filename`."""
    from freshcrawl.crawler.capture import decode_content

    fh, record = _record_at(Path(directory), filename, offset)
    try:
        raw = record.raw_stream.read()
        headers = record.http_headers
        coding = headers.get_header("Content-Encoding") if headers else None
        ctype = headers.get_header("Content-Type") if headers else None
    finally:
        fh.close()
    try:
        body, _ = decode_content(raw, coding, _DIFF_MAX_BYTES)
    except ValueError:
        body = raw
    return body, ctype


def text_lines(body: bytes, content_type: str | None) -> list[str]:
    """The text of a body as a text diff compares it: a line per paragraph of an HTML page's main text.

    An HTML body (or one without a Content-Type) gives
    :func:`freshcrawl.crawler.signature.main_text_lines`: the main text the ``text`` signature
    sees, decoded with the charset the Content-Type declares. Another body gives its lines, decoded
    with that charset (UTF-8 when none is declared or Python does not know it; undecodable bytes
    replaced).

    Examples
    --------
    >>> text_lines(b"<html><body><p>One</p><p>Two  words</p></body></html>", "text/html")
    ['One', 'Two words']
    >>> text_lines("café\\r\\nthé".encode("latin-1"), "text/plain; charset=iso-8859-1")
    ['café', 'thé']
    """
    from email.message import Message

    from freshcrawl.crawler.signature import HTML_CONTENT_TYPES, main_text_lines

    media = (content_type or "").split(";")[0].strip().lower()
    if not media or media in HTML_CONTENT_TYPES:
        return main_text_lines(body, content_type)
    header = Message()
    header["content-type"] = content_type
    charset = header.get_content_charset() or "utf-8"
    try:
        return body.decode(charset, errors="replace").splitlines()
    except LookupError:
        return body.decode("utf-8", errors="replace").splitlines()


def page_diff(
    directory: str | os.PathLike, url: str, *, at: float | None = None, mode: str = "text"
) -> PageDiff:
    """The change between the response captured at or before `at` and the one before it.

    Parameters
    ----------
    directory : str or path
        A crawl's ``--warc`` directory.
    url : str
        The page's URL.
    at : float or None, default=None
        Seconds since the epoch; None takes the latest response.
    mode : {"text", "raw"}, default="text"
        Diff the main text (a line per paragraph) or the raw decoded body (as UTF-8).

    Returns
    -------
    PageDiff

    Raises
    ------
    ValueError
        If `mode` is unknown, or the page has fewer than two response captures (at or before
        `at`): the message says how many it has.
    FileNotFoundError
        If `directory` does not exist.
    """
    if mode not in ("text", "raw"):
        raise ValueError(f"mode must be 'text' or 'raw'; got {mode!r}")
    caps = page_captures(directory, url)
    responses = [c for c in caps if c.kind == "response" and (at is None or c.time <= at)]
    if len(responses) < 2:
        where = "" if at is None else " at or before the time given"
        raise ValueError(
            f"{url} has {len(responses)} stored response capture(s){where} "
            f"({len(caps)} capture(s) in all): a diff needs two"
        )
    old, new = responses[-2], responses[-1]
    bodies = [read_payload(directory, c) for c in (old, new)]
    text, added, removed = diff_bodies(
        bodies[0], bodies[1], mode, f"{url} {old.date}", f"{url} {new.date}"
    )
    return PageDiff(old, new, mode, text, added, removed)


def diff_bodies(
    old: tuple[bytes, str | None],
    new: tuple[bytes, str | None],
    mode: str,
    old_label: str,
    new_label: str,
) -> tuple[str, int, int]:
    """Unified diff of two (body, Content-Type) pairs; returns (diff, lines added, lines removed).

    `mode` ``"text"`` compares :func:`text_lines`, ``"raw"`` the bodies decoded as UTF-8.
    """
    if mode == "text":
        a, b = (text_lines(body, ctype) for body, ctype in (old, new))
    else:
        a, b = (body.decode("utf-8", errors="replace").splitlines() for body, _ in (old, new))
    lines = list(difflib.unified_diff(a, b, old_label, new_label, lineterm=""))
    added = sum(1 for ln in lines if ln.startswith("+") and not ln.startswith("+++"))
    removed = sum(1 for ln in lines if ln.startswith("-") and not ln.startswith("---"))
    return "\n".join(lines) + ("\n" if lines else ""), added, removed


def latest_diff(directory: str | os.PathLike, url: str, *, mode: str = "text") -> dict:
    """The change between the previous and the current copy kept by ``--keep-latest``.

    Returns
    -------
    dict
        ``old`` and ``new`` (time, status, content_type, sha256), ``mode``, ``diff``, ``added``,
        ``removed``.

    Raises
    ------
    ValueError
        If `mode` is unknown or fewer than two copies of `url` are kept.
    """
    from freshcrawl.archive.latest import LatestCopies

    if mode not in ("text", "raw"):
        raise ValueError(f"mode must be 'text' or 'raw'; got {mode!r}")
    copies = LatestCopies(directory)
    meta = copies.meta(url)
    n = 0 if meta is None else 1 + (meta["previous"] is not None)
    if n < 2:
        raise ValueError(f"{url} has {n} kept copy(ies): a diff needs two")
    old, new = meta["previous"], meta["current"]
    text, added, removed = diff_bodies(
        (copies.read(url, "previous"), old["content_type"]),
        (copies.read(url, "current"), new["content_type"]),
        mode,
        f"{url} {_iso(old['time'])}",
        f"{url} {_iso(new['time'])}",
    )
    return {"old": old, "new": new, "mode": mode, "diff": text, "added": added, "removed": removed}


def _iso(t: float) -> str:
    from freshcrawl.archive.warc import warc_date

    return warc_date(t)


def warc_directory(store) -> str:
    """The ``--warc`` directory kept in a crawl's settings.

    Raises
    ------
    LookupError
        If the crawl keeps no WARC files.
    """
    settings = store.settings().get("settings") or {}
    directory = settings.get("warc")
    if not directory:
        raise LookupError("this crawl keeps no WARC files (run it with 'crawl run --warc DIR')")
    return str(directory)


def page_history(store, url: str, directory: str | os.PathLike | None = None) -> dict:
    """A page's captures with what the crawl observed at each (the content of ``crawl history``).

    Parameters
    ----------
    store : freshcrawl.store.Store
        The crawl database.
    url : str
        The page's URL (normalised as the crawl stores it).
    directory : str or path or None, default=None
        The WARC directory; None takes the crawl's ``warc`` setting.

    Returns
    -------
    dict
        ``url``, ``warc`` (the directory) and ``captures``: oldest first, each a
        :class:`CaptureInfo` dict plus ``outcome`` (``first``, ``changed``, ``unchanged``, or
        None when no committed observation has that time: a visit cut by a crash) and
        ``changed`` (the observation's I, None for a first copy or without an observation).

    Raises
    ------
    KeyError
        If `url` is not in the crawl.
    LookupError
        If `directory` is None and the crawl keeps no WARC files.
    FileNotFoundError
        If the directory does not exist.
    """
    page = store.page_by_url(url)
    if page is None:
        raise KeyError(f"{url} is not in this crawl")
    directory = warc_directory(store) if directory is None else str(directory)
    obs = store.observation_log(page_id=page["id"], outcomes=("first", "changed", "unchanged"))
    times = [o["time"] for o in obs]
    rows = []
    for cap in page_captures(directory, url):
        k = bisect.bisect_left(times, cap.time - 2e-6)
        hit = obs[k] if k < len(obs) and abs(times[k] - cap.time) < 2e-6 else None
        outcome = None if hit is None else hit["outcome"]
        changed = None if outcome in (None, "first") else outcome == "changed"
        rows.append(dict(cap.to_dict(), outcome=outcome, changed=changed))
    return {"url": url, "warc": directory, "captures": rows}
