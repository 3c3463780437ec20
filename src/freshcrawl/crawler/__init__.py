"""The live crawler's fetcher side: HTTP, robots.txt, conditional requests and signatures.

The frontier (state, policy, dispatch) hands a :class:`FetchRequest` to a :class:`Fetcher` and
stores the :class:`FetchOutcome` it gets back; robots.txt comes back as a :class:`RobotsOutcome`
that :class:`RobotsRules` interprets. Nothing here knows of policies or schedules.

Modules: ``outcome`` (the types crossing to the frontier), ``fetcher`` (aiohttp), ``robots``
(RFC 9309 rules, protego), ``signature`` (raw or main-text signatures, trafilatura) and ``urls``
(normalisation and host keys, yarl).
"""

from __future__ import annotations

import importlib

# ``signature`` is a function and a module: imported here, the function stays the package's attribute
from freshcrawl.crawler.signature import HTML_CONTENT_TYPES, SIGNATURE_MODES, main_text, signature

#: the module that defines each public name; a name is imported on first use, so that a user of one
#: module (the frontier reads ``outcome``) does not load aiohttp and trafilatura
_MODULE_OF = {
    **dict.fromkeys(
        ["Outcome", "ErrorKind", "FetchRequest", "FetchOutcome", "RobotsOutcome"], "outcome"
    ),
    **dict.fromkeys(
        [
            "Fetcher",
            "DEFAULT_MAX_BYTES",
            "ROBOTS_MAX_BYTES",
            "ROBOTS_MAX_REDIRECTS",
            "default_user_agent",
            "parse_retry_after",
        ],
        "fetcher",
    ),
    **dict.fromkeys(["RobotsRules", "ROBOTS_MAX_AGE_S", "PRODUCT_TOKEN"], "robots"),
    **dict.fromkeys(
        ["signature", "main_text", "SIGNATURE_MODES", "HTML_CONTENT_TYPES"], "signature"
    ),
    **dict.fromkeys(["normalize_url", "host_of", "HTTP_SCHEMES"], "urls"),
}


def __getattr__(name: str):
    if name in _MODULE_OF:
        value = getattr(importlib.import_module(f"freshcrawl.crawler.{_MODULE_OF[name]}"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'freshcrawl.crawler' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


__all__ = [
    "DEFAULT_MAX_BYTES",
    "HTML_CONTENT_TYPES",
    "HTTP_SCHEMES",
    "PRODUCT_TOKEN",
    "ROBOTS_MAX_AGE_S",
    "ROBOTS_MAX_BYTES",
    "ROBOTS_MAX_REDIRECTS",
    "SIGNATURE_MODES",
    "ErrorKind",
    "FetchOutcome",
    "FetchRequest",
    "Fetcher",
    "Outcome",
    "RobotsOutcome",
    "RobotsRules",
    "default_user_agent",
    "host_of",
    "main_text",
    "normalize_url",
    "parse_retry_after",
    "signature",
]
