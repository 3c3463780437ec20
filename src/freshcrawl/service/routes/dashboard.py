"""``GET /``: the dashboard (one HTML page, plain JS drawing SVG; nothing fetched elsewhere)."""

from importlib.resources import files

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

__all__ = ["router"]

router = APIRouter()


@router.get(
    "/",
    response_class=HTMLResponse,
    tags=["read"],
    responses={200: {"content": {"text/html": {}}, "description": "The dashboard."}},
)
def dashboard(request: Request) -> HTMLResponse:
    """The dashboard: freshness over time, budget by host, pages most overdue, page explanations."""
    html = files("freshcrawl.service").joinpath("dashboard.html").read_text(encoding="utf-8")
    return HTMLResponse(
        html.replace("__PUBLIC_READS__", "true" if request.app.state.public_reads else "false")
    )
