"""Package-level checks: the public names, the README's commands and CI agree."""

from __future__ import annotations

import importlib
import re

import pytest
from click.testing import CliRunner

import freshcrawl
from freshcrawl.cli import main
from freshcrawl.units import parse_rate, parse_time

from ..conftest import REPO


@pytest.mark.parametrize(
    "module_name",
    [
        "freshcrawl",
        "freshcrawl.estimators",
        "freshcrawl.allocation",
        "freshcrawl.learning",
        "freshcrawl.policies",
        "freshcrawl.environments",
        "freshcrawl.simulation",
        "freshcrawl.crawler",
        "freshcrawl.frontier",
        "freshcrawl.store",
        "freshcrawl.testing",
        "freshcrawl.service",
    ],
)
def test_all_names_exist(module_name):
    module = importlib.import_module(module_name)
    assert module.__all__, module_name
    missing = [name for name in module.__all__ if not hasattr(module, name)]
    assert missing == []
    assert len(set(module.__all__)) == len(module.__all__)


def test_ci_runs_the_readme_test_command():
    readme = (REPO / "README.md").read_text()
    blocks = re.findall(r"```bash\n(.*?)\n```", readme, flags=re.S)
    test_cmd = next(b for b in blocks if "scripts/test.sh" in b)
    assert "python -m pytest" in (REPO / "scripts" / "test.sh").read_text()
    assert test_cmd.strip() in (REPO / ".ci" / "run").read_text()


def test_cli_help_lists_commands():
    result = CliRunner().invoke(main, ["--help"])
    assert result.exit_code == 0
    for cmd in ("estimate", "allocate", "simulate", "experiments", "crawl", "test-web", "serve"):
        assert cmd in result.output


@pytest.mark.parametrize(
    ("text", "expected"),
    [("1000/day", 1000.0), ("2/hour", 48.0), ("1/s", 86400.0), ("3", 3.0), ("7/week", 1.0), ("0.5/days", 0.5)],
)
def test_parse_rate(text, expected):
    assert parse_rate(text) == pytest.approx(expected)


@pytest.mark.parametrize("text", ["", "abc", "5/fortnight", "-3/day", "1/"])
def test_parse_rate_rejects(text):
    with pytest.raises(ValueError, match="rate"):
        parse_rate(text)


@pytest.mark.parametrize(
    ("text", "expected"),
    [("0", 0.0), ("172800", 2.0), ("1970-01-02", 1.0), ("1970-01-01T06:00:00Z", 0.25),
     ("1970-01-01T02:00:00+02:00", 0.0)],
)
def test_parse_time(text, expected):
    assert parse_time(text) == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize("text", ["yesterday", "nan", "inf", "2024-13-45"])
def test_parse_time_rejects(text):
    with pytest.raises(ValueError, match="time must be"):
        parse_time(text)
