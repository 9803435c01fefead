"""cluster/ is exactly the code uploaded to a node: standard library only, nothing of the controller.

Imports inside the package are relative, so it works uploaded as `cluster` and installed under any
other name.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

CLUSTER = Path(__file__).resolve().parents[2] / "cluster"
CONTROLLER = ("jepsen_py", "workloads", "nemeses", "checkers", "spark", "tests")


def _imports(path: Path) -> list[tuple[int, str]]:
    """(level, top-level module) of every import in `path`; level > 0 is a relative import."""
    out = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out += [(0, a.name.split(".")[0]) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            out.append((node.level, (node.module or "").split(".")[0]))
    return out


def _files() -> list[Path]:
    files = sorted(CLUSTER.rglob("*.py"))
    assert len(files) > 10
    return files


def test_cluster_imports_only_the_standard_library_and_itself_relatively():
    stdlib = set(sys.stdlib_module_names) | {"__future__"}
    bad = []
    for path in _files():
        for level, module in _imports(path):
            where = f"{path.relative_to(CLUSTER.parent)}: {module or '.'}"
            if level == 0 and module in CONTROLLER:
                bad.append(f"{where} (controller)")
            elif level == 0 and module == "cluster":
                bad.append(f"{where} (absolute import of its own package)")
            elif level == 0 and module not in stdlib:
                bad.append(f"{where} (not standard library)")
    assert bad == []


def test_the_rule_would_see_a_controller_import(tmp_path):
    (tmp_path / "x.py").write_text("import json\nfrom jepsen_py.errors import BadInput\nfrom . import io\n"
                                   "import cluster.node\nimport numpy\n")
    assert _imports(tmp_path / "x.py") == [(0, "json"), (0, "jepsen_py"), (1, ""), (0, "cluster"),
                                           (0, "numpy")]


def test_the_package_works_under_another_name(tmp_path):
    """Relative imports only: a copy named otherwise imports and parses its flags."""
    import shutil

    shutil.copytree(CLUSTER, tmp_path / "uploaded_node", ignore=shutil.ignore_patterns("__pycache__"))
    code = ("import sys; from uploaded_node.node import config_from_args; "
            "c = config_from_args(['--id', 'n1', '--peers', 'n1=127.0.0.1:7001', '--data-dir', '/tmp/x', "
            "'--client-port', '9001', '--bug', 'zombie-leader']); "
            "print(c.bugs.names(), 'cluster' in sys.modules, 'jepsen_py' in sys.modules)")
    r = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "('zombie-leader',) False False"
