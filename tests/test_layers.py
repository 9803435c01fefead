"""The controller's packages import one way: each module only its own layer's or lower layers'.

Every import of our own packages is parsed (module-level, in functions, relative ones resolved, and
importlib.import_module with a literal name), so an upward import, a cycle between two parts of one
layer, an import hidden in a function and a module no layer names each fail here, with what to do
about it. Imports under `if TYPE_CHECKING:` never run and are not counted: a type annotation may name
a class of a higher layer.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: folder -> the module name it installs as (pyproject.toml's package-dir)
FOLDERS = {"jepsen_py": "jepsen_py", "cluster": "jepsen_py.cluster", "nemeses": "jepsen_py.nemeses",
           "checkers": "jepsen_py.checkers", "workloads": "jepsen_py.workloads", "spark": "jepsen_py.spark"}
OURS = ("jepsen_py", *(f for f in FOLDERS if f != "jepsen_py"))


@dataclass(frozen=True)
class Layer:
    """A layer: its parts (a module, or a package with everything under it; the longest listed
    name owns a module) and the layers below it that it may import."""

    name: str
    parts: tuple[str, ...]
    uses: tuple[str, ...]


# Bottom to top. A part may import its own layer's parts and the layers in `uses`; the parts of one
# layer import each other without a cycle (checkers use nemeses.faults, workloads use checkers).
LAYERS: tuple[Layer, ...] = (
    # the node: standard library only, uploaded as is (tests/cluster/test_isolation.py)
    Layer("node", ("jepsen_py.cluster",), ()),
    # the data and contracts everything shares
    Layer("core", (
        "jepsen_py", "jepsen_py.errors", "jepsen_py.numbers", "jepsen_py.flags", "jepsen_py.nodenames",
        "jepsen_py.inputfile", "jepsen_py.lifetime", "jepsen_py.seeds", "jepsen_py.files",
        "jepsen_py.verdict", "jepsen_py.history", "jepsen_py.protocols", "jepsen_py.generator",
        "jepsen_py.workload", "jepsen_py.references", "jepsen_py.backends", "jepsen_py.backends.common",
        "jepsen_py.spec", "jepsen_py.store", "jepsen_py.importers", "jepsen_py.bugs", "jepsen_py.bounded",
    ), ("node",)),
    # what a test is made of
    # (jepsen_py/maelstrom/: Maelstrom's protocol and the network for nodes in any language, core only)
    Layer("parts", ("jepsen_py.nemeses", "jepsen_py.checkers", "jepsen_py.workloads",
                    "jepsen_py.maelstrom"),
          ("node", "core")),
    # running tests and judging their histories
    Layer("run", (
        "jepsen_py.backends.docker", "jepsen_py.backends.image", "jepsen_py.backends.local",
        "jepsen_py.backends.none", "jepsen_py.backends.ssh", "jepsen_py.raftdb", "jepsen_py.plugins",
        "jepsen_py.dbversion", "jepsen_py.analysis", "jepsen_py.junit",
        "jepsen_py.progress", "jepsen_py.observer", "jepsen_py.workers", "jepsen_py.interpreter",
        "jepsen_py.engine", "jepsen_py.runner", "jepsen_py.matrix", "jepsen_py.dbcheck", "jepsen_py.sim",
        "jepsen_py.runflags", "jepsen_py.assembly",
        # --backend maelstrom: its registry hooks, its world on the runner, its clients and workloads
        "jepsen_py.maelstrom_world",
    ), ("node", "core", "parts")),
    # beside run: many runs at once; only the top imports it
    Layer("spark", ("jepsen_py.spark",), ("node", "core", "parts")),
    Layer("explore", ("jepsen_py.explore",), ("node", "core", "parts", "run")),
    # the command line and the other ways in
    Layer("top", (
        "jepsen_py.commands", "jepsen_py.cli", "jepsen_py.__main__", "jepsen_py.web", "jepsen_py.api",
        "jepsen_py.pytest_plugin", "jepsen_py.postrun",
        # the command's adapter that hands explore's slices to Spark's executors
        "jepsen_py.spark.explore",
    ), ("node", "core", "parts", "run", "spark", "explore")),
)

# Imports that stay inside a function, each for start-up time (the command line imports every
# command to build its parser): (importer, imported) -> the heavy dependency the imported module loads
# at its top. Anything else of ours is imported at the top of the module.
_ELLE = "numpy and scipy (checkers/elle/graph.py), for transactional histories only"
_PLOTLY = "plotly (checkers/pictures/plotpage.py), for the pictures only"
_PYARROW = "pyarrow (spark/export.py, spark/schema.py), for the Parquet export only"
_SIM = ("the simulator (jepsen_py/sim/), loaded when --backend sim is chosen: the command line's "
        "parser imports every backend module")
_MAELSTROM = ("the maelstrom world and its workloads (the runner, every Maelstrom checker), loaded by a "
              "run on it, not by every parser that lists its flags")
LAZY: dict[tuple[str, str], str] = {
    ("jepsen_py.sim.backend", "jepsen_py.sim.run"): _SIM,
    ("jepsen_py.sim.backend", "jepsen_py.sim.matrix"): _SIM,
    ("jepsen_py.sim.backend", "jepsen_py.sim.loop"): _SIM,
    ("jepsen_py.maelstrom_world.backend", "jepsen_py.maelstrom_world.world"): _MAELSTROM,
    ("jepsen_py.maelstrom_world.backend", "jepsen_py.maelstrom_world.workloads"): _MAELSTROM,
    ("jepsen_py.workloads.txn", "jepsen_py.checkers.elle"): _ELLE,
    ("jepsen_py.commands.check", "jepsen_py.checkers.elle"): _ELLE,
    ("jepsen_py.commands.maelstrom", "jepsen_py.checkers.elle.wanted"): _ELLE,
    ("jepsen_py.commands.check", "jepsen_py.spark.distributed_check"): "pyspark, for --engine spark only",
    ("jepsen_py.commands.check", "jepsen_py.spark.distributed_txn"): f"pyspark, and {_ELLE}",
    ("jepsen_py.postrun", "jepsen_py.checkers.pictures.render"): _PLOTLY,
    ("jepsen_py.commands.timeline", "jepsen_py.checkers.pictures.render"): _PLOTLY,
    ("jepsen_py.postrun", "jepsen_py.spark.export"): _PYARROW,
    ("jepsen_py.commands.export", "jepsen_py.spark.export"): _PYARROW,
    ("jepsen_py.commands.export", "jepsen_py.spark.aggregate"): f"pyspark, and {_PYARROW}",
    ("jepsen_py.commands.aggregate", "jepsen_py.spark.aggregate"): f"pyspark, and {_PYARROW}",
}


@dataclass(frozen=True)
class Import:
    """One imported module of ours, as the importer's statement names it."""

    importer: str
    imported: str
    line: int
    in_function: bool


