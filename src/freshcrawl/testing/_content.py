"""Bodies the test web serves: prose-like HTML per page version, PDF and PNG bytes, a gzip bomb.

Everything here is deterministic in its arguments and cheap: an HTML body is a few KiB built once per
page version (the server caches it); the gzip bomb is built once per process from a single compressed
block repeated.
"""

from __future__ import annotations

import random
import struct
import threading
import zlib
from email.utils import formatdate
from html import escape

__all__ = ["NOISE_SLOTS", "garbage", "gzip_bomb", "render_html", "render_pdf", "render_png"]

_ADJ = (
    "quiet",
    "northern",
    "annual",
    "local",
    "narrow",
    "early",
    "recent",
    "public",
    "modest",
    "steady",
    "coastal",
    "regional",
    "familiar",
    "practical",
    "seasonal",
    "careful",
    "independent",
    "rural",
)
_NOUN = (
    "council",
    "library",
    "harbour",
    "market",
    "orchestra",
    "garden",
    "railway",
    "museum",
    "festival",
    "bakery",
    "school",
    "bridge",
    "committee",
    "workshop",
    "archive",
    "newspaper",
    "clinic",
    "river",
)
_VERB = (
    "announced",
    "reviewed",
    "postponed",
    "approved",
    "described",
    "questioned",
    "welcomed",
    "published",
    "discussed",
    "extended",
    "reopened",
    "examined",
    "celebrated",
    "reported",
)
_OBJ = (
    "a new timetable",
    "the spring programme",
    "plans for the old station",
    "its opening hours",
    "a proposal from residents",
    "the results of the survey",
    "a longer season",
    "the repair works",
    "an exhibition of early maps",
    "the budget for next year",
    "a series of evening talks",
    "the results of a long study",
    "changes to the parking rules",
    "a small grant for volunteers",
)
_TAIL = (
    "after a long debate",
    "despite the weather",
    "to the surprise of many visitors",
    "following several complaints",
    "in a short statement",
    "at a crowded meeting on Tuesday",
    "after months of preparation",
    "with support from local businesses",
    "for the first time",
    "according to people familiar with the matter",
    "before the end of the month",
)
_CONNECT = (
    "Meanwhile,",
    "In addition,",
    "As a result,",
    "However,",
    "At the same time,",
    "Later that week,",
    "According to the organisers,",
    "For now,",
)

#: the places where a noisy page inserts per-request tokens
NOISE_SLOTS = 2

N_PARAGRAPHS = 5


def _sentence(rng: random.Random) -> str:
    s = (
        f"The {rng.choice(_ADJ)} {rng.choice(_NOUN)} {rng.choice(_VERB)} {rng.choice(_OBJ)} "
        f"{rng.choice(_TAIL)}."
    )
    if rng.random() < 0.4:
        s = (
            f"{rng.choice(_CONNECT)} the {rng.choice(_NOUN)} of the {rng.choice(_ADJ)} "
            f"{rng.choice(_NOUN)} {rng.choice(_VERB)} {rng.choice(_OBJ)}, and "
            f"{rng.randint(2, 90)} people {rng.choice(_VERB)} it {rng.choice(_TAIL)}."
        )
    return s


def _paragraph(seed: int, page: int, j: int, rev: int) -> str:
    rng = random.Random(f"{seed}:{page}:{j}:{rev}")
    return " ".join(_sentence(rng) for _ in range(rng.randint(4, 6)))


def paragraph_revision(version: int, j: int, n: int = N_PARAGRAPHS) -> int:
    """Version at which paragraph ``j`` was last rewritten: change k rewrites paragraph ``k % n``."""
    if version < j or version == 0:
        return 0
    return version - ((version - j) % n)


def main_text(seed: int, page: int, version: int) -> tuple[str, list[str]]:
    """Title and paragraphs of a page version (each change rewrites one paragraph)."""
    rng = random.Random(f"{seed}:{page}:title")
    title = f"{rng.choice(_ADJ).capitalize()} {rng.choice(_NOUN)} news, page {page}"
    paras = [_paragraph(seed, page, j, paragraph_revision(version, j)) for j in range(N_PARAGRAPHS)]
    return title, paras


