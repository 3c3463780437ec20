"""The live crawler's fetcher side (in progress on the main line of development).

So far: the types that cross between the frontier and the fetcher (:mod:`~freshcrawl.crawler.outcome`):
a :class:`FetchRequest` handed to the fetcher, the :class:`FetchOutcome` and :class:`RobotsOutcome` it
answers with, and what a visit tells the estimators (:class:`Outcome`, :class:`ErrorKind`).
"""

from __future__ import annotations

from freshcrawl.crawler.outcome import ErrorKind, FetchOutcome, FetchRequest, Outcome, RobotsOutcome

__all__ = ["Outcome", "ErrorKind", "FetchRequest", "FetchOutcome", "RobotsOutcome"]
