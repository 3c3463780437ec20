"""The REST API's reads: ``GET /explain``, ``/status``, ``/hosts``, ``/overdue``, ``/history`` and
``/diff``."""

import time
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query, Request

from freshcrawl.frontier.report import crawl_status, explain_page
from freshcrawl.service.routes.common import (
    MAX_URL,
    READ,
    CrawlQuery,
    PageQuery,
    Service,
    crawl_query,
    crawl_store,
    finite,
    no_crawl,
    page_query,
    problem,
    public_url,
    require_crawl,
)
from freshcrawl.service.routes.models import (
    DiffResponse,
    HistoryResponse,
    HistorySample,
    HostsResponse,
    HostUse,
    OverduePage,
    OverdueResponse,
    PageCapture,
)

__all__ = ["router"]

router = APIRouter()


@router.get("/explain", dependencies=READ, tags=["read"])
def explain(
    url: Annotated[str, Query(max_length=MAX_URL, description="The page's URL.")],
    service: Service,
    crawl_id: CrawlQuery = None,
) -> dict[str, Any]:
    """Why a page is visited as it is: its observations, Δ̂ (changes/day) with its 95% interval,
    rate (visits/day), next visit and what limits it. The content of ``freshcrawl crawl explain``."""
    cid = crawl_query(crawl_id)
    key = page_query(url)
    store = crawl_store(service, cid)
    try:
        ex = explain_page(store, key)
        ex["url"] = public_url(ex["url"])
        return finite(ex)
    except KeyError as err:
        raise problem(404, ["query", "url"], f"{key} is not in crawl {cid!r}", "not_found") from err


@router.get("/status", dependencies=READ, tags=["read"])
def status(service: Service, crawl_id: CrawlQuery = None) -> dict[str, Any]:
    """Pages, hosts, observations, estimated freshness, backlog, budget in use, plan age, errors."""
    cid = crawl_query(crawl_id)
    now = time.time()
    require_crawl(service, cid, ["query", "crawl_id"])
    try:
        info = service.crawl_info(cid, now=now)
    except KeyError as err:
        raise no_crawl(cid, ["query", "crawl_id"]) from err
    store, planned_at, leased = info.store, info.planned_at, info.n_leased
    st = crawl_status(store, now=now)
    for failed in st["failed_pages"]:
        failed["url"] = public_url(failed["url"])
    st.update(crawl_id=cid, now=now, plan_age_s=now - planned_at, leased=leased)
    return finite(st)


@router.get("/hosts", response_model=HostsResponse, dependencies=READ, tags=["read"])
def hosts(
    service: Service,
    crawl_id: CrawlQuery = None,
    limit: Annotated[int, Query(ge=1, le=10_000, description="Most hosts listed.")] = 50,
) -> HostsResponse:
    """Budget use by host: planned visits per day against each host's cap, largest first."""
    cid = crawl_query(crawl_id)
    crawl_store(service, cid)
    use = service.host_use(cid, limit)
    return HostsResponse(
        crawl_id=cid,
        budget=use["budget"],
        budget_in_use=use["budget_in_use"],
        n_hosts=use["n_hosts"],
        hosts=[HostUse(**h) for h in use["hosts"]],
    )


@router.get("/overdue", response_model=OverdueResponse, dependencies=READ, tags=["read"])
def overdue(
    service: Service,
    crawl_id: CrawlQuery = None,
    limit: Annotated[int, Query(ge=1, le=1000, description="Most pages listed.")] = 20,
) -> OverdueResponse:
    """Active pages due the longest, most overdue first (leased ones included, marked)."""
    cid = crawl_query(crawl_id)
    now = time.time()
    crawl_store(service, cid)
    late = service.overdue(cid, limit, now=now)
    pages_ = [
        OverduePage(**{**p, "url": public_url(p["url"]), "delta_hat": finite(p["delta_hat"])})
        for p in late["pages"]
    ]
    return OverdueResponse(crawl_id=cid, now=now, n_due=late["n_due"], pages=pages_)


@router.get("/history", response_model=HistoryResponse, dependencies=READ, tags=["read"])
def get_history(
    service: Service, request: Request, crawl_id: CrawlQuery = None, url: PageQuery = None
) -> HistoryResponse:
    """Estimated freshness over time (a sample after each plan, at most every minute on demand).

    With ``url``: also that page's captures in the crawl's WARC files (``crawl run --warc``),
    each with the observation committed at its time; the content of ``crawl history``."""
    cid = crawl_query(crawl_id)
    store = crawl_store(service, cid)
    samples = [HistorySample(**finite(s)) for s in request.app.state.history.get(cid)]
    if url is None:
        return HistoryResponse(crawl_id=cid, samples=samples)
    from freshcrawl.archive.history import page_history

    key = page_query(url)
    try:
        hist = page_history(store, key)
    except KeyError as err:
        raise problem(404, ["query", "url"], f"{key} is not in crawl {cid!r}", "not_found") from err
    except (LookupError, FileNotFoundError) as err:
        raise problem(404, ["query", "url"], str(err), "not_found") from err
    return HistoryResponse(
        crawl_id=cid,
        samples=samples,
        url=key,
        captures=[PageCapture(**c) for c in hist["captures"]],
    )


@router.get("/diff", response_model=DiffResponse, dependencies=READ, tags=["read"])
def get_diff(
    url: Annotated[str, Query(max_length=MAX_URL, description="The page's URL.")],
    service: Service,
    crawl_id: CrawlQuery = None,
    at: Annotated[
        float | None,
        Query(
            allow_inf_nan=False,
            description=(
                "Seconds since the epoch: compare the response captured at or before it with the one "
                "before; default the latest."
            ),
        ),
    ] = None,
    mode: Annotated[Literal["text", "raw"], Query(description="Main text or raw.")] = "text",
) -> DiffResponse:
    """The change between two captures of a page, read from the crawl's WARC files; the
    content of ``crawl diff``. 404 when the page has fewer than two response captures."""
    from freshcrawl.archive.history import page_diff, warc_directory

    cid = crawl_query(crawl_id)
    store = crawl_store(service, cid)
    key = page_query(url)
    if store.page_by_url(key) is None:
        raise problem(404, ["query", "url"], f"{key} is not in crawl {cid!r}", "not_found")
    try:
        result = page_diff(warc_directory(store), key, at=at, mode=mode)
    except (LookupError, FileNotFoundError, ValueError) as err:
        raise problem(404, ["query", "url"], str(err), "not_found") from err
    d = result.to_dict()
    return DiffResponse(
        crawl_id=cid,
        url=key,
        mode=d["mode"],
        old=PageCapture(**d["old"]),
        new=PageCapture(**d["new"]),
        diff=d["diff"],
        added=d["added"],
        removed=d["removed"],
    )
