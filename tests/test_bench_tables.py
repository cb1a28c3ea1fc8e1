"""The benchmark figures in README.md and docs/ are what bench/render_tables.py renders
from bench/results.json: a figure edited on a page, or a results entry not rendered, fails
here (run `python bench/render_tables.py`)."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def renderer():
    sys.path.insert(0, str(REPO / "bench"))
    try:
        spec = importlib.util.spec_from_file_location("render_tables",
                                                      REPO / "bench" / "render_tables.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path.remove(str(REPO / "bench"))


def test_every_marked_region_matches_the_results_file():
    assert renderer().stale_regions() == []


def test_every_results_entry_has_its_provenance_and_is_quoted_somewhere():
    results = json.loads((REPO / "bench" / "results.json").read_text())
    pages = "".join(p.read_text() for p in renderer().pages())
    for name, entry in results.items():
        assert {"command", "date", "machine", "load", "figures"} <= set(entry), name
        assert entry["command"].startswith(("python bench/", "headstart ")), name
        assert f"<!-- bench:{name}" in pages, f"{name} is quoted nowhere"


def test_a_changed_figure_is_caught_and_named(tmp_path):
    module = renderer()
    (tmp_path / "docs").mkdir()
    results = json.loads((REPO / "bench" / "results.json").read_text())
    page = "x\n<!-- bench:embed -->\n<!-- /bench:embed -->\n"
    (tmp_path / "README.md").write_text(module.render_page(page, results, "README.md"))
    (tmp_path / "results.json").write_text(json.dumps(results))
    assert module.stale_regions(tmp_path, tmp_path / "results.json") == []
    results["embed"]["figures"]["median_s"] = 9.99
    (tmp_path / "results.json").write_text(json.dumps(results))
    assert module.stale_regions(tmp_path, tmp_path / "results.json") == ["README.md: embed"]


def test_an_unknown_region_names_the_page():
    with pytest.raises(ValueError, match="README.md: unknown bench region 'nope'"):
        renderer().render_page("<!-- bench:nope -->\n<!-- /bench:nope -->", {}, "README.md")


@pytest.mark.parametrize(("key", "recorded", "shown"), [
    ("openb", "openb as published, 130.8 days", "openb (first 60%), 130.8 days"),
    ("openb-active-tuned", "openb, active weeks, tuned list, 22.8 days",
     "openb (first 60%), active weeks, tuned list, 22.8 days"),
    ("dlrm", "DLRM, 18.6 days", "DLRM (first 60%), 18.6 days"),
    ("synthetic-tuned", "synthetic, tuned list, 14.0 days", "synthetic, tuned list, 14.0 days"),
])
def test_a_real_traces_figures_name_the_cut_they_come_from(key, recorded, shown):
    """The figures come from the first 60% of each public trace: a row labelled as the
    published trace misleads a reader who downloads the whole file."""
    assert renderer().workload_name({"key": key, "name": recorded}) == shown


def test_no_page_calls_a_cut_trace_the_published_one():
    pages = [REPO / "README.md", *(REPO / "docs").glob("*.md")]
    assert [page.name for page in pages if "as published" in page.read_text()] == []
