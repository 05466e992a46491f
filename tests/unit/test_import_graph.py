"""The package's shape, read from its source (no import runs): the import graph of
``src/truthlens`` has no cycles, the gateway's layers import only downwards, and no module or
folder outgrows what a reader takes in at once.

Every import counts: top-level, inside a function, and under ``TYPE_CHECKING`` (a cycle that
only the type checker sees still ties two modules together for a reader).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src"
PACKAGE = SRC / "truthlens"
GENERATED = {"truthlens._proto.truthlens_ext_proc_pb2", "truthlens._proto.oip_v2_pb2"}

MAX_MODULE_LINES = 450
MAX_MODULES_PER_FOLDER = 16

# The gateway's layers, top to bottom: a module may import its own folder and any layer below
# its own, never one above or beside it.
GATEWAY_LAYERS: dict[str, int] = {
    "server": 4,
    "exchange": 3,
    "envoy": 3,
    "policy": 2,
    "apis": 1,
    "core": 0,
}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


MODULES = _modules()


def _imported(module: str, path: Path) -> Iterator[str]:
    """The first-party modules ``module`` imports (a name imported from a package counts as the
    submodule when there is one, else as the package)."""
    is_package = path.name == "__init__.py"
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".")[: len(module.split(".")) - node.level + (1 if is_package else 0)]
                source = ".".join([*base, node.module] if node.module else base)
            else:
                source = node.module or ""
            targets = [f"{source}.{alias.name}" for alias in node.names]
        for target in targets:
            while target and target not in MODULES:
                target = target.rpartition(".")[0]
            if target and target != module:
                yield target


def _graph() -> dict[str, set[str]]:
    return {m: set(_imported(m, p)) for m, p in MODULES.items()}


GRAPH = _graph()


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_the_graph_is_read_from_the_source() -> None:
    # A walk that found nothing would pass every test below: pin a few known edges.
    assert "truthlens.gateway.apis.interface" in GRAPH["truthlens.gateway.policy.checking"]
    assert "truthlens.gateway.policy.decisions" in GRAPH["truthlens.gateway.policy.config"]
    assert "truthlens.detector.engine" in GRAPH["truthlens.detector.backends.onnx"]
    # a lazy import inside a function counts
    assert "truthlens.gateway.policy.preflight" in GRAPH["truthlens.gateway.exchange.services"]


def test_cycle_finder_finds_a_cycle() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycles() -> None:
    assert _cycles(GRAPH) == []


def _layer(module: str) -> str | None:
    parts = module.split(".")
    if parts[:2] == ["truthlens", "gateway"] and len(parts) > 2:
        return parts[2]
    return None


def test_every_gateway_module_sits_in_a_layer() -> None:
    loose = [m for m in MODULES if m.startswith("truthlens.gateway.") and _layer(m) not in GATEWAY_LAYERS]
    assert loose == []


def test_gateway_layers_import_only_downwards() -> None:
    upward = [
        f"{module} -> {target}"
        for module, targets in GRAPH.items()
        if (own := _layer(module)) is not None
        for target in targets
        if (other := _layer(target)) is not None
        and other != own
        and GATEWAY_LAYERS[other] >= GATEWAY_LAYERS[own]
    ]
    assert upward == []


def test_the_generic_phases_reach_an_api_only_through_its_interface() -> None:
    # The exchange, the policy and the server read bodies through apis/interface.py (and the
    # endpoint registry), never one API's own modules: a new API is one more implementation.
    apis = ("truthlens.gateway.apis.chat", "truthlens.gateway.apis.responses", "truthlens.gateway.apis.completions")
    direct = [
        f"{module} -> {target}"
        for module, targets in GRAPH.items()
        if _layer(module) not in (None, "apis")
        for target in targets
        if target.startswith(apis)
    ]
    assert direct == []


def test_nothing_below_the_gateway_imports_it() -> None:
    # The detector, the modes and the LLM client know nothing of the HTTP exchange.
    lower = ("truthlens.detector", "truthlens.modes", "truthlens.evidence", "truthlens.llm", "truthlens.options")
    wrong = [
        f"{module} -> {target}"
        for module, targets in GRAPH.items()
        if module.startswith(lower)
        for target in targets
        if target.startswith("truthlens.gateway")
    ]
    assert wrong == []


@pytest.mark.parametrize("module", sorted(set(MODULES) - GENERATED))
def test_module_is_short_enough_to_read_at_once(module: str) -> None:
    lines = len(MODULES[module].read_text(encoding="utf-8").splitlines())
    assert lines <= MAX_MODULE_LINES, f"{module}: {lines} lines"


def test_no_folder_holds_too_many_modules() -> None:
    crowded = {
        str(folder.relative_to(SRC)): n
        for folder in [PACKAGE, *(p for p in PACKAGE.rglob("*") if p.is_dir())]
        if (n := len([f for f in folder.glob("*.py") if f.name != "__init__.py"])) > MAX_MODULES_PER_FOLDER
    }
    assert crowded == {}


def test_every_package_says_its_job() -> None:
    silent = [
        m
        for m, p in MODULES.items()
        if p.name == "__init__.py" and not ast.get_docstring(ast.parse(p.read_text(encoding="utf-8")))
    ]
    assert silent == []
