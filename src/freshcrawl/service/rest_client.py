"""A frontier served over REST by ``freshcrawl serve``, with the crawl loop's frontier interface.

:class:`RestFrontier` has the interface of :class:`~freshcrawl.crawler.loop.FrontierLike` (``due``,
``record``, ``record_robots``, ``next_wakeup``, ``replan``, ``next_replan``) plus ``add_urls`` and
``n_active``, so that a fetcher written against a :class:`~freshcrawl.frontier.Frontier` in its own
process works unchanged against a served one. It speaks the REST API of
:mod:`freshcrawl.service.rest` (``POST /leases``, ``/observations``, ``/robots``, ``/urls``,
``GET /status``) with an ``httpx.Client``; the server plans, this side never re-plans.

Writes carry ``Authorization: Bearer <token>`` when a token is given. An ``https://`` server is
verified with :class:`~freshcrawl.service.tls.ClientTLS` (a private CA, a client certificate for
mutual TLS) or the system's trust store.
"""

from __future__ import annotations

import logging
import math
import os
import time

import httpx

from freshcrawl.crawler.outcome import ErrorKind, FetchOutcome, FetchRequest, RobotsOutcome
from freshcrawl.frontier.frontier import RobotsVisit, Visit
from freshcrawl.frontier.limits import check_url
from freshcrawl.service.tls import ClientTLS

__all__ = ["RestFrontier"]

log = logging.getLogger(__name__)

#: Most URLs or reports sent in one request (the API takes at most 10,000).
_BATCH = 1000


