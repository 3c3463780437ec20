"""WARC/1.1 files of a crawl: request, response and revisit records, rotation, recovery, CDXJ.

:class:`WarcArchive` writes what a :class:`~freshcrawl.crawler.fetcher.Fetcher` kept of each visit
(:class:`~freshcrawl.crawler.capture.HttpCapture`) as Heritrix and Browsertrix do:

- a ``warcinfo`` record first in every file;
- ``response`` + ``request`` records (``WARC-Concurrent-To`` linking them) for a page's first
  capture and for every capture whose payload differs from the page's last stored one;
- a ``revisit`` record (+ its ``request``) with profile ``.../revisit/server-not-modified`` for a
  304, and ``.../revisit/identical-payload-digest`` for a 2xx whose payload digest (sha1 of the
  entity body as received) equals that of the page's last stored response; both carry
  ``WARC-Refers-To``, ``WARC-Refers-To-Target-URI`` and ``WARC-Refers-To-Date`` of that response
  when the archive holds one. The payload digest decides, not the crawl's signature: an equal text
  signature over different bytes is a new response for the archive;
- each record its own gzip member; files named
  ``<prefix>-<UTC time to the millisecond>-<serial>-<pid>-<host>.warc.gz`` (as Heritrix names them), written as ``*.warc.gz.open`` and renamed
  when closed (at ``max_file_bytes``, or by :meth:`WarcArchive.close`), then indexed as
  ``*.cdxj`` (sorted CDXJ, the format pywb and other replay tools read) by cdxj-indexer, in a
  worker thread so that the crawl goes on meanwhile (:meth:`WarcArchive.close` waits for it);
- after a crash, :meth:`WarcArchive.open` truncates every ``*.warc.gz.open`` it can lock back to
  its last whole gzip member (one whole record), then closes and indexes it (and indexes a closed
  file whose index the crash prevented).

Records reach the disk (written and ``fsync``-ed by :meth:`WarcArchive.write_visits`) before the
crawl commits the observations of their visits, so every committed observation has its record; a
crash between the two leaves a record without an observation, and the visit is made again.

References: WARC 1.1 (ISO 28500:2017), Sec. 6 (record types), 6.7 (revisit profiles); the CDXJ
format of pywb and cdxj-indexer.
"""

from __future__ import annotations

import base64
import datetime
import fcntl
import hashlib
import io
import json
import os
import socket
import time
import zlib
from collections.abc import Iterable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Self

from freshcrawl.crawler.capture import HttpCapture
from freshcrawl.crawler.outcome import FetchOutcome
from freshcrawl.errors import ArchiveError

__all__ = [
    "DEFAULT_MAX_FILE_BYTES",
    "PROFILE_IDENTICAL",
    "PROFILE_NOT_MODIFIED",
    "StoredRecord",
    "WarcArchive",
    "iter_cdxj",
    "payload_digest",
    "recover_open_file",
    "warc_date",
]

#: Size at which a WARC file is closed and the next one started (1 GiB, as Heritrix's default).
DEFAULT_MAX_FILE_BYTES = 1024**3
PROFILE_IDENTICAL = "http://netpreserve.org/warc/1.1/revisit/identical-payload-digest"
PROFILE_NOT_MODIFIED = "http://netpreserve.org/warc/1.1/revisit/server-not-modified"
OPEN_SUFFIX = ".open"
WARC_SUFFIX = ".warc.gz"
CDXJ_SUFFIX = ".cdxj"


def payload_digest(payload: bytes) -> str:
    """``sha1:<BASE32>``, the form of ``WARC-Payload-Digest`` that Heritrix and warcio write.

    Examples
    --------
    >>> payload_digest(b"")
    'sha1:3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ'
    """
    return "sha1:" + base64.b32encode(hashlib.sha1(payload).digest()).decode("ascii")


