"""docs/architecture.md's import graph is the code's (run `python docs/render_architecture.py`)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def load_renderer():
    spec = importlib.util.spec_from_file_location(
        "render_architecture", ROOT / "docs" / "render_architecture.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_import_graph_in_the_docs_is_rendered_from_the_code():
    import grimp

    renderer = load_renderer()
    graph = grimp.build_graph(*renderer.PACKAGES)
    current = renderer.DOC.read_text()
    assert renderer.rendered_document(current, graph) == current, (
        "docs/architecture.md is out of date: run python docs/render_architecture.py")
    # The picture shows the layers the contracts enforce: common imports nothing of ours.
    assert "  common --> " not in current.split("## Inside")[0]
