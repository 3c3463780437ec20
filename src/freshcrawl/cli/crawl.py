"""``freshcrawl crawl``: keep real URLs fresh, politely, with the crawl state in a database.

Subcommands: ``add`` (URLs from a file), ``run`` (the crawl loop), ``status``, ``explain`` (one page),
``history`` and ``diff`` (a page's captures in the WARC files and the change between two),
``export`` (the visit log for ``freshcrawl estimate``).
"""

from __future__ import annotations

import json
import math
import sys
import time
from pathlib import Path

import click

from freshcrawl.cli._options import budget_option, duration_option, file_option

__all__ = ["crawl"]


def _open(db: str, *, create: bool = False):
    from sqlalchemy.exc import OperationalError

    from freshcrawl.store import open_store

    try:
        return open_store(db, create=create)
    except (FileNotFoundError, ValueError) as err:
        raise click.ClickException(str(err)) from err
    except OperationalError as err:
        raise click.ClickException(f"cannot open the crawl database {db!r}: {err.orig}") from err


_DB_HELP = ("Crawl database: a SQLite file (created on first use) or a URL such as "
            "postgresql+psycopg://user@host/dbname.")
_db_option = click.option("--db", required=True, metavar="FILE|URL", help=_DB_HELP)


@click.group("crawl")
def crawl() -> None:
    """Keep real URLs fresh: learn each page's change rate and visit it as the budget allows."""


_allow_private_option = click.option(
    "--allow-private", is_flag=True, default=False,
    help="Lift the egress policy: accept and fetch private, link-local, reserved and cloud metadata "
    "addresses (an intranet crawl). Off unless given, at every run.")


@crawl.command("add")
@_db_option
@click.argument("urls_file", type=click.File("r", encoding="utf-8"), required=False)
@_allow_private_option
@click.option("--notify", "notify", multiple=True, metavar="APPRISE_URL",
              help="Send a message to this Apprise URL (json://, mailto://, slack://, ...) on "
              "each change of these pages; repeatable.")
@click.option("--sitemap", "sitemaps", multiple=True, metavar="URL|auto",
              help="Read this sitemap (XML, index, text, gzip) for the pages it lists and their <lastmod>; "
              "'auto': the sitemaps each host's robots.txt lists. Repeatable.")
@click.option("--feed", "feeds", multiple=True, metavar="URL",
              help="Read this RSS, Atom or JSON feed for its entries' dates. Repeatable.")
def add(db: str, urls_file, allow_private: bool, notify: tuple[str, ...], sitemaps: tuple[str, ...],
        feeds: tuple[str, ...]) -> None:
    """Add the URLs of URLS_FILE (one per line, optional weight; '-' reads standard input), and
    sitemaps and feeds that announce changes.

    A file with any bad line is refused whole, with the line numbers; URLs already in the crawl are
    skipped (their --notify targets are still added). URLs with a user name or password are bad
    lines, and so are URLs whose host is a private, link-local, reserved or cloud metadata address
    (unless --allow-private). A sitemap or a feed is a page of the crawl (read on its own learned
    schedule, out of the same budget); the pages it lists join the crawl, and how far its dates are
    trusted is learned per host from what visits find (``crawl status`` shows it).
    """
    from freshcrawl.frontier import parse_url_list
    from freshcrawl.frontier.sources import add_sources_to_store

    if urls_file is None and not sitemaps and not feeds:
        raise click.UsageError("give URLS_FILE, --sitemap or --feed")
    rows = []
    if urls_file is not None:
        source = "<stdin>" if urls_file.name == "<stdin>" else urls_file.name
        try:
            rows = parse_url_list(urls_file.read().splitlines(), source=source, allow_private=allow_private)
        except ValueError as err:
            raise click.ClickException(str(err)) from err
    from freshcrawl.frontier.limits import check_url

    for kind, urls in (("sitemap", [u for u in sitemaps if u != "auto"]), ("feed", feeds)):
        for u in urls:  # all checked before anything is written
            try:
                check_url(u, allow_private=allow_private, field=kind)
            except ValueError as err:
                raise click.BadParameter(str(err), param_hint=f"--{kind}") from err
    if notify:
        _check_apprise(notify)
    store = _open(db, create=True)
    try:
        now = time.time()
        ids, n_known = store.add_pages(rows, now=now)
        n_sources = 0
        for kind, urls in (("sitemap", [u for u in sitemaps if u != "auto"]), ("feed", list(feeds))):
            n_sources += len(add_sources_to_store(store, urls, kind, now=now, allow_private=allow_private))
        if "auto" in sitemaps:
            store.save_settings({"sitemaps_auto": True})
        n_hosts = store.counts()["hosts"]
        if notify:
            saved = store.settings()
            per_page = dict(saved.get("notify_pages") or {})
            for url, _, _ in rows:
                per_page[url] = sorted({*per_page.get(url, []), *notify})
            store.save_settings({"notify_pages": per_page})
    finally:
        store.close()
    click.echo(f"added {len(ids)} page(s) ({n_known} already in the crawl); {n_hosts} host(s) in all")
    if n_sources or "auto" in sitemaps:
        auto = "; robots.txt sitemaps are read" if "auto" in sitemaps else ""
        click.echo(f"{n_sources} sitemap(s) and feed(s) to read{auto}")


