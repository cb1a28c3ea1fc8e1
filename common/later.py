"""A subcommand's handler, imported when that command runs and not when `headstart` starts.

Each command family's `cli.py` only builds its parser; what a command does lives in a
`commands` module beside it, with its imports at the top (numpy, pandas, torch, the
Kubernetes client, aiohttp). `later("pkg.commands", "run")` is what the parser sets
as `func`, so `headstart --help` and every other command load none of that.
"""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Callable

Handler = Callable[[argparse.Namespace], int]


def later(module: str, function: str) -> Handler:
    """The handler `module.function`, imported on its first call."""

    def run(args: argparse.Namespace) -> int:
        handler: Handler = getattr(importlib.import_module(module), function)
        return handler(args)

    run.__qualname__ = run.__name__ = f"{module}.{function}"
    return run
