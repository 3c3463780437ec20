"""page_diff on WARC files: the text diff reads each capture with the charset its response declares."""

from __future__ import annotations

import pytest

from freshcrawl.archive import WarcArchive
from freshcrawl.archive.history import page_diff, text_lines
from freshcrawl.crawler.capture import HttpCapture
from freshcrawl.crawler.outcome import FetchOutcome, Outcome

from .test_warc import URL

TITLE = "Le café du théâtre"
MENU = (
    "Crème brûlée, pâté en croûte et soupe à l'oignon : voilà notre menu du déjeuner, servi à midi."
)
NEW_MENU = MENU.replace("soupe à l'oignon", "gâteau à l'érable")
BOOKING = "Réservez auprès de François, à l'accueil, ou par téléphone."


def html(menu: str) -> str:
    return (
        f"<!doctype html><html><head><title>Carte</title></head><body><article><h1>{TITLE}</h1>"
        f"<p>{menu}</p><p>{BOOKING}</p></article></body></html>"
    )


def visit(t: float, page: str, charset: str) -> tuple[None, FetchOutcome]:
    """A 200 answer carrying `page` encoded in `charset`, as its Content-Type declares."""
    body = page.encode(charset)
    ctype = f"text/html; charset={charset}"
    head = f"HTTP/1.1 200 OK\r\nContent-Type: {ctype}\r\nContent-Length: {len(body)}\r\n\r\n"
    request = b"GET /a HTTP/1.1\r\nHost: 127.0.0.2:8000\r\n\r\n"
    cap = HttpCapture(URL, request, head.encode("ascii"), body, 200, ctype)
    return None, FetchOutcome(URL, Outcome.CHANGED, "x", t, 0.01, 200, len(body), capture=cap)


@pytest.mark.parametrize("charset", ["utf-8", "iso-8859-1"])
def test_text_diff_decodes_each_capture_with_its_declared_charset(tmp_path, charset):
    with WarcArchive(tmp_path) as archive:
        archive.write_visits(
            [visit(1000.0, html(MENU), charset), visit(2000.0, html(NEW_MENU), charset)]
        )
    d = page_diff(tmp_path, URL)
    assert (d.mode, d.added, d.removed) == ("text", 1, 1)
    assert d.diff == "\n".join(
        [
            f"--- {URL} 1970-01-01T00:16:40.000000Z",
            f"+++ {URL} 1970-01-01T00:33:20.000000Z",
            "@@ -1,3 +1,3 @@",
            f" {TITLE}",
            f"-{MENU}",
            f"+{NEW_MENU}",
            f" {BOOKING}",
            "",
        ]
    )


def test_text_lines_of_a_body_that_is_not_html_use_its_charset():
    body = "café\r\nthé\n".encode("iso-8859-1")
    assert text_lines(body, "text/plain; charset=ISO-8859-1") == ["café", "thé"]
    assert text_lines("café".encode(), "text/plain") == ["café"]  # UTF-8 without a charset
    assert text_lines(b"caf\xe9", "text/plain; charset=no-such-charset") == ["caf\ufffd"]
