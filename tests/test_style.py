"""The code stays ruff-clean, modules stay small, and the imports keep the pipeline's layers with no cycle; CI
runs these like any other test."""

from __future__ import annotations

import ast
import importlib
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MAX_LINES = 600  # "no module over ~500 lines without a reason": the reason has to be a good one
LONG_LINES = 500
REASON = "Over 500 lines:"  # how a module's docstring states why it is longer (issue 25)


def test_ruff_is_clean() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "ruff", "check", str(ROOT)], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_no_module_is_huge() -> None:
    sizes = {
        p.relative_to(ROOT): len(p.read_text().splitlines())
        for p in (ROOT / "harvester").rglob("*.py")
    }
    assert {str(p): n for p, n in sizes.items() if n > MAX_LINES} == {}


def test_a_module_over_500_lines_says_why() -> None:
    """Issue 25: no module over ~500 lines without a stated reason. The reason is in the module's docstring, in a
    paragraph that starts "Over 500 lines:", where the next reader of the module sees it first."""
    unexplained = {}
    for path in (ROOT / "harvester").rglob("*.py"):
        text = path.read_text()
        lines = len(text.splitlines())
        if lines > LONG_LINES and REASON not in (ast.get_docstring(ast.parse(text)) or ""):
            unexplained[str(path.relative_to(ROOT))] = lines
    assert unexplained == {}


def test_the_import_contracts_hold() -> None:
    """The layers and independences declared in pyproject.toml ([tool.importlinter]; docs/architecture.md says what
    they are for): a module that imports a layer above its own, even inside a function, fails here and in CI."""
    lint_imports = Path(sys.executable).with_name("lint-imports")
    result = subprocess.run([str(lint_imports), "--no-cache", "--no-logo"], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def _imported_modules(path: Path, module: str, modules: set[str]) -> set[str]:
    """The modules of harvester that ``module`` (at ``path``) imports anywhere: at its top, inside a function,
    under TYPE_CHECKING. ``from a import b`` is an import of ``a.b`` when that is a module, else of ``a``."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # from . import x, from ..a import b
                parts = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join([*parts, base] if base else parts)
            names = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base for alias in node.names]
        else:
            continue
        for name in names:
            while name and name not in modules:  # import a.b.c of a module a.b: its attribute c
                name = name.rpartition(".")[0]
            if name and name != module:
                found.add(name)
    return found


def test_no_module_imports_itself_round_a_loop() -> None:
    """No import cycle between modules of harvester, counting the imports inside functions (lazy for start-up
    speed, they are dependencies all the same) and a package's __init__ as a module of its own: a piece two modules
    share moves down into a module of its own. import-linter's layers contract allows cycles within a layer."""
    paths = {".".join(p.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__"): p
             for p in (ROOT / "harvester").rglob("*.py")}
    graph = {module: _imported_modules(path, module, set(paths)) for module, path in paths.items()}
    # Tarjan's strongly connected components: a component of more than one module is a cycle.
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        for imported in graph[module]:
            if imported not in index:
                visit(imported)
                low[module] = min(low[module], low[imported])
            elif imported in stack:
                low[module] = min(low[module], index[imported])
        if low[module] == index[module]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == module:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    assert cycles == []


def _resolves(package: str, ref: str) -> bool:
    """Whether a docstring's reference (``name``, ``module.name``, ``harvester.a.b.name``) names something that
    exists, read from ``package``."""
    parts = (ref if ref.startswith("harvester.") else f"{package}.{ref}").split(".")
    for cut in range(len(parts), 0, -1):
        try:
            found: object = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for name in parts[cut:]:
            if not hasattr(found, name):
                return False
            found = getattr(found, name)
        return True
    return False


def test_every_package_names_its_entry_point() -> None:
    """Issue 25: one package per stage, each with its entry point named in its ``__init__`` docstring (a paragraph
    that says "entry point" and names it as :func:, :class:, :data: or :mod:), and what it names exists: a
    newcomer starts reading there."""
    unnamed, dangling = [], []
    for init in sorted((ROOT / "harvester").glob("*/__init__.py")):
        package = f"harvester.{init.parent.name}"
        doc = ast.get_docstring(ast.parse(init.read_text())) or ""
        said = " ".join(p for p in re.split(r"\n\s*\n", doc) if "entry point" in p.lower())
        refs = re.findall(r":(?:func|class|data|mod):`~?([\w.]+)`", said)
        if not refs:
            unnamed.append(package)
        dangling += [f"{package}: {ref}" for ref in refs if not _resolves(package, ref)]
    assert (unnamed, dangling) == ([], [])
