"""``freshcrawl serve``: the frontier of a crawl database for other crawlers, over REST and gRPC.

One process serves both APIs (uvicorn for HTTP, the gRPC server in its own threads) from one
:class:`~freshcrawl.service.FrontierService`, re-plans every crawl in a background thread, and is
the only writer of its database: a second serve process on the same database is refused
(:mod:`freshcrawl.service.writer`). SIGINT or SIGTERM stops both servers, then releases the database.

During a database outage the process keeps running: calls answer 503 (REST) or UNAVAILABLE (gRPC),
one line reports the outage and one its end, and the writer lock is taken again when the database
is back. If another process took the lock meanwhile, this one stops with a one-line error.
"""

from __future__ import annotations

import ipaddress
import os
import sys
import threading
import time
from pathlib import Path

import click

from freshcrawl.cli._options import budget_option, duration_option

__all__ = ["serve", "parse_address", "is_loopback"]


def parse_address(text: str, *, name: str) -> tuple[str, int]:
    """``"127.0.0.1:8080"`` or ``"[::1]:8080"`` -> (host, port).

    Raises
    ------
    ValueError
        If the text is not ``host:port`` with a port in 0-65535.

    Examples
    --------
    >>> parse_address("127.0.0.1:8080", name="--http"), parse_address("[::1]:7071", name="--grpc")
    (('127.0.0.1', 8080), ('::1', 7071))
    """
    host, sep, port = str(text).rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ValueError(f"{name} must be HOST:PORT with a port in 0-65535; got {text!r}")
    return host.strip("[]"), int(port)


def is_loopback(host: str) -> bool:
    """Whether ``host`` is a loopback address (127.0.0.0/8, ::1 or ``localhost``).

    Examples
    --------
    >>> is_loopback("127.0.0.2"), is_loopback("localhost"), is_loopback("0.0.0.0")
    (True, True, False)
    """
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _server_class():
    """uvicorn's Server, stopping on SIGINT/SIGTERM without re-raising the signal afterwards.

    uvicorn re-raises a captured signal once it has shut down, which would kill the process before
    the gRPC server is stopped and the database released; this one returns from ``run`` instead.
    """
    import contextlib
    import signal

    import uvicorn

    class Server(uvicorn.Server):
        @contextlib.contextmanager
        def capture_signals(self):
            if threading.current_thread() is not threading.main_thread():
                yield
                return
            old = {sig: signal.signal(sig, self.handle_exit) for sig in (signal.SIGINT, signal.SIGTERM)}
            try:
                yield
            finally:
                for sig, handler in old.items():
                    signal.signal(sig, handler)

    return Server


def _read_token(token_file: str | None) -> str | None:
    if token_file is not None:
        try:
            token = Path(token_file).read_text(encoding="utf-8").strip()
        except OSError as err:
            raise click.BadParameter(f"cannot read the token file: {err}", param_hint="--token-file") from err
        if not token:
            raise click.BadParameter(f"the token file {token_file} is empty", param_hint="--token-file")
        return token
    token = os.environ.get("FRESHCRAWL_TOKEN", "").strip()
    return token or None


@click.command("serve")
@click.option("--db", required=True, metavar="FILE|URL",
              help="Crawl database: a SQLite file or a postgresql+psycopg:// URL (created on first use).")
@click.option("--http", "http_address", default="127.0.0.1:8080", show_default=True, metavar="HOST:PORT",
              help="Address of the REST API, metrics and dashboard.")
@click.option("--grpc", "grpc_address", default="127.0.0.1:7071", show_default=True, metavar="HOST:PORT",
              help="Address of the gRPC (URLFrontier) API; '' turns it off.")
@click.option("--no-grpc", is_flag=True, help="Serve REST only.")
@click.option("--token-file", type=click.Path(dir_okay=False), default=None,
              help="File holding the API token every write needs (default: $FRESHCRAWL_TOKEN).")
@click.option("--private-reads", is_flag=True, help="Reads (status, explain, metrics, ...) need the token too.")
@budget_option(required=False,
               help="Visits per day over all pages, e.g. 10000/day (kept for later runs; needed the first time).")
@click.option("--policy", default=None, help="learned (default), uniform, nutch, ...")
@duration_option("--min-delay", zero=True,
                 help="Least time between two requests to one host (default 1s; Crawl-delay raises it).")
