"""Render the import graph in docs/architecture.md from the code (`python
docs/render_architecture.py`; `--check` exits 1 when the file differs, as the test does).

The graph is built by grimp (import-linter's engine, the same graph `lint-imports`
checks), so the picture cannot drift from the contracts: one mermaid diagram of the
top-level packages, one per package of its sub-packages and modules grouped one level
down. Function-level imports count, as they do for the contracts.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import grimp

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "architecture.md"
PACKAGES = ("common", "kube", "jobtraces", "bucketing", "locality", "predictor", "overprovisioner",
            "extender", "headstart")
BEGIN, END = "<!-- import-graph -->", "<!-- /import-graph -->"


def _edges(graph: grimp.ImportGraph, nodes: list[str]) -> list[tuple[str, str]]:
    return [(a, b) for a in nodes for b in nodes
            if a != b and graph.direct_import_exists(importer=a, imported=b, as_packages=True)]


def _short(name: str) -> str:
    return name.rsplit(".", 1)[-1]


def _mermaid(edges: list[tuple[str, str]], nodes: list[str]) -> str:
    lines = ["```mermaid", "graph TD"]
    lines += [f"  {_short(n).replace('_', '-')}[{_short(n)}]" for n in nodes]
    lines += [f"  {_short(a).replace('_', '-')} --> {_short(b).replace('_', '-')}"
              for a, b in edges]
    lines.append("```")
    return "\n".join(lines)


def render(graph: grimp.ImportGraph) -> str:
    """The generated part of docs/architecture.md."""
    out = ["## The packages", "",
           "An arrow is an import (the importer points at what it imports).", "",
           _mermaid(_edges(graph, list(PACKAGES)), list(PACKAGES))]
    for package in PACKAGES:
        children = sorted(graph.find_children(package))
        if len(children) < 2:
            continue
        edges = _edges(graph, children)
        out += ["", f"## Inside `{package}`", "",
                f"{len(children)} modules and sub-packages, {len(edges)} arrows between them.",
                "", _mermaid(edges, children)]
    return "\n".join(out) + "\n"


def rendered_document(current: str, graph: grimp.ImportGraph) -> str:
    head, rest = current.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    return f"{head}{BEGIN}\n{render(graph)}{END}{tail}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true",
                        help="exit 1 when docs/architecture.md differs instead of writing it")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    graph = grimp.build_graph(*PACKAGES)
    current = DOC.read_text()
    new = rendered_document(current, graph)
    if args.check:
        if new != current:
            print(f"{DOC} is out of date: run python docs/render_architecture.py",
                  file=sys.stderr)
            return 1
        return 0
    DOC.write_text(new)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
