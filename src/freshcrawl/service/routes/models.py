"""Request and response models of the REST API (pydantic): what each route takes and answers."""

from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationInfo, field_validator

from freshcrawl.frontier import limits
from freshcrawl.service.routes.common import MAX_BATCH, check_crawl_id, check_page_url, check_text


def _report_time(value: float | None, info: ValidationInfo) -> float | None:
    return None if value is None else limits.check_report_time(value, field=info.field_name)


#: A page URL, normalised (ValueError when it is no http(s) URL of bounded size).
_PageUrl = Annotated[str, AfterValidator(check_page_url)]
#: Free text without NUL characters, or None.
_Text = Annotated[str | None, AfterValidator(check_text)]
#: When a worker's visit happened, seconds since the epoch, within [now - 7 days, now + 5 min] (or None).
_ReportTime = Annotated[float | None, AfterValidator(_report_time)]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


class _CrawlScoped(_Model):
    crawl_id: str | None = Field(
        None,
        max_length=64,
        validate_default=True,
        description="Crawl ID (1-64 letters, digits, '.', '_' or '-'); null, '' or 'DEFAULT': the default crawl.",
    )

    @field_validator("crawl_id")
    @classmethod
    def _check_crawl(cls, v: str | None) -> str:
        return check_crawl_id(v)


class UrlIn(_Model):
    """A URL to keep fresh."""

    url: _PageUrl = Field(
        ...,
        description="Absolute http(s) URL (normalised before it is stored).",
        examples=["https://example.org/news"],
    )
    weight: float = Field(
        1.0, ge=0, le=1e9, description="Importance w of the page (>= 0, dimensionless)."
    )


class AddUrlsRequest(_CrawlScoped):
    """URLs to add to a crawl (created when it does not exist)."""

    urls: list[UrlIn] = Field(
        ..., max_length=MAX_BATCH, description="URLs with weights; at most 10,000."
    )


class AddUrlsResponse(_Model):
    crawl_id: str
    added: int = Field(..., description="URLs new to the crawl.")
    known: int = Field(..., description="URLs already in the crawl (left as they are).")


class LeaseRequest(_CrawlScoped):
    """A worker asking for due visits."""

    worker_id: Annotated[str, AfterValidator(check_text)] = Field(
        ..., min_length=1, max_length=128, description="Who leases (free text)."
    )
    count: int = Field(
        1, ge=1, le=1000, description="Most visits wanted; at most one per host is handed out."
    )
    lease_s: float = Field(
        60.0,
        gt=0,
        le=limits.MAX_LEASE_S,
        description="Seconds the visits are held for this worker; unreported ones go back after.",
    )
    queue: _Text = Field(
        None, max_length=600, description="Only visits of this queue (host[:port])."
    )


class LeaseOut(_Model):
    """A leased visit. ``kind="robots"``: fetch the host's robots.txt at ``url``, report it to /robots."""

    crawl_id: str
    kind: Literal["page", "robots"]
    url: str = Field(..., description="What to fetch.")
    queue: str = Field(..., description="host[:port] of the URL.")
    page_id: int | None
    etag: str | None = Field(None, description="Validator for If-None-Match.")
    last_modified: str | None = Field(None, description="Validator for If-Modified-Since.")
    signature: str | None = Field(None, description="Signature of the stored copy.")
    due: float = Field(..., description="When the visit was due, seconds since the epoch.")
    expires_at: float = Field(..., description="End of the lease, seconds since the epoch.")


class LeaseResponse(_Model):
    worker_id: str
    leases: list[LeaseOut]


class ReportIn(_Model):
    """What a visit gave."""

    url: _PageUrl = Field(..., description="The URL visited (as leased).")
    status: int | None = Field(
        ..., ge=100, le=599, description="HTTP status; null when no answer came."
    )
    signature: _Text = Field(
        None,
        max_length=128,
        description="Content signature of the body (any stable digest); ignored on 304.",
    )
    etag: _Text = Field(None, max_length=4096)
    last_modified: _Text = Field(None, max_length=4096)
    elapsed_s: float = Field(
        0.0, ge=0, le=limits.MAX_DURATION_S, description="Seconds the visit took."
    )
    n_bytes: int = Field(0, ge=0, le=limits.MAX_SIZE, description="Body bytes (at most 2^53).")
    retry_after_s: float | None = Field(
        None, ge=0, le=limits.MAX_RETRY_AFTER_S, description="Seconds a 429/503 asked to wait."
    )
    error: _Text = Field(
        None,
        max_length=64,
        description="Without a status: 'timeout', 'network' or another page error.",
    )
    started_at: _ReportTime = Field(
        None,
        description="When the request was sent, seconds since the epoch, within [now - 7 days, now + 5 min]; "
        "default now.",
    )
    refetch_not_before: float | None = Field(
        None,
        description="After an error: earliest next visit, seconds since the epoch (at most now + 366 days).",
    )

    @field_validator("refetch_not_before")
    @classmethod
    def _check_not_before(cls, v: float | None) -> float | None:
        return None if v is None else limits.check_not_before(v, field="refetch_not_before")


