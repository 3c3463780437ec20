"""Property test of the REST API from its own OpenAPI document (schemathesis): no request gets a 5xx.

Requests are generated from /openapi.json (valid and invalid bodies, queries, crawl IDs, URLs) and
sent with the token to a real server on loopback, on SQLite and on PostgreSQL. Bounded and
derandomised: at most 60 examples per operation and database, the same ones at every run.

schemathesis is used as a library (one hypothesis strategy per API operation), not through its
pytest plugin, so the test depends only on schemathesis's public loading and case API.
"""

from __future__ import annotations

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
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


def test_no_request_gets_a_server_error(live_api):
    schema = schemathesis.openapi.from_url(live_api + "/openapi.json")
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= 10, "the OpenAPI document lists fewer operations than the API has"
    for operation in operations:

        @given(case=operation.as_strategy())
        @settings(max_examples=60, derandomize=True, deadline=None, database=None,
                  suppress_health_check=list(HealthCheck))
        def check(case):
            response = case.call(base_url=live_api, headers=AUTH, timeout=30)
            case.validate_response(
                response, checks=[not_a_server_error, response_schema_conformance]
            )

        check()
