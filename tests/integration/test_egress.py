"""The egress policy: what ``crawl add`` refuses, and what the fetcher never connects to.

The fetcher tests run real HTTP servers on loopback. The redirect test runs a whole crawl inside a
network namespace that has loopback only (``unshare --net``), so that nothing can leave the machine
whatever the code does; an audit hook on ``socket.connect`` proves that no connection to the
private or metadata addresses was even attempted. It needs root and ``unshare`` (util-linux), and
fails when they are missing.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import aiohttp
import pytest
from aiohttp import web
from aiohttp.abc import AbstractResolver
from click.testing import CliRunner

from freshcrawl.cli import main
from freshcrawl.crawler import ErrorKind, Fetcher, FetchRequest, Outcome
from freshcrawl.crawler.egress import (
    EgressBlocked,
    EgressResolver,
    check_address,
    egress_socket_factory,
)
from freshcrawl.errors import EgressRefused
from freshcrawl.frontier.limits import check_url

ROOT = Path(__file__).resolve().parents[2]


# ----------------------------------------------------------------------------------- at add time
REFUSED = [
    "http://169.254.169.254/latest/meta-data/",
    "http://10.0.0.1/",
    "http://172.16.3.4/",
    "http://192.168.1.1/",
    "http://[fd00::1]/",
    "http://[fd00:ec2::254]/",
    "http://[fe80::1]/",
    "http://100.100.100.200/",
    "http://metadata.google.internal/computeMetadata/v1/",
    "http://metadata/",
    "http://instance-data.ec2.internal/",
    "http://0.0.0.0/",
    "http://[::]/",
    "http://224.0.0.251/",
    "http://[::ffff:10.0.0.1]/",
]


@pytest.mark.parametrize("url", REFUSED)
def test_private_and_metadata_hosts_refused(url):
    with pytest.raises(EgressRefused, match="egress policy"):
        check_url(url)
    assert check_url(url, allow_private=True)


@pytest.mark.parametrize(
    "url", ["http://127.0.0.2:8080/a", "http://localhost/", "http://[::1]/", "http://a.test/"]
)
def test_loopback_and_names_accepted(url):
    assert check_url(url) == url.replace(":80/", "/")


def test_crawl_add_names_each_refused_line(tmp_path):
    urls = tmp_path / "urls.txt"
    urls.write_text(
        "http://127.0.0.2/ok\n"
        "http://169.254.169.254/latest/meta-data/\n"
        "http://10.1.2.3/\n"
        "http://metadata.google.internal/\n"
        "http://user:pw@example.com/\n"
    )
    db = str(tmp_path / "crawl.db")
    result = CliRunner().invoke(main, ["crawl", "add", "--db", db, str(urls)])
    assert result.exit_code == 1, result.output
    for line in (2, 3, 4, 5):
        assert f"urls.txt:{line}:" in result.output
    assert "urls.txt:1:" not in result.output
    assert "169.254.169.254 is a metadata address" in result.output
    assert "pw" not in result.output  # the password is not echoed
    urls.write_text("http://127.0.0.2/ok\nhttp://10.1.2.3/\n")
    result = CliRunner().invoke(main, ["crawl", "add", "--db", db, "--allow-private", str(urls)])
    assert result.exit_code == 0, result.output
    assert "added 2 page(s)" in result.output


# ----------------------------------------------------------------------------------- at connect time
def test_resolved_addresses_are_checked():
    with pytest.raises(EgressBlocked):
        check_address("10.0.0.1", loopback_ok=True)
    with pytest.raises(EgressBlocked):
        check_address("127.0.0.1", loopback_ok=False)
    check_address("127.0.0.1", loopback_ok=True)
    check_address("10.0.0.1", loopback_ok=False, allow_private=True)
    factory = egress_socket_factory()
    info = (socket.AF_INET, socket.SOCK_STREAM, 6, "", ("169.254.169.254", 80))
    with pytest.raises(EgressBlocked):
        factory(info)


class _Rebinding(AbstractResolver):
    """A resolver that answers every name with the address of the test server (a rebinding DNS)."""

    def __init__(self, address: str) -> None:
        self.address = address
        self.asked: list[str] = []

    async def resolve(self, host, port=0, family=socket.AF_INET):
        self.asked.append(host)
        return [
            {
                "hostname": host,
                "host": self.address,
                "port": port,
                "family": socket.AF_INET,
                "proto": 0,
                "flags": socket.AI_NUMERICHOST,
            }
        ]

    async def close(self) -> None:
        pass


async def _serve(handler) -> tuple[web.AppRunner, int, list[str]]:
    hits: list[str] = []

    async def record(request: web.Request) -> web.StreamResponse:
        hits.append(request.path)
        return await handler(request)

    app = web.Application()
    app.router.add_get("/{tail:.*}", record)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    return runner, site._server.sockets[0].getsockname()[1], hits


def test_a_name_resolving_to_loopback_is_not_reached():
    """DNS rebinding: a name of another host answered with a loopback address gets no connection."""

    async def run():
        runner, port, hits = await _serve(lambda r: web.Response(text="secret"))
        try:
            rebinding = _Rebinding("127.0.0.1")
            connector = aiohttp.TCPConnector(
                resolver=EgressResolver(inner=rebinding), socket_factory=egress_socket_factory()
            )
            async with (
                aiohttp.ClientSession(connector=connector) as session,
                Fetcher(session=session, total_timeout_s=5) as f,
            ):
                out = await f.fetch(FetchRequest(f"http://rebind.test:{port}/x"))
            return out, hits, rebinding.asked
        finally:
            await runner.cleanup()

    out, hits, asked = asyncio.run(run())
    assert asked == ["rebind.test"]
    assert (out.outcome, out.error, out.why) == (Outcome.NO_INFO, ErrorKind.PAGE, "egress-blocked")
    assert hits == []


def test_redirects_on_loopback_followed_and_off_it_refused():
    """The test web's own redirects (loopback to loopback) are followed; to a private address, not."""

    async def run():
        async def handler(request: web.Request) -> web.StreamResponse:
            if request.path == "/local":
                raise web.HTTPFound("/final")
            if request.path == "/private":
                raise web.HTTPFound("http://192.168.0.1/")
            if request.path == "/credentials":
                raise web.HTTPFound(f"http://user:pw@127.0.0.1:{request.url.port}/final")
            return web.Response(text="ok")

        runner, port, hits = await _serve(handler)
        try:
            async with Fetcher(total_timeout_s=5) as f:
                outs = [
                    await f.fetch(FetchRequest(f"http://127.0.0.1:{port}/{p}"))
                    for p in ("local", "private", "credentials")
                ]
            return outs, hits
        finally:
            await runner.cleanup()

    (local, private, creds), hits = asyncio.run(run())
    assert (local.outcome, local.final_url is not None) == (Outcome.FIRST, True)
    assert (private.why, private.status, private.final_url) == (
        "egress-blocked",
        302,
        "http://192.168.0.1/",
    )
    assert creds.why == "bad-redirect"
    assert hits == ["/local", "/final", "/private", "/credentials"]