def _settings(store, given: dict):
    from freshcrawl.frontier import CrawlSettings

    stored = store.settings().get("settings")
    values = dict(stored or {})
    values.update({k: v for k, v in given.items() if v is not None})
    if "budget" not in values:
        raise click.UsageError("the first run of a crawl needs --budget (e.g. --budget 2000/day)")
    try:
        return CrawlSettings.from_dict(values)
    except ValueError as err:
        raise click.UsageError(str(err)) from err


_SIZE_UNITS = {"": 1, "b": 1, "kb": 1000, "mb": 1000**2, "gb": 1000**3,
               "kib": 1024, "mib": 1024**2, "gib": 1024**3}


class _Size(click.ParamType):
    """A size in bytes: ``1048576``, ``100KiB``, ``64MiB``, ``1GiB`` (kB, MB, GB: powers of 10)."""

    name = "size"

    def convert(self, value, param, ctx):
        if isinstance(value, int):
            return value
        text = str(value).strip().lower()
        number = text.rstrip("abgikm")
        unit = text[len(number):]
        try:
            size = int(float(number) * _SIZE_UNITS[unit])
        except (KeyError, ValueError):
            self.fail(f"expected a size such as 1GiB, 64MiB or 1048576; got {value!r}", param, ctx)
        if size < 1:
            self.fail(f"must be at least 1 byte; got {value!r}", param, ctx)
        return size


_SIZE = _Size()


@crawl.command("run")
@click.option("--db", default=None, metavar="FILE|URL",
              help=_DB_HELP + " Required unless --frontier is given.")
@budget_option(required=False, help="Visits per day over all pages, e.g. 2000/day or 5/s (kept for later runs).")
@click.option("--policy", default=None, help="learned (default), uniform, nutch, stormcrawler, heritrix, ...")
@click.option("--objective", default=None, help="Allocation objective of the learned policy.")
@click.option("--signature", type=click.Choice(["raw", "text"]), default=None,
              help="raw: any byte of the body; text: the page's main text only.")
@duration_option("--for", "duration", help="Stop after this long (90s, 30m, 1h); default: until SIGINT/SIGTERM.")
@duration_option("--replan-every", help="Most time between two plans (default 1h).")
@click.option("--replan-after", type=click.FloatRange(0.0, 1.0), default=None, metavar="FRACTION",
              help="Plan as soon as this fraction of the active pages has a new observation "
              "(default 0.1; 0: on the clock only).")
@duration_option("--min-delay", zero=True,
                 help="Least time between two requests to one host (default 1s; Crawl-delay raises it).")
@click.option("--max-per-host-day", type=float, default=None, help="Most requests per host per day.")
@click.option("--user-agent", default=None, help="User-Agent header (default freshcrawl/<version> (+URL)).")
@click.option("--contact-url", default=None, help="Where site owners learn about this crawl (in the User-Agent).")
@click.option("--max-in-flight", type=click.IntRange(1, 10_000), default=64, show_default=True,
              help="Requests in flight at once (one per host).")
@duration_option("--timeout", "timeout_s", default="30s", help="Read timeout of a request.")
@click.option("--seed", type=int, default=None, help="Seed of the policy's randomness.")
@click.option("--frontier", "frontier_url", default=None, metavar="URL",
              help="Fetch for a remote frontier (grpc://HOST:PORT, or grpcs://HOST:PORT over TLS; "
              "a 'freshcrawl serve' or any freshcrawl URLFrontier server): it plans, this process "
              "fetches; several processes may share it. $FRESHCRAWL_TOKEN is sent as its token.")