def warc_date(t: float) -> str:
    """``WARC-Date`` of an epoch time, with microseconds (WARC 1.1 Sec. 5.4).

    Examples
    --------
    >>> warc_date(1.5)
    '1970-01-01T00:00:01.500000Z'
    """
    when = datetime.datetime.fromtimestamp(t, datetime.UTC)
    return when.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def recover_open_file(path: str | os.PathLike) -> int:
    """Truncate a WARC file to its last whole gzip member; return the length kept, in bytes.

    Each record is one gzip member, so a member that does not end (a write cut by ``kill -9``, a
    full disk) is a partial record and is cut off with whatever follows it.

    Raises
    ------
    OSError
        If the file cannot be read or truncated.
    """
    good = 0
    offset = 0
    with open(path, "r+b") as fh:
        d = zlib.decompressobj(zlib.MAX_WBITS | 16)
        try:
            while chunk := fh.read(1 << 20):
                data = chunk
                while data:
                    d.decompress(data, 1 << 22)
                    while d.unconsumed_tail:  # keep memory bounded on large members
                        d.decompress(d.unconsumed_tail, 1 << 22)
                    if d.eof:
                        used = len(data) - len(d.unused_data)
                        offset += used
                        good = offset
                        data = d.unused_data
                        d = zlib.decompressobj(zlib.MAX_WBITS | 16)
                    else:
                        offset += len(data)
                        data = b""
        except zlib.error:
            pass
        fh.truncate(good)
    return good


@dataclass
class _Stored:
    """The last response record stored for a URL (what a revisit refers to)."""

    digest: str
    filename: str
    offset: int
    record_id: str | None = None
    date: str | None = None


@dataclass(frozen=True, slots=True)
class StoredRecord:
    """Where one visit's main record was written.

    Attributes
    ----------
    kind : {"response", "revisit"}
    profile : str or None
        The revisit profile, None for a response.
    filename : str
        The WARC file's name (``*.warc.gz``; ``*.warc.gz.open`` while it is written).
    offset, length : int
        Byte offset and length of the record's gzip member in that file.
    digest : str
        ``WARC-Payload-Digest``.
    """

    kind: str
    profile: str | None
    filename: str
    offset: int
    length: int
    digest: str


