"""``freshcrawl test-web``: serve a test web on loopback to rehearse a crawl against.

Prints the hosts, writes the page URLs (one per line), serves until Ctrl-C or ``--for`` elapses, then
prints how many requests came and the crawl's exact mean freshness over the run.
"""

from __future__ import annotations

import time
from pathlib import Path

import click

from freshcrawl.cli._options import duration_option

__all__ = ["parse_rates", "test_web"]


def parse_rates(text: str) -> tuple[float, float]:
    """Parse ``"LO:HI"`` (changes per second) into a pair with ``0 < LO <= HI``.

    Raises
    ------
    ValueError
        If it is not two numbers separated by ``:`` with ``0 < LO <= HI``.

    Examples
    --------
    >>> parse_rates("0.001:0.1")
    (0.001, 0.1)
    """
    lo_text, sep, hi_text = text.partition(":")
    try:
        lo, hi = float(lo_text), float(hi_text if sep else lo_text)
    except ValueError as err:
        raise ValueError(
            f"rates must be LO:HI changes per second, e.g. 0.001:0.1; got {text!r}"
        ) from err
    if not (0 < lo <= hi < float("inf")):
        raise ValueError(f"rates must have 0 < LO <= HI changes per second; got {text!r}")
    return lo, hi


def _rates(ctx, param, value):
    try:
        return parse_rates(value)
    except ValueError as err:
        raise click.BadParameter(str(err), ctx=ctx, param=param) from err


@click.command("test-web")
@click.option("--pages", "n_pages", type=click.IntRange(1, 1_000_000), default=300, show_default=True,
              help="Number of pages.")
@click.option("--hosts", "n_hosts", type=click.IntRange(1, 253), default=6, show_default=True,
              help="Number of hosts (127.0.0.2, 127.0.0.3, ...).")
@click.option("--rates", default="0.001:0.1", show_default=True, metavar="LO:HI", callback=_rates,
              help="Change rates in changes per SECOND, log-uniform over [LO, HI].")
@click.option("--seed", type=click.IntRange(0), default=0, show_default=True,
              help="Seed of the rates, change times and texts.")
@click.option("--urls-out", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Write the page URLs here, one per line (default: print them).")
@click.option("--log", "log_path", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Append every request to this JSONL file.")
@duration_option("--for", "duration", help="Stop after this long (90, 30s, 10m, 1h); default: until Ctrl-C.")
@click.option("--crawl-delay", type=click.FloatRange(0, min_open=True), default=None,
              help="Crawl-delay (seconds) every host's robots.txt announces.")
def test_web(n_pages, n_hosts, rates, seed, urls_out, log_path, duration, crawl_delay) -> None:
    """Serve a test web on loopback: pages that change at known rates, to rehearse a crawl.

    Pages change as Poisson processes with rates in changes per second (so a short run sees many
    changes) and answer conditional requests. On exit it prints the crawl's exact mean freshness.
    """
    from freshcrawl.testing import HostSpec, TestWeb, make_pages

    if n_pages < n_hosts:
        raise click.BadParameter(
            f"need at least one page per host; got {n_pages} pages for {n_hosts} hosts",
            param_hint="--pages",
        )
    pages = make_pages(n_pages, n_hosts, rates, seed=seed)
    hosts = [HostSpec(crawl_delay=crawl_delay) for _ in range(n_hosts)]
    web = TestWeb(pages, hosts, seed=seed, log_path=log_path)
    web.start()
    try:
        click.echo(
            f"test web: {n_pages} pages on {n_hosts} hosts, rates {rates[0]:g}..{rates[1]:g} "
            f"changes/s, seed {seed}"
        )
        for h in web.hosts:
            click.echo(f"  {h.origin}  ({sum(p.host == h.name for p in web.pages)} pages)")
        urls = web.urls()
        if urls_out is not None:
            urls_out.write_text("".join(u + "\n" for u in urls), encoding="utf-8")
            click.echo(f"wrote {len(urls)} URLs to {urls_out}")
        else:
            for u in urls:
                click.echo(u)
        if log_path is not None:
            click.echo(f"logging requests to {log_path}")
        until = "Ctrl-C" if duration is None else f"{duration:g} s have passed (or Ctrl-C)"
        click.echo(f"serving until {until}")
        deadline = float("inf") if duration is None else time.monotonic() + duration
        try:
            while time.monotonic() < deadline:
                time.sleep(min(0.5, max(deadline - time.monotonic(), 0.0)))
        except KeyboardInterrupt:
            click.echo("interrupted")
    finally:
        web.stop()
    n = len(web.requests())
    if (
        web.stopped_at is not None
        and web.started_at is not None
        and web.stopped_at > web.started_at
    ):
        report = web.freshness()
        click.echo(
            f"served {n} requests; mean freshness of the crawl over the run: {report.mean:.4f}"
        )
    else:  # pragma: no cover - a clock that did not move
        click.echo(f"served {n} requests")
