"""TLS and mutual TLS for ``freshcrawl serve`` (both ports) and for the fetchers that connect to it.

Server side, :class:`ServerTLS` holds a certificate, its private key and, for mutual TLS, the CA
that signs the clients' certificates. It hands the same files to both servers: the gRPC server
(:meth:`ServerTLS.grpc_credentials`, grpcio's dynamic SSL credentials) and the HTTP server
(:meth:`ServerTLS.follow`, uvicorn's :class:`ssl.SSLContext`). :meth:`ServerTLS.reload` reads the
files again (``freshcrawl serve`` calls it on SIGHUP): every handshake after it uses the new
certificate, key and client CA, on both ports, while connections already open carry on. A reload
that finds a broken file raises and keeps the files in use.

With a client CA, every connection must present a certificate signed by it (the handshake fails
otherwise): grpcio offers no "verify a certificate if one is presented" mode, so a client
certificate is required on both ports or asked for on neither.

Client side, :class:`ClientTLS` checks a CA file (trusted to sign the server's certificate; the
system's trust store when none is given) and a client certificate with its key, and builds gRPC
channel credentials (:meth:`ClientTLS.grpc_credentials`) or an :class:`ssl.SSLContext` for HTTP
clients (:meth:`ClientTLS.ssl_context`). :func:`explain_connect_error` turns the details of a gRPC
connection failure into one line that says which certificate failed and how.

Every file is PEM (RFC 7468): certificates as ``CERTIFICATE`` blocks, keys as ``PRIVATE KEY`` (PKCS
#8), ``RSA PRIVATE KEY`` or ``EC PRIVATE KEY`` blocks, unencrypted. Errors are
:class:`~freshcrawl.errors.TLSFileError` with a one-line message naming the file and the failure.
"""

from __future__ import annotations

import re
import ssl
import threading
from dataclasses import dataclass
from pathlib import Path

import grpc

from freshcrawl.errors import TLSFileError

__all__ = ["ClientTLS", "ServerTLS", "explain_connect_error"]

_CERT_MARK = b"-----BEGIN CERTIFICATE-----"
_KEY_MARK = re.compile(rb"-----BEGIN (?:RSA |EC |)PRIVATE KEY-----")


def _read(what: str, path: Path, *, mark: re.Pattern | bytes, kind: str) -> bytes:
    """The bytes of a PEM file; TLSFileError naming ``what`` and ``path`` if unusable."""
    try:
        data = path.read_bytes()
    except OSError as err:
        raise TLSFileError(f"{what} {path}: cannot read it ({err.strerror or err})") from err
    found = mark in data if isinstance(mark, bytes) else mark.search(data) is not None
    if not found:
        if b"ENCRYPTED PRIVATE KEY" in data:
            raise TLSFileError(
                f"{what} {path}: the key is encrypted; give it unencrypted (openssl pkey -in "
                "KEY -out KEY.pem)"
            )
        raise TLSFileError(f"{what} {path}: no PEM {kind} in it")
    return data


def _load_chain(ctx: ssl.SSLContext, who: str, cert: Path, key: Path) -> None:
    try:
        ctx.load_cert_chain(cert, key)
    except ssl.SSLError as err:
        if "KEY_VALUES_MISMATCH" in str(err):
            raise TLSFileError(
                f"{who} key {key} does not belong to the certificate {cert}"
            ) from err
        raise TLSFileError(
            f"{who} certificate {cert} or key {key}: OpenSSL cannot use them ({err.reason or err})"
        ) from err


def _load_ca(ctx: ssl.SSLContext, what: str, ca: Path) -> None:
    try:
        ctx.load_verify_locations(cafile=str(ca))
    except ssl.SSLError as err:
        raise TLSFileError(f"{what} {ca}: OpenSSL cannot use it ({err.reason or err})") from err


@dataclass(frozen=True, slots=True)
class _ServerMaterial:
    cert: bytes
    key: bytes
    client_ca: bytes | None
    context: ssl.SSLContext


