"""Package-level checks: the public names, the README's commands and CI agree."""

from __future__ import annotations

import importlib
import pkgutil
import re
import subprocess
import sys

import pytest
from click.testing import CliRunner

import freshcrawl
from freshcrawl.cli import main
from freshcrawl.units import parse_rate, parse_time

from ..conftest import REPO

#: The exact public names of the package and of every subpackage (sorted). A change to a package's
#: ``__all__`` is a change of the public interface: update this list on purpose.
PUBLIC = {
    "freshcrawl": [
        "AllocationResult",
        "ConvergenceWarning",
        "FreshcrawlError",
        "FreshcrawlWarning",
        "InfeasibleAllocation",
        "InvalidObservation",
        "Status",
        "TraceFormatError",
        "UnknownNameError",
        "__version__",
        "allocate",
        "parse_rate",
    ],
    "freshcrawl.allocation": [
        "AllocationResult",
        "Detection",
        "DetectionDiscrete",
        "FreshnessPeriodic",
        "FreshnessPoisson",
        "Harmonic",
        "KKT_ALARM",
        "OBJECTIVE_NAMES",
        "Objective",
        "PageProblem",
        "Roots",
        "Status",
        "SyncCost",
        "allocate",
        "budget_sums",
        "find_roots",
        "get_objective",
        "group_sums",
        "host_bounds",
        "kkt_residual",
        "make_problem",
        "rates_at_root",
    ],
    "freshcrawl.archive": [
        "DEFAULT_MAX_FILE_BYTES",
        "LatestCopies",
        "PROFILE_IDENTICAL",
        "PROFILE_NOT_MODIFIED",
        "StoredRecord",
        "WarcArchive",
        "payload_digest",
        "recover_open_file",
    ],
    "freshcrawl.bulk": [
        "DaskEngine",
        "ENGINE_NAMES",
        "PartitionedAllocation",
        "PartitionedEstimate",
        "StreamEngine",
        "allocate_partitioned",
        "estimate_partitioned",
        "make_engine",
        "partition_by",
    ],
    "freshcrawl.cli": [
        "EXTRA_OF_MODULE",
        "main",
        "missing_extra",
    ],
    "freshcrawl.crawler": [
        "DEFAULT_MAX_BYTES",
        "ErrorKind",
        "FetchOutcome",
        "FetchRequest",
        "Fetcher",
        "HTML_CONTENT_TYPES",
        "HTTP_SCHEMES",
        "Outcome",
        "PRODUCT_TOKEN",
        "ROBOTS_MAX_AGE_S",
        "ROBOTS_MAX_BYTES",
        "ROBOTS_MAX_REDIRECTS",
        "RobotsOutcome",
        "RobotsRules",
        "SIGNATURE_MODES",
        "default_user_agent",
        "host_of",
        "main_text",
        "normalize_url",
        "parse_retry_after",
        "signature",
    ],
    "freshcrawl.frontier": [
        "Backlog",
        "CrawlSettings",
        "Frontier",
        "HostLoad",
        "RobotsVisit",
        "Visit",
        "origin_of",
        "parse_url_list",
    ],
    "freshcrawl.service": [
        "CrawlInfo",
        "DEFAULT_CRAWL",
        "FrontierService",
        "Lease",
        "Report",
        "queue_key",
    ],
    "freshcrawl.store": [
        "HostArrays",
        "PAGE_STATUSES",
        "PageArrays",
        "Store",
        "WriterLock",
        "acquire_writer_lock",
        "check_namespace",
        "database_url",
        "drop_namespace",
        "is_connection_error",
        "is_refused_login",
        "list_namespaces",
        "open_store",
        "reason_of",
        "unavailable",
    ],
    "freshcrawl.testing": [
        "FAULT_KINDS",
        "Fault",
        "FreshnessReport",
        "HostInfo",
        "HostSpec",
        "Page",
        "PageSpec",
        "ROBOTS_FAULTS",
        "RequestLog",
        "RequestRecord",
        "RobotsRules",
        "TestWeb",
        "Violation",
        "host_name",
        "make_pages",
        "page_freshness",
        "read_request_log",
    ],
    "freshcrawl.environments": [
        "Clock",
        "Environment",
        "Integrals",
        "PoissonEnvironment",
        "ReplayEnvironment",
        "SimulatedClock",
        "SimulatedEnvironment",
        "WallClock",
    ],
    "freshcrawl.estimators": [
        "BatchEstimator",
        "CONSISTENT_NAMES",
        "ESTIMATORS",
        "ESTIMATOR_NAMES",
        "Estimator",
        "FORGETTING_NAMES",
        "LLN",
        "LLNInterval",
        "MLE",
        "MLEBinned",
        "MomentMatching",
        "MomentMatchingBinned",
        "Naive",
        "NaiveInterval",
        "SA",
        "SAInterval",
        "SAM",
        "SAMInterval",
        "make_batch_estimator",
        "make_estimator",
        "mle_path",
        "mm_path",
        "solve_mle",
        "solve_mm",
    ],
    "freshcrawl.experiments": [
        "AutomataConfig",
        "AutomataResult",
        "PollingRun",
        "SyncBanditsResult",
        "run_automata_experiments",
        "run_family",
        "run_real_trace",
        "run_synthetic",
        "simulate_estimator",
        "simulate_htraa",
    ],
    "freshcrawl.learning": [
        "ArmSchedule",
        "AsyncMirrorSync",
        "AsyncPSGDSync",
        "CustomCost",
        "HTRAA",
        "MirrorSync",
        "PoissonBinaryCost",
        "PolynomialCost",
        "SyncCostObjective",
        "SyncCostProcess",
        "SyncOptimum",
        "SyncProblem",
        "SyncRunResult",
        "TRAA",
        "UPDATE_MODES",
        "estimate_update_prob",
        "estimator_polling",
        "gradient_sample",
        "mirror_descent_step",
        "n_leaves_for",
        "optimal_policy_cost",
        "optimal_polling",
        "parse_update_mode",
        "policy_cost",
        "policy_cost_gradient",
        "projected_sgd_step",
        "proportional_polling",
        "schedule_arm_plays",
        "uniform_polling",
    ],
    "freshcrawl.policies": [
        "Observations",
        "POLICY_FACTORIES",
        "Plan",
        "Policy",
        "PolicyContext",
        "PolicyOptions",
        "RatePlan",
        "VisitPlan",
        "make_policy",
        "policy_names",
    ],
    "freshcrawl.scheduling": [
        "EDFSchedule",
        "edf2_choose",
        "edf_schedule",
        "periodic_visits",
        "visit_periods",
    ],
    "freshcrawl.simulation": [
        "SimulationResult",
        "TokenBucket",
        "VISIT_PROCESSES",
        "periodic_visits",
        "poisson_visits",
        "results_table",
        "simulate",
        "timeseries_table",
        "write_report",
    ],
    "freshcrawl.traces": [
        "ChangeHistory",
        "VisitLog",
        "host_index",
        "read_history",
        "read_host_caps",
        "read_pages",
        "read_visit_log",
        "write_visit_log",
    ],
}


