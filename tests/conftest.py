"""Fixtures shared by every test package."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
TRACES = REPO.parent / "shared" / "traces"


@pytest.fixture
def traces_dir() -> Path:
    """../shared/traces; tests that need the real traces skip when it is absent."""
    if not TRACES.is_dir():
        pytest.skip("../shared/traces is not present")
    return TRACES


@pytest.fixture(autouse=True)
def restore_logging():
    """Undo a command's logging set-up: `main()` run in-process points the root logger at
    the sys.stderr of that moment (pytest's capture, closed after the test), and a later
    test's log line would then fail with "--- Logging error ---"."""
    import logging

    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    yield
    root.handlers[:], root.level = handlers, level


@pytest.fixture
def fake_kube():
    """A started in-process fake Kubernetes API server (see tests/fakekube.py)."""
    from tests.fakekube import FakeKube

    kube = FakeKube().start()
    yield kube
    kube.stop()
