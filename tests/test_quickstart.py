"""README's "Quick start, tool by tool" block, pasted whole into bash from an empty
folder: every command succeeds, writes what its comment says, and the commands agree
(the simulate command backtest prints is the one the block runs, less --plot)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def quick_start_block() -> str:
    text = (REPO / "README.md").read_text()
    section = text[text.index("## Quick start, tool by tool"):]
    return re.search(r"```sh\n(.*?)```", section, flags=re.S).group(1)


def test_the_quick_start_runs_as_pasted(tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    command = bin_dir / "headstart"
    # This checkout's headstart, whatever an editable install points at.
    command.write_text(f'#!/bin/sh\nPYTHONPATH="{REPO}" exec "{sys.executable}" '
                       '-m headstart "$@"\n')
    command.chmod(0o755)
    work = tmp_path / "work"
    work.mkdir()
    ran = subprocess.run(["bash", "-euo", "pipefail", "-c", quick_start_block()], cwd=work,
                         capture_output=True, text=True, timeout=900,
                         env={"PATH": f"{bin_dir}:/usr/bin:/bin", "HOME": str(tmp_path),
                              "MPLBACKEND": "Agg"})
    assert ran.returncode == 0, ran.stderr[-3000:]
    for written in ("synthetic.csv.gz", "buckets.yaml", "buckets.png"):
        assert (work / written).stat().st_size > 0, written
    assert sorted(p.name for p in (work / "sim-plots").iterdir() if p.suffix == ".png")
    out = ran.stdout
    assert "Verdict: " in out  # simulate leads with its verdict
    printed = re.search(r"`(headstart simulate [^`]*)`", out).group(1)
    # backtest's pointer runs the same trace and bucket list as the block's simulate
    assert "--trace synthetic.csv.gz" in printed and "--buckets buckets.yaml" in printed
