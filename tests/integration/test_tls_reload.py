"""ServerTLS.reload in one process: a new client CA takes effect on both ports at the next
handshake; a broken file is refused and the files in use stay."""

from __future__ import annotations

import shutil

import grpc
import httpx
import pytest
from fastapi import FastAPI

from freshcrawl.errors import TLSFileError
from freshcrawl.frontier import CrawlSettings
from freshcrawl.service import FrontierService
from freshcrawl.service.grpc_server import serve_grpc
from freshcrawl.service.proto import urlfrontier_pb2 as pb
from freshcrawl.service.proto import urlfrontier_pb2_grpc as pb_grpc
from freshcrawl.service.tls import ClientTLS, ServerTLS
from tests.tls_pki import https_server


def _grpc_ok(address: str, client: ClientTLS) -> bool:
    with grpc.secure_channel(address, client.grpc_credentials()) as channel:
        try:
            pb_grpc.URLFrontierStub(channel).ListCrawls(pb.Local(), timeout=10)
        except grpc.RpcError as err:
            assert err.code() is grpc.StatusCode.UNAVAILABLE
            return False
    return True


def _https_ok(url: str, client: ClientTLS) -> bool:
    try:
        return httpx.get(url, verify=client.ssl_context(), timeout=10).status_code == 200
    except httpx.TransportError:
        return False


def test_a_new_client_ca_takes_effect_at_the_next_handshake_on_both_ports(tmp_path, tls_pki):
    pki = tls_pki
    client_ca = tmp_path / "client-ca.pem"
    shutil.copy(pki.ca_file, client_ca)
    tls = ServerTLS(pki.server_cert, pki.server_key, client_ca)
    service = FrontierService(str(tmp_path / "c.db"), CrawlSettings(budget=100.0))
    grpc_server = serve_grpc(service, "127.0.0.1:0", tls=tls)
    app = FastAPI()

    @app.get("/ping")
    def ping() -> dict:
        return {"ok": True}

    address = f"127.0.0.1:{grpc_server.port}"
    fetcher, intruder = pki.client_tls(), pki.client_tls(other=True)
    try:
        with https_server(app, tls) as port:
            url = f"https://127.0.0.1:{port}/ping"
            assert (_grpc_ok(address, fetcher), _https_ok(url, fetcher)) == (True, True)
            assert (_grpc_ok(address, intruder), _https_ok(url, intruder)) == (False, False)
            shutil.copy(pki.other_ca_file, client_ca)  # the other CA's clients only, from now on
            assert tls.reload() == 1
            assert (_grpc_ok(address, fetcher), _https_ok(url, fetcher)) == (False, False)
            assert (_grpc_ok(address, intruder), _https_ok(url, intruder)) == (True, True)
            client_ca.write_text("not a certificate\n")  # broken: refused, the files in use stay
            with pytest.raises(
                TLSFileError, match=f"client CA {client_ca}: no PEM certificate in it"
            ):
                tls.reload()
            assert tls.generation == 1
            assert (_grpc_ok(address, intruder), _https_ok(url, intruder)) == (True, True)
    finally:
        grpc_server.stop(None).wait()
        service.close()
