"""Loader for the Alibaba GPU 2025 disaggregated DLRM trace (`disaggregated_DLRM_trace.csv`).

Each of the trace's recommendation-model services (`app_name`) is a group of
CPU-node instances (role CN), which hold and serve the embedding tables / parameters,
and GPU-node instances (role HN), which run the dense GPU compute and talk to the
CN instances over RDMA. That is the parameter-server / worker split headstart
schedules, so:
  instance_sn     -> pod
  app_name        -> job_id and job_name
  role CN         -> "ps"; role HN -> "worker"; any other role is kept, lower-cased
  cpu_request     -> cpu_milli (cores x 1000)
  memory_request  -> memory_bytes (GiB x 2**30)
  gpu_request     -> gpus (rounded up) and gpu_milli (gpu_request x 1000)
  creation_time   -> submit_s; blank = created before the trace: submit at the trace
                     start (0), counted in censoring.started_before_trace
  scheduled_time  -> start_s; blank with a blank creation = already running at the
                     trace start (start 0); blank after a creation = never scheduled
  deletion_time   -> end_s; blank = still running at the trace's end
rdma, disk, limits and max_instance_per_node are not used. No priority class.

Times are seconds from the trace start, so the trace starts at 0 and ends at the
latest time in the file.

Must not: drop a row without counting it.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from jobtraces.assemble import assemble
from jobtraces.csvfile import CsvFile, numbers, require_columns, strings, unique_names
from jobtraces.jobtable import JobTable

FORMAT = "alibaba-dlrm"
REQUIRED = (
    "instance_sn",
    "role",
    "app_name",
    "cpu_request",
    "gpu_request",
    "memory_request",
    "creation_time",
    "scheduled_time",
    "deletion_time",
)
SIGNATURE = ("instance_sn", "app_name")
ROLES = {"CN": "ps", "HN": "worker"}
GIB = 2**30


def parse(csv: CsvFile) -> JobTable:
    """The job table of a DLRM trace already read as strings."""
    require_columns(csv, REQUIRED, FORMAT)
    unique_names(csv, "instance_sn")
    names = strings(csv, "instance_sn", blank_ok=False)
    apps = strings(csv, "app_name")
    raw_roles = strings(csv, "role")
    roles = np.array([ROLES.get(role, role.lower()) for role in raw_roles], dtype=object)
    cpus = numbers(csv, "cpu_request")
    gpus = numbers(csv, "gpu_request")
    memory_gib = numbers(csv, "memory_request", largest=1e9)  # x 2**30 stays in int64
    creation = numbers(csv, "creation_time", blank_ok=True)
    scheduled = numbers(csv, "scheduled_time", blank_ok=True)
    deletion = numbers(csv, "deletion_time", blank_ok=True)

    trace_start = 0.0
    before = np.isnan(creation)
    submit = np.where(before, trace_start, creation)
    start = np.where(before & np.isnan(scheduled), trace_start, scheduled)
    columns = {
        "pod": names,
        "job_id": apps,
        "job_name": apps,
        "role": roles,
        "submit_s": submit,
        "start_s": start,
        "end_s": deletion,
        "cpu_milli": np.round(cpus * 1000).astype(np.int64),
        "memory_bytes": np.round(memory_gib * GIB).astype(np.int64),
        "gpus": np.ceil(gpus).astype(np.int64),
        "gpu_milli": np.round(gpus * 1000).astype(np.int64),
        "priority_class": np.full(len(names), "", dtype=object),
    }
    return assemble(csv.path, f"{Path(csv.path).name} ({FORMAT})", columns, trace_start, before)
