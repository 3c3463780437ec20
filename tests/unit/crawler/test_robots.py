"""robots.txt rules (RFC 9309) from status and text, without any server."""

from __future__ import annotations

import pytest

from freshcrawl.crawler import ROBOTS_MAX_AGE_S, RobotsOutcome, RobotsRules

ROBOTS = """\
# a comment
User-agent: *
Disallow: /private
Allow: /private/public
Disallow: /*.pdf$
Crawl-delay: 4

User-agent: freshcrawl
Disallow: /not-for-freshcrawl
Allow: /
Crawl-delay: 1.5

User-agent: otherbot
Disallow: /
"""

ORIGIN = "https://example.com"


def outcome(status, text=None, origin=ORIGIN):
    return RobotsOutcome(
        origin=origin, status=status, text=text, fetched_at=0.0, elapsed_s=0.1, why="x"
    )


def test_max_age_is_a_day():
    assert ROBOTS_MAX_AGE_S == 24 * 3600


def test_own_group_applies():
    rules = RobotsRules(200, ROBOTS)
    assert rules.mode == "parsed"
    assert not rules.allowed("https://example.com/not-for-freshcrawl/x")
    assert rules.allowed("https://example.com/private/a")  # the * group does not apply to us
    assert rules.crawl_delay == 1.5


def test_star_group_applies_to_other_tokens():
    rules = RobotsRules(200, ROBOTS, user_agent="somebot")
    assert not rules.allowed("https://example.com/private/a")
    assert rules.allowed("https://example.com/private/public/b")  # the longest match wins
    assert not rules.allowed("https://example.com/files/report.pdf")
    assert rules.allowed("https://example.com/files/report.pdf?page=2")
    assert rules.allowed("https://example.com/")
    assert rules.crawl_delay == 4.0


def test_star_group_when_freshcrawl_has_none():
    rules = RobotsRules(200, "User-agent: *\nDisallow: /tmp/\nCrawl-delay: 10\n")
    assert not rules.allowed("http://example.com/tmp/x")
    assert rules.allowed("http://example.com/tmpfile")
    assert rules.crawl_delay == 10.0


def test_user_agent_matching_is_case_insensitive():
    rules = RobotsRules(200, "User-agent: FreshCrawl\nDisallow: /\n")
    assert not rules.allowed("http://example.com/a")


def test_no_crawl_delay():
    assert RobotsRules(200, "User-agent: *\nDisallow: /x\n").crawl_delay is None


@pytest.mark.parametrize("value", ["-3", "soon", "nan", "inf", ""])
def test_bad_crawl_delay_counts_as_none(value):
    assert RobotsRules(200, f"User-agent: *\nCrawl-delay: {value}\n").crawl_delay is None


@pytest.mark.parametrize("status", [200, 203, 204])
@pytest.mark.parametrize("text", [None, "", "   \n"])
def test_empty_file_allows_everything(status, text):
    rules = RobotsRules(status, text)
    assert rules.allowed("http://example.com/anything") and rules.crawl_delay is None


@pytest.mark.parametrize("status", [400, 401, 403, 404, 410, 451])
def test_4xx_allows_everything(status):
    rules = RobotsRules(status, "User-agent: *\nDisallow: /\n")  # a 4xx body is not read
    assert rules.mode == "allow-all"
    assert rules.allowed("http://example.com/a") and rules.crawl_delay is None


@pytest.mark.parametrize("status", [None, 429, 500, 502, 503, 599, 301, 302, 100])
def test_unreachable_disallows_everything(status):
    rules = RobotsRules(status)
    assert rules.mode == "disallow-all"
    assert not rules.allowed("http://example.com/")
    assert not rules.allowed("http://example.com/a?b=c")
    assert rules.crawl_delay is None


@pytest.mark.parametrize("status", [200, 404, 500, None])
def test_robots_txt_itself_is_always_allowed(status):
    rules = RobotsRules(status, "User-agent: *\nDisallow: /\n")
    assert rules.allowed("http://example.com/robots.txt")
    assert not rules.allowed("http://example.com/robots.txt.bak") or status == 404


def test_malformed_content_parses_what_can_be_parsed():
    text = (
        "<html><body>This is not a robots.txt</body></html>\n"
        "User-agent: *\n"
        "Disallow /no-colon\n"  # lenient, as the major crawlers are: a missing colon is forgiven
        "Dissallow: /typo\n"  # and so is this common misspelling
        "Unknown-field: /ignored\n"
        "Disallow: /real\n"
        "\x00\x01 binary junk \ufffd\n"
        "Crawl-delay: 2\n"
    )
    rules = RobotsRules(200, text)
    assert not rules.allowed("http://example.com/real/page")
    assert not rules.allowed("http://example.com/no-colon")
    assert not rules.allowed("http://example.com/typo")
    assert rules.allowed("http://example.com/ignored")
    assert rules.allowed("http://example.com/other")
    assert rules.crawl_delay == 2.0


def test_only_garbage_allows_everything():
    rules = RobotsRules(200, "\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    assert rules.allowed("http://example.com/a")


def test_percent_encoding_is_matched():
    rules = RobotsRules(200, "User-agent: *\nDisallow: /caf%C3%A9\n")
    assert not rules.allowed("http://example.com/caf%C3%A9/menu")


def test_from_outcome_keeps_the_origin():
    rules = RobotsRules.from_outcome(outcome(200, ROBOTS))
    assert rules.origin == ORIGIN and rules.status == 200
    assert not rules.allowed("https://example.com/not-for-freshcrawl")
    assert not rules.allowed("HTTPS://EXAMPLE.COM:443/not-for-freshcrawl")
    with pytest.raises(
        ValueError, match="url 'https://other.example/a' is not on the origin of these rules"
    ):
        rules.allowed("https://other.example/a")
    with pytest.raises(ValueError, match="is not on the origin"):
        rules.allowed("http://example.com/a")  # another scheme is another origin


@pytest.mark.parametrize(
    ("status", "allowed"), [(200, True), (404, True), (503, False), (None, False)]
)
def test_from_outcome_statuses(status, allowed):
    rules = RobotsRules.from_outcome(outcome(status, "" if status == 200 else None))
    assert rules.allowed("https://example.com/page") is allowed


def test_other_user_agent_from_outcome():
    rules = RobotsRules.from_outcome(outcome(200, ROBOTS), user_agent="otherbot")
    assert not rules.allowed("https://example.com/")


@pytest.mark.parametrize("url", ["/relative", "ftp://example.com/a", "mailto:a@example.com"])
def test_allowed_needs_an_absolute_http_url(url):
    with pytest.raises(ValueError, match="url must be an absolute http\\(s\\) URL"):
        RobotsRules(404).allowed(url)


@pytest.mark.parametrize(
    ("args", "match"),
    [
        (("200",), "status must be an int HTTP status or None; got '200'"),
        ((True,), "status must be an int"),
        ((200, b"User-agent: *"), "text must be a str or None; got bytes"),
    ],
)
def test_bad_arguments(args, match):
    with pytest.raises(TypeError, match=match):
        RobotsRules(*args)


def test_bad_origin():
    with pytest.raises(
        ValueError, match="origin must be an absolute http\\(s\\) URL; got 'example.com'"
    ):
        RobotsRules(200, "", origin="example.com")


def test_repr():
    assert repr(RobotsRules(404, origin="http://Example.com")) == (
        "RobotsRules(status=404, mode='allow-all', origin='http://example.com')"
    )
