"""The product's modules and their string literals, for tests that check where a name
may be spelt (the kind registry, the label keys)."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PRODUCT = ("common", "kube", "jobtraces", "bucketing", "locality", "predictor",
           "overprovisioner", "extender", "headstart")


def product_modules() -> Iterator[Path]:
    """Every Python module of the product packages, in a stable order."""
    for package in PRODUCT:
        yield from sorted((REPO / package).rglob("*.py"))


def code_strings(path: Path) -> list[tuple[int, str]]:
    """String literals of a module that are not docstrings (nor other bare strings);
    an f-string's literal parts count, its placeholders do not."""
    tree = ast.parse(path.read_text())
    bare = {id(node.value) for node in ast.walk(tree)
            if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)}
    return [(node.lineno, node.value) for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str)
            and id(node) not in bare]