class RestFrontier:
    """The frontier of a running ``freshcrawl serve``, through its REST API.

    Parameters
    ----------
    base_url : str
        ``http://host:port`` or ``https://host:port`` of the server's REST API.
    crawl_id : str, optional
        Crawl ID (None: the server's default crawl).
    worker : str, optional
        Name of this worker in its leases (default ``scrapy-<pid>``).
    lease_s : float, default=120.0
        Seconds a visit is held for this worker; it must exceed the longest visit.
    poll_s : float, default=0.25
        Seconds between two asks when nothing was due (:meth:`next_wakeup`).
    timeout_s : float, default=10.0
        Timeout of one HTTP call, seconds.
    token : str, optional
        Bearer token of the server's writes.
    tls : ClientTLS, optional
        CA and client certificate of an ``https://`` server (default: the system's trust store).
    allow_private : bool, default=False
        Whether :meth:`add_urls` sends URLs of private, link-local and reserved hosts (a server
        started with ``--allow-private`` takes them).

    Raises
    ------
    ValueError
        If ``base_url`` is not http(s), a duration is not finite and > 0, or ``tls`` is given with
        an ``http://`` URL.

    Attributes
    ----------
    counts : dict
        ``leased`` visits, ``reported`` and ``refused`` (answered ``unknown-url``) reports,
        ``added`` URLs new to the crawl.
    """

    #: The server plans: a caller never re-plans a served frontier.
    next_replan = math.inf

    def __init__(
        self,
        base_url: str,
        crawl_id: str | None = None,
        worker: str | None = None,
        *,
        lease_s: float = 120.0,
        poll_s: float = 0.25,
        timeout_s: float = 10.0,
        token: str | None = None,
        tls: ClientTLS | None = None,
        allow_private: bool = False,
    ) -> None:
        for name, value in (("lease_s", lease_s), ("poll_s", poll_s), ("timeout_s", timeout_s)):
            if not (isinstance(value, int | float) and math.isfinite(value) and value > 0):
                raise ValueError(f"{name} must be finite and > 0 seconds; got {value!r}")
        url = httpx.URL(str(base_url).strip())
        if url.scheme not in ("http", "https") or not url.host:
            raise ValueError(
                f"a served frontier is http://HOST:PORT or https://HOST:PORT; got {base_url!r}"
            )
        if url.scheme == "http" and tls is not None:
            raise ValueError(
                f"{base_url} is plaintext (http://): TLS settings go with https://HOST:PORT"
            )
        self.base_url = str(url).rstrip("/")
        self.crawl_id = crawl_id or None
        self.worker = worker or f"scrapy-{os.getpid()}"
        self.lease_s = float(lease_s)
        self.allow_private = bool(allow_private)
        self.poll_s = float(poll_s)
        self.counts = {"leased": 0, "reported": 0, "refused": 0, "added": 0}
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        verify = (tls or ClientTLS()).ssl_context() if url.scheme == "https" else True
        self._client = httpx.Client(
            base_url=self.base_url, headers=headers, timeout=timeout_s, verify=verify
        )

    def close(self) -> None:
        """Close the HTTP client."""
        self._client.close()

    def _post(self, path: str, body: dict) -> dict:
        if self.crawl_id is not None:
            body = {"crawl_id": self.crawl_id, **body}
        response = self._client.post(path, json=body)
        response.raise_for_status()
        return response.json()

    # FrontierLike --------------------------------------------------------------------------------
    def due(self, now: float | None = None, limit: int = 64) -> list[Visit | RobotsVisit]:
        """Up to ``limit`` visits leased from the server (at most one per host).

        Raises
        ------
        httpx.HTTPError
            If the server cannot be reached or refuses the call (401, 404 for an unknown crawl).
        """
        if limit <= 0:
            return []
        got = self._post(
            "/leases",
            {"worker_id": self.worker, "count": min(int(limit), 1000), "lease_s": self.lease_s},
        )
        out: list[Visit | RobotsVisit] = []
        for x in got["leases"]:
            if x["kind"] == "robots":
                out.append(RobotsVisit(0, x["url"].rsplit("/robots.txt", 1)[0]))
            else:
                req = FetchRequest(
                    x["url"], x.get("etag"), x.get("last_modified"), x.get("signature")
                )
                out.append(Visit(int(x.get("page_id") or 0), 0, req, float(x["due"])))
        self.counts["leased"] += len(out)
        return out

    def record(self, results: list[tuple[object, FetchOutcome]]) -> None:
        """Report page visits' outcomes (``POST /observations``, a URL at most once per request)."""
        batches: list[list[dict]] = [[]]
        seen: set[str] = set()
        for visit, out in results:
            url = getattr(visit, "url", out.url)
            if url in seen or len(batches[-1]) >= _BATCH:
                batches.append([])
                seen = set()
            seen.add(url)
            error = None
            if out.status is None:
                error = {ErrorKind.NETWORK: "timeout" if out.why == "timeout" else "network"}.get(
                    out.error, out.why
                )
            batches[-1].append(
                {
                    "url": url,
                    "status": out.status,
                    "signature": out.signature,
                    "etag": out.etag,
                    "last_modified": out.last_modified,
                    "elapsed_s": max(0.0, out.elapsed_s),
                    "n_bytes": out.n_bytes,
                    "retry_after_s": out.retry_after_s,
                    "error": error,
                    "started_at": out.started_at,
                }
            )
        for batch in batches:
            if batch:
                results_ = self._post("/observations", {"reports": batch})["results"]
                ok = results_.count("ok")
                self.counts["reported"] += ok
                self.counts["refused"] += len(results_) - ok

    def record_robots(self, visit: RobotsVisit, out: RobotsOutcome) -> None:
        """Report a robots.txt fetch (``POST /robots``)."""
        self._post(
            "/robots",
            {
                "url": visit.origin + "/robots.txt",
                "status": out.status,
                "text": out.text,
                "fetched_at": out.fetched_at,
                "elapsed_s": max(0.0, out.elapsed_s),
                "retry_after_s": out.retry_after_s,
            },
        )

    def next_wakeup(self, now: float | None = None) -> float:
        """When to ask again: ``poll_s`` from now (the server knows what is due, not this side)."""
        return (time.time() if now is None else float(now)) + self.poll_s

    def replan(self, now: float | None = None) -> None:
        """Nothing: the server plans."""

    # beyond FrontierLike -------------------------------------------------------------------------
    def add_urls(
        self, urls: list[tuple[str, float]], *, allow_private: bool | None = None
    ) -> tuple[int, int]:
        """Add ``(url, weight)`` pairs (``POST /urls``); return (added, known).

        URLs the server would refuse (malformed, with credentials, a host the egress policy
        refuses unless ``allow_private``, default the constructor's) are dropped here, so that one
        bad URL does not refuse the rest; the server checks again.
        """
        if allow_private is None:
            allow_private = self.allow_private
        rows = []
        for url, weight in urls:
            try:
                rows.append(
                    {"url": check_url(url, allow_private=allow_private), "weight": float(weight)}
                )
            except ValueError:
                continue
        added = known = 0
        for i in range(0, len(rows), _BATCH):
            got = self._post("/urls", {"urls": rows[i : i + _BATCH]})
            added += got["added"]
            known += got["known"]
        self.counts["added"] += added
        return added, known

    def n_active(self) -> int:
        """Active pages of the crawl (``GET /status``)."""
        params = {"crawl_id": self.crawl_id} if self.crawl_id else {}
        response = self._client.get("/status", params=params)
        response.raise_for_status()
        return int(response.json().get("pages", {}).get("active", 0))
