"""The one fit rule: which listed type a pod is pinned to, or none."""

from __future__ import annotations

import numpy as np
import pytest

from bucketing.catalog import load_catalog
from bucketing.fit import pin_buckets

AWS = load_catalog("aws")


def types(*names):
    return tuple(AWS.get(n) for n in names)


@pytest.mark.parametrize(
    "listed, vector, model, expected",
    [
        # a CPU pod goes to the GPU-less type even though assign alone would pick the GPU one
        (("g4dn.xlarge", "m5.xlarge"), (0, 2, 8), "", "m5.xlarge"),
        # ... and when it outgrows every GPU-less type it fits none: 64 CPUs > m5.16xlarge's
        # 63.47; g5.48xlarge (191.15 CPUs) would hold it, but GPU nodes are tainted
        (("m5.16xlarge", "g5.48xlarge"), (0, 64, 100), "", None),
        # no GPU-less type listed (openb's GPU-only cluster): the GPU type takes it
        (("g4dn.xlarge",), (0, 2, 8), "", "g4dn.xlarge"),
        # a GPU pod never goes to a GPU-less type
        (("m5.24xlarge",), (1, 2, 8), "", None),
        # no model asked: the first bucket it is smaller than in cost order, whatever the
        # model: 1 GPU, 6 CPUs -> p3.2xlarge (7.61 CPUs, 59 GiB) before g5.4xlarge (15.59)
        (("g5.4xlarge", "p3.2xlarge"), (1, 6, 8), "", "p3.2xlarge"),
        # asked for A10G: only g5 types, though p3.2xlarge comes first in cost order
        (("g5.4xlarge", "p3.2xlarge"), (1, 6, 8), "A10G", "g5.4xlarge"),
        # asked for a model no listed type has: fits none
        (("g5.4xlarge", "p3.2xlarge"), (1, 6, 8), "T4", None),
        # either of two models: the first in cost order among both
        (("g5.4xlarge", "p3.2xlarge", "g4dn.xlarge"), (1, 6, 8), "T4|V100", "p3.2xlarge"),
    ],
    ids=["cpu-to-cpu-type", "cpu-pod-never-on-tainted-gpu", "cpu-on-gpu-only-cluster",
         "gpu-never-cpu-type", "any-model-cost-order", "model-asked", "model-missing",
         "either-model"],
)
def test_pin_buckets(listed, vector, model, expected):
    offered = types(*listed)
    picked = pin_buckets(np.array([vector], dtype=float), offered,
                         np.array([model], dtype=object))[0]
    assert (offered[picked].name if picked >= 0 else None) == expected


def test_rows_of_every_class_in_one_call_keep_their_order():
    offered = types("m5.xlarge", "g4dn.xlarge", "g5.xlarge")
    vectors = np.array([(1, 2, 8), (0, 2, 8), (1, 2, 8), (1, 2, 8)], dtype=float)
    models = np.array(["A10G", "", "", "V100"], dtype=object)
    # A10G -> g5.xlarge (2); CPU -> m5.xlarge (0); any model -> g4dn.xlarge (1): it and
    # g5.xlarge offer the same vector, and equal vectors go by list order; V100 -> none
    assert pin_buckets(vectors, offered, models).tolist() == [2, 0, 1, -1]
    assert pin_buckets(vectors, offered).tolist() == [1, 0, 1, 1]
