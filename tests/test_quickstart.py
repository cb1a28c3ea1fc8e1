"""README's "Quick start, tool by tool" block, pasted whole into bash from an empty
folder: every command succeeds, writes what its comment says, and the commands agree
(the simulate command backtest prints is the one the block runs, less --plot). The
`headstart size` examples (docs/predictor.md, "Sizing one job from the command line",
and README's block of them) run from the repository's root and print exactly what
the docs show, and their `--json` keys are the ones the docs list."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SIZING = "## Sizing one job from the command line"


def quick_start_block() -> str:
    text = (REPO / "README.md").read_text()
    section = text[text.index("## Quick start, tool by tool"):]
    return re.search(r"```sh\n(.*?)```", section, flags=re.S).group(1)


def paste(block: str, cwd: Path, home: Path) -> subprocess.CompletedProcess:
    """`block` pasted into bash in `cwd`, `headstart` being this checkout's."""
    bin_dir = home / "bin"
    bin_dir.mkdir(exist_ok=True)
    command = bin_dir / "headstart"
    # This checkout's headstart, whatever an editable install points at.
    command.write_text(f'#!/bin/sh\nPYTHONPATH="{REPO}" exec "{sys.executable}" '
                       '-m headstart "$@"\n')
    command.chmod(0o755)
    # PYTHONPATH: from another folder too, `python -m headstart` is this checkout's
    return subprocess.run(["bash", "-euo", "pipefail", "-c", block], cwd=cwd,
                          capture_output=True, text=True, timeout=900,
                          env={"PATH": f"{bin_dir}:/usr/bin:/bin", "HOME": str(home),
                               "MPLBACKEND": "Agg", "PYTHONPATH": str(REPO)})


def test_the_quick_start_runs_as_pasted(tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    ran = paste(quick_start_block(), work, tmp_path)
    assert ran.returncode == 0, ran.stderr[-3000:]
    for written in ("synthetic.csv.gz", "buckets.yaml", "buckets.png"):
        assert (work / written).stat().st_size > 0, written
    assert sorted(p.name for p in (work / "sim-plots").iterdir() if p.suffix == ".png")
    out = ran.stdout
    assert "Verdict: " in out  # simulate leads with its verdict
    printed = re.search(r"`(headstart simulate [^`]*)`", out).group(1)
    # backtest's pointer runs the same trace and bucket list as the block's simulate
    assert "--trace synthetic.csv.gz" in printed and "--buckets buckets.yaml" in printed


def sizing_examples() -> list[tuple[str, str]]:
    """docs/predictor.md's `headstart size` examples: each ```sh block followed by the
    ```text block of what it prints (stdout, or stderr for an error)."""
    text = (REPO / "docs" / "predictor.md").read_text()
    section = text[text.index(SIZING):]
    return re.findall(r"```sh\n(.*?)```\s*```text\n(.*?)```", section, flags=re.S)


def one_line(command: str) -> str:
    return " ".join(command.replace("\\\n", " ").split())


@pytest.mark.parametrize("command, shown", sizing_examples(),
                         ids=lambda value: one_line(value)[:60])
def test_each_sizing_example_prints_what_the_docs_show(command, shown, tmp_path):
    ran = paste(command, REPO, tmp_path)
    error = ": error: " in shown
    assert ran.returncode == (2 if error else 0), ran.stderr
    assert (ran.stderr if error else ran.stdout) == shown
    assert "Traceback" not in ran.stderr


def test_the_readme_sizing_block_is_the_docs_examples_and_runs_as_pasted(tmp_path):
    readme = (REPO / "README.md").read_text()
    start = readme.index("\n```sh\n# KALE's least workers")
    block = re.search(r"```sh\n(.*?)```", readme[start:], flags=re.S).group(1)
    commands = [one_line(c) for c in re.split(r"\n(?=headstart )|\n\n", block)
                if c.startswith("headstart ")]
    documented = {one_line(c): shown for c, shown in sizing_examples()}
    assert len(commands) == 4 and all(c in documented for c in commands), commands
    ran = paste(block, REPO, tmp_path)
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout == "".join(documented[c] for c in commands)


def documented_keys(heading: str) -> set[str]:
    """The top-level `--json` keys the table under `heading` lists."""
    text = (REPO / "docs" / "predictor.md").read_text()
    section = text[text.index(heading):]
    table = section[section.index("| key |"):].split("\n\n", 1)[0]
    rows = table.splitlines()[2:]
    return {key for row in rows for key in re.findall(r"`(\w+)`", row.split("|")[1])}


@pytest.mark.parametrize("heading, argv", [
    ("### Workers for a rate", ["size", "workers", "--rate", "25000", "--model",
                                "synchronous", "--global-batch", "16384", "--samples",
                                "docs/examples/kale-throughput.csv"]),
    ("### KOD2's weight", ["size", "weight", "docs/examples/warm-start-job.yaml"]),
    ("### The warm start", ["size", "warm-start", "--history",
                            "docs/examples/warm-start-history.jsonl",
                            "docs/examples/warm-start-job.yaml"]),
], ids=["workers", "weight", "warm-start"])
def test_the_json_keys_are_the_documented_ones(heading, argv, monkeypatch, capsys):
    from headstart.cli import main

    monkeypatch.chdir(REPO)
    assert main([*argv, "--json"]) == 0
    assert set(json.loads(capsys.readouterr().out)) == documented_keys(heading)
