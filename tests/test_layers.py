"""The package's arrows point down: no module imports a layer above its own, and no two
modules import each other, however indirectly (imports inside functions and under
``TYPE_CHECKING`` count: they are arrows too)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "vertex_training"

LAYERS = {
    "vertex_training._spelling": 0,
    "vertex_training._project": 0,
    "vertex_training._processes": 0,
    "vertex_training._local_vertex": 1,
    "vertex_training.findings": 0,
    "vertex_training._pulumi_internals": 0,
    "vertex_training._checks": 1,
    "vertex_training.cost": 1,
    "vertex_training._dynamic": 2,
    "vertex_training._secrets": 2,
    "vertex_training.jobs": 3,
    "vertex_training.platform": 4,
    "vertex_training.serving": 4,
    "vertex_training.capacity": 4,
    "vertex_training.stack": 5,
    # The local Vertex: a server process over the runners of jobs, serving and capacity.
    "vertex_training.local": 5,
    # The component provider: imported only in its own process (pulumi-resource-vertex-training).
    "vertex_training.provider": 6,
    "vertex_training": 7,
}
"""Each part of the package and its floor: a module may import its own floor or below."""


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, Path]:
    return {_module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def _imports(path: Path, modules: dict[str, Path]) -> set[str]:
    """The package's modules ``path`` imports (``from a.b import c``: ``a.b.c`` when that
    is a module, else ``a.b``)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                child = f"{node.module}.{alias.name}"
                found.add(child if child in modules else node.module)
    return {name for name in found if name in modules}


def _layer(module: str) -> tuple[str, int]:
    part = max((p for p in LAYERS if module == p or module.startswith(p + ".")), key=len)
    return part, LAYERS[part]


def _package(module: str) -> str:
    """The top-level part a module belongs to (``vertex_training.cost.stack``: ``cost``): the
    floors of one package's modules may differ, and they may import each other downwards."""
    return ".".join(_layer(module)[0].split(".")[:2])


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    return {name: _imports(path, modules) - {name} for name, path in modules.items()}


def _upward(graph: dict[str, set[str]]) -> list[str]:
    """Arrows to a higher floor, or sideways to another part of the same floor."""
    return [
        f"{module} -> {target}"
        for module, targets in graph.items()
        for target in sorted(targets)
        if _layer(target)[1] > _layer(module)[1]
        or (_layer(target)[1] == _layer(module)[1] and _package(target) != _package(module))
    ]


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    circles: list[list[str]] = []
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(module: str) -> None:
        state[module] = 1
        stack.append(module)
        for target in sorted(graph.get(module, set())):
            if state.get(target) == 1:
                circles.append([*stack[stack.index(target) :], target])
            elif target not in state:
                visit(target)
        stack.pop()
        state[module] = 2

    for module in sorted(graph):
        if module not in state:
            visit(module)
    return circles


def test_every_part_of_the_package_has_a_floor() -> None:
    unplaced = [
        m for m in _modules() if m != "vertex_training" and _layer(m)[0] == "vertex_training"
    ]
    assert unplaced == []


def test_no_import_points_up() -> None:
    assert _upward(_graph()) == []


def test_no_modules_import_each_other() -> None:
    assert _circles(_graph()) == []


@pytest.mark.parametrize(
    ("module", "target"),
    [
        # Pricing reading a job's view, the stack total naming the resources it sums, the
        # estimate reading a stack file, the local backend serving TensorBoard: what the
        # package had before, or could grow again.
        ("vertex_training.cost.estimate", "vertex_training.jobs.view"),
        ("vertex_training.cost.program", "vertex_training.jobs.resources"),
        ("vertex_training.cost.__main__", "vertex_training.stack.config"),
        ("vertex_training.local.runners.jobs", "vertex_training.stack.tensorboard"),
    ],
)
def test_an_arrow_up_is_caught(module: str, target: str) -> None:
    assert _upward({module: {target}}) == [f"{module} -> {target}"]


def test_a_circle_is_caught() -> None:
    supervisor = "vertex_training.local.runners.supervisor"
    tuner = "vertex_training.local.runners.tuner"
    assert _circles({supervisor: {tuner}, tuner: {supervisor}}) == [[supervisor, tuner, supervisor]]
