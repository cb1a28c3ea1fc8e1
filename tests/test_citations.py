"""Code, tests, manifests and docs cite only what a clone of the repository holds: the
design and style notes they rely on are docs/architecture.md and docs/contributing.md,
and the public traces are fetched as docs/traces.md says."""

from __future__ import annotations

import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
TEXT = {".py", ".md", ".toml", ".yaml", ".yml", ".txt", ".cfg", ".sh", ".in", ""}
# Built from parts so that this file does not cite them itself.
OUTSIDE = ("../" + "shared", "/work" + "/", "DESIGN" + ".md", "STYLE" + ".md")


def repository_text_files() -> list[Path]:
    """The files a clone holds and a user writes beside them, not what .gitignore
    ignores (an egg-info's copy of an older README is no citation)."""
    listed = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"],
                            cwd=REPO, capture_output=True, text=True)
    paths = [REPO / line for line in listed.stdout.splitlines()] if listed.returncode == 0 \
        else list(REPO.rglob("*"))
    files = []
    for path in sorted(paths):
        parts = path.relative_to(REPO).parts
        if any(part.startswith(".") and part != ".ci" or part == "__pycache__"
               for part in parts):
            continue
        if path.is_file() and path.suffix in TEXT:
            files.append(path)
    return files


def test_nothing_cites_a_file_outside_the_repository():
    files = repository_text_files()
    assert REPO / "pyproject.toml" in files and REPO / "docs" / "contributing.md" in files
    found = [f"{path.relative_to(REPO)}: {outside}" for path in files
             for outside in OUTSIDE if outside in path.read_text(errors="replace")]
    assert found == []