@click.option("--crawl-id", default=None, help="With --frontier: the crawl ID (default: the server's default crawl).")
@file_option("--tls-ca", help="With grpcs://: PEM certificate of the CA that signs the frontier's certificate "
             "(default: the system's trust store).")
@file_option("--tls-cert", help="With grpcs://: PEM client certificate, for a frontier that requires mutual TLS.")
@file_option("--tls-key", help="With grpcs://: PEM private key of --tls-cert (unencrypted).")
@_allow_private_option
@click.option("--warc", "warc_dir", default=None, metavar="DIR",
              help="Keep the copies: write WARC/1.1 files (request, response, revisit records) "
              "and their CDXJ indexes in DIR (kept for later runs).")
@click.option("--warc-max-size", "warc_max_bytes", type=_SIZE, default=None, metavar="SIZE",
              help="Size at which a WARC file is closed and the next one started (default 1GiB).")
@click.option("--keep-latest", "latest_dir", default=None, metavar="DIR",
              help="Without --warc: keep only the latest copy of each page (and the one before "
              "it) in DIR, content-addressed (kept for later runs).")
@click.option("--notify", "notify", multiple=True, metavar="APPRISE_URL",
              help="Send a message to this Apprise URL on each change detected on any page "
              "(URL, time, size, first lines of the diff); repeatable; kept for later runs.")
@duration_option("--db-give-up", "db_give_up",
                 help="Stop after the database has been unreachable this long (default 10m); fetching "
                 "pauses meanwhile.")
def run(db, budget, policy, objective, signature, duration, replan_every, replan_after, min_delay,
        max_per_host_day,
        user_agent, contact_url, max_in_flight, timeout_s, seed, frontier_url, crawl_id, tls_ca,
        tls_cert, tls_key, allow_private, warc_dir, warc_max_bytes, latest_dir, notify,
        db_give_up) -> None:
    """Crawl: fetch due pages, learn their change rates, re-plan, until --for elapses or a signal.

    With --frontier, fetch the visits a remote frontier hands out and report their outcomes to it;
    --db and the plan's settings (--budget, --policy, ...) are then the server's, not given here.
    """
    import asyncio

    from freshcrawl.crawler.fetcher import Fetcher
    from freshcrawl.frontier import Frontier

    if frontier_url is not None:
        plan_options = dict(db=db, budget=budget, policy=policy, objective=objective, replan_every=replan_every,
                            replan_after=replan_after, min_delay=min_delay, max_per_host_day=max_per_host_day, seed=seed,
                            db_give_up=db_give_up)
        given = [f"--{k.replace('_', '-')}" for k, v in plan_options.items() if v is not None]
        if given:
            raise click.UsageError(f"{', '.join(given)}: the remote frontier's settings; not given with --frontier")
        if warc_dir and latest_dir:
            raise click.UsageError(
                "--warc and --keep-latest exclude each other (a WARC archive keeps every copy)")
        archive = _archive(warc_dir, warc_max_bytes, user_agent) if warc_dir else None
        if latest_dir:
            archive = _latest(latest_dir)
        notifier = _notifier(list(notify), {}, archive, latest_dir) if notify else None
        _run_remote(frontier_url, crawl_id, signature=signature or "raw", duration=duration,
                    user_agent=user_agent, contact_url=contact_url, max_in_flight=max_in_flight,
                    timeout_s=timeout_s, tls_files=(tls_ca, tls_cert, tls_key),
                    allow_private=allow_private, archive=archive, notifier=notifier)
        return
    if (tls_ca, tls_cert, tls_key) != (None, None, None):
        raise click.UsageError(
            "--tls-ca, --tls-cert and --tls-key go with --frontier grpcs://HOST:PORT")
    if db is None:
        raise click.UsageError("Missing option '--db' (needed unless --frontier is given).")
    if crawl_id is not None:
        raise click.UsageError("--crawl-id goes with --frontier")
    from freshcrawl.errors import DatabaseInUseError, DatabaseUnavailableError
    from freshcrawl.store import acquire_writer_lock

    store = _open(db, create=False)
    try:  # one writer per crawl database: not beside a `serve` or another `crawl run` on it
        lock = acquire_writer_lock(db)
    except (DatabaseInUseError, DatabaseUnavailableError) as err:
        store.close()
        raise click.ClickException(str(err)) from err
    store.guard = lock.ensure  # a new connection (after an outage) first checks the writer lock
    settings = _settings(store, dict(
        budget=budget, policy=policy, objective=objective, signature=signature, replan_every_s=replan_every,
        replan_after=replan_after, min_delay_s=min_delay, max_per_host_day=max_per_host_day, user_agent=user_agent,
        contact_url=contact_url, seed=seed, allow_private=allow_private, warc_max_bytes=warc_max_bytes,
        warc=None if warc_dir is None else str(Path(warc_dir).resolve()),
        keep_latest=None if latest_dir is None else str(Path(latest_dir).resolve()),
        notify=list(notify) or None, db_give_up_s=db_give_up,
    ))
    try:
        frontier = Frontier(store, settings)
    except ValueError as err:
        lock.release()
        store.close()
        raise click.UsageError(str(err)) from err
    progress = _Progress(frontier)

    notifier = None
    try:
        archive = None
        if settings.warc:
            archive = _archive(settings.warc, settings.warc_max_bytes, fetcher_agent(settings))
        elif settings.keep_latest:
            archive = _latest(settings.keep_latest)
        per_page = store.settings().get("notify_pages") or {}
        if settings.notify or per_page:
            from freshcrawl.archive.notify import NotifyingFrontier

            notifier = _notifier(list(settings.notify or []), per_page, archive,
                                 settings.keep_latest)
            frontier = NotifyingFrontier(frontier, notifier)
        fetcher = Fetcher(user_agent=settings.user_agent, contact_url=settings.contact_url,
                          signature=settings.signature, read_timeout_s=timeout_s,
                          total_timeout_s=max(60.0, 2 * timeout_s), allow_private=settings.allow_private,
                          keep_copy=archive is not None)
        asyncio.run(_crawl_until_stopped(frontier, fetcher, duration, max_in_flight, progress,
                                         archive, give_up_s=settings.db_give_up_s,
                                         watchdog=lock.ensure))
    finally:
        if notifier is not None:
            notifier.close()
        store.close()
        lock.release()


