"""The package's import rules, read from the source with ``ast`` (nothing is imported).

- No subpackage of freshcrawl imports another subpackage's private names: a module or attribute
  whose name starts with ``_`` (dunders excepted) in ``freshcrawl.Y`` is Y's own business. Within
  one subpackage, private names are shared freely. The top-level private modules in
  :data:`SHARED_PRIVATE_MODULES` are the internals of freshcrawl as a whole (input checks, table
  I/O) and may be imported by any subpackage; their own private names may not.
- No library module imports ``freshcrawl.cli`` (the command line sits on top;
  ``freshcrawl/__main__.py`` is its entry point).
- ``freshcrawl.policies`` does not import ``freshcrawl.simulation`` (the simulation runs policies).
- ``freshcrawl.service`` reaches the frontier through its public methods: no name the frontier
  package keeps private (``_hosts``, ``_sync_new_pages``, ...) appears as an attribute in the
  service, and what the service reads from a frontier object (``f``, ``frontier``,
  ``<x>.frontier``) is a public method of :class:`~freshcrawl.frontier.Frontier` or one of
  :data:`FRONTIER_ATTRIBUTES_READ`, never its state arrays (``next_due``, ``held``, ``status``,
  ...), and nothing is assigned to it.
- The service's front ends (every module of ``freshcrawl.service`` but ``core.py``) reach a crawl
  only through :class:`~freshcrawl.service.FrontierService`'s public methods: no ``.frontier``,
  no private attribute of the service object (``service._crawls``), no ``.page_leases``.

Imports anywhere in a module count (function bodies, ``TYPE_CHECKING`` blocks), and so does an
attribute read through an imported module (``mirror_sync._log_barrier_projection``).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from ..conftest import REPO

SRC = REPO / "src"
PACKAGE = SRC / "freshcrawl"

#: Top-level private modules shared by every subpackage.
SHARED_PRIVATE_MODULES = frozenset({"freshcrawl._validation", "freshcrawl._io"})


#: Attributes of a frontier the service may read besides its methods: its store (through the store's
#: own public methods), its settings and the time of its last plan.
FRONTIER_ATTRIBUTES_READ = frozenset({"store", "settings", "planned_at"})

#: Modules allowed to import the command line: the ``python -m freshcrawl`` entry point.
CLI_ENTRY_POINTS = frozenset({"freshcrawl/__main__.py"})


@dataclass(frozen=True, slots=True)
class Offence:
    """One broken rule: where, what was imported and which rule it breaks."""

    file: str  # path relative to src/, e.g. "freshcrawl/policies/bursty.py"
    line: int
    name: str  # the dotted name imported or read, e.g. "freshcrawl.learning.mirror_sync._f"
    rule: str

    def __str__(self) -> str:
        return f"src/{self.file}:{self.line}: {self.rule}: {self.name}"


def _is_private(part: str) -> bool:
    return part.startswith("_") and not (part.startswith("__") and part.endswith("__"))


def _module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _subpackage(dotted: str, root: Path) -> str | None:
    """``freshcrawl.X...`` -> ``X`` when X is a subpackage (a directory); None for the top level."""
    parts = dotted.split(".")
    if len(parts) < 2 or parts[0] != "freshcrawl":
        return None
    return parts[1] if (root / "freshcrawl" / parts[1]).is_dir() else None


def _is_module(dotted: str, root: Path) -> bool:
    base = root.joinpath(*dotted.split("."))
    return base.with_suffix(".py").is_file() or (base / "__init__.py").is_file()


def _resolve(node: ast.ImportFrom, module: str, is_package: bool) -> str:
    if not node.level:
        return node.module or ""
    parts = module.split(".") if is_package else module.split(".")[:-1]
    parts = parts[: len(parts) - (node.level - 1)]
    return ".".join(parts + ([node.module] if node.module else []))


def _dotted(node: ast.expr) -> list[str] | None:
    """``a.b.c`` as ["a", "b", "c"]; None when the chain does not start at a plain name."""
    out = []
    while isinstance(node, ast.Attribute):
        out.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    out.append(node.id)
    return out[::-1]


def imported_names(
    source: str, module: str, is_package: bool, root: Path
) -> Iterator[tuple[int, str]]:
    """Every freshcrawl name a module's source imports or reads through an imported module.

    Yields (line, dotted name): ``from freshcrawl.a.b import c`` gives ``freshcrawl.a.b.c``;
    ``import freshcrawl.a.b as m`` and then ``m._x`` give ``freshcrawl.a.b`` and
    ``freshcrawl.a.b._x``.
    """
    tree = ast.parse(source)
    modules: dict[str, str] = {}  # local name -> the freshcrawl module it is bound to
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] != "freshcrawl":
                    continue
                yield node.lineno, alias.name
                if alias.asname:
                    modules[alias.asname] = alias.name
                else:
                    modules["freshcrawl"] = "freshcrawl"
        elif isinstance(node, ast.ImportFrom):
            base = _resolve(node, module, is_package)
            if base.split(".")[0] != "freshcrawl":
                continue
            for alias in node.names:
                full = f"{base}.{alias.name}"
                yield node.lineno, full
                if _is_module(full, root):
                    modules[alias.asname or alias.name] = full
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and not isinstance(node.value, ast.Attribute):
            chain = _dotted(node)
            if chain and chain[0] in modules and any(_is_private(p) for p in chain[1:]):
                yield node.lineno, ".".join([modules[chain[0]], *chain[1:]])


def check_module(path: Path, root: Path = SRC) -> list[Offence]:
    """The rules this file checks, on one module of the package under ``root``."""
    module = _module_name(path, root)
    rel = path.relative_to(root).as_posix()
    own = _subpackage(module, root)
    offences = []
    for line, name in imported_names(
        path.read_text(encoding="utf-8"), module, path.name == "__init__.py", root
    ):
        target = _subpackage(name, root)
        parts = name.split(".")
        if target != own:
            privates = [p for p in parts[1:] if _is_private(p)]
            shared = ".".join(parts[:2]) in SHARED_PRIVATE_MODULES and not any(
                _is_private(p) for p in parts[2:]
            )
            if privates and not shared:
                offences.append(Offence(rel, line, name, "private name of another package"))
        if target == "cli" and own != "cli" and rel not in CLI_ENTRY_POINTS:
            offences.append(Offence(rel, line, name, "library module imports the command line"))
        if own == "policies" and target == "simulation":
            offences.append(Offence(rel, line, name, "policy imports the simulation"))
    return sorted(offences, key=lambda o: o.line)


def _frontier_private_names() -> set[str]:
    """Private names the frontier package defines: functions, classes, attributes it sets."""
    names = set()
    for path in (PACKAGE / "frontier").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = node.name
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                name = node.attr
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                name = node.id
            else:
                continue
            if _is_private(name):
                names.add(name)
    return names


def _frontier_public_methods() -> set[str]:
    """Public methods and properties of the class ``Frontier``."""
    tree = ast.parse((PACKAGE / "frontier" / "frontier.py").read_text(encoding="utf-8"))
    (cls,) = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Frontier"]
    return {
        n.name
        for n in cls.body
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and not n.name.startswith("_")
    }


def _is_frontier(node: ast.expr) -> bool:
    """Whether an expression names a frontier: ``f``, ``frontier``, ``x.frontier``."""
    if isinstance(node, ast.Name):
        return node.id in ("f", "frontier")
    return isinstance(node, ast.Attribute) and node.attr == "frontier"


def _modules() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def test_the_walk_sees_every_module():
    files = _modules()
    assert len(files) > 100
    assert PACKAGE / "service" / "core.py" in files


def test_no_private_imports_across_packages_no_cli_in_the_library_no_simulation_in_policies():
    offences = [o for path in _modules() for o in check_module(path)]
    assert not offences, f"{len(offences)} forbidden import(s):\n" + "\n".join(map(str, offences))


def test_the_service_uses_no_private_name_of_the_frontier():
    private = _frontier_private_names()
    assert {"_hosts", "_sync_new_pages"} <= private
    offences = []
    for path in sorted((PACKAGE / "service").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Attribute) and node.attr in private:
                offences.append(
                    f"src/{path.relative_to(SRC).as_posix()}:{node.lineno}: .{node.attr}"
                )
    assert not offences, "the service reaches into the frontier:\n" + "\n".join(offences)


def test_the_service_calls_the_frontier_only_through_public_methods():
    allowed = _frontier_public_methods() | FRONTIER_ATTRIBUTES_READ
    assert {"due", "record", "hold", "remove", "host_load", "backlog"} <= allowed
    offences = []
    for path in sorted((PACKAGE / "service").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not (isinstance(node, ast.Attribute) and _is_frontier(node.value)):
                continue
            where = f"src/{path.relative_to(SRC).as_posix()}:{node.lineno}: .{node.attr}"
            if node.attr not in allowed:
                offences.append(f"{where} is not a public method of Frontier")
            elif not isinstance(node.ctx, ast.Load):
                offences.append(f"{where} is assigned")
    assert not offences, "the service reaches into the frontier:\n" + "\n".join(offences)


#: What the service's front ends may not read: the frontier behind a crawl, the service's leases.
FRONT_END_FORBIDDEN = frozenset({"frontier", "page_leases", "robots_leases", "host_keys"})


def front_end_offences(source: str) -> list[tuple[int, str]]:
    """(line, attribute) of each read of a crawl's insides in a front end's source: ``x.frontier``,
    ``x.page_leases``, ... and any private attribute of ``service`` or ``self.service``."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Attribute):
            continue
        value = node.value
        on_service = (isinstance(value, ast.Name) and value.id == "service") or (
            isinstance(value, ast.Attribute) and value.attr == "service"
        )
        if node.attr in FRONT_END_FORBIDDEN or (on_service and _is_private(node.attr)):
            out.append((node.lineno, node.attr))
    return sorted(out)


