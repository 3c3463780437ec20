"""``POST /announcements``: pipelines that know when pages changed (CMS hooks, WebSub) tell the crawl.

Each announcement (url, changed_at, source) is taken as a sitemap's ``<lastmod>`` is
(:mod:`freshcrawl.frontier.announce`): logged, judged by the visits that follow, and trusted per
source and host only as far as those visits confirm it. The source's name is kept as
``rest:<source>``.
"""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.exceptions import RequestValidationError
from pydantic import BaseModel, ConfigDict, Field, field_validator

from freshcrawl.crawler.announcements import parse_announced_time
from freshcrawl.frontier.limits import check_url
from freshcrawl.service.routes.common import WRITE, Service, problem

__all__ = ["AnnouncementIn", "AnnouncementsRequest", "AnnouncementsResponse", "router"]

#: Most announcements in one request.
MAX_ANNOUNCEMENTS = 10_000


class AnnouncementIn(BaseModel):
    """One announced change."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    url: str = Field(
        ..., max_length=8192, description="The page's URL (normalised before it is matched)."
    )
    changed_at: float | str = Field(
        ...,
        description="When it changed: seconds since the epoch, or an ISO 8601 / RFC 2822 date "
        "(without a time zone: UTC).",
        examples=["2026-11-28T10:00:00Z"],
    )
    source: str = Field(
        ...,
        min_length=1,
        max_length=200,
        pattern=r"^[^\x00-\x1f]+$",
        description="Who announces (a CMS, a WebSub hub); trust is learned per source and host.",
    )

    @field_validator("changed_at")
    @classmethod
    def _time(cls, v: float | str) -> float | str:
        if isinstance(v, str) and parse_announced_time(v) is None:
            raise ValueError(
                f"changed_at must be seconds since the epoch or an ISO 8601 / RFC 2822 date; got {v!r}"
            )
        return v


class AnnouncementsRequest(BaseModel):
    """Announced changes for one crawl."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    crawl_id: str | None = Field(
        None, max_length=64, description="Crawl ID; default the default crawl."
    )
    announcements: list[AnnouncementIn] = Field(..., max_length=MAX_ANNOUNCEMENTS)


class AnnouncementsResponse(BaseModel):
    """What the announcements did."""

    n_entries: int = Field(..., description="Announcements received.")
    n_new: int = Field(
        ..., description="Logged as changes (newer than the source's last for the page)."
    )
    n_future: int = Field(
        ..., description="Dated after they were received: logged as evidence against the source."
    )
    n_unknown: int = Field(..., description="URLs not in the crawl, left out.")
    n_followed: int = Field(
        ..., description="Pages sent to be visited now (the source is trusted on their host)."
    )
    n_naive_dates: int = Field(..., description="Dates without a time zone, taken as UTC.")


router = APIRouter()


@router.post(
    "/announcements",
    response_model=AnnouncementsResponse,
    dependencies=WRITE,
    tags=["write"],
)
def post_announcements(body: AnnouncementsRequest, service: Service) -> AnnouncementsResponse:
    """Changes announced by a pipeline: logged, judged by visits, followed where the source is trusted.

    A URL refused by the URL checks (malformed, credentials, a host the egress policy refuses) is a
    422 naming its index; nothing is taken then."""
    items, naive, refused = [], 0, []
    for i, a in enumerate(body.announcements):
        if isinstance(a.changed_at, str):
            t, no_zone = parse_announced_time(a.changed_at)
            naive += no_zone
        else:
            t = float(a.changed_at)
        items.append((a.url, t, f"rest:{a.source}"))
        try:
            check_url(a.url, allow_private=service.settings.allow_private)
        except ValueError as err:
            refused.append(
                {
                    "loc": ("body", "announcements", i, "url"),
                    "type": "value_error",
                    "msg": str(err),
                }
            )
    if refused:
        raise RequestValidationError(refused)
    try:
        got = service.announce(body.crawl_id, items)
    except KeyError as err:
        raise problem(
            404, ["body", "crawl_id"], f"no crawl {body.crawl_id!r}", "not_found"
        ) from err
    return AnnouncementsResponse(
        n_entries=got.n_entries,
        n_new=got.n_new,
        n_future=got.n_future,
        n_unknown=got.n_unknown,
        n_followed=got.n_followed,
        n_naive_dates=naive,
    )
