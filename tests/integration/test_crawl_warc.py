"""``freshcrawl crawl run --warc DIR`` against loopback servers: the WARC files pass ``warcio check``,
an independent reader (FastWARC) finds one response per first or changed observation and one revisit
per unchanged one, every ``WARC-Refers-To`` resolves, pywb replays a changed page's captures, and an
archive that cannot be written stops the crawl without committing a visit that has no record."""

from __future__ import annotations

import asyncio
import gzip
import os
import resource
import subprocess
import sys
import threading
import time
import urllib.request
from collections import Counter
from pathlib import Path
from typing import Self

import pytest
from aiohttp import web
from click.testing import CliRunner

from freshcrawl.cli import main
from freshcrawl.store import open_store
from freshcrawl.testing import HostSpec, TestWeb, make_pages

from ..live_crawl import crawl_cli, free_port
from ..warc_checks import (
    PROFILE_IDENTICAL,
    PROFILE_NOT_MODIFIED,
    check_structure,
    epoch,
    match_observations,
    read_records,
    warcio_check,
)


def _run(db: str, warc: Path, *extra: str, duration: str = "6s") -> subprocess.CompletedProcess:
    """``crawl run --warc`` in this process (click's runner: no interpreter start-up to wait for)."""
    args = ["crawl", "run", "--db", db, "--budget", "8/s", "--for", duration, "--replan-every", "1s",
            "--min-delay", "0.1s", "--timeout", "2s", "--warc", str(warc), *extra]  # fmt: skip
    res = CliRunner().invoke(main, args)
    if res.exception is not None and not isinstance(res.exception, SystemExit):
        raise res.exception
    return subprocess.CompletedProcess(args, res.exit_code, res.stdout, res.stderr)


def _add(db: str, urls: list[str], tmp: Path, *extra: str) -> None:
    f = tmp / "urls.txt"
    f.write_text("\n".join(urls) + "\n")
    res = CliRunner().invoke(main, ["crawl", "add", "--db", db, str(f), *extra])
    assert res.exit_code == 0, res.output


def _log(db: str) -> tuple[list[dict], dict[int, str]]:
    store = open_store(db)
    try:
        log = store.observation_log()
        url_of = {pid: r["url"] for pid, r in store.page_rows(range(1, 100)).items()}
    finally:
        store.close()
    return log, url_of


@pytest.fixture(scope="module")
def test_web_crawl(tmp_path_factory):
    """A 6 s crawl of 8 changing pages on 2 hosts, WARC files rotated at 12 KiB."""
    tmp = tmp_path_factory.mktemp("warc-crawl")
    db = str(tmp / "crawl.db")
    warc = tmp / "warc"
    pages = make_pages(8, 2, (0.3, 1.5), seed=4)
    with TestWeb(pages, hosts=[HostSpec(), HostSpec()], seed=4) as web_:
        _add(db, web_.urls(), tmp)
        res = _run(db, warc, "--warc-max-size", "12KiB", "--policy", "uniform")
        assert res.returncode == 0, res.stderr
        requests = [r for r in web_.requests() if r.page is not None]
    log, url_of = _log(db)
    return {"db": db, "warc": warc, "log": log, "url_of": url_of, "requests": requests, "tmp": tmp}


def test_warc_files_are_valid_and_hold_one_record_per_observation(test_web_crawl):
    warc, log = test_web_crawl["warc"], test_web_crawl["log"]
    warcio_check(warc)
    records = read_records(warc)
    check_structure(warc, records)
    assert len(list(warc.glob("*.warc.gz"))) >= 2  # rotated at 12 KiB
    kinds = Counter(o["outcome"] for o in log)
    types = Counter(r["type"] for r in records)
    # response = first + changed observations, revisit = unchanged (raw signature: bytes decide both)
    assert types["response"] == kinds["first"] + kinds["changed"], (types, kinds)
    assert types["revisit"] == kinds["unchanged"], (types, kinds)
    assert types["request"] == types["response"] + types["revisit"]
    assert kinds["changed"] >= 2 and kinds["unchanged"] >= 2, kinds
    matched = match_observations(records, log, test_web_crawl["url_of"])
    for o in log:
        if o["id"] in matched:
            r = matched[o["id"]]
            assert r["type"] == ("revisit" if o["outcome"] == "unchanged" else "response")
            if r["type"] == "revisit":  # the test web answers 304 to the conditional request
                assert r["profile"] == PROFILE_NOT_MODIFIED and r["refers_to"] is not None
    # the CDXJ indexes list every response and revisit
    lines = [ln for p in warc.glob("*.cdxj") for ln in p.read_text().splitlines()]
    assert len(lines) == types["response"] + types["revisit"]
    assert len(test_web_crawl["requests"]) == sum(
        kinds[k] for k in ("first", "changed", "unchanged")
    )


