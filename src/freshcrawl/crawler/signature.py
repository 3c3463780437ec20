"""Content signatures: what counts as a change of a page (docs/design.md, "The live layer").

Two modes, chosen by the user:

``"raw"``
    SHA-256 of the body bytes (after HTTP content decoding). Every byte counts: a timestamp, an ad,
    a session token or a CSRF field in the markup makes a change.
``"text"``
    SHA-256 of the page's main text as extracted by trafilatura, with whitespace normalised, so
    that the markup around the content (navigation, scripts, ads, hidden form fields, timestamps
    in headers and footers) does not count. See :func:`signature` for the fallbacks.

Signatures of the two modes are not comparable with each other; a crawl keeps one mode.
"""

from __future__ import annotations

import codecs
import hashlib
from email.message import Message

from freshcrawl.errors import UnknownNameError

__all__ = ["HTML_CONTENT_TYPES", "SIGNATURE_MODES", "main_text", "main_text_lines", "signature"]

#: The signature modes :func:`signature` accepts.
SIGNATURE_MODES = ("raw", "text")

#: Media types whose body is parsed as HTML in ``"text"`` mode.
HTML_CONTENT_TYPES = frozenset({"text/html", "application/xhtml+xml"})

# elements whose text is never shown to a reader
_INVISIBLE = ("script", "style", "noscript", "template", "head", "iframe", "object", "svg")


def _media_type_and_charset(content_type: str | None) -> tuple[str | None, str | None]:
    """Split a Content-Type header into its lowercased media type and a known charset (or None)."""
    if not content_type:
        return None, None
    msg = Message()
    msg["content-type"] = content_type
    media_type = msg.get_content_type().lower()
    charset = msg.get_param("charset")
    if isinstance(charset, tuple):  # RFC 2231 form
        charset = charset[2]
    if isinstance(charset, str):
        try:
            charset = codecs.lookup(charset.strip().strip('"')).name
        except LookupError:
            charset = None
    else:
        charset = None
    # a header without a type gets "text/plain" from email; keep "unknown" distinct
    if "/" not in content_type.split(";", 1)[0]:
        media_type = None
    return media_type, charset


def _looks_like_html(body: bytes) -> bool:
    """Sniff an HTML document in the first KiB, for bodies served without a Content-Type."""
    head = body[:1024].lstrip().lower()
    return head.startswith((b"<!doctype html", b"<html")) or b"<html" in head or b"<body" in head


def _normalise_whitespace(text: str) -> str:
    return " ".join(text.split())


def _decode(body: bytes, charset: str | None) -> str | bytes:
    """Decode with the declared charset; without one, leave detection to trafilatura/lxml."""
    if charset is None:
        return body
    return body.decode(charset, errors="replace")


def _visible_text(document: str | bytes) -> str:
    """All the text a browser would show: the document minus head, scripts, styles and comments."""
    import lxml.html  # imported on first use, as trafilatura: raw signatures need neither
    from lxml import etree

    try:
        if isinstance(document, str):
            # lxml refuses str input that carries an XML encoding declaration
            document = document.encode("utf-8")
            parser = lxml.html.HTMLParser(encoding="utf-8", remove_comments=True)
        else:
            parser = lxml.html.HTMLParser(remove_comments=True)
        root = lxml.html.document_fromstring(document, parser=parser)
    except (etree.ParserError, ValueError):
        return ""
    etree.strip_elements(root, *_INVISIBLE, with_tail=False)
    return _normalise_whitespace(root.text_content())


