"""A test web on loopback: pages with known change rates and faults, and the audits that grade a crawl.

``freshcrawl.testing`` is what the project's own tests and benchmarks crawl, and what a user can crawl
to rehearse (``freshcrawl test-web``). :class:`TestWeb` serves pages (:class:`PageSpec`, drawn by
:func:`make_pages`) over hosts ``127.0.0.{2+i}`` (:class:`HostSpec`: robots.txt rules, Crawl-delay,
robots faults); pages change as Poisson processes of known rates in changes per second and may carry a
:class:`Fault` (throttling, errors, hangs, huge or hostile bodies, redirects, resets, non-HTML, noisy
markup). Every request is logged (:class:`RequestRecord`); :meth:`TestWeb.freshness` and
:meth:`TestWeb.politeness_violations` grade the crawl against the truth.

Examples
--------
>>> from freshcrawl.testing import TestWeb, make_pages
>>> with TestWeb(make_pages(10, 2, (0.01, 1.0), seed=0), hosts=2, seed=0) as web:
...     url = web.urls()[0]
...     web.version_at(url, web.started_at)
0
"""

from __future__ import annotations

from freshcrawl.testing.audit import (
    FreshnessReport,
    RobotsRules,
    Violation,
    page_freshness,
)
from freshcrawl.testing.log import RequestLog, RequestRecord, read_request_log
from freshcrawl.testing.server import HostInfo, TestWeb
from freshcrawl.testing.specs import (
    FAULT_KINDS,
    ROBOTS_FAULTS,
    Fault,
    HostSpec,
    Page,
    PageSpec,
    host_name,
    make_pages,
)

__all__ = [
    "FAULT_KINDS",
    "ROBOTS_FAULTS",
    "Fault",
    "FreshnessReport",
    "HostInfo",
    "HostSpec",
    "Page",
    "PageSpec",
    "RequestLog",
    "RequestRecord",
    "RobotsRules",
    "TestWeb",
    "Violation",
    "host_name",
    "make_pages",
    "page_freshness",
    "read_request_log",
]