def module_name(path: Path, root: Path = ROOT) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join([FOLDERS[parts[0]], *parts[1:]])


def modules(root: Path = ROOT) -> dict[str, Path]:
    """Every module of our packages, by the name it is imported as."""
    out = {}
    for folder in FOLDERS:
        for path in sorted((root / folder).rglob("*.py")):
            out[module_name(path, root)] = path
    return out


def _absolute(name: str) -> str:
    head, _, rest = name.partition(".")
    return name if head == "jepsen_py" else f"{FOLDERS[head]}.{rest}".rstrip(".")


def _resolve(name: str, known: dict[str, Path]) -> str:
    """The module `name` (a module, or a name in a module) lives in."""
    while name not in known and "." in name:
        name = name.rsplit(".", 1)[0]
    return name


def imports(name: str, path: Path, known: dict[str, Path]) -> list[Import]:
    """Every import of our packages in one module, relative ones resolved."""
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    out: list[Import] = []

    def visit(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                continue  # for the type checker alone: never imported when the code runs
            inside = in_function or isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda)
            targets: list[str] = []
            if isinstance(child, ast.Import):
                targets = [a.name for a in child.names if a.name.split(".")[0] in OURS]
            elif isinstance(child, ast.ImportFrom):
                if child.level:
                    base = package.split(".")[: len(package.split(".")) - (child.level - 1)]
                    source = ".".join([*base, *([child.module] if child.module else [])])
                else:
                    source = child.module or ""
                if source.split(".")[0] in OURS:
                    targets = [f"{source}.{a.name}" for a in child.names]
            elif (isinstance(child, ast.Call) and isinstance(child.func, ast.Attribute)
                  and child.func.attr == "import_module" and child.args
                  and isinstance(child.args[0], ast.Constant) and isinstance(child.args[0].value, str)
                  and child.args[0].value.split(".")[0] in OURS):
                targets = [child.args[0].value]
            for t in targets:
                out.append(Import(name, _resolve(_absolute(t), known), child.lineno, inside))
            visit(child, inside)

    visit(ast.parse(path.read_text(), str(path)), False)
    return out


