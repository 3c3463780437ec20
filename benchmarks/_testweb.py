"""The test web the crawl benchmarks run against: ``freshcrawl test-web`` in its own process."""

from __future__ import annotations

import contextlib
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path


@contextlib.contextmanager
def test_web(folder: Path, pages: int, hosts: int, seconds: float) -> Iterator[list[str]]:
    """Serve ``pages`` pages on ``hosts`` loopback hosts (rates 0.01-1 changes/s) for ``seconds``;
    yield their URLs once the test web has written them, and stop it on exit."""
    urls_file = folder / "web-urls.txt"
    cmd = [
        sys.executable,
        "-m",
        "freshcrawl",
        "test-web",
        "--pages",
        str(pages),
        "--hosts",
        str(hosts),
        "--rates",
        "0.01:1",
        "--urls-out",
        str(urls_file),
        "--for",
        f"{seconds:.0f}s",
    ]
    web = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(300):
            if urls_file.exists() and urls_file.stat().st_size > 0:
                break
            time.sleep(0.1)
        time.sleep(0.5)
        yield urls_file.read_text().split()
    finally:
        web.terminate()
        web.wait(timeout=30)
