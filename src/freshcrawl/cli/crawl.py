"""``freshcrawl crawl``: keep real URLs fresh, politely, with the crawl state in a database.

Subcommands: ``add`` (URLs from a file), ``run`` (the crawl loop), ``status``, ``explain`` (one page),
``export`` (the visit log for ``freshcrawl estimate``).
"""

from __future__ import annotations

import json
import math
import sys
import time
from pathlib import Path

import click

from freshcrawl.cli._options import budget_option, duration_option

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


@crawl.command("add")
@_db_option
@click.argument("urls_file", type=click.File("r", encoding="utf-8"))
def add(db: str, urls_file) -> None:
    """Add the URLs of URLS_FILE (one per line, optional weight; '-' reads standard input).

    A file with any bad line is refused whole, with the line numbers; URLs already in the crawl are
    skipped.
    """
    from freshcrawl.frontier import parse_url_list

    source = "<stdin>" if urls_file.name == "<stdin>" else urls_file.name
    try:
        rows = parse_url_list(urls_file.read().splitlines(), source=source)
    except ValueError as err:
        raise click.ClickException(str(err)) from err
    store = _open(db, create=True)
    try:
        ids, n_known = store.add_pages(rows, now=time.time())
        n_hosts = store.counts()["hosts"]
    finally:
        store.close()
    click.echo(f"added {len(ids)} page(s) ({n_known} already in the crawl); {n_hosts} host(s) in all")


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


@crawl.command("run")
@click.option("--db", default=None, metavar="FILE|URL",
              help=_DB_HELP + " Required unless --frontier is given.")
@budget_option(required=False, help="Visits per day over all pages, e.g. 2000/day or 5/s (kept for later runs).")
@click.option("--policy", default=None, help="learned (default), uniform, nutch, stormcrawler, heritrix, ...")
@click.option("--objective", default=None, help="Allocation objective of the learned policy.")
@click.option("--signature", type=click.Choice(["raw", "text"]), default=None,
              help="raw: any byte of the body; text: the page's main text only.")
@duration_option("--for", "duration", help="Stop after this long (90s, 30m, 1h); default: until SIGINT/SIGTERM.")
@duration_option("--replan-every", help="Time between two plans (default 1h).")
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
              help="Fetch for a remote frontier (grpc://HOST:PORT, a 'freshcrawl serve' or any freshcrawl "
              "URLFrontier server): it plans, this process fetches; several processes may share it. "
              "$FRESHCRAWL_TOKEN is sent as its token.")
@click.option("--crawl-id", default=None, help="With --frontier: the crawl ID (default: the server's default crawl).")
@duration_option("--db-give-up", "db_give_up",
                 help="Stop after the database has been unreachable this long (default 10m); fetching "
                 "pauses meanwhile.")