def _packages():
    return ["freshcrawl"] + sorted(
        f"freshcrawl.{m.name}" for m in pkgutil.iter_modules(freshcrawl.__path__) if m.ispkg
    )


@pytest.mark.parametrize("module_name", _packages())
def test_every_package_has_a_docstring_and_its_exact_public_names(module_name):
    module = importlib.import_module(module_name)
    doc = (module.__doc__ or "").strip()
    assert len(doc.splitlines()) >= 3, (
        f"{module_name}: the docstring should say what the package holds"
    )
    assert module_name in PUBLIC, f"{module_name}: add its __all__ to PUBLIC"
    assert sorted(module.__all__) == PUBLIC[module_name]
    assert len(set(module.__all__)) == len(module.__all__)
    missing = [name for name in module.__all__ if not hasattr(module, name)]
    assert missing == []


def test_every_listed_package_exists():
    assert sorted(PUBLIC) == _packages()


def test_import_freshcrawl_does_not_load_numba():
    # the allocation is numpy only: neither importing freshcrawl nor reaching allocate loads numba
    code = (
        "import sys, freshcrawl; assert 'numba' not in sys.modules; freshcrawl.allocate; "
        "assert 'numba' not in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_ci_runs_the_readme_test_command():
    readme = (REPO / "README.md").read_text()
    blocks = re.findall(r"```bash\n(.*?)\n```", readme, flags=re.DOTALL)
    test_cmd = next(b for b in blocks if "scripts/test.sh" in b)
    assert test_cmd.strip() in (REPO / ".ci" / "run").read_text()
    assert "python -m pytest" in (REPO / "scripts" / "test.sh").read_text()


def test_cli_help_lists_commands():
    result = CliRunner().invoke(main, ["--help"])
    assert result.exit_code == 0
    for cmd in (
        "estimate",
        "allocate",
        "simulate",
        "experiments",
        "crawl",
        "test-web",
        "serve",
        "partition",
    ):
        assert cmd in result.output


def test_cli_help_imports_no_subcommand():
    # the listing comes from the group's own one-line helps: numpy, numba and the extras stay unloaded
    code = (
        "import sys\n"
        "from freshcrawl.cli import main\n"
        "try:\n"
        "    main(['--help'])\n"
        "except SystemExit as exit:\n"
        "    assert exit.code == 0\n"
        "heavy = sorted({'numpy', 'numba', 'pandas', 'aiohttp', 'sqlalchemy'} & set(sys.modules))\n"
        "assert not heavy, heavy\n"
        "assert not [m for m in sys.modules if m.startswith('freshcrawl.cli.')], 'a subcommand was imported'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, capture_output=True)


def test_every_lazy_subcommand_has_its_help_line():
    assert set(main.lazy_help) == set(main.lazy_subcommands)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1000/day", 1000.0),
        ("2/hour", 48.0),
        ("1/s", 86400.0),
        ("3", 3.0),
        ("7/week", 1.0),
        ("0.5/days", 0.5),
    ],
)
def test_parse_rate(text, expected):
    assert parse_rate(text) == pytest.approx(expected)


@pytest.mark.parametrize("text", ["", "abc", "5/fortnight", "-3/day", "1/"])
def test_parse_rate_rejects(text):
    with pytest.raises(ValueError, match="rate"):
        parse_rate(text)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("0", 0.0),
        ("172800", 2.0),
        ("1970-01-02", 1.0),
        ("1970-01-01T06:00:00Z", 0.25),
        ("1970-01-01T02:00:00+02:00", 0.0),
    ],
)
def test_parse_time(text, expected):
    assert parse_time(text) == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize("text", ["yesterday", "nan", "inf", "2024-13-45"])
def test_parse_time_rejects(text):
    with pytest.raises(ValueError, match="time must be"):
        parse_time(text)
