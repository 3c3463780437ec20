"""What the end-to-end crawl tests share: the ``freshcrawl`` command line in a subprocess, a free
loopback port, waiting for a server to answer."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import httpx

from freshcrawl.testing import TestWeb


def crawl_cli(*args: str) -> list[str]:
    """argv of ``freshcrawl crawl ARGS`` run by this interpreter."""
    return [sys.executable, "-m", "freshcrawl", "crawl", *args]


def add_urls(db: str, urls: Sequence[str], urls_file: Path, *extra: str) -> None:
    """``freshcrawl crawl add [EXTRA]`` of ``urls`` (written to ``urls_file``) to the crawl database
    ``db``."""
    urls_file.write_text("\n".join(urls) + "\n")
    added = subprocess.run(
        crawl_cli("add", "--db", db, str(urls_file), *extra),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert added.returncode == 0, added.stderr


def start_and_add(
    webs: Mapping[str, TestWeb], folder: Path, extra: Mapping[str, Sequence[str]] | None = None
) -> dict[str, str]:
    """Start every test web, then ``crawl add`` each one's URLs (with its ``extra`` options) to
    ``folder/NAME.db``; returns the databases by name.

    The webs start together, so that their pages, which change at the same times from each web's
    start, change at the same times relative to crawls that also start together: per-page
    differences between the crawls are then paired.
    """
    for web in webs.values():
        web.start()
    dbs = {}
    for name, web in webs.items():
        dbs[name] = str(folder / f"{name}.db")
        add_urls(dbs[name], web.urls(), folder / f"{name}.txt", *(extra or {}).get(name, ()))
    return dbs


def free_port() -> int:
    """A TCP port free on 127.0.0.1 now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_until_up(
    proc: subprocess.Popen, url: str, timeout_s: float = 60.0, **httpx_options: Any
) -> None:
    """Wait until ``url`` answers (any status), polling every 0.2 s for at most ``timeout_s``.

    Raises AssertionError with the server's standard error when it exits first or stays silent.
    """
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            httpx.get(url, timeout=1.0, **httpx_options)
            return
        except httpx.TransportError:
            if proc.poll() is not None:
                raise AssertionError(
                    f"the server exited with {proc.returncode}: {proc.communicate()[1][-4000:]}"
                )
            time.sleep(0.2)
    raise AssertionError(f"{url} did not answer within {timeout_s} s")


def run_side_by_side(runs: dict[str, list[str]], timeout_s: float) -> None:
    """``freshcrawl crawl run ARGS`` for every name at once, each in its own process; wait for all.

    Raises AssertionError naming the run and giving its standard error if one exits with an error;
    runs still going when this returns by an error are killed.
    """
    procs: dict[str, subprocess.Popen] = {}
    try:
        for name, args in runs.items():
            procs[name] = subprocess.Popen(
                crawl_cli("run", *args), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
            )
        for name, proc in procs.items():
            _, err = proc.communicate(timeout=timeout_s)
            assert proc.returncode == 0, f"{name}: {err}"
    finally:
        for proc in procs.values():
            if proc.poll() is None:
                proc.kill()
                proc.wait()
