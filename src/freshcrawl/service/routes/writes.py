"""The REST API's writes: ``POST /urls``, ``/leases``, ``/observations`` and ``/robots``."""

from fastapi import APIRouter, Request
from fastapi.exceptions import RequestValidationError

from freshcrawl.frontier import limits
from freshcrawl.frontier.frontier import origin_of
from freshcrawl.service.core import Report
from freshcrawl.service.routes.common import WRITE, Service, no_crawl, problem, require_crawl
from freshcrawl.service.routes.models import (
    AddUrlsRequest,
    AddUrlsResponse,
    LeaseOut,
    LeaseRequest,
    LeaseResponse,
    ObservationsRequest,
    ObservationsResponse,
    RobotsRequest,
    RobotsResponse,
)

__all__ = ["router"]

router = APIRouter()


@router.post("/urls", response_model=AddUrlsResponse, dependencies=WRITE, tags=["write"])
def add_urls(body: AddUrlsRequest, service: Service) -> AddUrlsResponse:
    """Add URLs (all or none). Known URLs are left as they are; a new crawl ID creates the crawl.

    A URL whose host the egress policy refuses (private, link-local, reserved, metadata; unless
    the service allows private hosts) is refused with 422 naming its index."""
    refused = []
    for i, u in enumerate(body.urls):
        try:
            limits.check_url(u.url, allow_private=service.settings.allow_private)
        except ValueError as err:
            refused.append(
                {"loc": ("body", "urls", i, "url"), "type": "egress_refused", "msg": str(err)}
            )
    if refused:
        raise RequestValidationError(refused)
    added, known = service.add_urls(body.crawl_id, [(u.url, u.weight) for u in body.urls])
    return AddUrlsResponse(crawl_id=body.crawl_id, added=added, known=known)


@router.post("/leases", response_model=LeaseResponse, dependencies=WRITE, tags=["write"])
def lease(body: LeaseRequest, service: Service, request: Request) -> LeaseResponse:
    """Lease up to ``count`` due visits, at most one per host; report each to /observations or /robots."""
    require_crawl(service, body.crawl_id, ["body", "crawl_id"])
    try:
        got = service.lease(
            body.crawl_id, body.worker_id, body.count, lease_s=body.lease_s, queue=body.queue
        )
    except KeyError as err:
        raise no_crawl(body.crawl_id, ["body", "crawl_id"]) from err
    for x in got:
        request.app.state.leases_total.labels(x.kind).inc()
    return LeaseResponse(
        worker_id=body.worker_id,
        leases=[
            LeaseOut(
                crawl_id=x.crawl_id,
                kind=x.kind,
                url=x.url,
                queue=x.queue,
                page_id=x.page_id,
                etag=x.etag,
                last_modified=x.last_modified,
                signature=x.signature,
                due=x.due,
                expires_at=x.expires_at,
            )
            for x in got
        ],
    )


@router.post(
    "/observations", response_model=ObservationsResponse, dependencies=WRITE, tags=["write"]
)
def report(body: ObservationsRequest, service: Service, request: Request) -> ObservationsResponse:
    """Record what visits gave, in one transaction; per report 'ok' or 'unknown-url'.

    A URL appears at most once per batch (order would matter): send later visits in a later batch."""
    seen: dict[str, int] = {}
    for j, r in enumerate(body.reports):
        if r.url in seen:
            raise RequestValidationError(
                [
                    {
                        "loc": ("body", "reports", j, "url"),
                        "type": "value_error",
                        "msg": f"{r.url} is reported twice in this batch (also at index {seen[r.url]}); one report "
                        "per URL and batch",
                    }
                ]
            )
        seen[r.url] = j
    reports = [Report(**r.model_dump()) for r in body.reports]
    require_crawl(service, body.crawl_id, ["body", "crawl_id"])
    try:
        results = service.report(body.crawl_id, reports, source="rest")
    except KeyError as err:
        raise no_crawl(body.crawl_id, ["body", "crawl_id"]) from err
    for r in results:
        request.app.state.reports_total.labels("ok" if r == "ok" else r.split(":")[0]).inc()
    return ObservationsResponse(crawl_id=body.crawl_id, results=results, n_ok=results.count("ok"))


@router.post("/robots", response_model=RobotsResponse, dependencies=WRITE, tags=["write"])
def robots(body: RobotsRequest, service: Service) -> RobotsResponse:
    """Record a robots.txt fetched for a host of the crawl (rules, Crawl-delay, errors)."""
    require_crawl(service, body.crawl_id, ["body", "crawl_id"])
    try:
        service.crawl(body.crawl_id)
    except KeyError as err:
        raise no_crawl(body.crawl_id, ["body", "crawl_id"]) from err
    try:
        service.report_robots(
            body.crawl_id,
            body.url,
            body.status,
            body.text,
            fetched_at=body.fetched_at,
            elapsed_s=body.elapsed_s,
            retry_after_s=body.retry_after_s,
        )
    except KeyError as err:
        raise problem(404, ["body", "url"], str(err.args[0]), "not_found") from err
    return RobotsResponse(crawl_id=body.crawl_id, host=origin_of(body.url))
