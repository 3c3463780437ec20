"""ServerTLS.reload in one process: a new client CA takes effect on both ports at the next
handshake; a broken file is refused and the files in use stay."""

from __future__ import annotations

import shutil
import ssl
import threading
import time

import grpc
import httpx
import pytest
import uvicorn
from fastapi import FastAPI

from freshcrawl.errors import TLSFileError
from freshcrawl.frontier import CrawlSettings
from freshcrawl.service import FrontierService
from freshcrawl.service.grpc_server import serve_grpc
from freshcrawl.service.proto import urlfrontier_pb2 as pb
from freshcrawl.service.proto import urlfrontier_pb2_grpc as pb_grpc
from freshcrawl.service.tls import ClientTLS, ServerTLS


def _https_server(tls: ServerTLS):
    """uvicorn on 127.0.0.1 with ``tls`` set up as serve does: (server, thread, port)."""
    app = FastAPI()

    @app.get("/ping")
    def ping() -> dict:
        return {"ok": True}

    config = uvicorn.Config(
        app,
        host="127.0.0.1",
        port=0,
        log_level="warning",
        lifespan="off",
        ssl_certfile=tls.cert_file,
        ssl_keyfile=tls.key_file,
        ssl_ca_certs=tls.client_ca_file,
        ssl_cert_reqs=ssl.CERT_REQUIRED,
    )
    config.load()
    tls.follow(config.ssl)
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        assert time.monotonic() < deadline and thread.is_alive(), "the test server did not start"
        time.sleep(0.01)
    return server, thread, server.servers[0].sockets[0].getsockname()[1]


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
    http, thread, port = _https_server(tls)
    address, url = f"127.0.0.1:{grpc_server.port}", f"https://127.0.0.1:{port}/ping"
    fetcher, intruder = pki.client_tls(), pki.client_tls(other=True)
    try:
        assert (_grpc_ok(address, fetcher), _https_ok(url, fetcher)) == (True, True)
        assert (_grpc_ok(address, intruder), _https_ok(url, intruder)) == (False, False)
        shutil.copy(pki.other_ca_file, client_ca)  # the other CA's clients only, from now on
        assert tls.reload() == 1
        assert (_grpc_ok(address, fetcher), _https_ok(url, fetcher)) == (False, False)
        assert (_grpc_ok(address, intruder), _https_ok(url, intruder)) == (True, True)
        client_ca.write_text("not a certificate\n")  # broken: refused, the files in use stay
        with pytest.raises(TLSFileError, match=f"client CA {client_ca}: no PEM certificate in it"):
            tls.reload()
        assert tls.generation == 1
        assert (_grpc_ok(address, intruder), _https_ok(url, intruder)) == (True, True)
    finally:
        http.should_exit = True
        thread.join(timeout=20)
        grpc_server.stop(None).wait()
        service.close()
