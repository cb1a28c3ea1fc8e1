"""GPU requests as a cluster without GPU sharing serves them: whole devices.

Why: some traces come from clusters that share GPUs. openb does: 1,663 of its 4,459
pods ask for part of one GPU (Alibaba's GPU-sharing scheduler). On EKS or GKE without
time-slicing or MIG, `nvidia.com/gpu` counts whole devices, so such a pod takes a
whole GPU. A replay that kept the fractions would pack several of these pods onto one
device, which that cluster cannot do. It would then need fewer nodes and report less
waiting than the cluster would see. So every trace command takes whole GPUs unless
told the cluster shares them (`--gpu-sharing`).

Must not: read files, drop rows.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the CLIs import this module for its help text: keep it light
    from jobtraces.jobtable import JobTable

GPU_SHARING_HELP = (
    "the cluster shares GPUs (time-slicing, MIG): keep the trace's fractional GPU requests; "
    "default: a pod asking for part of a GPU takes a whole one, as nvidia.com/gpu counts "
    "whole devices")


def whole_gpus(table: JobTable) -> JobTable:
    """`table` with every GPU request rounded up to whole GPUs (`gpu_milli` to a multiple
    of 1000, `gpus` to match); `gpus_rounded` counts the rows that changed."""
    import numpy as np

    frame = table.frame
    milli = frame["gpu_milli"].to_numpy(dtype=np.int64)
    whole = -(-milli // 1000) * 1000
    changed = whole != milli
    if not changed.any():
        return table
    frame = frame.copy()
    frame["gpu_milli"] = whole
    frame["gpus"] = np.maximum(frame["gpus"].to_numpy(dtype=np.int64), whole // 1000)
    return replace(table, frame=frame, gpus_rounded=table.gpus_rounded + int(changed.sum()))


def rounded_note(table: JobTable) -> str:
    """One line for a command's header: what `whole_gpus` changed ("" when nothing)."""
    if not table.gpus_rounded:
        return ""
    return (f"{table.gpus_rounded} pods asked for part of a GPU and take a whole one here "
            "(no GPU sharing; --gpu-sharing keeps the fractions)")
