"""Content signatures: exact raw digests, text mode against markup noise, fallbacks, bad modes."""

from __future__ import annotations

import hashlib

import pytest

from freshcrawl.crawler import SIGNATURE_MODES, main_text, signature
from freshcrawl.crawler.signature import main_text_lines
from freshcrawl.errors import UnknownNameError

from .conftest import noisy_page

ARTICLE = (
    "<article><h1>Release notes</h1>"
    "<p>Version two adds conditional requests and content signatures to the crawler, so that a "
    "page that did not change costs a single round trip and no parsing.</p>"
    "<p>The change rates learned from these visits feed the allocation of the crawl budget.</p>"
    "</article>"
)


def page(head: str = "", before: str = "", after: str = "", article: str = ARTICLE) -> bytes:
    head = f"<head><title>Notes</title>{head}</head>"
    return f"<!doctype html><html>{head}<body>{before}{article}{after}</body></html>".encode()


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def test_raw_is_sha256_of_the_bytes():
    assert (
        signature(b"", None, "raw")
        == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    )
    assert signature(b"abc", "text/html", "raw") == (
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    )
    assert signature(bytearray(b"abc"), None, "raw") == sha(b"abc")


@pytest.mark.parametrize(
    "noise",
    [
        {"head": "<script>var now = 1700000000;</script>"},
        {"head": "<script>var now = 1700000999; var sid = 'f00';</script>"},
        {"before": "<div class='ad'><a href='/ad?id=42'><img src='/banner42.png'></a></div>"},
        {"after": "<form><input type='hidden' name='csrf_token' value='e3b0c442'></form>"},
        {"after": "<!-- generated in 12 ms at 12:00:01 -->"},
        {"head": "<style>body { color: #123456 }</style>"},
        {"head": "<meta name='csrf' content='token-1'>"},
    ],
)
def test_text_mode_ignores_markup_noise(noise):
    base = signature(page(), "text/html; charset=utf-8", "text")
    noisy = signature(page(**noise), "text/html; charset=utf-8", "text")
    assert noisy == base
    assert signature(page(**noise), "text/html", "raw") != signature(page(), "text/html", "raw")


def test_text_mode_ignores_whitespace_and_reflow():
    reflowed = ARTICLE.replace(" the ", "\n   the ").replace("<p>", "<p>\n\t")
    assert signature(page(article=reflowed), "text/html", "text") == signature(
        page(), "text/html", "text"
    )


def test_text_mode_sees_changes_of_the_main_text():
    changed = ARTICLE.replace("Version two", "Version three")
    assert signature(page(article=changed), "text/html", "text") != signature(
        page(), "text/html", "text"
    )


def test_text_mode_on_the_test_servers_noisy_page():
    a, b = noisy_page().encode(), noisy_page().encode()
    assert a != b
    assert signature(a, "text/html", "text") == signature(b, "text/html", "text")


def test_text_signature_is_the_hash_of_the_main_text():
    text = main_text(page(), "text/html")
    assert text.startswith("Release notes Version two adds conditional requests")
    assert "  " not in text and "\n" not in text
    assert signature(page(), "text/html", "text") == sha(text.encode("utf-8"))


def test_declared_charset_decodes_the_body():
    latin = (
        "<html><body><p>Caf\u00e9 cr\u00e8me, served every morning from seven to eleven.</p>"
        "</body></html>"
    )
    utf8 = signature(latin.encode("utf-8"), "text/html; charset=utf-8", "text")
    assert signature(latin.encode("latin-1"), "text/html; charset=ISO-8859-1", "text") == utf8
    assert "Caf\u00e9" in main_text(latin.encode("latin-1"), 'text/html; charset="iso-8859-1"')