def fetcher_agent(settings) -> str:
    """The User-Agent a crawl with `settings` sends."""
    from freshcrawl.crawler.fetcher import default_user_agent

    return settings.user_agent or default_user_agent(settings.contact_url)


def _archive(directory: str, max_bytes: int | None, user_agent: str | None):
    """An open :class:`WarcArchive` in `directory`; a one-line error when it cannot be written."""
    try:
        from freshcrawl.archive import DEFAULT_MAX_FILE_BYTES, WarcArchive
    except ImportError as err:
        raise click.ClickException(
            f"--warc needs the 'warc' extra (pip install 'freshcrawl[warc]'): {err}") from err
    from freshcrawl.crawler.fetcher import default_user_agent
    from freshcrawl.errors import ArchiveError

    info = {"http-header-user-agent": user_agent or default_user_agent(), "robots": "obey",
            "description": "freshcrawl crawl run"}
    archive = WarcArchive(directory, max_file_bytes=max_bytes or DEFAULT_MAX_FILE_BYTES, info=info)
    try:
        return archive.open()
    except ArchiveError as err:
        raise click.ClickException(str(err)) from err


def _check_apprise(targets) -> None:
    try:
        import apprise
    except ImportError as err:
        raise click.ClickException(
            f"--notify needs the 'warc' extra (pip install 'freshcrawl[warc]'): {err}") from err
    for t in targets:
        if apprise.Apprise.instantiate(t) is None:
            raise click.BadParameter(f"not an Apprise URL Apprise can use: {t!r}",
                                     param_hint="--notify")


def _notifier(targets: list[str], per_page: dict, archive, latest_dir: str | None):
    """A :class:`ChangeNotifier` whose messages carry the diff read from the crawl's copies."""
    from freshcrawl.archive.history import diff_bodies, latest_diff, payload_at
    from freshcrawl.archive.notify import ChangeNotifier
    from freshcrawl.archive.warc import WarcArchive, warc_date

    _check_apprise([*targets, *(t for v in per_page.values() for t in v)])

    def describe(url: str, out):
        """Locate the two copies now (on the crawl's thread); read and diff them later (worker)."""
        two = archive.last_two(url) if isinstance(archive, WarcArchive) else []

        def later() -> tuple[str, str]:
            if isinstance(archive, WarcArchive):
                if len(two) < 2:
                    return "", ""
                old, new = (payload_at(archive.directory, name, offset) for name, offset in two)
                text, added, removed = diff_bodies(old, new, "text", f"{url} before",
                                                   f"{url} {warc_date(out.started_at)}")
            elif latest_dir:
                d = latest_diff(latest_dir, url)
                text, added, removed = d["diff"], d["added"], d["removed"]
            else:
                return f"{out.n_bytes:,} bytes now", ""
            return f"{added} line(s) added, {removed} removed", text

        return later

    return ChangeNotifier(targets, per_page, describe=describe)


