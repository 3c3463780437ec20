"""The HTTP exchange of a visit as it went over the wire, kept for an archive (WARC).

When a :class:`~freshcrawl.crawler.fetcher.Fetcher` keeps copies (``keep_copy=True``) it reads the
body without content decoding (``auto_decompress=False``), so that the payload is the bytes the
server sent (gzip stays gzip), and decodes it here, with the same size cap, for the signature. The
response's header block is rebuilt from the status line and aiohttp's ``raw_headers`` (names and
values as received, in their order). aiohttp always removes chunked transfer coding; the payload is
kept de-chunked and a ``Transfer-Encoding`` header is left out of the stored header block, so the
stored response is a valid HTTP message whose payload is its entity body (WARC 1.1 Sec. 6.3.2; the
``WARC-Payload-Digest`` is then that of the entity body, as iipc/warc-specifications issue 22
settled). The request block is rebuilt from the request line and the headers aiohttp sent.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass

__all__ = [
    "ACCEPT_ENCODING",
    "HttpCapture",
    "UndecodableContent",
    "decode_content",
    "request_head",
    "response_head",
]

#: The content codings asked for when copies are kept: the ones :func:`decode_content` decodes
#: without an optional library.
ACCEPT_ENCODING = "gzip, deflate"

_HOP_BY_HOP_DROPPED = frozenset({b"transfer-encoding"})


class UndecodableContent(ValueError):
    """A body whose Content-Encoding is unknown or whose coded bytes are broken."""


@dataclass(frozen=True, slots=True)
class HttpCapture:
    """One request and its final response, as sent and received.

    Attributes
    ----------
    url : str
        The URL that answered (after redirects), the record's ``WARC-Target-URI``.
    request_head : bytes
        Request line and headers as sent, ending with the empty line (CRLF CRLF).
    response_head : bytes
        Status line and headers as received (``Transfer-Encoding`` left out, see the module
        docstring), ending with the empty line.
    payload : bytes
        The entity body as received (content coding kept); empty for a 304.
    status : int
        The response's HTTP status.
    content_type : str or None
        The response's Content-Type header.
    peer : str or None
        The IP address the response came from (``WARC-IP-Address``), when known.
    """

    url: str
    request_head: bytes
    response_head: bytes
    payload: bytes
    status: int
    content_type: str | None = None
    peer: str | None = None


def _latin1(value: str) -> bytes:
    return value.encode("latin-1", errors="replace")


def request_head(method: str, url, headers) -> bytes:
    """The request block: ``METHOD path HTTP/1.1``, then `headers` (a str -> str mapping) and CRLF.

    `url` is a ``yarl.URL``; a Host header is added first when `headers` has none.
    """
    target = url.raw_path_qs or "/"
    lines = [f"{method} {target} HTTP/1.1"]
    if not any(k.lower() == "host" for k in headers):
        host = url.raw_host or ""
        lines.append(
            f"Host: {host}" + (f":{url.port}" if url.port and not url.is_default_port() else "")
        )
    lines.extend(f"{k}: {v}" for k, v in headers.items())
    return _latin1("\r\n".join(lines) + "\r\n\r\n")


def response_head(version, status: int, reason: str | None, raw_headers) -> bytes:
    """The response block's head: status line, the raw header pairs as received, the empty line.

    `raw_headers` is aiohttp's ``ClientResponse.raw_headers`` (pairs of bytes); a
    ``Transfer-Encoding`` header is left out because the payload is stored de-chunked.
    """
    head = f"HTTP/{version.major}.{version.minor} {status} {reason or ''}".rstrip() + "\r\n"
    parts = [_latin1(head)]
    for name, value in raw_headers:
        if name.lower() in _HOP_BY_HOP_DROPPED:
            continue
        parts.append(name + b": " + value + b"\r\n")
    parts.append(b"\r\n")
    return b"".join(parts)


def decode_content(body: bytes, coding: str | None, max_bytes: int) -> tuple[bytes, bool]:
    """Undo the Content-Encoding of `body`, producing at most `max_bytes` bytes.

    Parameters
    ----------
    body : bytes
        The payload as received.
    coding : str or None
        The Content-Encoding header: None, ``identity``, ``gzip``, ``x-gzip`` or ``deflate`` (a
        zlib stream, or a raw deflate stream as some servers send), or a comma-separated list of
        them applied in order (RFC 9110 Sec. 8.4).
    max_bytes : int
        Largest decoded size accepted; decoding stops past it, so a compression bomb is never
        inflated in full.

    Returns
    -------
    decoded : bytes
        At most `max_bytes` bytes.
    too_large : bool
        Whether the decoded body goes on past `max_bytes`.

    Raises
    ------
    UndecodableContent
        If a coding is unknown (``br`` and ``zstd`` are not asked for) or the bytes are broken.

    Examples
    --------
    >>> import gzip
    >>> decode_content(gzip.compress(b"hello"), "gzip", 100)
    (b'hello', False)
    >>> decode_content(gzip.compress(b"hello"), "gzip", 3)
    (b'hel', True)
    """
    codings = [c.strip().lower() for c in (coding or "").split(",") if c.strip()]
    data, too_large = body, False
    for c in reversed(codings):  # the last coding applied is undone first
        if c == "identity":
            continue
        if c in ("gzip", "x-gzip"):
            candidates = [zlib.MAX_WBITS | 16]
        elif c == "deflate":
            candidates = [zlib.MAX_WBITS, -zlib.MAX_WBITS]
        else:
            raise UndecodableContent(f"content coding {c!r} is not decoded")
        for k, wbits in enumerate(candidates):
            d = zlib.decompressobj(wbits)
            try:
                out = d.decompress(data, max_bytes + 1)
                if len(out) <= max_bytes and not d.unconsumed_tail:
                    out += d.flush()
            except zlib.error as err:
                if k + 1 < len(candidates):
                    continue
                raise UndecodableContent(f"broken {c} content: {err}") from err
            break
        too_large = too_large or len(out) > max_bytes or bool(d.unconsumed_tail)
        data = out[:max_bytes]
    if len(data) > max_bytes:
        return data[:max_bytes], True
    return data, too_large
