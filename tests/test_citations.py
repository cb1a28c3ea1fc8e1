"""Code, tests, manifests and docs cite only what a clone of the repository holds: the
design and style notes they rely on are docs/architecture.md and docs/contributing.md,
and the public traces are fetched as docs/traces.md says."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
TEXT = {".py", ".md", ".toml", ".yaml", ".yml", ".txt", ".cfg", ".sh", ".in", ""}
# Built from parts so that this file does not cite them itself.
OUTSIDE = ("../" + "shared", "/work" + "/", "DESIGN" + ".md", "STYLE" + ".md")


def repository_text_files() -> list[Path]:
    files = []
    for path in sorted(REPO.rglob("*")):
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
