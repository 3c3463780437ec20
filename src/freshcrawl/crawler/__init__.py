"""The live crawler's fetcher side: HTTP, robots.txt, conditional requests and signatures.

The frontier (state, policy, dispatch) hands a :class:`FetchRequest` to a :class:`Fetcher` and
stores the :class:`FetchOutcome` it gets back; robots.txt comes back as a :class:`RobotsOutcome`
that :class:`RobotsRules` interprets. Nothing here knows of policies or schedules.

Modules: ``outcome`` (the types crossing to the frontier), ``fetcher`` (aiohttp), ``robots``
(RFC 9309 rules, protego), ``signature`` (raw or main-text signatures, trafilatura) and ``urls``
(normalisation and host keys, yarl).
"""

from __future__ import annotations

from freshcrawl.crawler.fetcher import (
    DEFAULT_MAX_BYTES,
    ROBOTS_MAX_BYTES,
    ROBOTS_MAX_REDIRECTS,
    Fetcher,
    default_user_agent,
    parse_retry_after,
)
from freshcrawl.crawler.outcome import ErrorKind, FetchOutcome, FetchRequest, Outcome, RobotsOutcome
from freshcrawl.crawler.robots import PRODUCT_TOKEN, ROBOTS_MAX_AGE_S, RobotsRules
from freshcrawl.crawler.signature import HTML_CONTENT_TYPES, SIGNATURE_MODES, main_text, signature
from freshcrawl.crawler.urls import HTTP_SCHEMES, host_of, normalize_url

__all__ = [
    # outcome
    "Outcome",
    "ErrorKind",
    "FetchRequest",
    "FetchOutcome",
    "RobotsOutcome",
    # fetcher
    "Fetcher",
    "DEFAULT_MAX_BYTES",
    "ROBOTS_MAX_BYTES",
    "ROBOTS_MAX_REDIRECTS",
    "default_user_agent",
    "parse_retry_after",
    # robots
    "RobotsRules",
    "ROBOTS_MAX_AGE_S",
    "PRODUCT_TOKEN",
    # signature
    "signature",
    "main_text",
    "SIGNATURE_MODES",
    "HTML_CONTENT_TYPES",
    # urls
    "normalize_url",
    "host_of",
    "HTTP_SCHEMES",
]