def run(db, budget, policy, objective, signature, duration, replan_every, min_delay, max_per_host_day,
        user_agent, contact_url, max_in_flight, timeout_s, seed, frontier_url, crawl_id, db_give_up) -> None:
    """Crawl: fetch due pages, learn their change rates, re-plan, until --for elapses or a signal.

    With --frontier, fetch the visits a remote frontier hands out and report their outcomes to it;
    --db and the plan's settings (--budget, --policy, ...) are then the server's, not given here.
    """
    import asyncio

    from freshcrawl.crawler.fetcher import Fetcher
    from freshcrawl.frontier import Frontier

    if frontier_url is not None:
        plan_options = dict(db=db, budget=budget, policy=policy, objective=objective, replan_every=replan_every,
                            min_delay=min_delay, max_per_host_day=max_per_host_day, seed=seed,
                            db_give_up=db_give_up)
        given = [f"--{k.replace('_', '-')}" for k, v in plan_options.items() if v is not None]
        if given:
            raise click.UsageError(f"{', '.join(given)}: the remote frontier's settings; not given with --frontier")
        _run_remote(frontier_url, crawl_id, signature=signature or "raw", duration=duration,
                    user_agent=user_agent, contact_url=contact_url, max_in_flight=max_in_flight,
                    timeout_s=timeout_s)
        return
    if db is None:
        raise click.UsageError("Missing option '--db' (needed unless --frontier is given).")
    if crawl_id is not None:
        raise click.UsageError("--crawl-id goes with --frontier")
    from freshcrawl.errors import DatabaseInUseError, DatabaseUnavailableError
    from freshcrawl.service.writer import acquire_writer_lock

    store = _open(db, create=False)
    try:  # one writer per crawl database: not beside a `serve` or another `crawl run` on it
        lock = acquire_writer_lock(db)
    except (DatabaseInUseError, DatabaseUnavailableError) as err:
        store.close()
        raise click.ClickException(str(err)) from err
    store.guard = lock.ensure  # a new connection (after an outage) first checks the writer lock
    settings = _settings(store, dict(
        budget=budget, policy=policy, objective=objective, signature=signature, replan_every_s=replan_every,
        min_delay_s=min_delay, max_per_host_day=max_per_host_day, user_agent=user_agent,
        contact_url=contact_url, seed=seed, db_give_up_s=db_give_up,
    ))
    try:
        frontier = Frontier(store, settings)
    except ValueError as err:
        lock.release()
        store.close()
        raise click.UsageError(str(err)) from err
    progress = _Progress(frontier)

    fetcher = Fetcher(user_agent=settings.user_agent, contact_url=settings.contact_url,
                      signature=settings.signature, read_timeout_s=timeout_s,
                      total_timeout_s=max(60.0, 2 * timeout_s))
    try:
        asyncio.run(_crawl_until_stopped(frontier, fetcher, duration, max_in_flight, progress,
                                         give_up_s=settings.db_give_up_s, watchdog=lock.ensure))
    finally:
        store.close()
        lock.release()


def _run_remote(frontier_url: str, crawl_id: str | None, *, signature: str, duration: float | None,
                user_agent: str | None, contact_url: str | None, max_in_flight: int, timeout_s: float) -> None:
    """``crawl run --frontier``: the crawl loop against a :class:`RemoteFrontier` ($FRESHCRAWL_TOKEN: its token)."""
    import asyncio
    import os

    from freshcrawl.crawler.fetcher import Fetcher
    from freshcrawl.service.grpc_client import RemoteFrontier

    total_timeout_s = max(60.0, 2 * timeout_s)
    try:
        # a visit stays leased to this process for longer than it can take
        frontier = RemoteFrontier(frontier_url, crawl_id, lease_s=total_timeout_s + 30.0,
                                  token=os.environ.get("FRESHCRAWL_TOKEN", "").strip() or None)
    except ValueError as err:
        raise click.BadParameter(str(err), param_hint="--frontier") from err
    progress = _RemoteProgress(frontier)

    fetcher = Fetcher(user_agent=user_agent, contact_url=contact_url, signature=signature,
                      read_timeout_s=timeout_s, total_timeout_s=total_timeout_s)
    import grpc

    try:
        asyncio.run(_crawl_until_stopped(frontier, fetcher, duration, max_in_flight, progress))
    except grpc.RpcError as err:
        raise click.ClickException(f"frontier {frontier.address}: {err.code().name}: {err.details()}") from err
    finally:
        frontier.close()


async def _crawl_until_stopped(frontier, fetcher, duration, max_in_flight, progress, **options) -> None:
    """The crawl loop until ``--for`` elapses or SIGINT/SIGTERM; the visits in flight finish first."""
    import asyncio
    import signal

    from freshcrawl.crawler.loop import crawl as crawl_loop

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    async with fetcher:
        stats = await crawl_loop(frontier, fetcher, duration_s=duration, max_in_flight=max_in_flight,
                                 stop=stop, on_progress=progress.update, **options)
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