class ServerTLS:
    """The certificate, key and client CA of a TLS server, shared by its gRPC and HTTP ports.

    Parameters
    ----------
    cert_file : str or Path
        PEM certificate chain of the server, its own certificate first; its subjectAltName must
        name the host or address clients connect to.
    key_file : str or Path
        PEM private key of that certificate (unencrypted).
    client_ca_file : str or Path, optional
        PEM certificate(s) of the CA that signs the clients' certificates. When given, every
        connection must present a certificate signed by it (mutual TLS); a connection that does is
        authorized as a token authorizes (see ``freshcrawl serve``).

    Raises
    ------
    TLSFileError
        If a file cannot be read, holds no PEM certificate (or key), or the key does not belong to
        the certificate; the message names the file.

    Attributes
    ----------
    generation : int
        0 for the files read at construction, then one more at each successful :meth:`reload`.

    References
    ----------
    RFC 8446 (TLS 1.3) section 4.3.2 (CertificateRequest: the client certificate of mutual TLS);
    gRPC Python's ``dynamic_ssl_server_credentials``.

    Examples
    --------
    >>> ServerTLS("missing-cert.pem", "missing-key.pem")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    freshcrawl.errors.TLSFileError: server certificate missing-cert.pem: cannot read it (...)
    """

    def __init__(
        self, cert_file: str | Path, key_file: str | Path, client_ca_file: str | Path | None = None
    ) -> None:
        self.cert_file = Path(cert_file)
        self.key_file = Path(key_file)
        self.client_ca_file = None if client_ca_file is None else Path(client_ca_file)
        self._lock = threading.Lock()
        self._material = self._load()
        self.generation = 0

    @property
    def client_auth(self) -> bool:
        """Whether clients must present a certificate signed by the client CA (mutual TLS)."""
        return self.client_ca_file is not None

    def _load(self) -> _ServerMaterial:
        cert = _read("server certificate", self.cert_file, mark=_CERT_MARK, kind="certificate")
        key = _read("server key", self.key_file, mark=_KEY_MARK, kind="private key")
        ca = None
        if self.client_ca_file is not None:
            ca = _read("client CA", self.client_ca_file, mark=_CERT_MARK, kind="certificate")
        return _ServerMaterial(cert, key, ca, self._new_context())

    def _new_context(self) -> ssl.SSLContext:
        """A server-side context (TLS 1.2 or later) loaded from the files as they are now."""
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.minimum_version = ssl.TLSVersion.TLSv1_2
        _load_chain(ctx, "server", self.cert_file, self.key_file)
        if self.client_ca_file is not None:
            _load_ca(ctx, "client CA", self.client_ca_file)
            ctx.verify_mode = ssl.CERT_REQUIRED
        return ctx

    def reload(self) -> int:
        """Read the files again; later handshakes on both ports use them.

        Returns
        -------
        int
            The new :attr:`generation`.

        Raises
        ------
        TLSFileError
            If a file is now unreadable or broken; the files read before stay in use.
        """
        material = self._load()
        with self._lock:
            self._material = material
            self.generation += 1
            return self.generation

    # HTTP (uvicorn) -------------------------------------------------------------------------------
    def follow(self, context: ssl.SSLContext) -> ssl.SSLContext:
        """Make ``context`` (the HTTP server's) hand each new handshake the latest files.

        The server name callback, which OpenSSL calls on every ClientHello (with or without a
        server name), switches the handshake to the context of the files read last: its
        certificate, key and client CA. Returns ``context``.
        """

        def latest(sslobj: ssl.SSLObject, server_name: str | None, _ctx: ssl.SSLContext) -> None:
            sslobj.context = self._material.context

        context.sni_callback = latest
        return context

    def ssl_context(self) -> ssl.SSLContext:
        """A server-side :class:`ssl.SSLContext` serving the latest files (see :meth:`follow`)."""
        return self.follow(self._new_context())

    # gRPC -----------------------------------------------------------------------------------------
    def _grpc_config(self, m: _ServerMaterial) -> grpc.ServerCertificateConfiguration:
        return grpc.ssl_server_certificate_configuration(
            [(m.key, m.cert)], root_certificates=m.client_ca
        )

    def grpc_credentials(self) -> grpc.ServerCredentials:
        """gRPC server credentials that pick up each :meth:`reload` at the next connection."""
        seen = {"generation": self.generation}

        def fetch() -> grpc.ServerCertificateConfiguration | None:
            # grpcio calls this before every handshake: None keeps the configuration in use
            with self._lock:
                if self.generation == seen["generation"]:
                    return None
                seen["generation"] = self.generation
                return self._grpc_config(self._material)

        return grpc.dynamic_ssl_server_credentials(
            self._grpc_config(self._material), fetch, require_client_authentication=self.client_auth
        )