@duration_option("--replan-every", help="Time between two plans (default 1h).")
def serve(db, http_address, grpc_address, no_grpc, token_file, private_reads, budget, policy, min_delay,
          replan_every) -> None:
    """Serve a crawl database's frontier to crawlers: REST (and gRPC) in one process, one per database.

    Workers add URLs, lease due visits and report what they gave; freshcrawl learns the change rates
    and plans the visits. The dashboard is at http://HOST:PORT/, the OpenAPI document at /openapi.json.
    """
    import uvicorn

    from freshcrawl.errors import DatabaseInUseError, DatabaseUnavailableError, WriterLockLostError
    from freshcrawl.frontier import CrawlSettings
    from freshcrawl.service import FrontierService
    from freshcrawl.service.rest import create_app
    from freshcrawl.service.writer import acquire_writer_lock
    from freshcrawl.store import open_store

    token = _read_token(token_file)
    try:
        http_host, http_port = parse_address(http_address, name="--http")
        grpc = None if no_grpc or not grpc_address else parse_address(grpc_address, name="--grpc")
    except ValueError as err:
        raise click.UsageError(str(err)) from err
    for flag, host in (("--http", http_host), ("--grpc", None if grpc is None else grpc[0])):
        if host is not None and not is_loopback(host) and token is None:
            raise click.UsageError(f"{flag} {host} is not a loopback address: give a token (--token-file or "
                                   "FRESHCRAWL_TOKEN) before serving other machines")
    if private_reads and token is None:
        raise click.UsageError("--private-reads needs a token (--token-file or FRESHCRAWL_TOKEN)")
    serve_grpc = None
    if grpc is not None:
        try:
            from freshcrawl.service.grpc_server import serve_grpc
        except ImportError as err:
            raise click.ClickException(
                f"the gRPC server is not available in this installation ({err}); run with --no-grpc"
            ) from err

    try:
        lock = acquire_writer_lock(db)
    except (DatabaseInUseError, DatabaseUnavailableError, ValueError) as err:  # one line, no usage text
        raise click.ClickException(str(err)) from err
    grpc_server = None
    stop = threading.Event()
    lost: list[WriterLockLostError] = []
    try:
        store = open_store(db, create=True, guard=lock.ensure)
        try:
            values = dict(store.settings().get("settings") or {})
        finally:
            store.close()
        given = dict(budget=budget, policy=policy, min_delay_s=min_delay, replan_every_s=replan_every)
        values.update({k: v for k, v in given.items() if v is not None})
        if "budget" not in values:
            raise click.UsageError("the first run of a crawl needs --budget (e.g. --budget 10000/day)")
        try:
            service = FrontierService(db, CrawlSettings.from_dict(values), guard=lock.ensure)
        except ValueError as err:
            raise click.UsageError(str(err)) from err
        app = create_app(service, token=token, public_reads=not private_reads)
        if serve_grpc is not None:
            try:
                grpc_server = serve_grpc(service, f"{grpc[0]}:{grpc[1]}", token=token)
            except RuntimeError as err:
                raise click.ClickException(f"could not serve gRPC: {err}") from err

        def replan_loop() -> None:
            """Re-plan due crawls (and sample the freshness history after each plan) until stopped."""
            history = app.state.history
            history.sample()
            while not stop.wait(min(10.0, service.settings.replan_every_s)):
                try:
                    if service.replan_all():
                        history.sample()
                except (DatabaseUnavailableError, WriterLockLostError):
                    pass  # the watchdog reports outages; the previous plan keeps serving
                except Exception as err:  # keep serving; the next round tries again
                    click.echo(f"re-plan failed: {err!r}", err=True)

        servers: list = []

        def watchdog() -> None:
            """Check the writer lock every second (taking it again after an outage); report outages.

            One line when the database stops answering, one when it is back; a lock taken by another
            process meanwhile stops this one.
            """
            down_since = None
            while not stop.wait(1.0):
                try:
                    lock.ensure()
                except WriterLockLostError as err:
                    lost.append(err)
                    for server_ in servers:
                        server_.should_exit = True
                    return
                except DatabaseUnavailableError as err:
                    if down_since is None:
                        down_since = time.monotonic()
                        click.echo(f"database outage: {err}; answering 503 (REST) and UNAVAILABLE (gRPC) "
                                   "until it is back", err=True)
                    continue
                if down_since is not None:
                    click.echo(f"database back after {time.monotonic() - down_since:.1f} s; the writer lock "
                               "is held again", err=True)
                    down_since = None

        planner = threading.Thread(target=replan_loop, name="freshcrawl-replan", daemon=True)
        planner.start()
        where = f"http://{http_host}:{http_port}/"
        click.echo(f"serving {db}: REST, metrics and dashboard on {where}"
                   + (f", gRPC on {grpc[0]}:{grpc[1]}" if grpc_server is not None else "")
                   + ("" if token else " (no token: writes open to this machine only)"), err=True)
        server = _server_class()(uvicorn.Config(app, host=http_host, port=http_port, log_level="warning",
                                               access_log=False, lifespan="off"))
        servers.append(server)
        threading.Thread(target=watchdog, name="freshcrawl-writer-lock", daemon=True).start()
        server.run()  # returns after SIGINT or SIGTERM, or at once if the port is taken
        if lost:
            raise click.ClickException(str(lost[0]))
        if not server.started:
            raise click.ClickException(f"could not serve HTTP on {http_host}:{http_port}")
    finally:
        stop.set()
        if grpc_server is not None:
            grpc_server.stop(grace=5.0).wait()
        if "service" in locals():
            with service.lock:
                service.close()
        lock.release()
    click.echo("stopped", err=True)
    sys.stdout.flush()
