"""What the REST routes share: the service and the auth of a request, crawl and URL checks,
errors in the API's JSON shape, and JSON-ready values.

A route module defines an :class:`fastapi.APIRouter` whose routes take the service with
``service: Service`` and are guarded by ``dependencies=WRITE`` (writes) or ``READ`` (reads);
:func:`freshcrawl.service.rest.create_app` includes it.
"""

import math
import secrets
from typing import Annotated, Any

import numpy as np
from fastapi import Depends, HTTPException, Query, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from freshcrawl.frontier import limits
from freshcrawl.frontier.frontier import origin_of
from freshcrawl.service.core import DEFAULT_CRAWL, FrontierService
from freshcrawl.store import Store, check_namespace

__all__ = [
    "MAX_BATCH",
    "MAX_URL",
    "READ",
    "WRITE",
    "CrawlQuery",
    "PageQuery",
    "Service",
    "check_crawl_id",
    "check_page_url",
    "check_text",
    "crawl_query",
    "crawl_store",
    "finite",
    "page_query",
    "problem",
    "public_url",
    "read_auth",
    "require_crawl",
    "write_auth",
]

#: Longest URL taken (characters).
MAX_URL = limits.MAX_URL_CHARS
#: Longest origin taken (the hosts.origin column).
MAX_ORIGIN = 512
#: Most items of one batch (URLs, reports).
MAX_BATCH = 10_000


def finite(obj: Any) -> Any:
    """``obj`` with every non-finite float (and numpy scalar) made JSON-ready: inf and nan -> None."""
    if isinstance(obj, dict):
        return {k: finite(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [finite(v) for v in obj]
    if isinstance(obj, (float, np.floating)):
        return float(obj) if math.isfinite(obj) else None
    if isinstance(obj, np.integer):
        return int(obj)
    return obj


def check_text(value: str | None, *, name: str = "text") -> str | None:
    """``value`` unless it holds a NUL (:func:`freshcrawl.frontier.limits.check_text`); None stays."""
    return None if value is None else limits.check_text(value, field=name)


def public_url(url: str) -> str:
    """``url`` without a user name or password (a read never shows credentials)."""
    head, sep, rest = url.partition("://")
    if not sep:
        return url
    authority, slash, tail = rest.partition("/")
    return head + sep + authority.rpartition("@")[2] + slash + tail


def check_crawl_id(value: str | None) -> str:
    """A crawl ID as given (None, "" and ``DEFAULT``: the default crawl); ValueError when malformed."""
    if value is None or value == "" or value == DEFAULT_CRAWL:
        return DEFAULT_CRAWL
    return check_namespace(value)


def check_page_url(value: str) -> str:
    """``value`` normalised; ValueError when it is no http(s) URL of bounded size.

    The syntax only: the egress policy depends on the service's settings (checked by the endpoint).
    """
    try:
        url = limits.check_url(value, allow_private=True)
    except (TypeError, ValueError) as err:
        raise ValueError(str(err)) from None
    if len(origin_of(url)) > MAX_ORIGIN:
        raise ValueError(
            f"url must be at most {MAX_URL} characters with a host of at most {MAX_ORIGIN}"
        )
    return url


def problem(
    status: int, loc: list[Any], msg: str, kind: str, headers: dict[str, str] | None = None
) -> HTTPException:
    """An HTTP error whose JSON body names the field at ``loc`` (the shape of a 422)."""
    return HTTPException(status, detail=[{"loc": loc, "msg": msg, "type": kind}], headers=headers)


def no_crawl(crawl_id: str, loc: list[Any]) -> HTTPException:
    """The 404 of a crawl that does not exist, naming the field at ``loc``."""
    return problem(404, loc, f"no crawl {crawl_id!r}", "not_found")


def require_crawl(service: FrontierService, crawl_id: str, loc: list[Any]) -> None:
    """404 naming ``loc`` unless ``crawl_id`` is open or kept in the database (not opened)."""
    if not service.exists(crawl_id):
        raise no_crawl(crawl_id, loc)


def crawl_store(service: FrontierService, crawl_id: str) -> Store:
    """The store of a crawl that exists (404 naming the query's ``crawl_id`` otherwise), for reads."""
    require_crawl(service, crawl_id, ["query", "crawl_id"])
    try:
        return service.crawl_info(crawl_id).store
    except KeyError as err:
        raise no_crawl(crawl_id, ["query", "crawl_id"]) from err


# --- the request's service and auth ------------------------------------------------------------
async def service_of(request: Request) -> FrontierService:
    """The service of the app that takes the request (``app.state.service``)."""
    return request.app.state.service


#: A route's parameter ``service: Service`` is the app's :class:`FrontierService`.
Service = Annotated[FrontierService, Depends(service_of)]

_bearer = HTTPBearer(auto_error=False, description="The API token given to `freshcrawl serve`.")


_AUTH = ["header", "Authorization"]
_CHALLENGE = {"WWW-Authenticate": "Bearer"}
_INVALID_TOKEN = {"WWW-Authenticate": 'Bearer error="invalid_token"'}


def _check(token: str | None, creds: HTTPAuthorizationCredentials | None) -> None:
    if token is None:
        return
    if creds is None or creds.scheme.lower() != "bearer":
        raise problem(401, _AUTH, "a Bearer token is required", "missing_token", _CHALLENGE)
    if not secrets.compare_digest(creds.credentials.encode(), token.encode()):
        raise problem(401, _AUTH, "the token is not valid", "invalid_token", _INVALID_TOKEN)


# async: a check without I/O runs on the event loop, not in a worker thread of its own
async def write_auth(
    request: Request, creds: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)]
) -> None:
    """401 unless the request carries the app's token (``app.state.token``; None: open writes)."""
    _check(request.app.state.token, creds)


async def read_auth(
    request: Request, creds: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)]
) -> None:
    """As :func:`write_auth` when the app's reads are not public (``app.state.public_reads``)."""
    if not request.app.state.public_reads:
        _check(request.app.state.token, creds)


#: ``dependencies=`` of a write route (the token) and of a read route.
WRITE = [Depends(write_auth)]
READ = [Depends(read_auth)]

# --- query parameters --------------------------------------------------------------------------
CrawlQuery = Annotated[
    str | None, Query(max_length=64, description="Crawl ID; default the default crawl.")
]
PageQuery = Annotated[str | None, Query(max_length=MAX_URL, description="A page's URL.")]


def crawl_query(crawl_id: str | None) -> str:
    """The crawl ID of a query (None: the default crawl); 422 naming it when malformed."""
    try:
        return check_crawl_id(crawl_id)
    except ValueError as err:
        raise problem(422, ["query", "crawl_id"], str(err), "value_error") from err


def page_query(url: str) -> str:
    """The normalised URL of a query; 422 naming it when malformed."""
    try:
        return check_page_url(url)
    except ValueError as err:
        raise problem(422, ["query", "url"], str(err), "value_error") from err