def owner(module: str) -> tuple[Layer, str] | None:
    """The layer and part that own `module`: the longest part naming it or a package above it
    (jepsen_py itself owns only its __init__)."""
    best: tuple[Layer, str] | None = None
    for layer in LAYERS:
        for part in layer.parts:
            covers = module == part or (part != "jepsen_py" and module.startswith(part + "."))
            if covers and (best is None or len(part) > len(best[1])):
                best = (layer, part)
    return best


def _ancestors(module: str) -> list[str]:
    """The packages Python runs before `module` (jepsen_py itself aside): a.b.c -> a.b."""
    parts = module.split(".")
    return [".".join(parts[:i]) for i in range(2, len(parts))]


def problems(root: Path = ROOT) -> list[str]:
    known = modules(root)
    bad: list[str] = []
    edges: dict[str, dict[str, set[str]]] = {}  # layer -> part -> parts of that layer it imports
    for name in known:
        if owner(name) is None:
            bad.append(f"{name}: in no layer; add it (or its package) to one of LAYERS in "
                       "tests/test_layers.py, the lowest whose modules are all it imports")
    for name, path in known.items():
        mine = owner(name)
        if mine is None:
            continue
        layer, part = mine
        for imp in imports(name, path, known):
            where = f"{name}:{imp.line} imports {imp.imported}"
            if imp.in_function and (name, imp.imported) not in LAZY:
                bad.append(f"{where} inside a function; import it at the top of the module (move "
                           "code to break a cycle), or name it in LAZY with the reason")
            for target in (*_ancestors(imp.imported), imp.imported):
                theirs = owner(target)
                if theirs is None or theirs[1] == part:
                    continue
                if theirs[0].name == layer.name:
                    edges.setdefault(layer.name, {}).setdefault(part, set()).add(theirs[1])
                elif theirs[0].name not in layer.uses:
                    bad.append(f"{where}: layer {layer.name} may not use layer {theirs[0].name} "
                               f"(it uses {', '.join(layer.uses) or 'nothing of ours'}); move the code "
                               "it needs down, or the importer up")
    for lname, graph in edges.items():
        for cycle in _cycles(graph):
            bad.append(f"layer {lname}: {' -> '.join(cycle)} import each other; one of them must not")
    for package, graph in sorted(_sibling_edges(known).items()):
        for cycle in _cycles(graph):
            bad.append(f"package {package}: {' -> '.join(cycle)} import each other; one of them must not")
    return bad