def _latest(directory: str):
    """Open :class:`LatestCopies` in `directory`; a one-line error when it cannot be written."""
    from freshcrawl.archive.latest import LatestCopies
    from freshcrawl.errors import ArchiveError

    try:
        return LatestCopies(directory).open()
    except ArchiveError as err:
        raise click.ClickException(str(err)) from err


def _client_tls(frontier_url: str, tls_ca: str | None, tls_cert: str | None, tls_key: str | None):
    """The ClientTLS of ``crawl run --frontier grpcs://`` (None for grpc://).

    UsageError if options are missing or misplaced, or a file is broken (one line naming it).
    """
    from freshcrawl.errors import TLSFileError
    from freshcrawl.service.grpc_client import frontier_url_tls
    from freshcrawl.service.tls import ClientTLS

    options = (("--tls-ca", tls_ca), ("--tls-cert", tls_cert), ("--tls-key", tls_key))
    given = [name for name, value in options if value]
    if not frontier_url_tls(frontier_url):
        if given:
            verb = "go" if len(given) > 1 else "goes"
            raise click.UsageError(
                f"{', '.join(given)} {verb} with a TLS frontier: --frontier grpcs://HOST:PORT")
        return None
    if (tls_cert is None) != (tls_key is None):
        raise click.UsageError("--tls-cert and --tls-key go together: give both")
    try:
        return ClientTLS(tls_ca, tls_cert, tls_key)
    except TLSFileError as err:
        raise click.UsageError(str(err)) from err


def _run_remote(frontier_url: str, crawl_id: str | None, *, signature: str, duration: float | None,
                user_agent: str | None, contact_url: str | None, max_in_flight: int,
                timeout_s: float,
                tls_files: tuple[str | None, str | None, str | None] = (None, None, None),
                allow_private: bool = False, archive=None, notifier=None) -> None:
    """``crawl run --frontier``: the crawl loop against a :class:`RemoteFrontier` ($FRESHCRAWL_TOKEN: its token)."""
    import asyncio
    import os

    from freshcrawl.crawler.fetcher import Fetcher
    from freshcrawl.service.grpc_client import FrontierConnectError, RemoteFrontier

    total_timeout_s = max(60.0, 2 * timeout_s)
    try:
        tls = _client_tls(frontier_url, *tls_files)
        # a visit stays leased to this process for longer than it can take
        frontier = RemoteFrontier(frontier_url, crawl_id, lease_s=total_timeout_s + 30.0,
                                  token=os.environ.get("FRESHCRAWL_TOKEN", "").strip() or None,
                                  tls=tls)
    except ValueError as err:
        raise click.BadParameter(str(err), param_hint="--frontier") from err
    try:
        frontier.check()  # a certificate or credential failure: one line, before any fetch
    except FrontierConnectError as err:
        frontier.close()
        raise click.ClickException(str(err)) from err
    progress = _RemoteProgress(frontier)
    if notifier is not None:
        from freshcrawl.archive.notify import NotifyingFrontier

        frontier = NotifyingFrontier(frontier, notifier)

    fetcher = Fetcher(user_agent=user_agent, contact_url=contact_url, signature=signature,
                      read_timeout_s=timeout_s, total_timeout_s=total_timeout_s,
                      allow_private=allow_private, keep_copy=archive is not None)
    import grpc

    try:
        asyncio.run(_crawl_until_stopped(frontier, fetcher, duration, max_in_flight, progress,
                                         archive))
    except grpc.RpcError as err:
        why = frontier.explain(err)
        raise click.ClickException(
            why or f"frontier {frontier.address}: {err.code().name}: {err.details()}") from err
    finally:
        if notifier is not None:
            notifier.close()
        frontier.close()


