"""``GET /metrics``: the app's Prometheus metrics (``app.state.registry``)."""

from fastapi import APIRouter, Request
from fastapi.responses import Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from freshcrawl.service.routes.common import READ

__all__ = ["router"]

router = APIRouter()


@router.get(
    "/metrics",
    dependencies=READ,
    tags=["read"],
    response_class=Response,
    responses={200: {"content": {"text/plain": {}}, "description": "Prometheus text format."}},
)
def metrics(request: Request) -> Response:
    """Prometheus metrics."""
    return Response(generate_latest(request.app.state.registry), media_type=CONTENT_TYPE_LATEST)
