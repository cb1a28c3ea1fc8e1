"""The orders domains are ranked by, as tables: two domains in, the one ranked first out."""

from __future__ import annotations

import pytest

from locality.admission.model import Gang
from locality.admission.ranking import (
    best_fit,
    fewest_removed,
    gentlest_preemption,
    largest_size,
    most_placed,
)
from locality.model import JobKey
from tests.locality.builders import make_pod


def gang(name, priority, gpus):
    """A gang of one bound pod of `gpus` GPUs."""
    return Gang(JobKey("ns", name), priority, (make_pod(f"{name}-0", gpus=gpus, node="n"),))


@pytest.mark.parametrize("first, second", [
    # 0 new nodes beats 1, whatever GPU is left.
    (best_fit(0, 16_000, "pg-b"), best_fit(1, 0, "pg-a")),
    # Equal new nodes: 0 GPUs left (a snug fit) beats 8 (keeps the big hole).
    (best_fit(1, 0, "pg-b"), best_fit(1, 8_000, "pg-a")),
    # All equal: the name decides.
    (best_fit(0, 0, "pg-a"), best_fit(0, 0, "pg-b")),
], ids=["fewest-new-nodes", "least-gpu-left", "name"])
def test_best_fit(first, second):
    assert first < second


@pytest.mark.parametrize("first, second", [
    # 3 pods placed beat 2, even with more nodes opened (5 against 0).
    (most_placed(3, 5, "pg-b"), most_placed(2, 0, "pg-a")),
    (most_placed(2, 0, "pg-b"), most_placed(2, 1, "pg-a")),
    (most_placed(2, 1, "pg-a"), most_placed(2, 1, "pg-b")),
], ids=["most-placed", "fewest-opened", "name"])
def test_most_placed(first, second):
    assert first < second


@pytest.mark.parametrize("first, second", [
    # Size 6 beats size 4 even with a new node (1 against 0).
    (largest_size(6, 1, 8_000, "pg-b"), largest_size(4, 0, 0, "pg-a")),
    # Equal size: then as best_fit.
    (largest_size(4, 0, 8_000, "pg-b"), largest_size(4, 1, 0, "pg-a")),
    (largest_size(4, 0, 0, "pg-b"), largest_size(4, 0, 8_000, "pg-a")),
], ids=["largest-size", "then-fewest-new-nodes", "then-least-gpu-left"])
def test_largest_size(first, second):
    assert first < second


def test_fewest_removed():
    assert fewest_removed(1, "pg-b") < fewest_removed(2, "pg-a")
    assert fewest_removed(2, "pg-a") < fewest_removed(2, "pg-b")


@pytest.mark.parametrize("first, second", [
    # No victim at all beats any victim, even of priority -100.
    (gentlest_preemption([], "pg-b"), gentlest_preemption([gang("x", -100, 0)], "pg-a")),
    # The highest victim priority decides first: max(0, 1) = 1 against 5, though the
    # first evicts 8 + 8 = 16 GPUs and the second 1.
    (gentlest_preemption([gang("x", 0, 8), gang("y", 1, 8)], "pg-b"),
     gentlest_preemption([gang("z", 5, 1)], "pg-a")),
    # Equal priority: 8 GPUs evicted beat 16.
    (gentlest_preemption([gang("x", 1, 8)], "pg-b"),
     gentlest_preemption([gang("y", 1, 16)], "pg-a")),
    # Equal priority and GPUs (8 = 4 + 4): one gang beats two.
    (gentlest_preemption([gang("x", 1, 8)], "pg-b"),
     gentlest_preemption([gang("y", 1, 4), gang("z", 1, 4)], "pg-a")),
], ids=["no-victim", "lowest-priority", "least-gpu", "fewest-gangs"])
def test_gentlest_preemption(first, second):
    assert first < second