class WarcArchive:
    """The WARC files of a crawl in one directory; see the module docstring.

    Use it as a context manager, or call :meth:`open` and :meth:`close`.

    Parameters
    ----------
    directory : str or path
        Where the files go; created if missing.
    max_file_bytes : int, default=1073741824 (1 GiB)
        A file is closed once it reaches this size (the record that passes it is its last).
    prefix : str, default="freshcrawl"
        First part of the file names.
    info : dict or None
        Extra ``warcinfo`` fields (``http-header-user-agent``, ``robots``, ``description``...).

    Raises
    ------
    ValueError
        If `max_file_bytes` < 1 or `prefix` holds a path separator.
    ArchiveError
        From :meth:`open` and :meth:`write_visits`: the directory cannot be created or written,
        or a write fails (full disk); the message is one line naming the directory.
    """

    def __init__(
        self,
        directory: str | os.PathLike,
        *,
        max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
        prefix: str = "freshcrawl",
        info: dict[str, str] | None = None,
    ) -> None:
        if not (isinstance(max_file_bytes, int) and max_file_bytes >= 1):
            raise ValueError(f"max_file_bytes must be an int >= 1 bytes; got {max_file_bytes!r}")
        if not prefix or "/" in prefix or os.sep in prefix:
            raise ValueError(f"prefix must be a non-empty file-name part; got {prefix!r}")
        self.directory = Path(directory)
        self.max_file_bytes = max_file_bytes
        self.prefix = prefix
        self.info = dict(info or {})
        self._fh: io.FileIO | None = None
        self._name: str | None = None
        self._size = 0
        self._serial = 0
        self._last: dict[str, _Stored] = {}
        self._prev: dict[str, _Stored] = {}
        self._broken: str | None = None
        self._indexer: ThreadPoolExecutor | None = None
        self._pending: list[Future] = []
        self.counts = {"response": 0, "revisit": 0, "request": 0, "files": 0, "bytes": 0}

    # ------------------------------------------------------------------------------ lifecycle
    def open(self) -> WarcArchive:
        """Create the directory, recover files left open by a crash, load the last captures.

        Raises
        ------
        ArchiveError
            If the directory cannot be created, listed or written.
        """
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            probe = self.directory / f".{self.prefix}-{os.getpid()}-write-test"
            with open(probe, "wb") as fh:
                fh.write(b"x")
            probe.unlink()
            for path in sorted(self.directory.glob(f"*{WARC_SUFFIX}{OPEN_SUFFIX}")):
                self._recover(path)
            self._load_last()
        except OSError as err:
            raise ArchiveError(self._message(err)) from err
        return self

    def _message(self, err: OSError) -> str:
        why = err.strerror or str(err)
        return f"cannot write the WARC archive in {self.directory}: {why}"

    def _recover(self, path: Path) -> None:
        with open(path, "r+b") as fh:
            try:
                fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return  # another live process writes it
            recover_open_file(path)
            empty = os.fstat(fh.fileno()).st_size == 0
            final = path.with_name(path.name[: -len(OPEN_SUFFIX)])
            if empty:
                path.unlink()
            else:
                os.fsync(fh.fileno())
                os.replace(path, final)

    def _load_last(self) -> None:
        """The last response record of each URL, from the CDXJ files (in file-name order); a file
        without its index yet (closed by a crash) is read record by record, and indexed in the
        background so that the crawl does not wait for it."""
        for path in sorted(self.directory.glob(f"*{WARC_SUFFIX}")):
            cdxj = path.with_name(path.name[: -len(WARC_SUFFIX)] + CDXJ_SUFFIX)
            if not cdxj.exists():
                self._scan(path)
                self._index_later(path)
                continue
            rows = []
            for line in cdxj.read_text(encoding="utf-8").splitlines():
                parts = line.split(" ", 2)
                if len(parts) != 3:
                    continue
                row = json.loads(parts[2])
                if row.get("mime") == "warc/revisit" or not row.get("digest"):
                    continue
                rows.append((parts[1], int(row["offset"]), row))
            for _, offset, row in sorted(rows, key=lambda r: (r[0], r[1])):
                digest = row["digest"]
                if not digest.startswith("sha1:"):
                    digest = "sha1:" + digest
                self._last[row["url"]] = _Stored(digest, row["filename"], offset)

    def _scan(self, path: Path) -> None:
        """The last response of each URL in one WARC file, read with warcio."""
        from warcio.archiveiterator import ArchiveIterator

        with open(path, "rb") as fh:
            it = ArchiveIterator(fh)
            for record in it:
                if record.rec_type != "response":
                    continue
                h = record.rec_headers
                self._last[h.get_header("WARC-Target-URI")] = _Stored(
                    h.get_header("WARC-Payload-Digest"),
                    path.name,
                    it.get_record_offset(),
                    h.get_header("WARC-Record-ID"),
                    h.get_header("WARC-Date"),
                )

    def _index_later(self, path: Path) -> None:
        """Write `path`'s CDXJ in a worker thread (one at a time); :meth:`close` waits for it."""
        if self._indexer is None:
            self._indexer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="cdxj")
        self._pending.append(self._indexer.submit(_index, path))

    def close(self) -> None:
        """Close the current file (rename it to ``*.warc.gz`` and index it); safe to call twice.

        Raises
        ------
        ArchiveError
            If the file cannot be synced, renamed or indexed.
        """
        try:
            self._close_file()
            pending, self._pending = self._pending, []
            for future in pending:
                future.result()
        except OSError as err:
            raise ArchiveError(self._message(err)) from err
        finally:
            if self._indexer is not None and not self._pending:
                self._indexer.shutdown(wait=True)
                self._indexer = None

    def __enter__(self) -> Self:
        return self.open()

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------------------- files
    def _new_file(self) -> None:
        now = time.time()
        stamp = time.strftime("%Y%m%d%H%M%S", time.gmtime(now)) + f"{int(now * 1000) % 1000:03d}"
        host = socket.gethostname().split(".")[0] or "localhost"
        while True:  # a name no file of this directory has, closed or open
            self._serial += 1
            name = f"{self.prefix}-{stamp}-{self._serial:05d}-{os.getpid()}-{host}{WARC_SUFFIX}"
            if not (self.directory / name).exists():
                try:
                    fh = io.FileIO(self.directory / (name + OPEN_SUFFIX), "xb")
                except FileExistsError:
                    continue
                break
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        self._fh, self._name, self._size = fh, name, 0
        fields = {
            "software": f"freshcrawl/{_version()} (warcio)",
            "format": "WARC File Format 1.1",
            "conformsTo": "http://iipc.github.io/warc-specifications/specifications/warc-format/warc-1.1/",
            **self.info,
        }
        writer, buf = _writer()
        writer.write_record(writer.create_warcinfo_record(name, fields))
        self._append(buf.getvalue())
        self.counts["files"] += 1

    def _close_file(self) -> None:
        if self._fh is None:
            return
        fh, name = self._fh, self._name
        self._fh = self._name = None
        os.fsync(fh.fileno())
        final = self.directory / name
        os.replace(self.directory / (name + OPEN_SUFFIX), final)
        fh.close()
        for stored in self._last.values():
            if stored.filename == name + OPEN_SUFFIX:
                stored.filename = name
        self._index_later(final)

    def _append(self, data: bytes) -> int:
        assert self._fh is not None
        offset = self._size
        view = memoryview(data)
        while view:
            n = self._fh.write(view)
            view = view[n:]
        self._size += len(data)
        self.counts["bytes"] += len(data)
        return offset

    # ------------------------------------------------------------------------------ records
    def write_visits(
        self, results: Sequence[tuple[object, FetchOutcome]]
    ) -> list[StoredRecord | None]:
        """Write the records of each visit that kept a copy, then flush them to the disk.

        Parameters
        ----------
        results : sequence of (visit, FetchOutcome)
            What the crawl loop is about to commit; outcomes without a ``capture`` (errors, bodies
            over the size cap) get no record.

        Returns
        -------
        list of StoredRecord or None
            One per result, in order: where its main record went, None when it has none.

        Raises
        ------
        ArchiveError
            If a write or the sync fails; ``n_done`` visits of `results` have their records on
            disk (a record cut by the failure is truncated away). The archive writes nothing more.
        """
        if self._broken is not None:
            raise ArchiveError(self._broken, 0)
        stored: list[StoredRecord | None] = []
        n_done = 0
        try:
            for _, out in results:
                stored.append(self._write_one(out) if out.capture is not None else None)
                n_done += 1
            if self._fh is not None:
                os.fsync(self._fh.fileno())
        except OSError as err:
            self._broken = self._message(err)
            if self._fh is not None:
                try:  # cut a record the failure left half-written; keep the whole ones
                    self._fh.truncate(self._size)
                    os.fsync(self._fh.fileno())
                except OSError:
                    n_done = 0
            raise ArchiveError(self._broken, n_done) from err
        return stored

    def _write_one(self, out: FetchOutcome) -> StoredRecord:
        cap: HttpCapture = out.capture  # type: ignore[assignment]
        if self._fh is None:
            self._new_file()
        from warcio.statusandheaders import StatusAndHeadersParser

        url = cap.url
        date = warc_date(out.started_at)
        digest = payload_digest(cap.payload)
        last = self._last.get(url)
        writer, buf = _writer()
        common = {"WARC-Date": date}
        if cap.peer:
            common["WARC-IP-Address"] = cap.peer
        if cap.status == 304 or (
            last is not None and last.digest == digest and 200 <= cap.status < 300
        ):
            profile = PROFILE_NOT_MODIFIED if cap.status == 304 else PROFILE_IDENTICAL
            headers = StatusAndHeadersParser(["HTTP/1.0", "HTTP/1.1"], verify=False).parse(
                io.BytesIO(cap.response_head)
            )
            fields = dict(common, **{"WARC-Profile": profile})
            if last is not None:
                self._resolve(last)
                fields.update(
                    {
                        "WARC-Refers-To": last.record_id,
                        "WARC-Refers-To-Target-URI": url,
                        "WARC-Refers-To-Date": last.date,
                        "WARC-Payload-Digest": last.digest,
                    }
                )
            elif cap.status != 304:  # pragma: no cover - identical needs a last capture
                raise AssertionError("identical-payload-digest without a stored response")
            record = writer.create_warc_record(
                url, "revisit", http_headers=headers, warc_headers_dict=fields
            )
            kind = "revisit"
        else:
            profile = None
            block = cap.response_head + cap.payload
            record = writer.create_warc_record(
                url,
                "response",
                payload=io.BytesIO(block),
                length=len(block),
                warc_headers_dict=dict(common, **{"WARC-Payload-Digest": digest}),
            )
            kind = "response"
        record_id = record.rec_headers.get_header("WARC-Record-ID")
        writer.write_record(record)
        main = buf.getvalue()
        request = writer.create_warc_record(
            url,
            "request",
            payload=io.BytesIO(cap.request_head),
            length=len(cap.request_head),
            warc_headers_dict=dict(common, **{"WARC-Concurrent-To": record_id}),
        )
        buf.seek(0)
        buf.truncate()
        writer.write_record(request)
        offset = self._append(main + buf.getvalue())
        self.counts[kind] += 1
        self.counts["request"] += 1
        filename = self._name + OPEN_SUFFIX  # type: ignore[operator]
        if kind == "response":
            if last is not None:
                self._prev[url] = last
            self._last[url] = _Stored(digest, filename, offset, record_id, date)
        result = StoredRecord(
            kind,
            profile,
            filename,
            offset,
            len(main),
            digest if kind == "response" or last is None else last.digest,
        )
        if self._size >= self.max_file_bytes:
            self._close_file()
        return result

    def _resolve(self, stored: _Stored) -> None:
        """Read the record ID and date of a response stored by an earlier run."""
        if stored.record_id is not None:
            return
        from warcio.archiveiterator import ArchiveIterator

        path = self.directory / stored.filename
        with open(path, "rb") as fh:
            fh.seek(stored.offset)
            record = next(iter(ArchiveIterator(fh)))
            stored.record_id = record.rec_headers.get_header("WARC-Record-ID")
            stored.date = record.rec_headers.get_header("WARC-Date")

    def last_two(self, url: str) -> list[tuple[str, int]]:
        """(file name, offset) of `url`'s response before the last one and of the last one, of those
        this archive knows (the last of earlier runs, and all of this run); fewer when it has fewer."""
        out = []
        for stored in (self._prev.get(url), self._last.get(url)):
            if stored is not None:
                name = stored.filename
                if name.endswith(OPEN_SUFFIX) and not (self.directory / name).exists():
                    name = name[: -len(OPEN_SUFFIX)]
                out.append((name, stored.offset))
        return out

    def files(self) -> list[Path]:
        """The archive's WARC files (closed ones, then any still open), sorted by name."""
        closed = sorted(self.directory.glob(f"*{WARC_SUFFIX}"))
        return closed + sorted(self.directory.glob(f"*{WARC_SUFFIX}{OPEN_SUFFIX}"))


def _writer():
    from warcio.warcwriter import WARCWriter

    buf = io.BytesIO()
    return WARCWriter(buf, gzip=True, warc_version="1.1"), buf


def _version() -> str:
    from freshcrawl import __version__

    return __version__


def _index(path: Path) -> Path:
    """Write ``<name>.cdxj`` beside the WARC file `path` (sorted, via cdxj-indexer); return it."""
    from cdxj_indexer.main import CDXJIndexer

    out = path.with_name(path.name[: -len(WARC_SUFFIX)] + CDXJ_SUFFIX)
    tmp = out.with_name(out.name + ".tmp")
    CDXJIndexer(str(tmp), [str(path)], sort=True).process_all()
    os.replace(tmp, out)
    return out


def iter_cdxj(directory: str | os.PathLike) -> Iterable[tuple[str, str, dict]]:
    """The CDXJ lines of every closed file of `directory`: (urlkey, timestamp, fields)."""
    for cdxj in sorted(Path(directory).glob(f"*{CDXJ_SUFFIX}")):
        for line in cdxj.read_text(encoding="utf-8").splitlines():
            parts = line.split(" ", 2)
            if len(parts) == 3:
                yield parts[0], parts[1], json.loads(parts[2])
