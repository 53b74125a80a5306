"""The package's modules import downward only: no import circle within gpuaug, and no import
inside a function (the way a circle is dodged), but for optional third-party packages.

Reads the source tree with ast; nothing is imported, so it runs without a built library."""

import ast
import os

import pytest

PACKAGE = os.path.join(os.path.dirname(__file__), "..", "..", "python", "gpuaug")

# Packages a function may import where it needs them: the benchmark's contenders, the demo's and
# PIL input's picture code. None of them is a dependency of gpuaug.
OPTIONAL = {"torchvision", "kornia", "nvidia", "numpy", "PIL", "skimage"}


def modules() -> dict:
    """Each module's dotted name (a package as its own name) and its parsed source."""
    found = {}
    for folder, _, files in os.walk(PACKAGE):
        for file in sorted(files):
            if not file.endswith(".py"):
                continue
            path = os.path.join(folder, file)
            parts = os.path.relpath(path, PACKAGE)[:-3].split(os.sep)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            name = ".".join(["gpuaug"] + parts)
            with open(path, encoding="utf-8") as f:
                found[name] = (ast.parse(f.read(), path), file == "__init__.py")
    return found


def imported(module: str, is_package: bool, node: ast.AST, known: set) -> list:
    """The modules of gpuaug that an import statement of ``module`` loads."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names if alias.name in known]
    if node.level:
        base = module.split(".") if is_package else module.split(".")[:-1]
        base = base[:len(base) - node.level + 1]
        target = ".".join(base + ([node.module] if node.module else []))
    else:
        target = node.module or ""
    names = [target] if target in known else []
    # `from .pkg import sub` loads the submodule sub too
    names += [f"{target}.{alias.name}" for alias in node.names
              if f"{target}.{alias.name}" in known]
    return names


def graph() -> dict:
    found = modules()
    known = set(found)
    edges = {name: set() for name in found}
    for name, (tree, is_package) in found.items():
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                edges[name].update(t for t in imported(name, is_package, node, known) if t != name)
    return edges


def test_graph_is_read():
    edges = graph()
    assert "gpuaug.transforms" in edges and "gpuaug._program" in edges
    assert "gpuaug.compose" in edges["gpuaug.transforms"]
    assert "gpuaug._base" in edges["gpuaug.compose"]


def test_no_import_circle():
    edges = graph()
    state = {}  # 1: on the current path, 2: done
    path = []

    def visit(name):
        state[name] = 1
        path.append(name)
        for target in sorted(edges[name]):
            if state.get(target) == 1:
                circle = path[path.index(target):] + [target]
                pytest.fail("gpuaug's modules import in a circle: " + " -> ".join(circle))
            if target not in state:
                visit(target)
        path.pop()
        state[name] = 2

    for name in sorted(edges):
        if name not in state:
            visit(name)


def test_no_imports_inside_functions():
    found = []
    for name, (tree, _) in modules().items():
        for function in ast.walk(tree):
            if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for node in ast.walk(function):
                if isinstance(node, ast.Import):
                    tops = [alias.name.split(".")[0] for alias in node.names]
                elif isinstance(node, ast.ImportFrom):
                    tops = ["." if node.level else (node.module or "").split(".")[0]]
                else:
                    continue
                bad = [top for top in tops if top not in OPTIONAL]
                if bad:
                    found.append(f"{name}.{function.name} (line {node.lineno}): imports {bad}")
    assert not found, ("imports inside functions, which belong at the top of the module (a "
                       "function may import only the optional packages "
                       f"{sorted(OPTIONAL)}): {found}")