async def _crawl_until_stopped(frontier, fetcher, duration, max_in_flight, progress,
                               archive=None, **options) -> None:
    """The crawl loop until ``--for`` elapses or SIGINT/SIGTERM; the visits in flight finish first.

    With an archive, its current WARC file is closed (renamed, indexed) at the end, also after an
    archive error (then with the records it holds).
    """
    import asyncio
    import signal

    from freshcrawl.crawler.loop import crawl as crawl_loop
    from freshcrawl.errors import ArchiveError

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    try:
        async with fetcher:
            stats = await crawl_loop(frontier, fetcher, duration_s=duration, max_in_flight=max_in_flight,
                                     stop=stop, on_progress=progress.update, archive=archive,
                                     **options)
    except ArchiveError as err:
        raise click.ClickException(
            f"{err}; the crawl stopped (visits without a record were not committed)") from err
    finally:
        if archive is not None:
            try:
                archive.close()
            except ArchiveError as err:
                click.echo(f"Error: {err}", err=True)
    progress.done(stats)


class _Progress:
    """The live progress line: visits, changes, errors, budget in use, what is due."""

    def __init__(self, frontier) -> None:
        self.frontier = frontier
        self.tty = sys.stderr.isatty()
        self.last_line = 0.0

    def line(self, stats) -> str:
        f = self.frontier
        outages = (f"  database outages {stats.outages} ({stats.outage_s:,.0f}s, {stats.pending} waiting)"
                   if stats.outages else "")
        return (f"{stats.elapsed_s:7.1f}s  visits {stats.visits:,}  changes {stats.changes:,}  "
                f"errors {stats.errors:,}  robots {stats.robots:,}  budget in use "
                f"{f.budget_in_use():,.0f}/{f.settings.budget:,.0f} per day  due {f.n_due():,}" + outages)

    def update(self, stats) -> None:
        if self.tty:
            click.echo("\r" + self.line(stats) + "\033[K", nl=False, err=True)
        elif time.monotonic() - self.last_line >= 10.0:
            click.echo(self.line(stats), err=True)
            self.last_line = time.monotonic()

    def done(self, stats) -> None:
        if self.tty:
            click.echo("", err=True)
        click.echo(self.line(stats), err=True)


class _RemoteProgress(_Progress):
    """The progress line of a fetcher working for a remote frontier."""

    def line(self, stats) -> str:
        c = self.frontier.counts
        return (f"{stats.elapsed_s:7.1f}s  visits {stats.visits:,}  changes {stats.changes:,}  "
                f"errors {stats.errors:,}  robots {stats.robots:,}  reports refused {c['refused']:,}  "
                f"(frontier {self.frontier.address})")


def _fmt_time(t: float | None) -> str:
    if t is None or (isinstance(t, float) and not math.isfinite(t)):
        return "-"
    return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(t)) + " UTC"


@crawl.command("status")
@_db_option
@click.option("--json", "as_json", is_flag=True, help="Print the status as JSON.")
def status(db: str, as_json: bool) -> None:
    """Pages, hosts, estimated freshness, what is due, errors."""
    from freshcrawl.frontier.report import crawl_status

    store = _open(db)
    try:
        st = crawl_status(store)
    finally:
        store.close()
    if as_json:
        click.echo(json.dumps(st, indent=2))
        return
    fresh = "-" if st["estimated_freshness"] is None else f"{st['estimated_freshness']:.3f}"
    click.echo(f"pages: {st['n_pages']:,} ({', '.join(f'{k} {v:,}' for k, v in sorted(st['pages'].items()))})")
    click.echo(f"hosts: {st['hosts']:,} ({st['hosts_in_backoff']} in back-off)")
    obs = ", ".join(f"{k} {v:,}" for k, v in sorted(st["observations"].items())) or "none"
    click.echo(f"visits: {obs}")
    click.echo(f"estimated freshness: {fresh} (periodic visits at the planned rates, Δ̂ of each page)")
    budget = st["budget"]
    click.echo(f"budget: {st['budget_in_use']:,.1f} of {budget:,.1f} visits/day planned" if budget else "budget: -")
    click.echo(f"due now: {st['due_now']:,}; planned at {_fmt_time(st['planned_at'])}")
    for f in st["failed_pages"]:
        click.echo(f"failed: {f['url']} ({f['last_error']}, {f['errors_in_a_row']} in a row)")
    for text in st.get("warnings", ()):
        click.echo(f"warning: {text}")
    ann = st.get("announcements") or {}
    for src in ann.get("sources", ()):
        cut = " (cut at the protocol's limit)" if src["truncated"] else ""
        click.echo(f"source: {src['url']} [{src['kind']}, {src['how']}] read {_fmt_time(src['read_at'])}: "
                   f"{src['why'] or 'not read yet'}{cut}")
    for t in ann.get("trust", ()):
        click.echo(f"trust: {t['source']} on {t['origin']}: {t['state']} ({t['reason']})")


