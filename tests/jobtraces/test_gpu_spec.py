"""openb's gpu_spec in the catalogs' GPU-model names (the table in jobtraces/gpu_spec.py)."""

from __future__ import annotations

import numpy as np
import pytest

from jobtraces.gpu_spec import catalog_models, requirements


@pytest.mark.parametrize(
    "spec, expected",
    [
        ("", ""),
        ("T4", "T4"),
        ("V100M16", "V100"),
        ("V100M16|V100M32", "V100"),  # both are V100 to the catalogs: listed once
        ("A10", "A10G"),
        ("A100", "A100-40GB|A100-80GB"),
        ("P100|T4", "P100|T4"),
        ("G2", "G2"),
        ("MI300X", "MI300X"),  # not in the table: kept as written
    ],
    ids=["blank-any", "t4", "v100m16", "v100-either", "a10", "a100-either-memory",
         "p100-or-t4", "undisclosed", "unknown-kept"],
)
def test_catalog_models(spec, expected):
    assert catalog_models(spec) == expected


def test_requirements_maps_every_row():
    specs = np.array(["T4", "", "T4", "A10"], dtype=object)
    assert requirements(specs).tolist() == ["T4", "", "T4", "A10G"]
