"""``freshcrawl serve``: the frontier of a crawl database for other crawlers, over REST and gRPC.

One process serves both APIs (uvicorn for HTTP, the gRPC server in its own threads) from one
:class:`~freshcrawl.service.FrontierService`, re-plans every crawl in a background thread, and is
the only writer of its database: a second serve process on the same database is refused
(:mod:`freshcrawl.store.writer`). SIGINT or SIGTERM stops both servers, then releases the database.

With ``--tls-cert`` and ``--tls-key`` both ports speak TLS (:mod:`freshcrawl.service.tls`); with
``--client-ca`` as well, mutual TLS. SIGHUP reads the certificate, key and client CA again: later
handshakes use them, open connections and the crawl carry on. Off loopback, serve needs TLS and a
token or client certificates.

During a database outage the process keeps running: calls answer 503 (REST) or UNAVAILABLE (gRPC),
one line reports the outage and one its end, and the writer lock is taken again when the database
is back. If another process took the lock meanwhile, this one stops with a one-line error.
"""

from __future__ import annotations

import ipaddress
import os
import signal
import sys
import threading
import time
from pathlib import Path

import click

from freshcrawl.cli._options import budget_option, duration_option, file_option

__all__ = ["is_loopback", "parse_address", "serve"]


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


def _check_tls_options(tls_cert: str | None, tls_key: str | None, client_ca: str | None):
    """The :class:`ServerTLS` of the options (None without ``--tls-cert``).

    UsageError if the options are incomplete or a file is broken (one line naming the file).
    """
    if tls_cert is None and tls_key is None:
        if client_ca is not None:
            raise click.UsageError("--client-ca needs TLS: give --tls-cert and --tls-key as well")
        return None
    if tls_cert is None or tls_key is None:
        raise click.UsageError("--tls-cert and --tls-key go together: give both")
    from freshcrawl.errors import TLSFileError
    from freshcrawl.service.tls import ServerTLS

    try:
        return ServerTLS(tls_cert, tls_key, client_ca)
    except TLSFileError as err:
        raise click.UsageError(str(err)) from err


def _reload_on_sighup(tls) -> dict:
    """Install a SIGHUP handler that reloads ``tls``; returns what to restore."""

    def reload(signum, frame) -> None:
        from freshcrawl.errors import TLSFileError

        try:
            generation = tls.reload()
        except TLSFileError as err:  # a broken file: keep serving the certificate in use
            click.echo(f"TLS reload failed, still serving the previous certificate: {err}",
                       err=True)
        else:
            click.echo(f"TLS certificate, key and client CA reloaded ({generation})", err=True)

    return {signal.SIGHUP: signal.signal(signal.SIGHUP, reload)}


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
@click.option("--private-reads", is_flag=True,
              help="Reads (status, explain, metrics, ...) need the token (or client certificate) "
              "too.")
@file_option("--tls-cert", help="PEM certificate (chain) of the server: both ports speak TLS. Reloaded on SIGHUP.")
@file_option("--tls-key", help="PEM private key of --tls-cert (unencrypted).")
@file_option("--client-ca", help="PEM CA certificate that signs the clients' certificates: mutual TLS, a client "
             "certificate signed by it is required and authorizes as the token does (with a token, both are "
             "needed).")
@budget_option(required=False,
               help="Visits per day over all pages, e.g. 10000/day (kept for later runs; needed the first time).")
@click.option("--policy", default=None, help="learned (default), uniform, nutch, ...")
@duration_option("--min-delay", zero=True,
                 help="Least time between two requests to one host (default 1s; Crawl-delay raises it).")
@duration_option("--replan-every", help="Time between two plans (default 1h).")
@click.option("--allow-private", is_flag=True, default=False,
              help="Lift the egress policy: accept URLs whose host is a private, link-local, reserved or cloud "
              "metadata address (an intranet crawl). Off unless given, at every start.")
@click.option("--max-body", "max_body", type=click.IntRange(1024, 2**31 - 1), default=16 * 1024 * 1024,
              show_default=True, metavar="BYTES",
              help="Largest REST request body and gRPC message; a larger one is refused (413, RESOURCE_EXHAUSTED).")
