"""Loader for Alibaba GPU 2023 pod lists (`openb_pod_list_*.csv`, cluster-trace-gpu-v2023).

Decides how the trace's fields map to the canonical job table:
  name            -> pod; also job_id, because the trace has no job grouping: every
                     pod is its own job (job_name and role stay "")
  cpu_milli       -> cpu_milli
  memory_mib      -> memory_bytes (x 2**20)
  num_gpu         -> gpus
  gpu_milli       -> the share of ONE GPU each device gets (0-1000), so the canonical
                     gpu_milli is num_gpu x gpu_milli (a pod with num_gpu 0 asks for no GPU)
  qos             -> priority_class (LS, BE, Burstable, Guaranteed); "" when absent
  gpu_spec        -> gpu_model, the GPU model a pod requires in the catalogs' names
                     (`jobtraces.gpu_spec`: V100M16 -> V100, A10 -> A10G, ...); blank or
                     absent = any model (every pod of the shared `default` sample)
  creation_time   -> submit_s; 0 (or blank) = created before the trace: clamped to the
                     trace start and counted in censoring.started_before_trace
  scheduled_time  -> start_s; blank = never scheduled within the trace (in the shared
                     sample these are the 405 pods in phase Pending, each deleted while
                     still waiting: their end_s is that deletion); 0 = before the trace
  deletion_time   -> end_s; blank = still running at the trace's end; 0 = ended before
                     the trace (dropped, counted as "ended before the trace")
pod_phase is not used: the times already say what happened.

Times are seconds from an unknown origin; the trace starts at the earliest non-zero
time in the file and ends at the latest.

Must not: drop a row without counting it.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from common.errors import InputError
from jobtraces.assemble import assemble
from jobtraces.csvfile import (
    CsvFile,
    numbers,
    require_columns,
    strings,
    unique_names,
    whole_numbers,
)
from jobtraces.gpu_spec import requirements
from jobtraces.jobtable import GPU_MODEL, JobTable

FORMAT = "alibaba-openb"
REQUIRED = (
    "name",
    "cpu_milli",
    "memory_mib",
    "num_gpu",
    "gpu_milli",
    "creation_time",
    "deletion_time",
    "scheduled_time",
)
# Columns no other format has: detection looks for these.
SIGNATURE = ("name", "num_gpu", "memory_mib", "creation_time")
MIB = 2**20


def parse(csv: CsvFile) -> JobTable:
    """The job table of an openb pod list already read as strings."""
    require_columns(csv, REQUIRED, FORMAT)
    unique_names(csv, "name")
    names = strings(csv, "name", blank_ok=False)
    cpu_milli = numbers(csv, "cpu_milli")
    memory_mib = numbers(csv, "memory_mib", largest=1e12)  # x 2**20 stays in int64
    num_gpu = whole_numbers(csv, "num_gpu", numbers(csv, "num_gpu"))
    share = numbers(csv, "gpu_milli")
    too_big = np.flatnonzero(share > 1000)
    if too_big.size:
        row = int(too_big[0])
        raise InputError(
            f"{csv.path}:{csv.line_of_row(row)}: column gpu_milli: {share[row]:g} is more "
            "than one GPU (it is the share of each GPU, 0-1000)"
        )
    creation = numbers(csv, "creation_time", blank_ok=True)
    scheduled = numbers(csv, "scheduled_time", blank_ok=True)
    deletion = numbers(csv, "deletion_time", blank_ok=True)

    events = np.concatenate([creation, scheduled, deletion])
    positive = events[events > 0]
    trace_start = float(positive.min()) if positive.size else 0.0
    before = np.isnan(creation) | (creation == 0)
    submit = np.where(before, trace_start, creation)
    # Scheduled at 0 means before the trace too: the pod was already running.
    start = np.where(scheduled == 0, trace_start, scheduled)
    unusable = np.where(deletion == 0, "ended before the trace", "").astype(object)

    priority = strings(csv, "qos") if "qos" in csv.columns else np.full(len(names), "")
    columns = {
        "pod": names,
        "job_id": names,
        "job_name": np.full(len(names), "", dtype=object),
        "role": np.full(len(names), "", dtype=object),
        "submit_s": submit,
        "start_s": start,
        "end_s": deletion,
        "cpu_milli": np.round(cpu_milli).astype(np.int64),
        "memory_bytes": np.round(memory_mib * MIB).astype(np.int64),
        "gpus": num_gpu,
        "gpu_milli": np.round(num_gpu * share).astype(np.int64),
        "priority_class": priority,
    }
    if "gpu_spec" in csv.columns:
        models = requirements(strings(csv, "gpu_spec"))
        if (models != "").any():  # no column at all when every pod takes any model
            columns[GPU_MODEL] = models
    return assemble(
        csv.path,
        f"{Path(csv.path).name} ({FORMAT})",
        columns,
        trace_start,
        before,
        unusable=unusable,
    )
