"""``freshcrawl serve``: one writer per crawl database, REST and gRPC in one process, clean stops."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time

import httpx
import pytest

from freshcrawl.errors import DatabaseInUseError
from freshcrawl.store import acquire_writer_lock


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _serve(db: str, *args: str, env: dict | None = None) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "freshcrawl", "serve", "--db", db, "--budget", "10000/day", *args],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={**os.environ, **(env or {})},
    )


def _wait_up(proc: subprocess.Popen, url: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"serve exited with {proc.returncode}: {proc.stderr.read()}")
        try:
            if httpx.get(url, timeout=1).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.1)
    raise AssertionError(f"serve did not answer {url} within {timeout} s")


def _stop(proc: subprocess.Popen, sig: int = signal.SIGTERM) -> tuple[int, str]:
    if proc.poll() is None:
        proc.send_signal(sig)
    try:
        _, err = proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        _, err = proc.communicate()
        raise AssertionError(f"serve did not stop on signal {sig}: {err}") from None
    return proc.returncode, err


def test_writer_lock_is_exclusive(db_url):
    with acquire_writer_lock(db_url) as lock:
        assert lock.held
        with pytest.raises(DatabaseInUseError, match="already served by another process"):
            acquire_writer_lock(db_url)
    assert not lock.held
    acquire_writer_lock(db_url).release()  # free again


def test_second_serve_process_on_one_database_is_refused(db_url):
    port = _free_port()
    first = _serve(db_url, "--no-grpc", "--http", f"127.0.0.1:{port}")
    try:
        _wait_up(first, f"http://127.0.0.1:{port}/status")
        second = _serve(db_url, "--no-grpc", "--http", f"127.0.0.1:{_free_port()}")
        _, err = second.communicate(timeout=60)
        assert second.returncode == 1
        assert "already served by another process" in err and "one serve process per crawl database" in err
        # the refused process changed nothing: the first still serves
        assert httpx.get(f"http://127.0.0.1:{port}/status", timeout=5).status_code == 200
        with pytest.raises(DatabaseInUseError):
            acquire_writer_lock(db_url)
    finally:
        code, err = _stop(first, signal.SIGTERM)
    assert code == 0, err
    assert "stopped" in err
    acquire_writer_lock(db_url).release()  # released at the stop


def test_serve_runs_rest_and_grpc_in_one_process_and_stops_on_sigint(tmp_path):
    token_file = tmp_path / "token"
    token_file.write_text("s3cret\n")
    http, grpc = _free_port(), _free_port()
    proc = _serve(str(tmp_path / "c.db"), "--http", f"127.0.0.1:{http}", "--grpc", f"127.0.0.1:{grpc}",
                  "--token-file", str(token_file))
    try:
        base = f"http://127.0.0.1:{http}"
        _wait_up(proc, base + "/status")
        body = {"urls": [{"url": "http://a.test/"}]}
        assert httpx.post(base + "/urls", json=body, timeout=5).status_code == 401
        r = httpx.post(base + "/urls", json=body, headers={"Authorization": "Bearer s3cret"}, timeout=5)
        assert r.status_code == 200 and r.json()["added"] == 1
        import grpc as grpc_

        from freshcrawl.service.proto import urlfrontier_pb2 as pb
        from freshcrawl.service.proto import urlfrontier_pb2_grpc as pb_grpc

        with grpc_.insecure_channel(f"127.0.0.1:{grpc}") as channel:  # same process, same frontier, same token
            stub = pb_grpc.URLFrontierStub(channel)
            with pytest.raises(grpc_.RpcError) as err:
                stub.GetStats(pb.QueueWithinCrawlParams(), timeout=10)
            assert err.value.code() == grpc_.StatusCode.UNAUTHENTICATED
            stats = stub.GetStats(pb.QueueWithinCrawlParams(), timeout=10,
                                  metadata=[("authorization", "Bearer s3cret")])
            assert stats.size == 1
        assert httpx.get(base + "/status", timeout=5).json()["n_pages"] == 1
    finally:
        code, err = _stop(proc, signal.SIGINT)
    assert code == 0, err
    assert f"gRPC on 127.0.0.1:{grpc}" in err and "stopped" in err


def test_serve_refuses_other_machines_without_a_token(tmp_path):
    r = subprocess.run([sys.executable, "-m", "freshcrawl", "serve", "--db", str(tmp_path / "c.db"), "--budget",
                        "100/day", "--http", "0.0.0.0:0", "--no-grpc"],
                       capture_output=True, text=True, env={**os.environ, "FRESHCRAWL_TOKEN": ""}, timeout=60)
    assert r.returncode == 2
    assert "not a loopback address: serving other machines needs TLS" in r.stderr
    assert not (tmp_path / "c.db").exists()  # refused before touching the database
    r = subprocess.run([sys.executable, "-m", "freshcrawl", "serve", "--db", str(tmp_path / "c.db"), "--no-grpc",
                        "--http", f"127.0.0.1:{_free_port()}"], capture_output=True, text=True, timeout=60,
                       env={**os.environ, "FRESHCRAWL_TOKEN": ""})
    assert r.returncode == 2 and "the first run of a crawl needs --budget" in r.stderr