def _sibling_edges(known: dict[str, Path]) -> dict[str, dict[str, set[str]]]:
    """package -> its modules and subpackages -> the siblings each imports (anything under a
    subpackage counts as the subpackage), so a loop between two folders of one part shows too."""
    graphs: dict[str, dict[str, set[str]]] = {}
    for name, path in known.items():
        for imp in imports(name, path, known):
            a, b = name.split("."), imp.imported.split(".")
            common = 0
            while common < min(len(a), len(b)) and a[common] == b[common]:
                common += 1
            if common >= len(a) or common >= len(b):
                continue  # a package's own __init__, or a module importing a package above it
            package = ".".join(a[:common])
            child, sibling = ".".join(a[:common + 1]), ".".join(b[:common + 1])
            graphs.setdefault(package, {}).setdefault(child, set()).add(sibling)
    return graphs


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One cycle through each strongly connected group of more than one part."""
    out: list[list[str]] = []
    seen: set[str] = set()
    for start in sorted(graph):
        if start in seen:
            continue
        stack: list[tuple[str, list[str]]] = [(start, [start])]
        visited: set[str] = set()
        while stack:
            node, path = stack.pop()
            for nxt in sorted(graph.get(node, ())):
                if nxt == start:
                    out.append([*path, start])
                    seen.update(path)
                    stack = []
                    break
                if nxt not in visited:
                    visited.add(nxt)
                    stack.append((nxt, [*path, nxt]))
        seen.add(start)
    return out


def test_every_layer_part_exists_and_is_listed_once():
    known = modules()
    parts = [p for layer in LAYERS for p in layer.parts]
    assert sorted(p for p in set(parts) if parts.count(p) > 1) == []
    assert [p for p in parts if p not in known] == []
    names = [layer.name for layer in LAYERS]
    for i, layer in enumerate(LAYERS):
        assert set(layer.uses) <= set(names[:i]), f"{layer.name} uses a layer above it"


def test_the_packages_import_one_way():
    assert problems() == []


def test_lazy_imports_are_each_still_there():
    known = modules()
    lazy = {(i.importer, i.imported) for n, p in known.items() for i in imports(n, p, known) if i.in_function}
    assert sorted(set(LAZY) - lazy) == []


def _tree(tmp_path: Path, files: dict[str, str]) -> Path:
    for folder in FOLDERS:
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "__init__.py").write_text("")
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    return tmp_path


def test_the_rule_sees_each_kind_of_wrong_import(tmp_path):
    root = _tree(tmp_path, {
        "jepsen_py/errors.py": "from jepsen_py.runner import run_test\n",
        "jepsen_py/runner.py": "from . import errors\ndef f():\n    from jepsen_py import analysis\n",
        "jepsen_py/analysis.py": "",
        "nemeses/faults.py": "from ..checkers import x\n",
        "checkers/x.py": "from jepsen_py.nemeses.faults import y\n",
        "jepsen_py/newthing.py": "",
        "workloads/a.py": "import importlib\nimportlib.import_module('jepsen_py.runner')\n",
        "checkers/pa/__init__.py": "", "checkers/pa/m.py": "from jepsen_py.checkers.pb.n import z\n",
        "checkers/pb/__init__.py": "", "checkers/pb/n.py": "from ..pa import m\n",
    })
    found = problems(root)
    assert any("jepsen_py.errors:1 imports jepsen_py.runner: layer core may not use layer run" in p
               for p in found)
    assert any("jepsen_py.runner:3 imports jepsen_py.analysis inside a function" in p for p in found)
    assert any("jepsen_py.newthing: in no layer" in p for p in found)
    assert any("layer parts:" in p and "jepsen_py.checkers" in p and "jepsen_py.nemeses" in p
               for p in found)
    assert any("jepsen_py.workloads.a:2 imports jepsen_py.runner: layer parts may not use layer run" in p
               for p in found)
    assert not any(p.startswith("jepsen_py.runner:1") for p in found)
    assert any(p.startswith("package jepsen_py.checkers:") and "jepsen_py.checkers.pa" in p
               and "jepsen_py.checkers.pb" in p for p in found)
