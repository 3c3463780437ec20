"""The latest copy of each page, content-addressed: the present and the one before it, nothing more.

For monitors that need the current page and its last change, not an archive. Layout of the
directory::

    objects/<2 hex>/<sha256 hex>    a body (decoded, as the page showed it), written once
    pages/<sha256 of the URL>/      per page: current, previous (hard links to objects) and meta.json

``meta.json`` holds the URL, and for ``current`` and ``previous`` the capture time (seconds since
the epoch), the HTTP status, the Content-Type and the sha256. A visit whose body has the digest of
the current copy (a 304, or the same bytes) writes nothing, so unchanged pages cost no disk
writes. An object is removed when no page links to it any more (its link count says so). Every
file is written to a temporary name, synced and renamed, so a crash leaves either the old or the
new copy.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Self

from freshcrawl.crawler.capture import HttpCapture, decode_content
from freshcrawl.crawler.outcome import FetchOutcome
from freshcrawl.errors import ArchiveError

__all__ = ["LatestCopies"]

_MAX_DECODED = 64 * 1024 * 1024


def _header(head: bytes, name: str) -> str | None:
    """The value of header `name` in a raw response head, or None."""
    key = name.lower().encode()
    for line in head.split(b"\r\n")[1:]:
        k, sep, v = line.partition(b":")
        if sep and k.strip().lower() == key:
            return v.strip().decode("latin-1")
    return None


class LatestCopies:
    """The latest copy (and the one before) of each page in `directory`; see the module docstring.

    It has the archive interface of the crawl loop (:meth:`write_visits`), so ``crawl run
    --keep-latest DIR`` writes a page's new copy before the visit's observation is committed.

    Parameters
    ----------
    directory : str or path
        Created if missing.

    Raises
    ------
    ArchiveError
        From :meth:`open` and :meth:`write_visits`, when the directory cannot be written.
    """

    def __init__(self, directory: str | os.PathLike) -> None:
        self.directory = Path(directory)
        self.counts = {"written": 0, "unchanged": 0, "bytes": 0}

    def open(self) -> LatestCopies:
        """Create the directory layout; raise ArchiveError if it cannot be written."""
        try:
            for sub in ("objects", "pages"):
                (self.directory / sub).mkdir(parents=True, exist_ok=True)
            probe = self.directory / f".write-test-{os.getpid()}"
            probe.write_bytes(b"x")
            probe.unlink()
        except OSError as err:
            raise ArchiveError(self._message(err)) from err
        return self

    def close(self) -> None:
        """Nothing to close (every write is complete when :meth:`write_visits` returns)."""

    def __enter__(self) -> Self:
        return self.open()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _message(self, err: OSError) -> str:
        return f"cannot write the latest copies in {self.directory}: {err.strerror or err}"

    def page_dir(self, url: str) -> Path:
        """The directory of `url`'s copies."""
        return self.directory / "pages" / hashlib.sha256(url.encode("utf-8")).hexdigest()

    def meta(self, url: str) -> dict | None:
        """`url`'s ``meta.json``, None when no copy is kept."""
        path = self.page_dir(url) / "meta.json"
        try:
            return json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None

    def read(self, url: str, which: str = "current") -> bytes:
        """The body of `url`'s ``current`` or ``previous`` copy.

        Raises
        ------
        FileNotFoundError
            If there is no such copy.
        """
        return (self.page_dir(url) / which).read_bytes()

    def write_visits(self, results: Sequence[tuple[object, FetchOutcome]]) -> list[str | None]:
        """Store the new copy of each visit whose body differs from the page's current copy.

        Returns
        -------
        list of str or None
            Per result: ``"written"``, ``"unchanged"`` (nothing written) or None (no copy kept:
            an error, a body over the size cap).

        Raises
        ------
        ArchiveError
            If a write fails; ``n_done`` results are stored (the crawl commits only those).
        """
        done: list[str | None] = []
        try:
            for _, out in results:
                done.append(None if out.capture is None else self._write_one(out, out.capture))
        except OSError as err:
            raise ArchiveError(self._message(err), len(done)) from err
        return done

    def _write_one(self, out: FetchOutcome, cap: HttpCapture) -> str:
        url = cap.url
        meta = self.meta(url)
        if cap.status == 304:
            self.counts["unchanged"] += 1
            return "unchanged"
        try:
            body, _ = decode_content(
                cap.payload, _header(cap.response_head, "Content-Encoding"), _MAX_DECODED
            )
        except ValueError:
            body = cap.payload
        digest = hashlib.sha256(body).hexdigest()
        if meta is not None and meta["current"]["sha256"] == digest:
            self.counts["unchanged"] += 1
            return "unchanged"
        obj = self.directory / "objects" / digest[:2] / digest
        if not obj.exists():
            obj.parent.mkdir(exist_ok=True)
            _atomic_write(obj, body)
            self.counts["bytes"] += len(body)
        page = self.page_dir(url)
        page.mkdir(exist_ok=True)
        entry = {
            "time": out.started_at,
            "status": cap.status,
            "content_type": cap.content_type,
            "sha256": digest,
        }
        new_meta = {
            "url": url,
            "current": entry,
            "previous": None if meta is None else meta["current"],
        }
        if meta is not None:
            _relink(page / "current", page / "previous")
        _relink(obj, page / "current")
        _atomic_write(page / "meta.json", json.dumps(new_meta, indent=1).encode())
        if meta is not None and meta.get("previous"):
            old = meta["previous"]["sha256"]
            stale = self.directory / "objects" / old[:2] / old
            unused = old not in (digest, meta["current"]["sha256"]) and stale.exists()
            if unused and stale.stat().st_nlink == 1:  # no page links to it any more
                stale.unlink()
        self.counts["written"] += 1
        return "written"


def _atomic_write(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def _relink(source: Path, target: Path) -> None:
    """Make `target` a hard link to `source`, replacing it atomically."""
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    tmp.unlink(missing_ok=True)
    os.link(source, tmp)
    os.replace(tmp, target)