def render_html(
    seed: int, page: int, version: int, last_modified: float, *, noisy: bool = False
) -> list[bytes]:
    """HTML of a page version, as ``NOISE_SLOTS + 1`` parts to join with per-request tokens.

    For a page that is not noisy the parts are joined with nothing (``b"".join(parts)``).
    """
    title, paras = main_text(seed, page, version)
    t = escape(title)
    date = formatdate(last_modified, usegmt=True)
    head = (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f"<title>{t}</title>\n"
        f'<meta name="description" content="{escape(paras[0][:120])}">\n'
    )
    nav = (
        '</head>\n<body>\n<header>\n<nav class="menu"><a href="/">Home</a> | '
        '<a href="/section/news">News</a> | <a href="/section/events">Events</a> | '
        '<a href="/about">About us</a> | <a href="/contact">Contact</a></nav>\n</header>\n'
        "<main>\n<article>\n"
        f'<h1>{t}</h1>\n<p class="byline">By the editorial team. Revision {version}, '
        f"updated {date}.</p>\n"
        + "".join(f"<p>{escape(p)}</p>\n" for p in paras)
        + '</article>\n</main>\n<aside class="related"><h2>Related</h2><ul>'
        '<li><a href="/section/news">More news</a></li><li><a href="/section/events">What is on'
        "</a></li></ul></aside>\n<footer>\n"
    )
    foot = (
        '<p class="legal">Copyright The Test Web. All rights reserved. '
        '<a href="/privacy">Privacy</a> | <a href="/terms">Terms</a></p>\n</footer>\n</body>\n</html>\n'
    )
    parts = [head.encode(), nav.encode(), foot.encode()]
    if not noisy:
        return [b"".join(parts)]
    return parts


def noise(rng: random.Random, now: float) -> list[bytes]:
    """Per-request tokens for the ``NOISE_SLOTS`` slots of a noisy page."""
    token = f"{rng.getrandbits(128):032x}"
    ad = rng.getrandbits(48)
    stamp = formatdate(now, usegmt=True)
    return [
        f'<meta name="csrf-token" content="{token}">\n<meta name="generated" content="{now:.6f}">\n'.encode(),
        (
            f'<div class="ad" data-ad-id="{ad:012x}">Sponsored</div>\n'
            f'<p class="session">Rendered {stamp} for session {token[:16]}.</p>\n'
        ).encode(),
    ]


def render_pdf(seed: int, page: int, version: int) -> bytes:
    """A small valid PDF whose text (and so bytes) change with the version."""
    title, paras = main_text(seed, page, version)
    text = f"{title}. Revision {version}. {paras[version % N_PARAGRAPHS][:200]}"
    text = text.replace("\\", "").replace("(", "").replace(")", "")
    stream = f"BT /F1 12 Tf 72 720 Td ({text}) Tj ET".encode("latin-1", "replace")
    objs = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        (
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
            b"/Resources << /Font << /F1 5 0 R >> >> >>"
        ),
        b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    out = bytearray(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for k, body in enumerate(objs, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % k + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objs) + 1)
    out += b"".join(b"%010d 00000 n \n" % o for o in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objs) + 1, xref)
    return bytes(out)


def render_png(seed: int, page: int, version: int, size: int = 32) -> bytes:
    """A small valid PNG (RGB, ``size`` x ``size``) whose pixels change with the version."""
    rng = random.Random(f"{seed}:{page}:{version}:png")
    r, g, b = rng.randrange(256), rng.randrange(256), rng.randrange(256)
    rows = bytearray()
    for y in range(size):
        rows.append(0)  # filter: none
        for x in range(size):
            rows += bytes(((r + 4 * x) & 255, (g + 4 * y) & 255, (b + version) & 255))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return (
            struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
        )

    ihdr = struct.pack(">IIBBBBB", size, size, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", ihdr)
        + chunk(b"IDAT", zlib.compress(bytes(rows)))
        + chunk(b"IEND", b"")
    )


_BOMB_LOCK = threading.Lock()
_BOMB: dict[int, tuple[bytes, bytes, int, bytes]] = {}
_MIB = 1 << 20


def gzip_bomb(n_mib: int = 1024) -> tuple[bytes, bytes, int, bytes]:
    """A gzip member of ``n_mib`` MiB of zeros, as ``(head, block, n_blocks, tail)``.

    The wire bytes are ``head + block * n_blocks + tail`` (about 1 KiB per MiB decompressed): each MiB
    is compressed after a full flush, so every block after the first is the same bytes. Built once per
    size and process (the CRC of 1 GiB of zeros takes well under a second).
    """
    with _BOMB_LOCK:
        if n_mib not in _BOMB:
            zeros = bytes(_MIB)
            c = zlib.compressobj(9, zlib.DEFLATED, 31)  # 31: gzip header
            first = c.compress(zeros) + c.flush(zlib.Z_FULL_FLUSH)
            block = c.compress(zeros) + c.flush(zlib.Z_FULL_FLUSH)
            end = c.flush(
                zlib.Z_FINISH
            )  # final empty block + crc + isize of 2 MiB: replace the trailer
            crc = 0
            for _ in range(n_mib):
                crc = zlib.crc32(zeros, crc)
            tail = end[:-8] + struct.pack("<II", crc, (n_mib * _MIB) & 0xFFFFFFFF)
            _BOMB[n_mib] = (first, block, n_mib - 1, tail)
        return _BOMB[n_mib]


def garbage(seed: int, n: int = 2048) -> bytes:
    """``n`` deterministic bytes of binary garbage (NULs, invalid UTF-8, stray newlines)."""
    rng = random.Random(f"{seed}:garbage")
    return b"\x00\xff\xfe" + bytes(rng.getrandbits(8) for _ in range(n))
