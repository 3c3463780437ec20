"""The frontier service: the live recrawler's frontier served to other crawlers' processes.

:class:`FrontierService` (crawls by ID, leases, reports, queues; thread-safe) is the core that the
URLFrontier gRPC server and the REST API call.
"""

from __future__ import annotations

from freshcrawl.service.core import (
    DEFAULT_CRAWL,
    CrawlInfo,
    FrontierService,
    Lease,
    Report,
    queue_key,
)

__all__ = ["DEFAULT_CRAWL", "CrawlInfo", "FrontierService", "Lease", "Report", "queue_key"]
