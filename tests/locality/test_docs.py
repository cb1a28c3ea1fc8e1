"""The python blocks in docs/locality.md run as pasted, in order, and print what they say."""

from __future__ import annotations

import re
from pathlib import Path

DOC = Path(__file__).resolve().parents[2] / "docs" / "locality.md"


def test_python_blocks_run_in_order(capsys):
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.S)
    assert len(blocks) >= 2
    namespace: dict = {}
    for code in blocks:
        exec(compile(code, str(DOC), "exec"), namespace)
    lines = capsys.readouterr().out.splitlines()
    # First block: the PS and 8 one-GPU workers fill gpu-0's 8 GPUs, 2 workers go to
    # gpu-1 (it then holds job pods: 4 + group 3 = 7 against 6 for the empty gpu-2).
    assert lines[0] == "['gpu-0', 'gpu-1']"
    assert sorted(namespace["placed"].values()).count("gpu-0") == 9
    # Second block: worker-1 is scheduled again. gpu-0 holds 8 assumed GPUs, one of them
    # its own stale assumption, so 8 - 7 = 1 free: it passes as the PS's node, 5 + 3 = 8.
    assert lines[2] == "[('gpu-0', 8), ('gpu-1', 7), ('gpu-2', 6)]"
