"""The docs send users to the public traces, never to a folder a clone does not have:
every trace a command names lives in `$TRACES`, under a name docs/traces.md lists with
its public source (tests/test_citations.py checks that no page, nor any other file,
points outside the repository)."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PAGES = sorted([REPO / "README.md", *(REPO / "docs").rglob("*.md")])


def listed_traces() -> dict[str, str]:
    """docs/traces.md's table: file name in $TRACES -> its public source cell."""
    text = (REPO / "docs" / "traces.md").read_text()
    section = text[text.index("## The public traces: where to get them"):]
    section = section[:section.index("\n## ", 1)]
    return {name: source for name, source in
            re.findall(r"^\| `([^`]+)` \| [^|]+ \| (.+) \|$", section, flags=re.M)}


def test_every_trace_a_command_names_is_listed_with_its_public_source():
    listed = listed_traces()
    assert len(listed) == 4
    for name, source in listed.items():
        assert "](https://github.com/" in source or "the same repository" in source, name
    used = {name for page in PAGES
            for name in re.findall(r"\$TRACES/([\w.-]+\.csv(?:\.gz)?)", page.read_text())}
    assert used and used <= set(listed), used - set(listed)
