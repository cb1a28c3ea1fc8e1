"""A coverage-guided fuzz of kube-scheduler's request decoders with atheris (libFuzzer),
for a bounded time in CI: each verb's decoder (JSON, then ExtenderArgs,
ExtenderBindingArgs or ExtenderPreemptionArgs) gets bytes that libFuzzer mutates from a
valid request toward new branches, and must answer every one with a value or an
InputError, never another exception (a crash fails the run with its input). A fixed
seed and run count keep it repeatable; tests/extender/test_fuzz.py fuzzes the same verbs
through real HTTP with hypothesis."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

from tests.extender.builders import args_body, make_pod

TARGET = Path(__file__).with_name("fuzz_decoders.py")
DICTIONARY = TARGET.with_suffix(".dict")
REPO = Path(__file__).resolve().parents[2]
RUNS = 1_000_000
SEEDS = {
    "filter": args_body(make_pod("w", gpus=1, job="j", role="worker"), names=["n1", "n2"]),
    "bind": b'{"PodName": "w", "PodNamespace": "team", "PodUID": "u", "Node": "n1"}',
    "preempt": b'{"Pod": {"metadata": {"name": "w"}}, "NodeNameToMetaVictims": '
               b'{"n1": {"Pods": [{"UID": "x"}], "NumPDBViolations": 0}}}',
}


@pytest.mark.skipif(importlib.util.find_spec("atheris") is None,
                    reason="atheris is not installed (Linux x86_64 wheels only)")
@pytest.mark.parametrize("verb", sorted(SEEDS))
def test_the_decoders_never_crash_under_libfuzzer(verb, tmp_path):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "valid").write_bytes(SEEDS[verb])
    ran = subprocess.run(
        [sys.executable, str(TARGET), verb, f"-runs={RUNS}", "-seed=1", "-max_len=4096",
         f"-dict={DICTIONARY}",
         f"-artifact_prefix={tmp_path}/", str(corpus)],
        cwd=REPO, capture_output=True, text=True, timeout=300)
    assert ran.returncode == 0, ran.stderr[-3000:]
    assert f"Done {RUNS} runs" in ran.stderr, ran.stderr[-1000:]
