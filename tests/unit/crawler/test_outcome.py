"""The one classification of a visit's final answer (status, signature, previous signature)."""

from __future__ import annotations

import pytest

from freshcrawl.crawler.outcome import ErrorKind, Outcome, classify, status_error

NO, CHANGED, UNCHANGED, FIRST = Outcome.NO_INFO, Outcome.CHANGED, Outcome.UNCHANGED, Outcome.FIRST


@pytest.mark.parametrize(
    ("status", "sig", "prev", "conditional", "want"),
    [
        (304, None, "a", True, (UNCHANGED, None, "not-modified")),
        (304, None, None, False, (NO, ErrorKind.PAGE, "unexpected-304")),
        (200, "b", None, False, (FIRST, None, "first-copy")),
        (200, "a", "a", True, (UNCHANGED, None, "same-signature")),
        (204, "b", "a", True, (CHANGED, None, "new-signature")),
        (200, None, "a", True, (NO, ErrorKind.CONTENT, "no-signature")),
        (429, None, "a", True, (NO, ErrorKind.THROTTLED, "http-429")),
        (503, None, "a", True, (NO, ErrorKind.THROTTLED, "http-503")),
        (500, None, "a", True, (NO, ErrorKind.SERVER, "http-500")),
        (404, None, "a", True, (NO, ErrorKind.PAGE, "http-404")),
        (301, None, "a", True, (NO, ErrorKind.PAGE, "http-301")),
        (None, None, "a", True, (NO, ErrorKind.NETWORK, "network")),
    ],
)
def test_each_answer_gets_its_outcome_error_and_reason(status, sig, prev, conditional, want):
    assert classify(status, sig, prev, conditional=conditional) == want


def test_no_answer_keeps_the_reason_given_and_errors_are_set_exactly_for_no_information():
    assert classify(None, "x", "x", conditional=True, no_answer="timeout") == (
        NO,
        ErrorKind.NETWORK,
        "timeout",
    )
    for status in [None, *range(100, 600)]:
        for sig, prev in (("a", "a"), ("a", "b"), ("a", None), (None, "a")):
            outcome, error, _ = classify(status, sig, prev, conditional=prev is not None)
            assert (error is None) == (outcome is not NO)
            if status != 304:
                assert status_error(status) in (None, error)