def serve(db, http_address, grpc_address, no_grpc, token_file, private_reads, tls_cert, tls_key,
          client_ca, budget, policy, min_delay, replan_every, allow_private, max_body) -> None:
    """Serve a crawl database's frontier to crawlers: REST (and gRPC) in one process, one per database.

    Workers add URLs, lease due visits and report what they gave; freshcrawl learns the change rates
    and plans the visits. The dashboard is at http://HOST:PORT/ (https:// with --tls-cert), the
    OpenAPI document at /openapi.json. TLS, mutual TLS and certificates: the manual's TLS page.
    """
    import ssl

    import uvicorn

    from freshcrawl.errors import DatabaseInUseError, DatabaseUnavailableError, WriterLockLostError
    from freshcrawl.frontier import CrawlSettings
    from freshcrawl.service import FrontierService
    from freshcrawl.service.rest import create_app
    from freshcrawl.store import acquire_writer_lock, open_store

    token = _read_token(token_file)
    try:
        http_host, http_port = parse_address(http_address, name="--http")
        grpc = None if no_grpc or not grpc_address else parse_address(grpc_address, name="--grpc")
    except ValueError as err:
        raise click.UsageError(str(err)) from err
    for flag, host in (("--http", http_host), ("--grpc", None if grpc is None else grpc[0])):
        authorized = token is not None or client_ca is not None
        if host is not None and not is_loopback(host) and (tls_cert is None or not authorized):
            raise click.UsageError(
                f"{flag} {host} is not a loopback address: serving other machines needs TLS "
                "(--tls-cert, --tls-key) and a token (--token-file or FRESHCRAWL_TOKEN) or client "
                "certificates (--client-ca)")
    if private_reads and token is None and client_ca is None:
        raise click.UsageError(
            "--private-reads needs a token (--token-file or FRESHCRAWL_TOKEN) or --client-ca")
    tls = _check_tls_options(tls_cert, tls_key, client_ca)
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
        given = {"budget": budget, "policy": policy, "min_delay_s": min_delay, "replan_every_s": replan_every,
                     "allow_private": allow_private}
        values.update({k: v for k, v in given.items() if v is not None})
        if "budget" not in values:
            raise click.UsageError("the first run of a crawl needs --budget (e.g. --budget 10000/day)")
        try:
            service = FrontierService(
                db, CrawlSettings.from_dict(values), guard=lock.ensure, background_planning=True
            )
        except ValueError as err:
            raise click.UsageError(str(err)) from err
        app = create_app(service, token=token, public_reads=not private_reads,
                         client_certs=tls is not None and tls.client_auth, max_body_bytes=max_body)
        if serve_grpc is not None:
            try:
                grpc_server = serve_grpc(service, f"{grpc[0]}:{grpc[1]}", token=token, tls=tls,
                                         max_message_bytes=max_body)
            except RuntimeError as err:
                raise click.ClickException(f"could not serve gRPC: {err}") from err

        def replan_loop() -> None:
            """Re-plan due crawls (and sample the freshness history after each plan) until stopped."""
            history = app.state.history
            history.sample()
            while True:
                # a lease that finds a plan due wakes this thread; the clock is the upper bound
                service.plan_wanted.wait(min(10.0, service.settings.replan_every_s))
                service.plan_wanted.clear()
                if stop.is_set():
                    break
                try:
                    if service.replan_all():
                        history.sample()
                except (DatabaseUnavailableError, WriterLockLostError):
                    stop.wait(1.0)  # the watchdog reports outages; the previous plan keeps serving
                except Exception as err:  # noqa: BLE001 - keep serving; the next round tries again
                    click.echo(f"re-plan failed: {err!r}", err=True)
                    stop.wait(1.0)

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
        where = f"{'https' if tls else 'http'}://{http_host}:{http_port}/"
        open_to = "" if token else " (no token: writes open to this machine only)"
        if tls is not None and tls.client_auth:
            open_to = " (mutual TLS" + (" and token)" if token else ")")
        click.echo(f"serving {db}: REST, metrics and dashboard on {where}"
                   + ("" if grpc_server is None
                      else f", gRPC{' (TLS)' if tls else ''} on {grpc[0]}:{grpc[1]}")
                   + open_to, err=True)
        tls_args = {}
        if tls is not None:
            tls_args = {"ssl_certfile": tls.cert_file, "ssl_keyfile": tls.key_file,
                        "ssl_ca_certs": tls.client_ca_file,
                        "ssl_cert_reqs": ssl.CERT_REQUIRED if tls.client_auth else ssl.CERT_NONE}
        config = uvicorn.Config(app, host=http_host, port=http_port, log_level="warning",
                                access_log=False, lifespan="off", **tls_args)
        config.load()
        restore = {}
        if tls is not None:
            tls.follow(config.ssl)  # every handshake gets the files read last (SIGHUP)
            if threading.current_thread() is threading.main_thread():
                restore = _reload_on_sighup(tls)
        server = _server_class()(config)
        servers.append(server)
        threading.Thread(target=watchdog, name="freshcrawl-writer-lock", daemon=True).start()
        try:
            server.run()  # returns after SIGINT or SIGTERM, or at once if the port is taken
        finally:
            for sig, handler in restore.items():
                signal.signal(sig, handler)
        if lost:
            raise click.ClickException(str(lost[0]))
        if not server.started:
            raise click.ClickException(f"could not serve HTTP on {http_host}:{http_port}")
    finally:
        stop.set()
        if grpc_server is not None:
            grpc_server.stop(grace=5.0).wait()
        if "service" in locals():
            service.plan_wanted.set()  # the planner sees the stop now
            with service.lock:
                service.close()
        lock.release()
    click.echo("stopped", err=True)
    sys.stdout.flush()
