"""The shared argument checks of ``freshcrawl._validation``."""

from __future__ import annotations

import numpy as np
import pytest

from freshcrawl._validation import check_int


def test_check_int_accepts_python_and_numpy_integers():
    assert check_int("n", 3) == 3 and type(check_int("n", np.int64(3))) is int
    assert check_int("k", 0) == 0
    assert check_int("s", 5, low=1, high=5) == 5


@pytest.mark.parametrize("value", [True, 2.0, "3", None, np.float64(1.0)])
def test_check_int_refuses_other_kinds_with_a_type_error(value):
    with pytest.raises(TypeError, match=r"n must be an int >= 1 \(pages\); got"):
        check_int("n", value, low=1, what=" (pages)")


def test_check_int_names_the_range():
    with pytest.raises(ValueError, match=r"n must be >= 1 \(pages\); got 0"):
        check_int("n", 0, low=1, what=" (pages)")
    with pytest.raises(ValueError, match=r"state0 must be in 1\.\.4; got 5"):
        check_int("state0", 5, low=1, high=4)
