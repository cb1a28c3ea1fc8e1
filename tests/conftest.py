"""Fixtures shared by every test package."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
# The public traces (docs/traces.md says where to get them): the folder $TRACES names,
# else the development machines' copy beside the checkout.
TRACES = Path(os.environ.get("TRACES") or REPO.parent / "shared" / "traces")


@pytest.fixture
def traces_dir() -> Path:
    """The public traces' folder; tests that need the real traces skip when it is absent."""
    if not TRACES.is_dir():
        pytest.skip(f"{TRACES} is not present: set TRACES to the public traces' folder")
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