class ObservationsRequest(_CrawlScoped):
    """Reports of visits; one malformed report refuses the whole batch (nothing is recorded)."""

    reports: list[ReportIn] = Field(..., max_length=MAX_BATCH)


class ObservationsResponse(_Model):
    crawl_id: str
    results: list[str] = Field(..., description="Per report, in order: 'ok' or 'unknown-url'.")
    n_ok: int


class RobotsRequest(_CrawlScoped):
    """A robots.txt a worker fetched."""

    url: _PageUrl = Field(..., description="The robots.txt URL leased (or any URL of the host).")
    status: int | None = Field(
        ..., ge=100, le=599, description="HTTP status; null when unreachable."
    )
    text: _Text = Field(
        None, max_length=512_000, description="The body (RFC 9309: at least 500 KiB parsed)."
    )
    fetched_at: _ReportTime = Field(
        None,
        description="Seconds since the epoch, within [now - 7 days, now + 5 min]; default now.",
    )
    elapsed_s: float = Field(0.0, ge=0, le=limits.MAX_DURATION_S)
    retry_after_s: float | None = Field(None, ge=0, le=limits.MAX_RETRY_AFTER_S)


class RobotsResponse(_Model):
    crawl_id: str
    host: str


class HostUse(_Model):
    queue: str
    origin: str
    n_pages: int = Field(..., description="Active pages of the host.")
    rate_per_day: float = Field(..., description="Visits per day the plan gives the host's pages.")
    cap_per_day: float | None = Field(
        ..., description="Most visits per day the host allows (null: no cap)."
    )
    delay_s: float = Field(..., description="Least seconds between two requests to the host.")
    in_backoff: bool


class HostsResponse(_Model):
    crawl_id: str
    budget: float = Field(..., description="Crawl budget, visits per day.")
    budget_in_use: float = Field(..., description="Sum of planned rates, visits per day.")
    n_hosts: int
    hosts: list[HostUse] = Field(..., description="Hosts by planned rate, largest first.")


class OverduePage(_Model):
    url: str
    queue: str
    next_due: float = Field(..., description="Seconds since the epoch.")
    overdue_s: float = Field(..., description="Seconds past due.")
    rate: float = Field(..., description="Planned visits per day.")
    delta_hat: float | None = Field(..., description="Estimated changes per day.")
    leased: bool = Field(..., description="A worker holds its lease now.")


class OverdueResponse(_Model):
    crawl_id: str
    now: float
    n_due: int = Field(..., description="Active pages due now.")
    pages: list[OverduePage]


class HistorySample(_Model):
    time: float = Field(..., description="Seconds since the epoch.")
    estimated_freshness: float | None = Field(
        ..., description="Weighted mean expected freshness in [0, 1]."
    )
    budget_in_use: float = Field(..., description="Visits per day planned.")
    due_now: int
    n_pages: int


class PageCapture(_Model):
    url: str
    time: float = Field(..., description="WARC-Date, seconds since the epoch.")
    date: str = Field(..., description="WARC-Date as written (ISO 8601 UTC).")
    status: int | None = Field(None, description="HTTP status of the answer.")
    kind: str = Field(..., description="'response' (a new payload) or 'revisit'.")
    profile: str | None = Field(None, description="Revisit profile URI.")
    digest: str = Field(..., description="WARC-Payload-Digest, sha1:<base32>.")
    filename: str = Field(..., description="WARC file name.")
    offset: int = Field(..., description="Byte offset of the record in the file.")
    length: int = Field(..., description="Compressed length of the record, bytes.")
    outcome: str | None = Field(None, description="The observation committed at that time.")
    changed: bool | None = Field(None, description="I of that observation; null for a first copy.")


class HistoryResponse(_Model):
    crawl_id: str
    samples: list[HistorySample]
    url: str | None = Field(None, description="The page asked for with ?url=.")
    captures: list[PageCapture] | None = Field(
        None, description="With ?url=: the page's captures in the WARC files, oldest first."
    )


class DiffResponse(_Model):
    crawl_id: str
    url: str
    mode: str = Field(..., description="'text' (main text, a line per paragraph) or 'raw'.")
    old: PageCapture
    new: PageCapture
    diff: str = Field(..., description="Unified diff; empty when equal.")
    added: int = Field(..., description="Lines added.")
    removed: int = Field(..., description="Lines removed.")
