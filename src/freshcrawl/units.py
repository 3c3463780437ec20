"""Parsing of rates such as ``"1000/day"``, durations such as ``"30m"`` and times (unix seconds or ISO 8601).

freshcrawl works in days: rates are in visits (or changes) per day, times in days since the unix epoch
unless a name says otherwise.
"""

from __future__ import annotations

import math
import re

__all__ = ["parse_rate", "parse_duration", "parse_time", "SECONDS_PER_DAY", "RATE_UNITS"]

SECONDS_PER_DAY = 86_400.0

#: Multipliers that turn "N per <unit>" into N per day.
RATE_UNITS: dict[str, float] = {
    "s": SECONDS_PER_DAY,
    "sec": SECONDS_PER_DAY,
    "second": SECONDS_PER_DAY,
    "min": 1440.0,
    "minute": 1440.0,
    "h": 24.0,
    "hour": 24.0,
    "d": 1.0,
    "day": 1.0,
    "w": 1.0 / 7.0,
    "week": 1.0 / 7.0,
}

_DURATION = re.compile(r"^\s*([0-9]*\.?[0-9]+)\s*(ms|s|m|min|h|d)?\s*$")
_DURATION_UNITS = {"ms": 0.001, "s": 1.0, None: 1.0, "m": 60.0, "min": 60.0, "h": 3600.0, "d": SECONDS_PER_DAY}

_RATE = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*(?:/\s*([A-Za-z]+))?\s*$")


def parse_rate(text: str | float, *, name: str = "rate") -> float:
    """Parse ``"N/day"``, ``"N/hour"``, ``"N/s"`` (or a bare number, per day) into a rate per day.

    Raises
    ------
    ValueError
        If the text is not a number with an optional known unit, or the rate is not finite and >= 0.

    Examples
    --------
    >>> parse_rate("1000/day"), parse_rate("2/hour"), parse_rate("1/s")
    (1000.0, 48.0, 86400.0)
    """
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        value, unit = float(text), "day"
    else:
        m = _RATE.match(str(text))
        if m is None:
            raise ValueError(f"{name} must look like 'N/day', 'N/hour' or 'N/s'; got {text!r}")
        value = float(m.group(1))
        unit = (m.group(2) or "day").lower()
        if unit.endswith("s") and unit[:-1] in RATE_UNITS:
            unit = unit[:-1]
        if unit not in RATE_UNITS:
            raise ValueError(
                f"{name} has unknown unit {unit!r} in {text!r}; use one of {', '.join(sorted(set(RATE_UNITS)))}"
            )
    rate = value * RATE_UNITS[unit]
    if not math.isfinite(rate) or rate < 0:
        raise ValueError(f"{name} must be finite and >= 0 per day; got {text!r}")
    return rate


def parse_duration(text: str, *, name: str = "duration") -> float:
    """Parse ``"90s"``, ``"30m"``, ``"1.5h"``, ``"2d"``, ``"250ms"`` or a bare number of seconds into seconds.

    Raises
    ------
    ValueError
        If the text is not a number >= 0 with an optional unit (ms, s, m or min, h, d).

    Examples
    --------
    >>> parse_duration("90s"), parse_duration("30m"), parse_duration("1.5h"), parse_duration("45")
    (90.0, 1800.0, 5400.0, 45.0)
    """
    m = _DURATION.match(str(text))
    if m is None:
        raise ValueError(f"{name} must look like 90s, 30m, 1h or 2d; got {text!r}")
    return float(m.group(1)) * _DURATION_UNITS[m.group(2)]


def parse_time(text: str | float, *, name: str = "time") -> float:
    """Parse unix seconds or an ISO 8601 date/time (UTC unless it says otherwise) into days since the epoch.

    Raises
    ------
    ValueError
        If the text is neither a finite number nor an ISO 8601 date/time.

    Examples
    --------
    >>> parse_time("86400"), parse_time("1970-01-03"), parse_time("1970-01-01T12:00:00+00:00")
    (1.0, 2.0, 0.5)
    """
    import pandas as pd

    try:
        seconds = float(text)
    except (TypeError, ValueError):
        pass
    else:
        if not math.isfinite(seconds):
            raise ValueError(f"{name} must be finite unix seconds or an ISO 8601 date; got {text!r}")
        return seconds / SECONDS_PER_DAY
    try:
        ts = pd.Timestamp(text)
    except (TypeError, ValueError) as err:
        raise ValueError(f"{name} must be an ISO date (ISO 8601) such as 2024-01-31 or unix seconds; got {text!r}") from err
    if ts is pd.NaT:
        raise ValueError(f"{name} must be an ISO date (ISO 8601) such as 2024-01-31 or unix seconds; got {text!r}")
    if ts.tzinfo is None:
        ts = ts.tz_localize("UTC")
    return ts.timestamp() / SECONDS_PER_DAY
