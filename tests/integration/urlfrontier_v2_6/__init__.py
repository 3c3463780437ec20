"""Client stubs of the URLFrontier API 2.6, generated at test time from ``urlfrontier.proto`` here.

The stubs are built by ``grpc_tools.protoc`` into a temporary directory and loaded into a descriptor
pool of their own: freshcrawl's server modules define the same message names in the default pool,
and a test process may hold both.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

PROTO = Path(__file__).resolve().parent / "urlfrontier.proto"


def build_stubs(out_dir: Path) -> tuple[ModuleType, ModuleType]:
    """Generate and import the API 2.6 messages and stubs; return ``(pb, pb_grpc)``.

    Raises
    ------
    RuntimeError
        If protoc fails.
    """
    from grpc_tools import protoc

    out_dir.mkdir(parents=True, exist_ok=True)
    include = Path(protoc.__file__).resolve().parent / "_proto"
    code = protoc.main(
        [
            "grpc_tools.protoc",
            f"-I{PROTO.parent}",
            f"-I{include}",
            f"--python_out={out_dir}",
            f"--grpc_python_out={out_dir}",
            PROTO.name,
        ]
    )
    if code != 0:
        raise RuntimeError(f"protoc failed on {PROTO.name} with exit code {code}")
    messages = (out_dir / "urlfrontier_pb2.py").read_text()
    messages = messages.replace("_descriptor_pool.Default()", "_descriptor_pool.DescriptorPool()")
    (out_dir / "uf26_pb2.py").write_text(messages)
    stubs = (out_dir / "urlfrontier_pb2_grpc.py").read_text()
    (out_dir / "uf26_pb2_grpc.py").write_text(
        stubs.replace("import urlfrontier_pb2 as", "import uf26_pb2 as")
    )
    pb = _load("uf26_pb2", out_dir / "uf26_pb2.py")
    pb_grpc = _load("uf26_pb2_grpc", out_dir / "uf26_pb2_grpc.py")
    return pb, pb_grpc


def _load(name: str, path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # the stubs module imports the messages module by this name
    spec.loader.exec_module(module)
    return module


def free_port() -> int:
    """A TCP port free on loopback now."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_serve(db: str, *args: str, timeout_s: float = 60.0, tls=None):
    """Run ``freshcrawl serve`` on loopback ports; return ``(process, grpc address, REST base URL)``.

    With ``tls`` (a ``tests.tls_pki.PKI``), serve runs with its server certificate and mutual TLS
    (``--tls-cert``, ``--tls-key``, ``--client-ca``) and the readiness probe presents the client
    certificate. Waits until the REST API answers (both APIs start together); raises AssertionError
    if the process exits or does not answer within ``timeout_s``.
    """
    import os
    import subprocess
    import time

    import httpx

    http, grpc_port = free_port(), free_port()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "freshcrawl",
            "serve",
            "--db",
            db,
            "--budget",
            "86400/day",
            "--http",
            f"127.0.0.1:{http}",
            "--grpc",
            f"127.0.0.1:{grpc_port}",
            *args,
            *(
                ()
                if tls is None
                else (
                    "--tls-cert",
                    str(tls.server_cert),
                    "--tls-key",
                    str(tls.server_key),
                    "--client-ca",
                    str(tls.ca_file),
                )
            ),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=dict(os.environ),
    )
    base = f"{'http' if tls is None else 'https'}://127.0.0.1:{http}"
    verify = True if tls is None else tls.client_tls().ssl_context()
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"serve exited with {proc.returncode}: {proc.stderr.read()}")
        try:
            if httpx.get(base + "/status", timeout=1, verify=verify).status_code == 200:
                return proc, f"127.0.0.1:{grpc_port}", base
        except httpx.TransportError:
            pass
        time.sleep(0.1)
    proc.kill()
    raise AssertionError(f"serve did not answer {base} within {timeout_s} s")


def stop_serve(proc) -> str:
    """Stop a ``freshcrawl serve`` process (SIGTERM, then kill after 30 s); return its stderr."""
    import signal
    import subprocess

    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
    try:
        _, err = proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        _, err = proc.communicate()
    return err


def new_database(kind: str, tmp_dir: Path):
    """A context manager giving a new crawl database URL: a SQLite file in ``tmp_dir``, or a new
    PostgreSQL database on the test server (``tests.conftest.PG_SERVER``), dropped at the end.

    Fails (never skips) when PostgreSQL is needed and not reachable.
    """
    import contextlib
    import uuid

    import pytest
    from sqlalchemy import create_engine, text

    from tests.conftest import PG_SERVER

    @contextlib.contextmanager
    def make():
        if kind == "sqlite":
            yield str(tmp_dir / "crawl.db")
            return
        name = f"freshcrawl_test_{uuid.uuid4().hex[:12]}"
        admin = create_engine(f"{PG_SERVER}/postgres", isolation_level="AUTOCOMMIT")
        try:
            with admin.connect() as conn:
                conn.execute(text(f'CREATE DATABASE "{name}"'))
        except Exception as err:  # noqa: BLE001 - the machine's server is down
            admin.dispose()
            pytest.fail(
                f"PostgreSQL at {PG_SERVER} is needed by this test and not reachable: {err}"
            )
        try:
            yield f"{PG_SERVER}/{name}"
        finally:
            with admin.connect() as conn:
                conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
            admin.dispose()

    return make()
