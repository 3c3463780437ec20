"""``freshcrawl serve`` over TLS and mutual TLS, and fetchers that connect to it (``grpcs://``).

Certificates are made at test time (tests/tls_pki.py, trustme). Real servers on loopback: the
``serve`` process on both ports, gRPC and REST clients with the right CA and client certificate,
without one, with one from another CA, and over plaintext; certificates reloaded on SIGHUP while a
fetcher keeps crawling the test web through the served frontier, politeness audited.
"""

from __future__ import annotations

import collections
import os
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import time

import grpc
import httpx
import pytest

from freshcrawl.frontier import CrawlSettings
from freshcrawl.service import FrontierService
from freshcrawl.service.grpc_client import FrontierConnectError, RemoteFrontier
from freshcrawl.service.grpc_server import serve_grpc
from freshcrawl.service.proto import urlfrontier_pb2 as pb
from freshcrawl.service.proto import urlfrontier_pb2_grpc as pb_grpc
from freshcrawl.service.rest import create_app
from freshcrawl.service.tls import ClientTLS
from freshcrawl.testing import HostSpec, TestWeb, make_pages
from tests.tls_pki import https_server

URLS = {"urls": [{"url": "http://a.test/"}]}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _serve(db: str, pki, *args: str, token: str | None = None, client_ca: bool = True) -> tuple:
    """A ``serve`` process with TLS on both ports; returns (process, http port, grpc port)."""
    http, grpc_port = _free_port(), _free_port()
    tls = ["--tls-cert", str(pki.server_cert), "--tls-key", str(pki.server_key)]
    if client_ca:
        tls += ["--client-ca", str(pki.ca_file)]
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "freshcrawl",
            "serve",
            "--db",
            db,
            "--budget",
            "10000/day",
            "--http",
            f"127.0.0.1:{http}",
            "--grpc",
            f"127.0.0.1:{grpc_port}",
            *tls,
            *args,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "FRESHCRAWL_TOKEN": token or ""},
    )
    return proc, http, grpc_port


def _wait_up(proc, url: str, verify: ssl.SSLContext, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"serve exited with {proc.returncode}: {proc.stderr.read()}")
        try:
            if httpx.get(url, verify=verify, timeout=2).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.1)
    raise AssertionError(f"serve did not answer {url} within {timeout} s")


def _stop(proc) -> str:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
    try:
        _, err = proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        _, err = proc.communicate()
        raise AssertionError(f"serve did not stop: {err}") from None
    assert proc.returncode == 0, err
    return err


def _served_cert(port: int, client: ClientTLS, alpn: str) -> bytes:
    """The certificate (DER) a TLS port hands a new connection (gRPC: ALPN h2)."""
    ctx = client.ssl_context()
    ctx.set_alpn_protocols([alpn])
    with (
        socket.create_connection(("127.0.0.1", port), timeout=10) as raw,
        ctx.wrap_socket(raw, server_hostname="127.0.0.1") as conn,
    ):
        return conn.getpeercert(binary_form=True)


def _grpc_error(channel: grpc.Channel) -> grpc.RpcError:
    with pytest.raises(grpc.RpcError) as info:
        pb_grpc.URLFrontierStub(channel).GetStats(pb.QueueWithinCrawlParams(), timeout=10)
    return info.value


