"""The frontier of the live recrawler: crawl state, policy and politeness-aware dispatch.

:class:`Frontier` keeps the crawl in a :class:`~freshcrawl.store.Store`, plans it with a policy of
:mod:`freshcrawl.policies`, hands out due visits and commits their outcomes. It knows nothing of HTTP:
the fetcher (:mod:`freshcrawl.crawler`) turns visits into outcomes.
"""

from __future__ import annotations

from freshcrawl.frontier.frontier import (
    Backlog,
    CrawlSettings,
    Frontier,
    HostLoad,
    RobotsVisit,
    Visit,
    origin_of,
    parse_url_list,
)

__all__ = [
    "Backlog",
    "CrawlSettings",
    "Frontier",
    "HostLoad",
    "RobotsVisit",
    "Visit",
    "origin_of",
    "parse_url_list",
]