def main_text_lines(body: bytes, content_type: str | None = None) -> list[str]:
    """The main text of an HTML page, a line per paragraph, as ``"text"`` signatures see it.

    The main text is trafilatura's extraction with its fast settings (no fallback extractors),
    without comments sections (reader comments change independently of the page and are found
    heuristically), with tables (often the content itself), without links, images, formatting or
    metadata, and without deduplication (which keeps state across calls). When that finds no text,
    the whole visible text is used, as one line: the document without its head, scripts, styles,
    templates and comments.

    Parameters
    ----------
    body : bytes
        The HTML document.
    content_type : str or None, default=None
        The Content-Type header; its charset, when known to Python, decodes the body. Without it,
        the encoding is detected from the document.

    Returns
    -------
    list of str
        The lines (paragraphs, headings, table rows) in document order, every run of whitespace
        within a line replaced by one space, empty lines left out; ``[]`` when the page shows no
        text at all. Joined by spaces they are :func:`main_text`.

    Examples
    --------
    >>> main_text_lines(b"<html><body><p>One</p><p>Two  words</p></body></html>", "text/html")
    ['One', 'Two words']
    """
    _, charset = _media_type_and_charset(content_type)
    if not body.strip():
        return []
    document = _decode(body, charset)
    import trafilatura

    extracted = trafilatura.extract(
        document,
        fast=True,
        include_comments=False,
        include_tables=True,
        include_images=False,
        include_links=False,
        include_formatting=False,
        deduplicate=False,
        with_metadata=False,
        output_format="txt",
    )
    lines = [_normalise_whitespace(line) for line in (extracted or "").splitlines()]
    lines = [line for line in lines if line]
    if lines:
        return lines
    text = _visible_text(document)
    return [text] if text else []


def main_text(body: bytes, content_type: str | None = None) -> str:
    """The whitespace-normalised main text of an HTML page, as ``"text"`` signatures hash it.

    The lines of :func:`main_text_lines` (trafilatura's extraction, or the visible text when it
    finds none) joined by single spaces.

    Parameters
    ----------
    body : bytes
        The HTML document.
    content_type : str or None, default=None
        The Content-Type header; its charset, when known to Python, decodes the body. Without it,
        the encoding is detected from the document.

    Returns
    -------
    str
        The text with every run of whitespace replaced by one space; ``""`` when the page shows
        no text at all.

    Examples
    --------
    >>> main_text(b"<html><head><title>t</title></head><body><p>Hello,\\n  world</p></body></html>")
    'Hello, world'
    """
    return " ".join(main_text_lines(body, content_type))


def signature(body: bytes, content_type: str | None, mode: str) -> str:
    """Signature of a page's copy: equal signatures mean "unchanged".

    Parameters
    ----------
    body : bytes
        The body after content decoding (gzip, deflate, ... already undone).
    content_type : str or None
        The response's Content-Type header, parameters included; None when absent.
    mode : {"raw", "text"}
        ``"raw"``: SHA-256 of `body`. ``"text"``: SHA-256 of the UTF-8 of :func:`main_text` for
        an HTML body (Content-Type text/html or application/xhtml+xml, or, without a
        Content-Type, a body that starts like an HTML document). Fallbacks in ``"text"`` mode: a
        non-HTML body (JSON, PDF, images, plain text, ...) has the ``"raw"`` signature, since no
        markup noise can be told from content there; an HTML page whose main text and visible text
        are both empty (a frameset, a page drawn by scripts) also has the ``"raw"`` signature, so
        that its changes are still seen.

    Returns
    -------
    str
        64 lowercase hexadecimal digits.

    Raises
    ------
    UnknownNameError
        (a ValueError) If `mode` is not one of ``"raw"``, ``"text"``.
    TypeError
        If `body` is not bytes.

    Examples
    --------
    >>> signature(b"abc", "text/plain", "raw")
    'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad'
    >>> a = b"<html><body><p>Same text</p><input type=hidden name=csrf value=1></body></html>"
    >>> b = b"<html><body><p>Same  text</p><input type=hidden name=csrf value=2></body></html>"
    >>> signature(a, "text/html", "text") == signature(b, "text/html", "text")
    True
    >>> signature(a, "text/html", "raw") == signature(b, "text/html", "raw")
    False
    """
    if mode not in SIGNATURE_MODES:
        raise UnknownNameError(
            f"signature mode must be one of {', '.join(map(repr, SIGNATURE_MODES))}; got {mode!r}"
        )
    if not isinstance(body, (bytes, bytearray, memoryview)):
        raise TypeError(f"body must be bytes; got {type(body).__name__}")
    body = bytes(body)
    if mode == "raw":
        return hashlib.sha256(body).hexdigest()
    media_type, _ = _media_type_and_charset(content_type)
    is_html = media_type in HTML_CONTENT_TYPES if media_type else _looks_like_html(body)
    if not is_html:
        return hashlib.sha256(body).hexdigest()
    text = main_text(body, content_type)
    if not text:
        return hashlib.sha256(body).hexdigest()
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