@crawl.command("explain")
@click.argument("url")
@_db_option
@click.option("--json", "as_json", is_flag=True, help="Print the explanation as JSON.")
def explain(url: str, db: str, as_json: bool) -> None:
    """Why URL is visited as it is: observations, Δ̂, rate, next visit and what limits it."""
    from freshcrawl.frontier.report import explain_page

    store = _open(db)
    try:
        ex = explain_page(store, url)
    except KeyError as err:
        raise click.ClickException(str(err.args[0])) from err
    except ValueError as err:
        raise click.BadParameter(str(err), param_hint="URL") from err
    finally:
        store.close()
    if as_json:
        click.echo(json.dumps(ex, indent=2))
        return
    lo, hi = ex["delta_interval"]
    dh = "-" if ex["delta_hat"] is None else f"{ex['delta_hat']:.4g}"
    click.echo(f"{ex['url']}  [{ex['status']}, weight {ex['weight']:g}]")
    click.echo(f"observations: {ex['n_observations']} ({ex['n_changes']} changed)")
    if ex["n_observations"]:
        click.echo(f"Δ̂ = {dh} changes/day, 95% interval [{lo:.4g}, {hi:.4g}]")
    else:
        click.echo("Δ̂: no observation yet (the page is visited at the default rate)")
    post = ex.get("rate_posterior")
    if post is not None:
        plo, phi = post["interval"]
        click.echo(f"posterior: Δ = {post['mean']:.4g} ± {post['sd']:.4g} changes/day, 90% [{plo:.4g}, {phi:.4g}]; "
                   f"host prior {post['prior_mean']:.4g} ± {post['prior_sd']:.4g}; learned {100 * post['learned']:.0f}%"
                   + (" (still being learned)" if post["learning"] else ""))
        click.echo(f"plan: {post['summary']}")
    click.echo(f"rate: {ex['rate']:.4g} visits/day; next visit {_fmt_time(ex['next_due'])}")
    lim = ex["limits"]
    hc = lim["host_cap"]
    click.echo(f"budget: {lim['budget']['budget']} visits/day shared by policy {lim['budget']['policy']}")
    click.echo(f"host cap: {hc['host']} delay {hc['delay_s']:g}s -> at most {hc['cap_per_day']:,.0f}/day; "
               f"the host's pages take {hc['host_rate_per_day']:,.1f}/day" + (" (binding)" if hc["binding"] else ""))
    if lim["backoff"]["active"]:
        click.echo(f"back-off: host paused until {_fmt_time(lim['backoff']['until'])}")
    if lim["robots"]["disallowed"]:
        click.echo("robots.txt: this page is disallowed and not fetched")
    er = lim["errors"]
    if er["total"]:
        click.echo(f"errors: {er['in_a_row']} in a row, {er['total']} in all, last {er['last']}"
                   + (" (failed: no longer visited)" if er["failed"] else ""))
    ann = ex.get("announcements") or {}
    if ann.get("sources"):
        kind = "completely observed" if ann["completely_observed"] else "observed at visits only"
        click.echo(f"announcements: {kind}")
        for t in ann["sources"]:
            click.echo(f"  {t['source']}: {t['state']} ({t['reason']})")
        for a in ann["recent"][:5]:
            note = f" [{a['note']}]" if a["note"] else ""
            click.echo(f"  announced change at {_fmt_time(a['changed_at'])} (read {_fmt_time(a['received_at'])}){note}")
    for o in ex["observations"][:10]:
        tau = "" if o["tau_days"] is None else f" τ={o['tau_days'] * 86400:.1f}s"
        click.echo(f"  {_fmt_time(o['time'])}  {o['outcome']:<9} {o['why']}{tau}")


@crawl.command("export")
@_db_option
@click.option("--out", required=True, type=click.Path(dir_okay=False, path_type=Path),
              help="CSV file (page,time,changed), the format 'freshcrawl estimate' reads.")
