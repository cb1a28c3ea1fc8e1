"""Progress on stderr: silent for quick blocks, a line at least every `every_s` in long ones."""

from __future__ import annotations

import time

from bucketing.progress import Progress


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
    assert "run 1: run one" in lines
    assert lines[-1] == "still: run 1: run one"
    time.sleep(0.3)  # the block is over: nothing more
    assert capsys.readouterr().err == ""
