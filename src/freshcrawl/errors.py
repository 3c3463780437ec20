"""Exceptions and warnings raised by freshcrawl.

Every exception subclasses :class:`FreshcrawlError` and the builtin that matches its meaning, so
``except ValueError`` keeps working::

    FreshcrawlError
    ├── InvalidObservation (ValueError)      bad visit data: tau <= 0, NaN, flags outside {0, 1}
    ├── InfeasibleAllocation (ValueError)    budget outside [sum p_min, sum p_max], caps too tight
    ├── TraceFormatError (ValueError)        a malformed or unsorted change history or visit log
    ├── UnknownNameError (ValueError)        unknown estimator, objective, policy or update mode
    ├── EgressRefused (ValueError)           a URL whose host the egress policy forbids (SSRF guard)
    ├── DatabaseInUseError (RuntimeError)    another serve process already writes this crawl database
    │   └── WriterLockLostError              another process took the writer lock during an outage
    ├── DatabaseUnavailableError (ConnectionError)  the database cannot be reached (after retries)
    ├── CorruptDatabaseError (ValueError)    a file that is not a crawl database (corrupt, empty, foreign)
    ├── TLSFileError (ValueError)            a certificate, key or CA file that TLS cannot use
    └── ArchiveError (OSError)               the WARC archive cannot be written (not writable, full)

    FreshcrawlWarning (UserWarning)
    └── ConvergenceWarning                   a solver stopped at its iteration limit
"""

from __future__ import annotations

__all__ = [
    "ArchiveError",
    "ConvergenceWarning",
    "CorruptDatabaseError",
    "DatabaseInUseError",
    "DatabaseUnavailableError",
    "EgressRefused",
    "FreshcrawlError",
    "FreshcrawlWarning",
    "InfeasibleAllocation",
    "InvalidObservation",
    "TLSFileError",
    "TraceFormatError",
    "UnknownNameError",
    "WriterLockLostError",
]


class FreshcrawlError(Exception):
    """Base class of every error raised by freshcrawl."""


class InvalidObservation(FreshcrawlError, ValueError):
    """Visit observations that cannot be used (non-positive interval, NaN, bad flag, ...)."""


class InfeasibleAllocation(FreshcrawlError, ValueError):
    """No allocation satisfies the budget, the bounds and the host caps together."""


class TraceFormatError(FreshcrawlError, ValueError):
    """A change history or visit log that is malformed; the message names file and line."""


class UnknownNameError(FreshcrawlError, ValueError):
    """A name (estimator, objective, policy, mode) that freshcrawl does not know."""


class EgressRefused(FreshcrawlError, ValueError):
    """A URL whose host is private, link-local, reserved or a metadata service (see crawler.egress)."""


class DatabaseInUseError(FreshcrawlError, RuntimeError):
    """A crawl database that another process holds as its only writer (``freshcrawl serve``)."""


class TLSFileError(FreshcrawlError, ValueError):
    """A certificate, key or CA file that TLS cannot use; the message names the file and why."""


class ArchiveError(FreshcrawlError, OSError):
    """A WARC archive that cannot be written: a directory not writable, a full disk, an I/O error.

    The crawl stops on it; ``n_done`` visits of the batch being written have their records (the
    crawl commits those and no other), and the original OSError is the ``__cause__``.
    """

    def __init__(self, message: str, n_done: int = 0) -> None:
        super().__init__(message)
        self.n_done = n_done

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class WriterLockLostError(DatabaseInUseError):
    """The writer lock of a crawl database was lost (its connection died) and another process holds it now.

    The process that raised it must stop writing: its in-memory state may be stale.
    """


class DatabaseUnavailableError(FreshcrawlError, ConnectionError):
    """The crawl database cannot be reached: the server is down, restarting or refuses connections.

    Raised once a store operation has retried for its whole retry window (or at once while the store
    is known to be in an outage). The message is one line: what failed, where, and what to do; the
    driver's exception is the ``__cause__``.

    Attributes
    ----------
    where : str
        The database, its password hidden.
    since : float or None
        When (seconds since the epoch) the first try of the failed operation began, if known: the
        outage began no later than that.
    """

    def __init__(self, message: str, *, where: str = "", since: float | None = None) -> None:
        super().__init__(message)
        self.where = where
        self.since = since


class CorruptDatabaseError(FreshcrawlError, ValueError):
    """A database file that is not a crawl database: corrupt, truncated to 0 bytes, or another program's."""


class FreshcrawlWarning(UserWarning):
    """Base class of every warning issued by freshcrawl."""


class ConvergenceWarning(FreshcrawlWarning):
    """A numerical method stopped before reaching its tolerance."""