# -------------------------------------------------------------------------------------------- tests
def test_mutual_tls_on_both_ports_and_what_fails(tmp_path, tls_pki):
    """Client certificate signed by the client CA: writes and reads on REST and gRPC. No client
    certificate, one of another CA, plaintext, or a server certificate the client does not trust:
    the connection fails, and the fetcher's side says why in one line."""
    pki = tls_pki
    proc, http, port = _serve(str(tmp_path / "c.db"), pki)
    good = pki.client_tls().ssl_context()
    base, address = f"https://127.0.0.1:{http}", f"127.0.0.1:{port}"
    try:
        _wait_up(proc, base + "/status", good)
        # REST: the client certificate authorizes writes (no token given to this server)
        r = httpx.post(base + "/urls", json=URLS, verify=good, timeout=5)
        assert r.status_code == 200 and r.json()["added"] == 1
        assert httpx.get(base + "/metrics", verify=good, timeout=5).text.count("freshcrawl_") > 5
        assert "<html" in httpx.get(base + "/", verify=good, timeout=5).text.lower()
        for verify in (
            pki.client_tls(cert=False).ssl_context(),
            pki.client_tls(other=True).ssl_context(),
        ):
            with pytest.raises(httpx.TransportError):  # the handshake fails: no answer at all
                httpx.post(base + "/urls", json=URLS, verify=verify, timeout=5)
        with pytest.raises(
            httpx.RemoteProtocolError, match="disconnected without sending a response"
        ):
            httpx.get(f"http://127.0.0.1:{http}/status", timeout=5)  # plaintext to a TLS port
        with pytest.raises(httpx.ConnectError, match="CERTIFICATE_VERIFY_FAILED"):
            httpx.get(base + "/status", verify=ssl.create_default_context(), timeout=5)

        # gRPC: the same frontier, the same rules
        with pki.channel(address) as channel:
            stats = pb_grpc.URLFrontierStub(channel).GetStats(
                pb.QueueWithinCrawlParams(), timeout=10
            )
            assert stats.size == 1
        cases = {
            "no client certificate": (
                pki.client_tls(cert=False),
                "it requires a client certificate (--tls-cert and --tls-key)",
            ),
            "another CA's certificate": (
                pki.client_tls(other=True),
                f"it refuses the client certificate {pki.other_client_cert}",
            ),
            "server not trusted": (
                ClientTLS(pki.other_ca_file, pki.client_cert, pki.client_key),
                f"its certificate is not trusted by the CA {pki.other_ca_file}",
            ),
        }
        for name, (client, message) in cases.items():
            with grpc.secure_channel(address, client.grpc_credentials()) as channel:
                assert _grpc_error(channel).code() is grpc.StatusCode.UNAVAILABLE, name
            with (
                RemoteFrontier(f"grpcs://{address}", tls=client, timeout_s=5) as frontier,
                pytest.raises(FrontierConnectError) as info,
            ):
                frontier.check()
            assert message in str(info.value) and "\n" not in str(info.value), (name, info.value)
        with grpc.insecure_channel(address) as channel:
            assert _grpc_error(channel).code() is grpc.StatusCode.UNAVAILABLE
        with (
            RemoteFrontier(f"grpc://{address}", timeout_s=5) as frontier,
            pytest.raises(FrontierConnectError, match="if it is served with TLS, use grpcs://"),
        ):
            frontier.check()
        with RemoteFrontier(f"grpcs://{address}", tls=pki.client_tls(), timeout_s=5) as frontier:
            frontier.check()  # passes
    finally:
        err = _stop(proc)
    assert f"https://127.0.0.1:{http}/" in err and "gRPC (TLS)" in err and "(mutual TLS)" in err


def test_tls_with_a_token_keeps_todays_authorization(tmp_path, tls_pki):
    """TLS without client certificates (the REST app and gRPC server built as serve builds them,
    in this process): the token authorizes writes as on plaintext, reads are private with
    private reads, every gRPC call needs the token."""
    pki = tls_pki
    tls = pki.server_tls(client_auth=False)
    service = FrontierService(str(tmp_path / "c.db"), CrawlSettings(budget=10_000.0))
    app = create_app(service, token="s3cret", public_reads=False)
    grpc_server = serve_grpc(service, "127.0.0.1:0", token="s3cret", tls=tls)
    ctx = pki.client_tls(cert=False).ssl_context()
    auth = {"Authorization": "Bearer s3cret"}
    address = f"127.0.0.1:{grpc_server.port}"
    try:
        with https_server(app, tls) as http, httpx.Client(verify=ctx, timeout=5) as client:
            base = f"https://127.0.0.1:{http}"
            assert client.get(base + "/").status_code == 200  # the dashboard page is public
            assert client.get(base + "/status").status_code == 401
            assert client.post(base + "/urls", json=URLS).status_code == 401
            assert client.post(base + "/urls", json=URLS, headers=auth).json()["added"] == 1
            assert client.get(base + "/metrics", headers=auth).status_code == 200
        with pki.channel(address, cert=False) as channel:
            assert _grpc_error(channel).code() is grpc.StatusCode.UNAUTHENTICATED
        with pki.channel(address, cert=False, token="s3cret") as channel:
            stub = pb_grpc.URLFrontierStub(channel)
            assert stub.GetStats(pb.QueueWithinCrawlParams(), timeout=10).size == 1
    finally:
        grpc_server.stop(None).wait()
        service.close()


