"""The URLFrontier project's service tests (test_urlfrontier_upstream.py) again, over mutual TLS.

``freshcrawl serve`` runs with a server certificate and ``--client-ca`` (a client certificate signed
by the test CA is required on both ports), and the client stubs generated from the API 2.6
definition connect through a TLS channel that presents the client certificate, as a StormCrawler
topology on another machine does: every test of that module runs unchanged. SQLite only (the module
itself covers PostgreSQL on plaintext).
"""

from __future__ import annotations

from types import SimpleNamespace

import grpc
import pytest

from tests.integration import test_urlfrontier_upstream as plaintext
from tests.integration.urlfrontier_v2_6 import new_database, start_serve, stop_serve

globals().update({name: test for name, test in vars(plaintext).items() if name.startswith("test_")})
api = plaintext.api
fr = plaintext.fr


@pytest.fixture(scope="module")
def served(api, tmp_path_factory, tls_pki_module):
    with new_database("sqlite", tmp_path_factory.mktemp("upstream-tls")) as db:
        proc, address, base = start_serve(db, tls=tls_pki_module)
        channel = grpc.secure_channel(address, tls_pki_module.client_tls().grpc_credentials())
        try:
            grpc.channel_ready_future(channel).result(timeout=30)
            yield SimpleNamespace(
                stub=api.pb_grpc.URLFrontierStub(channel), pb=api.pb, base=base, address=address
            )
        finally:
            channel.close()
            stop_serve(proc)


@pytest.fixture(scope="module")
def tls_pki_module(tmp_path_factory):
    """A test CA with a server and a client certificate (tests/tls_pki.py), for the module."""
    from tests.tls_pki import make_pki

    return make_pki(tmp_path_factory.mktemp("pki"))


def test_a_plaintext_client_and_one_without_a_certificate_are_refused(served, tls_pki_module):
    pb = served.pb
    plain = grpc.insecure_channel(served.address)
    no_cert = grpc.secure_channel(
        served.address, tls_pki_module.client_tls(cert=False).grpc_credentials()
    )
    try:
        for channel in (plain, no_cert):
            stub = served.stub.__class__(channel)
            with pytest.raises(grpc.RpcError) as err:
                stub.ListCrawls(pb.Local(), timeout=5)
            assert err.value.code() == grpc.StatusCode.UNAVAILABLE
    finally:
        plain.close()
        no_cert.close()
