"""The test web's request log: one :class:`RequestRecord` per request, thread-safe, optionally JSONL.

The log is what the audits read (:mod:`freshcrawl.testing.audit`), so a crawler running in another
process can be graded from the JSONL file alone (:func:`read_request_log`). Times are seconds since the
Unix epoch (``time.time()`` of the server).
"""

from __future__ import annotations

import json
import threading
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import IO

__all__ = ["NOT_A_REFRESH", "RequestLog", "RequestRecord", "read_request_log"]

#: faults whose 200 answers do not give the crawler a copy (a crawler must refuse their body)
NOT_A_REFRESH = frozenset({"oversized", "oversized-chunked", "gzip-bomb"})


@dataclass(frozen=True, slots=True)
class RequestRecord:
    """One request as the server saw it.

    Attributes
    ----------
    arrived : float
        When the handler started, seconds since the epoch.
    ended : float
        When the answer was written (or the connection aborted), seconds since the epoch.
    host : str
        Host name (loopback address) the request came to.
    port : int
        Port of that host.
    path : str
        Request path, without the query.
    query : str
        Query string without ``?`` (``""`` when none).
    method : str
        HTTP method.
    status : int or None
        Status sent; None when no answer was sent (``timeout``, ``reset``).
    bytes_sent : int
        Body bytes written (on the wire: compressed for the gzip bomb; 0 for HEAD and 304).
    if_none_match, if_modified_since : str or None
        The conditional headers received.
    user_agent : str or None
        The User-Agent header.
    version : int or None
        Content version of the page served (also for a 304); None when no page content was served.
    fault : str or None
        The fault applied to this request (a fault kind, or ``"robots-<fault>"`` on robots.txt).
    completed : bool
        Whether the whole answer was written (False when the client went away, the server stopped,
        or the fault aborts the connection).
    retry_after_until : float or None
        When the answer carried Retry-After: the time before which the client should not come back to
        this host, seconds since the epoch.
    page : int or None
        Index of the page in ``TestWeb.pages``, None for robots.txt and unknown paths.
    """

    arrived: float
    ended: float
    host: str
    port: int
    path: str
    query: str
    method: str
    status: int | None
    bytes_sent: int
    if_none_match: str | None
    if_modified_since: str | None
    user_agent: str | None
    version: int | None
    fault: str | None
    completed: bool
    retry_after_until: float | None
    page: int | None

    @property
    def url(self) -> str:
        """``http://host:port/path`` (without the query)."""
        return f"http://{self.host}:{self.port}{self.path}"

    @property
    def refreshes(self) -> bool:
        """Whether this answer gives the crawler a current copy of its page.

        True for a completed GET of a page answered 200 or 304, unless the fault makes the body one a
        crawler must refuse (:data:`NOT_A_REFRESH`).
        """
        return (
            self.page is not None
            and self.method == "GET"
            and self.status in (200, 304)
            and self.completed
            and self.fault not in NOT_A_REFRESH
        )

    def to_json(self) -> str:
        """One JSON line (no newline)."""
        return json.dumps(asdict(self), separators=(",", ":"))

    @classmethod
    def from_dict(cls, d: dict) -> RequestRecord:
        """Inverse of ``json.loads(record.to_json())``.

        Raises
        ------
        ValueError
            If a field is missing.
        """
        try:
            return cls(**{name: d[name] for name in cls.__slots__})
        except KeyError as err:
            raise ValueError(f"request record is missing the field {err.args[0]!r}") from err


class RequestLog:
    """A thread-safe list of :class:`RequestRecord`, optionally appended to a JSONL file.

    Parameters
    ----------
    path : str or Path or None, default=None
        JSONL file to append to, one record per line, flushed per line.
    """

    def __init__(self, path: str | Path | None = None) -> None:
        self.path = None if path is None else Path(path)
        self._records: list[RequestRecord] = []
        self._lock = threading.Lock()
        self._file: IO[str] | None = None

    def open(self) -> None:
        """Open the JSONL file (append, line-buffered) if a path was given."""
        if self.path is not None and self._file is None:
            self._file = open(self.path, "a", buffering=1, encoding="utf-8")  # noqa: SIM115

    def close(self) -> None:
        """Close the JSONL file."""
        with self._lock:
            if self._file is not None:
                self._file.close()
                self._file = None

    def append(self, record: RequestRecord) -> None:
        """Add a record (and write its line)."""
        with self._lock:
            self._records.append(record)
            if self._file is not None:
                self._file.write(record.to_json() + "\n")

    def snapshot(self) -> list[RequestRecord]:
        """A copy of the records so far, in the order they ended."""
        with self._lock:
            return list(self._records)

    def __len__(self) -> int:
        with self._lock:
            return len(self._records)


def read_request_log(path: str | Path) -> list[RequestRecord]:
    """Read a JSONL request log written by the test web.

    Raises
    ------
    ValueError
        If a line is not a JSON record (the message gives the line number).
    """
    out = []
    with open(path, encoding="utf-8") as f:
        for k, line in enumerate(f, start=1):
            if not line.strip():
                continue
            try:
                out.append(RequestRecord.from_dict(json.loads(line)))
            except (json.JSONDecodeError, TypeError, ValueError) as err:
                raise ValueError(f"{path}: line {k} is not a request record: {err}") from err
    return out
