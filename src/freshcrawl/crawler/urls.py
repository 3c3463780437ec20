"""URL normalisation and the host key of the crawl queues.

Parsing, percent-encoding, IDNA and dot-segment removal are yarl's (the URL library of aiohttp);
this module only adds freshcrawl's rules on top: http and https only, a host is required and must
be a valid host name (RFC 1123 labels, IDNA 2008 for ``xn--`` labels, checked with the ``idna``
package) or IP address, the text must be valid Unicode, the fragment and the scheme's default port
are dropped, an empty path becomes ``/``.
"""

from __future__ import annotations

import ipaddress
import re

import idna
from yarl import URL

__all__ = ["HTTP_SCHEMES", "normalize_url", "host_of", "check_host"]

#: The URL schemes the crawler fetches.
HTTP_SCHEMES = frozenset({"http", "https"})


_LABEL = re.compile(r"(?!-)[a-z0-9_-]{1,63}(?<!-)")
_NUMERIC_LABEL = re.compile(r"(0x[0-9a-f]*|[0-9]+)")


def check_host(host: str) -> str:
    """Return `host` (lowercase) if it is a valid host name or IP address; raise ValueError if not.

    A name is at most 253 characters of dot-separated labels of 1-63 letters, digits, hyphens
    (not first or last) and underscores (RFC 1123 Sec. 2.1, with the underscore real names use); an
    ``xn--`` label must be valid IDNA 2008 (RFC 5891). A name whose last label is numeric
    (``1.2.3``, ``0x7f.1``, ``999.1.1.1``) is neither a name nor a dotted-quad address and is
    refused: resolvers read such forms as addresses.

    Examples
    --------
    >>> check_host("WWW.Example.com"), check_host("::1"), check_host("127.0.0.2")
    ('www.example.com', '::1', '127.0.0.2')
    >>> check_host("exa mple.com")
    Traceback (most recent call last):
    ...
    ValueError: url host must be a valid host name or IP address; got 'exa mple.com'
    """
    name = host.lower()
    try:
        ipaddress.ip_address(name.strip("[]").split("%", 1)[0])
    except ValueError:
        pass
    else:
        return name
    bare = name.removesuffix(".")
    labels = bare.split(".")
    ok = 0 < len(bare) <= 253 and all(_LABEL.fullmatch(x) for x in labels)
    ok = ok and not _NUMERIC_LABEL.fullmatch(labels[-1])
    if ok:
        for label in labels:
            if label.startswith("xn--"):
                try:
                    idna.decode(label)
                except (idna.IDNAError, UnicodeError):
                    ok = False
                    break
    if not ok:
        raise ValueError(f"url host must be a valid host name or IP address; got {host!r}")
    return name


def _parse(url: str) -> URL:
    """Parse an absolute http(s) URL with a host, or raise a ValueError that says why not."""
    if not isinstance(url, str):
        raise TypeError(f"url must be a str; got {type(url).__name__}")
    text = url.strip()
    if not text:
        raise ValueError("url must be an absolute http(s) URL; got an empty string")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as err:
        raise ValueError(
            f"url must be valid Unicode text; got a lone surrogate at index {err.start} of {url!r}"
        ) from None
    try:
        parsed = URL(text)
        parsed.port  # noqa: B018 - yarl checks the port lazily; an out-of-range one raises here
    except (ValueError, TypeError) as err:
        raise ValueError(f"url is malformed ({err}); got {url!r}") from err
    if not parsed.scheme:
        raise ValueError(f"url must be absolute (scheme://host/path); got {url!r}")
    scheme = parsed.scheme.lower()
    if scheme not in HTTP_SCHEMES:
        raise ValueError(f"url scheme must be http or https; got {scheme!r} in {url!r}")
    if not parsed.raw_host:
        raise ValueError(f"url must have a host; got {url!r}")
    if parsed.explicit_port == 0:
        raise ValueError(f"url port must be in 1-65535; got 0 in {url!r}")
    try:
        check_host(parsed.raw_host)
    except ValueError:
        raise ValueError(
            f"url host must be a valid host name or IP address; got {parsed.raw_host!r} in {url!r}"
        ) from None
    return parsed


def normalize_url(url: str) -> str:
    """Return the canonical form of an absolute http(s) URL.

    The scheme and host are lowercased (an internationalised host becomes its IDNA form), the
    fragment and the scheme's default port (80 for http, 443 for https) are dropped, dot segments
    are removed, unsafe characters are percent-encoded and an empty path becomes ``/``. The query
    is kept as given (its order can matter to a server).

    Parameters
    ----------
    url : str
        An absolute URL; surrounding whitespace is ignored.

    Returns
    -------
    str
        The normalised URL.

    Raises
    ------
    TypeError
        If `url` is not a str.
    ValueError
        If `url` is empty or malformed (for instance a port outside 0-65535), is relative, has a
        scheme other than http or https, has no host or a host that is not a valid host name or
        IP address (:func:`check_host`), or holds a lone surrogate (not valid Unicode).

    Examples
    --------
    >>> normalize_url("HTTP://Example.COM:80/a/../b?x=1#top")
    'http://example.com/b?x=1'
    >>> normalize_url("https://example.com:8443")
    'https://example.com:8443/'
    >>> normalize_url("ftp://example.com/file")
    Traceback (most recent call last):
    ...
    ValueError: url scheme must be http or https; got 'ftp' in 'ftp://example.com/file'
    """
    parsed = _parse(url).with_fragment(None)
    # yarl lowercases the scheme and host and leaves out a port equal to the scheme's default; it
    # also prints an empty path as nothing unless the path is set explicitly
    return str(parsed.with_path(parsed.raw_path or "/", encoded=True, keep_query=True))


def host_of(url: str) -> str:
    """Return the host of an absolute http(s) URL: the key of its crawl queue.

    Parameters
    ----------
    url : str
        An absolute http(s) URL.

    Returns
    -------
    str
        The host name, lowercased (IDNA form for an internationalised name), without port or
        brackets (an IPv6 address is returned bare).

    Raises
    ------
    TypeError
        If `url` is not a str.
    ValueError
        For the same URLs as :func:`normalize_url`.

    Examples
    --------
    >>> host_of("https://WWW.Example.com:8443/a?b=c")
    'www.example.com'
    >>> host_of("http://[::1]:8080/")
    '::1'
    >>> host_of("http://B\u00fccher.example/")
    'xn--bcher-kva.example'
    """
    host = _parse(url).raw_host
    assert host is not None  # _parse has checked it
    return host.lower()
