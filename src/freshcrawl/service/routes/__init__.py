"""The REST API's routes, one :class:`fastapi.APIRouter` per module, in the order they are served.

:func:`freshcrawl.service.rest.create_app` includes every router of :data:`ROUTERS`; a new group
of routes is a module with its own ``router`` (see :mod:`~freshcrawl.service.routes.common` for
the service, the auth and the error shape it shares) and one more entry here.
"""

from fastapi import APIRouter

from freshcrawl.service.routes import announcements, dashboard, metrics, reads, writes

__all__ = ["ROUTERS"]

#: The routers of the REST API (writes, announcements, reads, metrics, the dashboard).
ROUTERS: tuple[APIRouter, ...] = (
    writes.router,
    announcements.router,
    reads.router,
    metrics.router,
    dashboard.router,
)