def _get(url: str, deadline: float) -> tuple[int, bytes]:
    last = None
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=10) as resp:
                return resp.status, resp.read()
        except urllib.error.HTTPError as err:
            return err.code, err.read()
        except OSError as err:
            last = err
            time.sleep(0.3)
    raise AssertionError(f"pywb did not answer {url}: {last}")


def test_pywb_replays_each_capture_of_a_changed_page_at_its_time(test_web_crawl, tmp_path):
    records = read_records(test_web_crawl["warc"])
    by_url: dict[str, list[dict]] = {}
    for r in records:
        if r["type"] == "response":
            by_url.setdefault(r["url"], []).append(r)
    url, caps = next(
        (u, c)
        for u, c in by_url.items()
        if len({r["body"] for r in c}) >= 2 and len({r["date"][:19] for r in c}) >= 2
    )
    first, second = sorted(caps, key=lambda r: r["date"])[:2]
    assert first["body"] != second["body"]
    coll = tmp_path / "collections" / "crawl"
    (coll / "archive").mkdir(parents=True)
    (coll / "indexes").mkdir()
    for p in test_web_crawl["warc"].glob("*.warc.gz"):
        os.symlink(p, coll / "archive" / p.name)
    for p in test_web_crawl["warc"].glob("*.cdxj"):
        os.symlink(p, coll / "indexes" / p.name)
    port = free_port()
    wayback = Path(sys.executable).with_name("wayback")
    proc = subprocess.Popen(
        [str(wayback), "-p", str(port), "-b", "127.0.0.1", "-t", "2", "-d", str(tmp_path)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        cwd=tmp_path,
    )
    try:
        deadline = time.monotonic() + 60
        for cap in (first, second):
            ts = cap["date"][:19].replace("-", "").replace("T", "").replace(":", "")
            status, body = _get(f"http://127.0.0.1:{port}/crawl/{ts}id_/{url}", deadline)
            assert status == 200 and body == cap["body"], (ts, status, body[:200])
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:  # pragma: no cover
            proc.kill()
            proc.wait(timeout=20)
        proc.stderr.close()


class _Site:
    """A loopback server without validators: a static page (identical payloads), a page whose bytes
    change but not its text, a gzip-coded page, a binary file and a body over the 10 MiB cap."""

    def __init__(self) -> None:
        self.hits: Counter = Counter()
        self.html = (
            b"<html><head><title>T</title></head><body><p>"
            + b"Same words every time. " * 40
            + b"</p></body></html>"
        )

    async def handle(self, request: web.Request) -> web.StreamResponse:
        path = request.path
        self.hits[path] += 1
        n = self.hits[path]
        if path == "/robots.txt":
            return web.Response(status=404)
        if path == "/static":
            return web.Response(body=self.html, content_type="text/html")
        if path == "/noise":  # a comment that changes: other bytes, the same main text
            return web.Response(
                body=self.html.replace(b"<body>", f"<body><!-- {n} -->".encode()),
                content_type="text/html",
            )
        if path == "/gz":
            body = gzip.compress(self.html, mtime=0)
            return web.Response(
                body=body, headers={"Content-Encoding": "gzip", "Content-Type": "text/html"}
            )
        if path == "/data.bin":
            return web.Response(body=bytes(range(256)) * 4, content_type="application/octet-stream")
        if path == "/huge":
            return web.Response(body=b"x" * (10 * 1024 * 1024 + 10), content_type="text/plain")
        return web.Response(status=404)

    def __enter__(self) -> Self:
        self.loop = asyncio.new_event_loop()
        ready = threading.Event()
        self.port = free_port()

        async def start():
            app = web.Application()
            app.router.add_route("*", "/{tail:.*}", self.handle)
            self.runner = web.AppRunner(app)
            await self.runner.setup()
            await web.TCPSite(self.runner, "127.0.0.1", self.port).start()
            ready.set()

        self.thread = threading.Thread(
            target=lambda: (self.loop.run_until_complete(start()), self.loop.run_forever()),
            daemon=True,
        )
        self.thread.start()
        assert ready.wait(10)
        return self

    def __exit__(self, *exc) -> None:
        asyncio.run_coroutine_threadsafe(self.runner.cleanup(), self.loop).result(10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)
        self.loop.close()

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"


def test_payload_digest_decides_revisits_and_bytes_are_kept_as_received(tmp_path):
    db, warc = str(tmp_path / "crawl.db"), tmp_path / "warc"
    with _Site() as site:
        paths = ["/static", "/noise", "/gz", "/data.bin", "/huge"]
        _add(db, [site.url(p) for p in paths], tmp_path)
        res = _run(
            db,
            warc,
            "--signature",
            "text",
            "--policy",
            "uniform",
            "--min-delay",
            "0.05s",
            duration="5s",
        )
        assert res.returncode == 0, res.stderr
        html = site.html
    log, url_of = _log(db)
    warcio_check(warc)
    records = read_records(warc)
    check_structure(warc, records)
    match_observations(records, log, url_of)
    main = [r for r in records if r["type"] in ("response", "revisit")]
    by_path = {p: [r for r in main if r["url"] == site.url(p)] for p in paths}
    outcomes = {
        p: [o["outcome"] for o in log if url_of[o["page_id"]] == site.url(p)] for p in paths
    }
    # the same bytes again: one response, then identical-payload-digest revisits
    static = by_path["/static"]
    assert len(static) >= 3 and static[0]["type"] == "response"
    assert all(r["type"] == "revisit" and r["profile"] == PROFILE_IDENTICAL for r in static[1:])
    # the same main text over other bytes: unchanged for the estimator, a new response for the archive
    assert set(outcomes["/noise"][1:]) == {"unchanged"} and len(outcomes["/noise"]) >= 3
    assert [r["type"] for r in by_path["/noise"]] == ["response"] * len(outcomes["/noise"])
    # gzip stays gzip in the record; the signature was taken on the decoded body
    gz = by_path["/gz"]
    assert gz[0]["type"] == "response" and gzip.decompress(gz[0]["body"]) == html
    assert set(outcomes["/gz"]) <= {"first", "unchanged"} and len(gz) >= 2
    # a binary body is archived as bytes
    assert by_path["/data.bin"][0]["body"] == bytes(range(256)) * 4
    # a body over the size cap is recorded as before and not archived
    assert outcomes["/huge"] and set(outcomes["/huge"]) == {"no-info"}
    assert by_path["/huge"] == []


def test_an_archive_that_cannot_be_written_stops_the_crawl_clearly(pg_url, tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    pages = make_pages(4, 1, (0.2, 1.0), seed=3)
    with TestWeb(pages, hosts=[HostSpec()], seed=3) as web_:
        _add(pg_url, web_.urls(), tmp_path)
        # a directory that cannot be created: refused before any visit
        res = _run(pg_url, blocker / "warc", duration="3s")
        assert res.returncode == 1
        err = res.stderr.strip().splitlines()
        assert (
            err[-1].startswith("Error: cannot write the WARC archive in ")
            and "Not a directory" in err[-1]
        )
        assert not [r for r in web_.requests() if r.page is not None]
        # a disk that fills up: once the crawl has written a few records, its file-size limit is set
        # 8000 bytes past the open WARC file's size (set late: start-up writes compiled-kernel caches)
        warc = tmp_path / "warc"
        args = crawl_cli(
            "run",
            "--db",
            pg_url,
            "--budget",
            "8/s",
            "--for",
            "30s",
            "--replan-every",
            "1s",
            "--min-delay",
            "0.1s",
            "--timeout",
            "2s",
            "--warc",
            str(warc),
        )
        proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        try:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline and proc.poll() is None:
                open_files = list(warc.glob("*.warc.gz.open")) if warc.exists() else []
                if open_files and open_files[0].stat().st_size > 3000:
                    size = open_files[0].stat().st_size + 8000
                    resource.prlimit(proc.pid, resource.RLIMIT_FSIZE, (size, size))
                    break
                time.sleep(0.05)
            _, stderr = proc.communicate(timeout=60)
        finally:
            if proc.poll() is None:  # pragma: no cover - only when the test fails
                proc.kill()
                proc.communicate(timeout=30)
        res = subprocess.CompletedProcess(args, proc.returncode, "", stderr)
        requests = [r for r in web_.requests() if r.page is not None]
    assert res.returncode == 1, res.stderr
    errors = [ln for ln in res.stderr.splitlines() if ln.startswith("Error:")]
    assert len(errors) == 1, res.stderr[-3000:]
    assert (
        errors[0].startswith("Error: cannot write the WARC archive in ")
        and "File too large" in errors[0]
    )
    assert "visits without a record were not committed" in errors[0]
    log, url_of = _log(pg_url)
    fetched = [o for o in log if o["outcome"] in ("first", "changed", "unchanged")]
    assert fetched and len(requests) > len(fetched)  # some visits were made, not all committed
    warcio_check(warc)
    records = read_records(warc)
    check_structure(warc, records)
    match_observations(records, log, url_of)  # every committed observation has its record
    assert epoch(max(r["date"] for r in records if r["date"])) <= time.time()


def test_history_and_diff_read_the_captures_from_the_warc_files(test_web_crawl):
    import json

    import httpx
    from click.testing import CliRunner

    from freshcrawl.cli import main
    from freshcrawl.frontier import CrawlSettings
    from freshcrawl.service import FrontierService
    from freshcrawl.service.rest import create_app

    from .rest_server import TOKEN, running

    db, log, url_of = test_web_crawl["db"], test_web_crawl["log"], test_web_crawl["url_of"]
    records = read_records(test_web_crawl["warc"])
    main_records: dict[str, list[dict]] = {}
    for r in records:
        if r["type"] in ("response", "revisit"):
            main_records.setdefault(r["url"], []).append(r)
    url = next(u for u, rs in main_records.items() if sum(r["type"] == "response" for r in rs) >= 2)
    mine = sorted(main_records[url], key=lambda r: r["date"])
    runner = CliRunner()

    res = runner.invoke(
        main, ["crawl", "history", url, "--db", db, "--json"], catch_exceptions=False
    )
    assert res.exit_code == 0, res.output
    hist = json.loads(res.output)
    caps = hist["captures"]
    assert [c["date"] for c in caps] == [r["date"] for r in mine]
    assert [c["kind"] for c in caps] == [r["type"] for r in mine]
    obs = [o for o in log if url_of[o["page_id"]] == url]
    for c in caps:
        (hit,) = [o for o in obs if abs(o["time"] - c["time"]) < 2e-6]
        assert c["outcome"] == hit["outcome"]
        assert c["changed"] == {"first": None, "changed": True, "unchanged": False}[c["outcome"]]
        assert (c["kind"] == "response") == (c["outcome"] in ("first", "changed"))
    text = runner.invoke(main, ["crawl", "history", url, "--db", db]).output
    assert f"{len(caps)} capture(s)" in text and caps[-1]["filename"] in text

    responses = [c for c in caps if c["kind"] == "response"]
    res = runner.invoke(main, ["crawl", "diff", url, "--db", db, "--json"], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    d = json.loads(res.output)
    assert d["old"]["date"] == responses[-2]["date"] and d["new"]["date"] == responses[-1]["date"]
    assert d["mode"] == "text" and d["added"] >= 1 and d["removed"] >= 1
    lines = d["diff"].splitlines()
    assert lines[0] == f"--- {url} {responses[-2]['date']}" and lines[1].startswith(f"+++ {url} ")
    assert not any("<p" in ln for ln in lines)  # main text, not markup
    raw = runner.invoke(main, ["crawl", "diff", url, "--db", db, "--raw"], catch_exceptions=False)
    assert raw.exit_code == 0 and "<" in raw.output and raw.output.startswith(f"--- {url}")
    first = runner.invoke(
        main, ["crawl", "diff", url, "--db", db, "--at", str(responses[0]["time"])]
    )
    assert first.exit_code == 1 and "a diff needs two" in first.output
    at = runner.invoke(
        main, ["crawl", "diff", url, "--db", db, "--at", responses[1]["date"], "--json"]
    )
    assert at.exit_code == 0 and json.loads(at.output)["new"]["date"] == responses[1]["date"]

    store_settings = open_store(db)
    try:
        settings = CrawlSettings.from_dict(store_settings.settings()["settings"])
    finally:
        store_settings.close()
    service = FrontierService(db, settings)
    try:
        with (
            running(create_app(service, token=TOKEN)) as base,
            httpx.Client(base_url=base, timeout=30) as c,
        ):
            r = c.get("/history", params={"url": url})
            assert r.status_code == 200, r.text
            assert r.json()["captures"] == caps and r.json()["url"] == url
            assert c.get("/history").json()["captures"] is None
            r = c.get("/diff", params={"url": url})
            assert r.status_code == 200 and r.json()["diff"] == d["diff"], r.text
            r = c.get("/diff", params={"url": url, "at": responses[0]["time"]})
            assert r.status_code == 404 and "a diff needs two" in r.text
            assert c.get("/diff", params={"url": "http://127.0.0.9:1/nowhere"}).status_code == 404
            assert c.get("/diff", params={"url": "not a url"}).status_code == 422
            assert '"explain-copies"' in c.get("/").text  # the explanation links to both
    finally:
        service.close()


class _Receiver(_Site):
    """A loopback Apprise ``json://`` endpoint that fails its first `n_fail` posts with a 500."""

    def __init__(self, n_fail: int = 2) -> None:
        super().__init__()
        self.n_fail = n_fail
        self.posts: list[tuple[str, dict]] = []
        self.n_failed = 0

    async def handle(self, request: web.Request) -> web.StreamResponse:
        if self.n_failed < self.n_fail:
            self.n_failed += 1
            return web.Response(status=500)
        self.posts.append((request.path, await request.json()))
        return web.Response(text="ok")


def test_notify_sends_one_message_per_change_and_survives_failures(tmp_path, caplog):
    db, warc = str(tmp_path / "crawl.db"), tmp_path / "warc"
    pages = make_pages(6, 3, (0.5, 2.0), seed=8)
    hosts = [HostSpec(), HostSpec(), HostSpec()]
    with _Receiver(n_fail=2) as rx, TestWeb(pages, hosts=hosts, seed=8) as web_:
        urls = web_.urls()
        _add(db, urls[1:], tmp_path)
        target_one = f"json://127.0.0.1:{rx.port}/one"
        (tmp_path / "one").mkdir()
        _add(db, urls[:1], tmp_path / "one", "--notify", target_one)
        all_ = f"json://127.0.0.1:{rx.port}/all"
        res = _run(db, warc, "--notify", all_, "--policy", "uniform", duration="8s")
        assert res.returncode == 0, res.stderr
        posts = list(rx.posts)
        n_failed = rx.n_failed
        requests = [r for r in web_.requests() if r.page is not None]
    log, url_of = _log(db)
    changes = [o for o in log if o["outcome"] == "changed"]
    assert len(changes) >= 1, Counter(o["outcome"] for o in log)
    assert (
        n_failed == 2 and "retrying in" in caplog.text
    )  # failures logged, retried, the crawl went on
    assert len(requests) == sum(o["outcome"] != "no-info" for o in log if o["why"] != "robots")
    to_all = [p for path, p in posts if path == "/all"]
    to_one = [p for path, p in posts if path == "/one"]
    # one message per change to the crawl-wide target; the page's own target only for its changes
    assert len(to_all) == len(changes), (len(to_all), len(changes))
    assert len(to_one) == sum(url_of[o["page_id"]] == urls[0] for o in changes)
    by_url = Counter(url_of[o["page_id"]] for o in changes)
    assert Counter(p["title"].removeprefix("Changed: ") for p in to_all) == by_url
    for p in to_all:
        url = p["title"].removeprefix("Changed: ")
        assert p["message"].startswith(f"{url} changed at ") and "line(s) added" in p["message"]
        assert "\n@@ " in p["message"]  # the first lines of the diff


def test_keep_latest_keeps_the_present_and_the_last_change(tmp_path):
    from freshcrawl.archive import LatestCopies

    db, latest = str(tmp_path / "crawl.db"), tmp_path / "latest"
    with _Site() as site:
        urls = [site.url(p) for p in ("/static", "/noise")]
        _add(db, urls, tmp_path)
        args = ["crawl", "run", "--db", db, "--budget", "8/s", "--for", "4s", "--replan-every", "1s",
                "--min-delay", "0.05s", "--policy", "uniform", "--keep-latest", str(latest)]  # fmt: skip
        res = CliRunner().invoke(main, args)
        assert res.exit_code == 0, res.output
        both = CliRunner().invoke(main, [*args, "--warc", str(tmp_path / "warc")])
        assert both.exit_code == 2 and "exclude each other" in both.output
    log, url_of = _log(db)
    copies = LatestCopies(latest)
    n_static = sum(url_of[o["page_id"]] == urls[0] for o in log)
    assert n_static >= 2 and copies.meta(urls[0])["previous"] is None  # the same bytes: one copy
    noise = copies.meta(urls[1])
    assert noise["previous"] is not None and noise["current"]["time"] == max(
        o["time"] for o in log if url_of[o["page_id"]] == urls[1]
    )
    assert len(list((latest / "objects").rglob("*/*"))) == 3  # static, and the two of /noise
    raw = CliRunner().invoke(main, ["crawl", "diff", urls[1], "--db", db, "--raw"])
    assert raw.exit_code == 0 and raw.output.count("\n-<html>") == 1, raw.output
    text = CliRunner().invoke(main, ["crawl", "diff", urls[1], "--db", db])
    assert text.exit_code == 0 and "no difference in the text" in text.output
    one = CliRunner().invoke(main, ["crawl", "diff", urls[0], "--db", db])
    assert one.exit_code == 1 and "1 kept copy" in one.output
