"""Property test of the REST API from its own OpenAPI document (schemathesis): no request gets a 5xx.

Requests are generated from /openapi.json (valid and invalid bodies, queries, crawl IDs, URLs) and
sent with the token to a real server on loopback, on SQLite and on PostgreSQL. Bounded and
derandomised: at most 60 examples per operation and database, the same ones at every run.
"""

from __future__ import annotations

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error, response_schema_conformance

from freshcrawl.service.rest import create_app
from tests.integration.rest_server import AUTH, TOKEN, make_service, populate, running


@pytest.fixture
def live_api(db_url):
    """A populated crawl (SQLite, then PostgreSQL) served on loopback; yields the base URL."""
    service = make_service(db_url)
    try:
        with running(create_app(service, token=TOKEN)) as base:
            populate(base)
            yield base
    finally:
        service.close()


@pytest.fixture
def api_schema(live_api):
    return schemathesis.openapi.from_url(live_api + "/openapi.json")


schema = schemathesis.pytest.from_fixture("api_schema")


@schema.parametrize()
@settings(max_examples=60, derandomize=True, deadline=None, database=None,
          suppress_health_check=list(HealthCheck))
def test_no_request_gets_a_server_error(case, live_api):
    response = case.call(base_url=live_api, headers=AUTH, timeout=30)
    case.validate_response(response, checks=[not_a_server_error, response_schema_conformance])