def _namespace_crawl(tmp_path: Path, *extra: str) -> dict:
    assert os.geteuid() == 0, "the network-namespace test needs root (unshare --net)"
    assert shutil.which("unshare") and shutil.which("ip"), (
        "the network-namespace test needs unshare and ip"
    )
    probe = subprocess.run(
        ["unshare", "--net", "true"], capture_output=True, text=True, timeout=30, check=False
    )
    assert probe.returncode == 0, f"cannot create a network namespace: {probe.stderr}"
    script = Path(__file__).with_name("egress_netns_crawl.py")
    cmd = f"ip link set lo up && exec {sys.executable} {script} {tmp_path} {' '.join(extra)}"
    env = dict(
        os.environ, PYTHONPATH=str(ROOT / "src") + os.pathsep + os.environ.get("PYTHONPATH", "")
    )
    done = subprocess.run(
        ["unshare", "--net", "sh", "-c", cmd],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_redirects_to_private_addresses_blocked_without_a_connection(tmp_path):
    """In a namespace with loopback only: every redirect to a private or metadata address is recorded
    as blocked by the egress policy, and no connection outside loopback is attempted."""
    got = _namespace_crawl(tmp_path)
    assert set(got["why"]) == {"p10", "pmeta", "pname", "pv6"}, got
    for name, whys in got["why"].items():
        assert whys and set(whys) == {"egress-blocked"}, (name, whys)
    assert got["attempts"] == []


def test_allow_private_lifts_the_policy(tmp_path):
    """The control: with --allow-private the redirect is followed, and the attempt is seen (it fails:
    the namespace has no route), so the test above would have noticed one."""
    (tmp_path / "allowed").mkdir()
    got = _namespace_crawl(tmp_path / "allowed", "--allow-private")
    assert got["attempts"], got
    assert all("egress-blocked" not in whys for whys in got["why"].values()), got