class ClientTLS:
    """What a client trusts (a CA) and what it presents (a certificate and key) to a TLS server.

    Parameters
    ----------
    ca_file : str or Path, optional
        PEM certificate(s) of the CA that signs the server's certificate (a private CA); None trusts
        the system's store (gRPC: the roots bundled with grpcio).
    cert_file, key_file : str or Path, optional
        PEM client certificate chain and its unencrypted key, for a server that requires mutual TLS;
        both or neither.

    Raises
    ------
    TLSFileError
        If a file cannot be read or holds no PEM certificate (or key), or the key does not belong to
        the certificate.
    ValueError
        If only one of ``cert_file`` and ``key_file`` is given.

    Examples
    --------
    >>> ClientTLS().describe()
    'TLS (system trust store, no client certificate)'
    >>> ClientTLS(cert_file="c.pem")
    Traceback (most recent call last):
    ...
    ValueError: a client certificate needs its key: give both, or neither
    """

    def __init__(
        self,
        ca_file: str | Path | None = None,
        cert_file: str | Path | None = None,
        key_file: str | Path | None = None,
    ) -> None:
        if (cert_file is None) != (key_file is None):
            raise ValueError("a client certificate needs its key: give both, or neither")
        self.ca_file = None if ca_file is None else Path(ca_file)
        self.cert_file = None if cert_file is None else Path(cert_file)
        self.key_file = None if key_file is None else Path(key_file)
        self._ca = (
            None
            if self.ca_file is None
            else _read("CA", self.ca_file, mark=_CERT_MARK, kind="certificate")
        )
        self._cert = self._key = None
        if self.cert_file is not None:
            self._cert = _read(
                "client certificate", self.cert_file, mark=_CERT_MARK, kind="certificate"
            )
            self._key = _read("client key", self.key_file, mark=_KEY_MARK, kind="private key")
        self.ssl_context()  # checks that OpenSSL takes them (a key of another certificate, ...)

    def describe(self) -> str:
        """One line: what is trusted and what is presented."""
        trust = f"CA {self.ca_file}" if self.ca_file else "system trust store"
        cert = f"client certificate {self.cert_file}" if self.cert_file else "no client certificate"
        return f"TLS ({trust}, {cert})"

    def grpc_credentials(self) -> grpc.ChannelCredentials:
        """gRPC channel credentials: the CA (or grpcio's roots) and the client certificate."""
        return grpc.ssl_channel_credentials(
            root_certificates=self._ca, private_key=self._key, certificate_chain=self._cert
        )

    def ssl_context(self) -> ssl.SSLContext:
        """A client-side :class:`ssl.SSLContext` (for HTTP clients, e.g. httpx's ``verify``)."""
        ctx = ssl.create_default_context(ssl.Purpose.SERVER_AUTH)
        if self.ca_file is not None:
            _load_ca(ctx, "CA", self.ca_file)
        if self.cert_file is not None:
            _load_chain(ctx, "client", self.cert_file, self.key_file)
        return ctx


def explain_connect_error(details: str, address: str, tls: ClientTLS | None) -> str | None:
    """One line for a gRPC connection failure caused by TLS, or None when TLS is not the cause.

    Parameters
    ----------
    details : str
        ``RpcError.details()`` of a call that ended UNAVAILABLE.
    address : str
        ``host:port`` of the server, for the message.
    tls : ClientTLS or None
        The client's TLS settings; None for a plaintext channel.

    Returns
    -------
    str or None
        Which certificate failed and how, or what the other side speaks; None for failures that are
        not about TLS (connection refused, name resolution, ...).

    Examples
    --------
    >>> explain_connect_error("failed to connect to all addresses; last error: UNAVAILABLE: "
    ...                       "ipv4:127.0.0.1:7071: Socket closed", "127.0.0.1:7071", None)
    'frontier 127.0.0.1:7071 closed the connection at once: if it is served with TLS, use grpcs://'
    """
    text = str(details)
    if tls is None:
        if "Socket closed" in text or "Connection reset" in text:
            return (
                f"frontier {address} closed the connection at once: "
                "if it is served with TLS, use grpcs://"
            )
        return None
    if "WRONG_VERSION_NUMBER" in text:
        return (
            f"frontier {address} does not speak TLS on this port: "
            "use grpc:// (or serve it with --tls-cert)"
        )
    if "CERTIFICATE_VERIFY_FAILED" in text:
        why = re.search(r"CERTIFICATE_VERIFY_FAILED: ([^:]+)", text)
        trust = f"the CA {tls.ca_file}" if tls.ca_file else "the system trust store (give --tls-ca)"
        return f"frontier {address}: its certificate is not trusted by {trust}" + (
            f" ({why.group(1).strip()})" if why else ""
        )
    if "Hostname Verification" in text or "Peer name" in text:
        return (
            f"frontier {address}: its certificate does not name the host "
            f"{address.rpartition(':')[0]} in its subjectAltName"
        )
    if "Socket closed" in text or "Connection reset" in text:
        if tls.cert_file is None:
            return (
                f"frontier {address} closed the connection after the TLS handshake: "
                "it requires a client certificate (--tls-cert and --tls-key)"
            )
        return (
            f"frontier {address} closed the connection after the TLS handshake: "
            f"it refuses the client certificate {tls.cert_file} (not signed by its client CA, "
            "or expired)"
        )
    if "handshake" in text.lower() or "SSL" in text:
        return f"frontier {address}: TLS handshake failed ({text.rpartition(': ')[2] or text})"
    return None
