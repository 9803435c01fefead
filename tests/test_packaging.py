"""Every package of ours installs under the jepsen_py namespace: a new subpackage cannot be forgotten."""

from __future__ import annotations

import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
FOLDERS = ("checkers", "cluster", "nemeses", "spark", "workloads")


def _setuptools() -> dict:
    return tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]


def _packages_on_disk() -> set[str]:
    found = {".".join(p.parent.relative_to(REPO).parts) for p in (REPO / "jepsen_py").rglob("__init__.py")}
    for folder in FOLDERS:
        for p in (REPO / folder).rglob("__init__.py"):
            found.add("jepsen_py." + ".".join(p.parent.relative_to(REPO).parts))
    return found


def test_every_package_on_disk_is_listed_under_its_namespaced_name() -> None:
    listed = set(_setuptools()["packages"])
    on_disk = _packages_on_disk()
    assert "jepsen_py.checkers.linearizable" in on_disk
    assert on_disk - listed == set(), "add these to [tool.setuptools] packages in pyproject.toml"
    assert listed - on_disk == set(), "these listed packages have no __init__.py"


def test_each_top_level_folder_maps_to_its_namespaced_name() -> None:
    dirs = _setuptools()["package-dir"]
    assert dirs == {"jepsen_py": "jepsen_py", **{f"jepsen_py.{f}": f for f in FOLDERS}}
    assert not any(p.split(".")[0] in FOLDERS for p in _setuptools()["packages"])


def test_a_project_with_its_own_workloads_folder_does_not_shadow_ours(tmp_path: Path) -> None:
    import subprocess
    import sys

    for name in FOLDERS:
        (tmp_path / name).mkdir()
        (tmp_path / name / "__init__.py").write_text("WORKLOADS = {}\nNEMESES = []\n")
    code = ("import sys\n"
            "sys.path.insert(1, sys.argv[1])  # this checkout, after the project's directory\n"
            "from jepsen_py.plugins import builtin_nemeses, builtin_workloads, current_dir_importable\n"
            "current_dir_importable()\n"
            "import workloads\n"
            "assert workloads.WORKLOADS == {}, 'the project folder is importable as itself'\n"
            "print('offsets' in builtin_workloads(), 'partition-leader' in builtin_nemeses())\n")
    r = subprocess.run([sys.executable, "-c", code, str(REPO)], cwd=tmp_path, capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["True", "True"]


def test_a_checkout_on_the_path_supplies_its_own_folders(tmp_path: Path) -> None:
    # whatever else is installed on the machine (an editable install of another checkout included),
    # jepsen_py imported from this checkout takes checkers/, cluster/, ... from this checkout too
    import subprocess
    import sys

    mods = ("jepsen_py", "jepsen_py.checkers.linearizable", "jepsen_py.cluster.node", "jepsen_py.spark.jobs",
            "jepsen_py.nemeses", "jepsen_py.workloads")
    code = ("import importlib, json, sys; sys.path.insert(0, sys.argv[1]); "
            "print(json.dumps([importlib.import_module(m).__file__ for m in sys.argv[2:]]))")
    r = subprocess.run([sys.executable, "-c", code, str(REPO), *mods], cwd=tmp_path, capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    import json

    files = [Path(f) for f in json.loads(r.stdout)]
    assert all(f.is_relative_to(REPO) for f in files), files
    assert files[2] == REPO / "cluster" / "node.py"