def _cli(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "freshcrawl", *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={**os.environ, "FRESHCRAWL_TOKEN": "", **(env or {})},
    )


def _invoke(*args: str, env: dict | None = None):
    """The CLI in this process (the refusals come before any server starts)."""
    from click.testing import CliRunner

    from freshcrawl.cli import main

    return CliRunner().invoke(
        main, list(args), env={"FRESHCRAWL_TOKEN": "", **(env or {})}, catch_exceptions=False
    )


def test_serve_and_fetcher_refuse_incomplete_or_broken_tls_settings_in_one_line(tmp_path, tls_pki):
    pki, db = tls_pki, str(tmp_path / "c.db")
    tls = ["--tls-cert", str(pki.server_cert), "--tls-key", str(pki.server_key)]
    cases = [
        (
            ["--http", "0.0.0.0:0", "--no-grpc"],
            {},
            (
                "is not a loopback address: serving other machines needs TLS "
                "(--tls-cert, --tls-key) and a token"
            ),
        ),
        (
            ["--http", "0.0.0.0:0", "--no-grpc"],
            {"FRESHCRAWL_TOKEN": "t"},
            "serving other machines needs TLS",
        ),
        (
            ["--http", "0.0.0.0:0", "--no-grpc", *tls],
            {},
            "and a token (--token-file or FRESHCRAWL_TOKEN) or client",
        ),
        (
            ["--no-grpc", "--tls-cert", str(pki.server_cert)],
            {},
            "--tls-cert and --tls-key go together",
        ),
        (["--no-grpc", "--client-ca", str(pki.ca_file)], {}, "--client-ca needs TLS"),
        (
            ["--no-grpc", "--tls-cert", str(pki.server_key), "--tls-key", str(pki.server_key)],
            {},
            f"server certificate {pki.server_key}: no PEM certificate in it",
        ),
        (
            ["--no-grpc", "--tls-cert", str(pki.server_cert), "--tls-key", str(pki.client_key)],
            {},
            f"server key {pki.client_key} does not belong to the certificate {pki.server_cert}",
        ),
        (
            ["--no-grpc", *tls, "--client-ca", str(tmp_path / "nope.pem")],
            {},
            f"client CA {tmp_path / 'nope.pem'}: cannot read it",
        ),
    ]
    for args, env, message in cases:
        r = _invoke("serve", "--db", db, "--budget", "100/day", *args, env=env)
        assert r.exit_code == 2 and message in r.output, (args, r.output)
        assert len([line for line in r.output.splitlines() if line.startswith("Error")]) == 1
    assert not os.path.exists(db)  # refused before touching the database
    fetcher = [
        (
            ["--frontier", "grpc://127.0.0.1:1", "--tls-ca", str(pki.ca_file)],
            "--tls-ca goes with a TLS frontier",
        ),
        (
            ["--frontier", "grpcs://127.0.0.1:1", "--tls-cert", str(pki.client_cert)],
            "--tls-cert and --tls-key go",
        ),
        (
            ["--frontier", "grpcs://127.0.0.1:1", "--tls-ca", str(pki.client_key)],
            f"CA {pki.client_key}: no PEM certificate in it",
        ),
    ]
    for args, message in fetcher:
        r = _invoke("crawl", "run", *args, "--for", "1s")
        assert r.exit_code == 2 and message in r.output, (args, r.output)