def export(db: str, out: Path) -> None:
    """Write the visit log as CSV (page,time,changed) for 'freshcrawl estimate'."""
    import os
    import tempfile

    store = _open(db)
    fd, tmp = tempfile.mkstemp(dir=out.parent if str(out.parent) else ".", prefix=f".{out.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            n = store.export_csv(fh)
        os.replace(tmp, out)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    finally:
        store.close()
    click.echo(f"wrote {n:,} visits to {out}")


def _page_url(url: str) -> str:
    from freshcrawl.crawler.urls import normalize_url

    try:
        return normalize_url(url)
    except ValueError as err:
        raise click.BadParameter(str(err), param_hint="URL") from err


@crawl.command("history")
@click.argument("url")
@_db_option
@click.option("--warc", "warc_dir", default=None, metavar="DIR",
              help="The WARC directory (default: the crawl's --warc setting).")
@click.option("--json", "as_json", is_flag=True, help="Print the captures as JSON.")
def history(url: str, db: str, warc_dir: str | None, as_json: bool) -> None:
    """URL's captures in the WARC files: time, status, changed, payload digest, file and offset."""
    from freshcrawl.archive.history import page_history

    key = _page_url(url)
    store = _open(db)
    try:
        hist = page_history(store, key, warc_dir)
    except (KeyError, LookupError, FileNotFoundError) as err:
        raise click.ClickException(str(err.args[0]) if err.args else str(err)) from err
    finally:
        store.close()
    if as_json:
        click.echo(json.dumps(hist, indent=2))
        return
    caps = hist["captures"]
    click.echo(f"{key}: {len(caps)} capture(s) in {hist['warc']}")
    for c in caps:
        changed = {None: "-", True: "changed", False: "unchanged"}[c["changed"]]
        if c["outcome"] == "first":
            changed = "first"
        kind = c["kind"] if c["profile"] is None else c["profile"].rsplit("/", 1)[-1]
        click.echo(f"  {c['date']}  {c['status'] or '-':>3}  {changed:<9}  {kind:<26}  "
                   f"{c['digest']}  {c['filename']}:{c['offset']}")


@crawl.command("diff")
@click.argument("url")
@_db_option
@click.option("--at", "at", default=None, metavar="TIME",
              help="Compare the capture at or before TIME (ISO 8601, UTC unless a zone is "
              "given, or seconds since the epoch) with the one before it; default: the latest.")
@click.option("--text/--raw", "text", default=True,
              help="Diff the main text (default, a line per paragraph) or the raw decoded body.")
@click.option("--warc", "warc_dir", default=None, metavar="DIR",
              help="The WARC directory (default: the crawl's --warc setting).")
@click.option("--json", "as_json", is_flag=True, help="Print the diff and both captures as JSON.")
def diff(url: str, db: str, at: str | None, text: bool, warc_dir: str | None,
         as_json: bool) -> None:
    """The change between two captures of URL, as a unified diff read from the WARC files."""
    from freshcrawl.archive.history import latest_diff, page_diff, warc_directory

    key = _page_url(url)
    when = None if at is None else _parse_at(at)
    mode = "text" if text else "raw"
    store = _open(db)
    try:
        if store.page_by_url(key) is None:
            raise click.ClickException(f"{key} is not in this crawl")
        latest = (store.settings().get("settings") or {}).get("keep_latest")
        if warc_dir is None and latest:  # --keep-latest keeps the current copy and the one before
            if when is not None:
                raise click.UsageError(
                    "--at needs WARC files; --keep-latest keeps only the last change")
            result = latest_diff(latest, key, mode=mode)
        else:
            result = page_diff(warc_dir or warc_directory(store), key, at=when, mode=mode).to_dict()
    except (LookupError, FileNotFoundError, ValueError) as err:
        raise click.ClickException(str(err)) from err
    finally:
        store.close()
    if as_json:
        click.echo(json.dumps(result, indent=2))
        return
    if not result["diff"]:
        click.echo(f"no difference in the {mode} between the two copies")
        return
    click.echo(result["diff"], nl=False)


def _parse_at(value: str) -> float:
    """Seconds since the epoch of ``--at``: a number, or an ISO 8601 time (UTC without a zone)."""
    import datetime

    try:
        return float(value)
    except ValueError:
        pass
    try:
        when = datetime.datetime.fromisoformat(value)
    except ValueError as err:
        raise click.BadParameter(f"expected ISO 8601 time or epoch seconds; got {value!r}",
                                 param_hint="--at") from err
    if when.tzinfo is None:
        when = when.replace(tzinfo=datetime.UTC)
    return when.timestamp()
