"""The slim extender image (Dockerfile target `extender`) holds what the extender needs:
its requirements are the project's own, and every extender module, with the CLI that
starts it, imports without the overprovisioner's heavy dependencies."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path

from packaging.utils import canonicalize_name

from tests.test_lockfiles import read_lock

REPO = Path(__file__).resolve().parents[1]
HEAVY = ("torch", "pandas", "scipy", "statsmodels", "matplotlib", "adjustText", "croniter")


def requirements() -> list[str]:
    lines = (REPO / "requirements" / "extender.txt").read_text().splitlines()
    return [line.strip() for line in lines if line.strip() and not line.startswith("#")]


def test_each_extender_requirement_is_one_of_the_projects_dependencies():
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    assert set(requirements()) <= set(project["dependencies"])
    names = {re.split(r"[<>=]", line)[0].lower() for line in requirements()}
    assert not names & {h.lower() for h in HEAVY}


def test_the_extender_lock_pulls_in_none_of_the_heavy_dependencies():
    # extender.txt names none; this catches one arriving as a dependency's dependency.
    pinned = set(read_lock(REPO / "requirements" / "extender.lock"))
    assert not pinned & {canonicalize_name(h) for h in HEAVY}


def test_the_extender_imports_and_starts_without_the_heavy_dependencies():
    # Each heavy module is made unimportable (sys.modules[name] = None raises
    # ImportError on import), then every extender module and the CLI are loaded.
    script = f"""
import importlib, pkgutil, sys
for name in {HEAVY!r}:
    sys.modules[name] = None
import extender
for module in pkgutil.walk_packages(extender.__path__, "extender."):
    importlib.import_module(module.name)
from headstart.cli import main
try:
    main(["extender", "--help"])
except SystemExit as done:
    assert done.code == 0, done.code
"""
    result = subprocess.run([sys.executable, "-c", script], cwd=REPO, capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "usage: headstart extender" in result.stdout


def test_the_dockerfile_builds_the_extender_from_the_lock_of_those_requirements_alone():
    # tests/test_lockfiles.py checks that extender.lock pins what extender.txt declares.
    dockerfile = (REPO / "Dockerfile").read_text()
    stage = dockerfile.split("AS build-extender", 1)[1].split("\nFROM ", 1)[0]
    assert "COPY requirements/extender.lock" in stage
    assert "pip install --require-hashes --no-deps -r extender.lock && pip check" in stage
    assert "pip install --no-deps ." in stage
    assert "torch" not in stage