def test_the_front_ends_reach_a_crawl_only_through_the_service():
    offences = []
    for path in sorted((PACKAGE / "service").rglob("*.py")):
        if path.name == "core.py" or "proto" in path.parts:
            continue
        for line, attr in front_end_offences(path.read_text(encoding="utf-8")):
            offences.append(f"src/{path.relative_to(SRC).as_posix()}:{line}: .{attr}")
    assert not offences, "a front end reaches past FrontierService:\n" + "\n".join(offences)


def test_the_front_end_check_sees_each_way_past_the_service():
    source = (
        "def f(service, app):\n"
        "    service._crawls\n"  # 2
        "    app.state.service._lock\n"  # 3
        "    service.crawl('x').frontier.store\n"  # 4
        "    self.service.crawl('x').page_leases\n"  # 5
        "    service.crawl_info('x').store\n"  # fine
        "    service.__class__\n"  # fine
    )
    assert front_end_offences(source) == [
        (2, "_crawls"),
        (3, "_lock"),
        (4, "frontier"),
        (5, "page_leases"),
    ]


# the checker itself, on a package written for the test ------------------------------------------
_FIXTURE = {
    "freshcrawl/__init__.py": "",
    "freshcrawl/_validation.py": "def check(x):\n    return x\n\ndef _hidden():\n    pass\n",
    "freshcrawl/cli/__init__.py": "def main():\n    pass\n",
    "freshcrawl/simulation/__init__.py": "",
    "freshcrawl/simulation/dispatch.py": "def visits():\n    pass\n",
    "freshcrawl/learning/__init__.py": "",
    "freshcrawl/learning/mirror_sync.py": "def _projection():\n    pass\n",
    "freshcrawl/learning/traa.py": "from ._shared import x\nfrom .mirror_sync import _projection\n",
    "freshcrawl/learning/_shared.py": "x = 1\n",
    "freshcrawl/policies/__init__.py": "",
    "freshcrawl/policies/sync.py": (
        "from freshcrawl._validation import check\n"  # 1: shared, fine
        "from freshcrawl.learning import mirror_sync\n"  # 2: a public module, fine
        "def f():\n"
        "    from freshcrawl.learning.mirror_sync import _projection\n"  # 4
        "    return mirror_sync._projection\n"  # 5
        "from freshcrawl.simulation.dispatch import visits\n"  # 6
        "import freshcrawl.cli as c\n"  # 7
        "from ..learning import _shared\n"  # 8
        "from freshcrawl._validation import _hidden\n"  # 9
    ),
}


@pytest.fixture
def fixture_package(tmp_path: Path) -> Path:
    for name, text in _FIXTURE.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return tmp_path


def test_the_checker_names_each_offence_with_file_and_line(fixture_package: Path):
    root = fixture_package
    own = check_module(root / "freshcrawl/learning/traa.py", root)
    assert own == []  # private names within one's own subpackage are fine
    got = [str(o) for o in check_module(root / "freshcrawl/policies/sync.py", root)]
    where = "src/freshcrawl/policies/sync.py"
    assert got == [
        f"{where}:4: private name of another package: freshcrawl.learning.mirror_sync._projection",
        f"{where}:5: private name of another package: freshcrawl.learning.mirror_sync._projection",
        f"{where}:6: policy imports the simulation: freshcrawl.simulation.dispatch.visits",
        f"{where}:7: library module imports the command line: freshcrawl.cli",
        f"{where}:8: private name of another package: freshcrawl.learning._shared",
        f"{where}:9: private name of another package: freshcrawl._validation._hidden",
    ]
