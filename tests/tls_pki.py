"""Certificates made at test time (trustme) for the TLS tests, and TLS channels to a frontier.

``make_pki(directory)`` writes a small cluster's files: a CA, the server's certificate (for
127.0.0.1, ::1 and localhost) and a fetcher's client certificate signed by it, and a client
certificate signed by another CA. :class:`PKI` builds the server's :class:`ServerTLS`, a client's
:class:`ClientTLS` and gRPC channels. The fixture ``tls_pki`` (tests/integration/conftest.py) gives
one per test session; any gRPC test can run over mutual TLS with::

    server = serve_grpc(service, "127.0.0.1:0", tls=tls_pki.server_tls())
    channel = tls_pki.channel(f"127.0.0.1:{server.port}")

and :func:`https_server` serves an ASGI app over TLS in a thread, set up as ``freshcrawl serve``
sets up its HTTP port.
"""

from __future__ import annotations

import ssl
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import grpc
import trustme
import uvicorn

from freshcrawl.service.tls import ClientTLS, ServerTLS

__all__ = ["PKI", "https_server", "make_pki"]


@dataclass(frozen=True)
class PKI:
    """Files of a test cluster; ``ca`` is the trustme CA (to issue more certificates)."""

    directory: Path
    ca: trustme.CA
    ca_file: Path
    server_cert: Path
    server_key: Path
    client_cert: Path
    client_key: Path
    other_ca_file: Path
    other_client_cert: Path  # signed by the other CA
    other_client_key: Path

    def server_tls(self, *, client_auth: bool = True) -> ServerTLS:
        """The server's TLS: mutual (client certificates of ``ca``) unless ``client_auth=False``."""
        return ServerTLS(self.server_cert, self.server_key, self.ca_file if client_auth else None)

    def client_tls(self, *, cert: bool = True, other: bool = False) -> ClientTLS:
        """A client trusting ``ca``, presenting the fetcher's certificate (the other CA's, none)."""
        if not cert:
            return ClientTLS(self.ca_file)
        if other:
            return ClientTLS(self.ca_file, self.other_client_cert, self.other_client_key)
        return ClientTLS(self.ca_file, self.client_cert, self.client_key)

    def channel(self, address: str, *, cert: bool = True, token: str | None = None) -> grpc.Channel:
        """A TLS channel to ``address`` (client certificate unless ``cert=False``; a Bearer token on
        every call when ``token`` is given)."""
        creds = self.client_tls(cert=cert).grpc_credentials()
        if token is not None:
            creds = grpc.composite_channel_credentials(
                creds, grpc.access_token_call_credentials(token)
            )
        return grpc.secure_channel(address, creds)

    def issue(self, name: str, *identities: str, ca: trustme.CA | None = None) -> tuple[Path, Path]:
        """A new certificate and key (files ``name.pem``, ``name.key``) for ``identities``."""
        leaf = (ca or self.ca).issue_cert(*identities)
        cert, key = self.directory / f"{name}.pem", self.directory / f"{name}.key"
        leaf.cert_chain_pems[0].write_to_path(str(cert))
        leaf.private_key_pem.write_to_path(str(key))
        return cert, key


def make_pki(directory: Path) -> PKI:
    """Write a CA, server and client certificates, and another CA's client one, in ``directory``."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    ca, other = trustme.CA(), trustme.CA()
    ca.cert_pem.write_to_path(str(directory / "ca.pem"))
    other.cert_pem.write_to_path(str(directory / "other-ca.pem"))
    pki = PKI(
        directory,
        ca,
        directory / "ca.pem",
        directory / "server.pem",
        directory / "server.key",
        directory / "fetcher.pem",
        directory / "fetcher.key",
        directory / "other-ca.pem",
        directory / "intruder.pem",
        directory / "intruder.key",
    )
    pki.issue("server", "127.0.0.1", "::1", "localhost")
    pki.issue("fetcher", "fetcher-1.cluster.test")
    pki.issue("intruder", "fetcher-1.cluster.test", ca=other)
    return pki


@contextmanager
def https_server(app, tls: ServerTLS) -> Iterator[int]:
    """Serve ``app`` with uvicorn over ``tls`` on 127.0.0.1 in a thread, as serve does: its port."""
    config = uvicorn.Config(
        app,
        host="127.0.0.1",
        port=0,
        log_level="warning",
        lifespan="off",
        ssl_certfile=tls.cert_file,
        ssl_keyfile=tls.key_file,
        ssl_ca_certs=tls.client_ca_file,
        ssl_cert_reqs=ssl.CERT_REQUIRED if tls.client_auth else ssl.CERT_NONE,
    )
    config.load()
    tls.follow(config.ssl)
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, name="https-test", daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the test server did not start")
        time.sleep(0.01)
    try:
        yield server.servers[0].sockets[0].getsockname()[1]
    finally:
        server.should_exit = True
        thread.join(timeout=20)
