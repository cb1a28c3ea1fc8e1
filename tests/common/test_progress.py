"""Progress on stderr: silent for quick blocks, a line at least every `every_s` in long ones."""

from __future__ import annotations

import time

from common.progress import Progress


def test_quick_block_prints_nothing(capsys):
    with Progress().meanwhile("loading", after_s=0.5):
        pass
    assert capsys.readouterr().err == ""


def test_long_block_repeats_the_latest_line(capsys):
    progress = Progress()
    # said at 0.05 s, then silent stretches of 0.2 s repeat it: at about 0.25 and 0.45 s
    with progress.meanwhile("packing", after_s=0.05, every_s=0.2):
        time.sleep(0.3)
        progress("run one")  # a step's own line resets the silence and is what repeats
        time.sleep(0.3)
    lines = [line.split("] ", 1)[1] for line in capsys.readouterr().err.splitlines()]
    assert lines[0] == "packing"
    assert "still: packing" in lines
    assert "run 1 done: run one" in lines
    assert lines[-1] == "still: run 1 done: run one"
    time.sleep(0.3)  # the block is over: nothing more
    assert capsys.readouterr().err == ""


def test_runs_beyond_the_listed_ones_say_why_the_count_grew(capsys):
    """simulate lists its policies, then adds runs chosen from their results (per-type
    counts in hindsight, a run without limits): 'run 2/2' then 'run 3' read as a miscount."""
    progress = Progress()
    progress.total = 2
    for name in ("reactive", "predictive", "static:g5.xlarge=2"):
        progress(name)
    lines = [line.split("] ", 1)[1] for line in capsys.readouterr().err.splitlines()]
    assert lines == ["run 1/2 done: reactive", "run 2/2 done: predictive",
                     "run 3 done (1 beyond the 2 listed, chosen from their results): "
                     "static:g5.xlarge=2"]