def test_main_text_lines_are_the_paragraphs_and_join_to_the_main_text():
    lines = main_text_lines(page(), "text/html")
    assert lines == [
        "Release notes",
        (
            "Version two adds conditional requests and content signatures to the crawler, so that "
            "a page that did not change costs a single round trip and no parsing."
        ),
        "The change rates learned from these visits feed the allocation of the crawl budget.",
    ]
    assert " ".join(lines) == main_text(page(), "text/html")
    # whitespace inside a paragraph, line separators and no-break spaces included, is one space
    odd = page(
        article=ARTICLE.replace("two adds", "two\u2028 adds\xa0\t").replace("rates ", "rates\r\n")
    )
    assert main_text_lines(odd, "text/html; charset=utf-8") == lines
    assert main_text(odd, "text/html; charset=utf-8") == main_text(page(), "text/html")
    # the fallbacks: the visible text as one line, nothing for a page without text
    assert main_text_lines(b"<html><body><div>Closed  today</div></body></html>") == [
        "Closed today"
    ]
    assert main_text_lines(b"<html><body><canvas></canvas></body></html>") == []
    assert main_text_lines(b"  ") == []


def test_main_text_lines_decode_with_the_declared_charset():
    html = page(
        article=ARTICLE.replace("Release notes", "Cr\u00e8me br\u00fbl\u00e9e \u00e0 la carte")
    ).decode()
    utf8 = main_text_lines(html.encode("utf-8"), "text/html; charset=utf-8")
    assert utf8[0] == "Cr\u00e8me br\u00fbl\u00e9e \u00e0 la carte"
    assert main_text_lines(html.encode("latin-1"), "text/html; charset=ISO-8859-1") == utf8


def test_unknown_charset_falls_back_to_detection():
    body = "<html><body><p>Caf\u00e9</p></body></html>".encode()
    assert main_text(body, "text/html; charset=no-such-charset") == "Caf\u00e9"


@pytest.mark.parametrize(
    "content_type", ["application/json", "application/pdf", "image/png", "text/plain", "text/css"]
)
def test_non_html_uses_the_raw_signature(content_type):
    body = b'{"updated": "2024-01-01T00:00:00Z", "value": 1}'
    assert signature(body, content_type, "text") == sha(body)


def test_without_content_type_html_is_sniffed():
    assert signature(page(), None, "text") == signature(page(), "text/html", "text")
    assert signature(b"just some bytes", None, "text") == sha(b"just some bytes")
    assert signature(b"just some bytes", "garbage", "text") == sha(b"just some bytes")


def test_xhtml_is_html():
    assert signature(page(), "application/xhtml+xml", "text") == signature(
        page(), "text/html", "text"
    )


def test_html_without_main_text_uses_the_visible_text():
    # too little text for an article: trafilatura may or may not pick it; the visible text is used
    template = "<html><head><script>var t = {};</script></head><body><div>{}</div></body></html>"
    tiny = template.format(1, "Closed today").encode()
    tiny2 = template.format(2, "Closed  today").encode()
    assert main_text(tiny, "text/html") == "Closed today"
    assert (
        signature(tiny, "text/html", "text")
        == signature(tiny2, "text/html", "text")
        == sha(b"Closed today")
    )


def test_html_without_any_text_uses_the_raw_signature():
    empty = (
        b"<html><head><script>draw()</script></head><body><canvas id='c'></canvas></body></html>"
    )
    assert main_text(empty, "text/html") == ""
    assert signature(empty, "text/html", "text") == sha(empty)
    assert signature(b"", "text/html", "text") == sha(b"")


def test_text_mode_is_deterministic_across_calls():
    # trafilatura's deduplication would remember earlier calls; it is off
    assert len({signature(page(), "text/html", "text") for _ in range(5)}) == 1


def test_modes():
    assert SIGNATURE_MODES == ("raw", "text")


@pytest.mark.parametrize("mode", ["RAW", "html", "", "sha256"])
def test_unknown_mode(mode):
    with pytest.raises(
        UnknownNameError, match=f"signature mode must be one of 'raw', 'text'; got '{mode}'"
    ):
        signature(b"x", None, mode)
    with pytest.raises(ValueError):
        signature(b"x", None, mode)


def test_body_must_be_bytes():
    with pytest.raises(TypeError, match="body must be bytes; got str"):
        signature("text", None, "raw")
