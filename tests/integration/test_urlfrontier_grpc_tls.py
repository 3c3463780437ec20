"""The URLFrontier gRPC tests (test_urlfrontier_grpc.py) again, over mutual TLS with a token.

Every test of that module runs here unchanged against a server started with ``tls`` (a client
certificate signed by the test CA required) and a token, through a channel that presents the
client certificate and sends the token with every call: what the API does is the same over TLS.
SQLite only (the module itself covers PostgreSQL on plaintext). Two tests of the module start
servers or clients of their own on plaintext and are not repeated: the fetcher's client over TLS is
tested in test_service_tls.py.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from freshcrawl.frontier import CrawlSettings
from freshcrawl.service import FrontierService
from freshcrawl.service.grpc_server import serve_grpc
from freshcrawl.service.proto import urlfrontier_pb2_grpc as pb_grpc
from tests.integration import test_urlfrontier_grpc as plaintext

# the module's tests, collected again here; two make their own plaintext server or client
_OWN_SERVER = {
    "test_remote_frontier_leases_and_reports_for_the_crawl_loop",
    "test_a_token_is_needed_when_the_server_has_one",
}
globals().update(
    {
        name: test
        for name, test in vars(plaintext).items()
        if name.startswith("test_") and name not in _OWN_SERVER
    }
)

TOKEN = "tls-test-token"


@pytest.fixture
def db_url(tmp_path):
    """SQLite only."""
    return str(tmp_path / "crawl.db")


@pytest.fixture
def fr(db_url, tls_pki):
    """The module's served frontier, over mutual TLS with a token."""
    service = FrontierService(db_url, CrawlSettings(budget=86_400.0, min_delay_s=0.0, seed=0))
    server = serve_grpc(service, "127.0.0.1:0", token=TOKEN, tls=tls_pki.server_tls())
    channel = tls_pki.channel(f"127.0.0.1:{server.port}", token=TOKEN)
    try:
        yield SimpleNamespace(
            service=service,
            stub=pb_grpc.URLFrontierStub(channel),
            address=f"127.0.0.1:{server.port}",
        )
    finally:
        channel.close()
        server.stop(None).wait()
        service.close()