def test_fetcher_crawls_through_tls_serve_while_certificates_are_reloaded(tmp_path, tls_pki):
    """``crawl run --frontier grpcs://`` with a client certificate crawls the test web through a
    mutual-TLS ``serve``; halfway, the server's certificate is renewed and SIGHUP sent: new
    connections on both ports get the new certificate, the open crawl carries on, politeness holds,
    every request is reported once. A fetcher with another CA's certificate stops at once, in one
    line."""
    pki = tls_pki
    cert, key = tmp_path / "server.pem", tmp_path / "server.key"
    shutil.copy(pki.server_cert, cert)
    shutil.copy(pki.server_key, key)
    specs = make_pages(12, 3, (0.05, 0.5), seed=3)
    hosts = [HostSpec(), HostSpec(crawl_delay=0.5), HostSpec()]
    http, port = _free_port(), _free_port()
    db = str(tmp_path / "c.db")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "freshcrawl",
            "serve",
            "--db",
            db,
            "--budget",
            "4/s",
            "--min-delay",
            "0.2s",
            "--replan-every",
            "2s",
            "--http",
            f"127.0.0.1:{http}",
            "--grpc",
            f"127.0.0.1:{port}",
            "--tls-cert",
            str(cert),
            "--tls-key",
            str(key),
            "--client-ca",
            str(pki.ca_file),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "FRESHCRAWL_TOKEN": ""},
    )
    client = pki.client_tls()
    tls_args = [
        "--tls-ca",
        str(pki.ca_file),
        "--tls-cert",
        str(pki.client_cert),
        "--tls-key",
        str(pki.client_key),
    ]
    fetcher = None
    try:
        with TestWeb(specs, hosts=hosts, seed=3) as web:
            _wait_up(proc, f"https://127.0.0.1:{http}/status", client.ssl_context())
            with pki.channel(f"127.0.0.1:{port}") as channel:
                items = [
                    pb.URLItem(discovered=pb.DiscoveredURLItem(info=pb.URLInfo(url=u)))
                    for u in web.urls()
                ]
                acks = list(pb_grpc.URLFrontierStub(channel).PutURLs(iter(items), timeout=30))
            assert [a.status for a in acks] == [pb.AckMessage.OK] * len(items)
            fetcher = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "freshcrawl",
                    "crawl",
                    "run",
                    "--frontier",
                    f"grpcs://127.0.0.1:{port}",
                    *tls_args,
                    "--for",
                    "10s",
                    "--timeout",
                    "5s",
                ],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            intruder = _cli(  # while the fetcher starts
                "crawl",
                "run",
                "--frontier",
                f"grpcs://127.0.0.1:{port}",
                "--for",
                "5s",
                "--tls-ca",
                str(pki.ca_file),
                "--tls-cert",
                str(pki.other_client_cert),
                "--tls-key",
                str(pki.other_client_key),
            )
            assert intruder.returncode == 1
            assert intruder.stderr.strip().splitlines()[-1] == (
                f"Error: frontier 127.0.0.1:{port} closed the connection after the TLS handshake: "
                f"it refuses the client certificate {pki.other_client_cert} (not signed by its "
                "client CA, or expired)"
            )
            before = (_served_cert(http, client, "http/1.1"), _served_cert(port, client, "h2"))
            deadline = time.monotonic() + 30
            while (
                not [r for r in web.requests() if r.page is not None]
                and time.monotonic() < deadline
            ):
                time.sleep(0.2)
            n_before = len(web.requests())
            assert n_before > 0, "the fetcher fetched nothing before the reload"
            pki.issue("renewed", "127.0.0.1", "localhost")  # the same CA, a new certificate and key
            shutil.copy(pki.directory / "renewed.pem", cert)
            shutil.copy(pki.directory / "renewed.key", key)
            proc.send_signal(signal.SIGHUP)
            deadline = time.monotonic() + 10
            while (
                _served_cert(http, client, "http/1.1") == before[0] and time.monotonic() < deadline
            ):
                time.sleep(0.1)
            after = (_served_cert(http, client, "http/1.1"), _served_cert(port, client, "h2"))
            renewed = ssl.PEM_cert_to_DER_cert((pki.directory / "renewed.pem").read_text())
            assert after == (renewed, renewed) and before[0] != renewed and before[1] != renewed
            _, err = fetcher.communicate(timeout=60)
            assert fetcher.returncode == 0, err
            requests = web.requests()
            violations = web.politeness_violations(0.2)
        assert violations == [], violations[:5]
        assert len(requests) > n_before  # the crawl went on after the reload
    finally:
        if fetcher is not None and fetcher.poll() is None:
            fetcher.kill()
            fetcher.communicate()
        err = _stop(proc)
    assert "TLS certificate, key and client CA reloaded (1)" in err
    from freshcrawl.store import open_store

    store = open_store(db, create=False)
    try:
        url_of = {r["id"]: r["url"] for r in store.list_urls(size=100)}
        observed = collections.Counter(url_of[o["page_id"]] for o in store.observation_log())
    finally:
        store.close()
    fetched = collections.Counter(
        f"http://{r.host}:{r.port}{r.path}" for r in requests if r.page is not None
    )
    assert fetched == observed and len(fetched) == len(
        specs
    )  # every request reported once, every page visited
