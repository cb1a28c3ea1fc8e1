"""Trace loaders on small inline CSVs: field mapping, censoring, gzip, detection, bad input."""

from __future__ import annotations

import gzip
import math
from dataclasses import replace

import numpy as np
import pytest

from common.errors import InputError
from jobtraces.detect import detect_format
from jobtraces.gpu_sharing import rounded_note, whole_gpus
from jobtraces.jobtable import GPU_MODEL, gpu_model_requirements
from jobtraces.load import load_trace
from jobtraces.synthetic import SyntheticWorkload, generate
from jobtraces.write import write_job_table

GIB = 2**30
MIB = 2**20

OPENB_HEADER = (
    "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,"
    "creation_time,deletion_time,scheduled_time"
)
DLRM_HEADER = (
    "instance_sn,role,app_name,cpu_request,cpu_limit,gpu_request,gpu_limit,rdma_request,"
    "rdma_limit,memory_request,memory_limit,disk_request,disk_limit,max_instance_per_node,"
    "creation_time,scheduled_time,deletion_time"
)


def write(tmp_path, text: str, name: str = "trace.csv", compress: bool = False):
    path = tmp_path / name
    data = text.strip("\n").encode() + b"\n"
    path.write_bytes(gzip.compress(data) if compress else data)
    return path


def openb(*rows: str) -> str:
    return "\n".join((OPENB_HEADER, *rows))


def dlrm(*rows: str) -> str:
    return "\n".join((DLRM_HEADER, *rows))


def dlrm_row(name, role, app, cpu, gpu, mem, creation, scheduled, deletion) -> str:
    return (
        f"{name},{role},{app},{cpu},{cpu},{gpu},{gpu},1,1,{mem},{mem},100,100,-1,"
        f"{creation},{scheduled},{deletion}"
    )


OPENB_TRACE = openb(
    "p-before,12000,16384,1,1000,,LS,Running,0,,0.0",  # created before the trace
    "p-share,6000,12288,1,460,,BE,Succeeded,1000,1500,1000.0",
    "p-multi,8000,1024,2,1000,,LS,Running,1200,,1300.0",  # running at the end
    "p-pending,4000,0,1,1000,,BE,Pending,1400,1450,",  # deleted while pending
    "p-cpu,2000,512,0,0,,Burstable,Failed,1100,1900,1110.0",
)


def test_openb_field_mapping(tmp_path):
    table = load_trace(write(tmp_path, OPENB_TRACE), gpu_sharing=True)
    frame = table.frame.set_index("pod")
    share = frame.loc["p-share"]
    assert share["job_id"] == "p-share"  # no grouping in the trace: a pod is its own job
    assert share["role"] == ""
    assert share["memory_bytes"] == 12288 * MIB
    assert share["gpus"] == 1
    assert share["gpu_milli"] == 460  # 1 GPU x 460 thousandths
    assert share["priority_class"] == "BE"
    assert (share["submit_s"], share["start_s"], share["end_s"]) == (1000, 1000, 1500)
    assert frame.loc["p-multi", "gpu_milli"] == 2000  # 2 GPUs x 1000
    assert frame.loc["p-cpu", "gpu_milli"] == 0


def test_without_gpu_sharing_a_share_of_a_gpu_takes_a_whole_one(tmp_path):
    # nvidia.com/gpu counts whole devices: on a cluster without time-slicing or MIG the
    # 46% pod takes one GPU. The default; --gpu-sharing keeps the trace's fraction.
    path = write(tmp_path, OPENB_TRACE)
    table = load_trace(path)
    frame = table.frame.set_index("pod")
    assert (frame.loc["p-share", "gpu_milli"], frame.loc["p-share", "gpus"]) == (1000, 1)
    assert frame.loc["p-multi", "gpu_milli"] == 2000
    assert frame.loc["p-cpu", "gpu_milli"] == 0
    assert table.gpus_rounded == 1
    shared = load_trace(path, gpu_sharing=True)
    assert shared.frame.set_index("pod").loc["p-share", "gpu_milli"] == 460
    assert shared.gpus_rounded == 0


def test_whole_gpus_rounds_up_each_request_to_whole_devices():
    table = generate(SyntheticWorkload(days=1))
    frame = table.frame.copy()
    frame.loc[frame.index[:3], "gpu_milli"] = [1, 1500, 3000]
    frame.loc[frame.index[:3], "gpus"] = [1, 2, 3]
    rounded = whole_gpus(replace(table, frame=frame))
    assert rounded.frame["gpu_milli"].iloc[:3].tolist() == [1000, 2000, 3000]
    assert rounded.gpus_rounded == 2
    assert "2 pods asked for part of a GPU" in rounded_note(rounded)
    assert whole_gpus(table) is table and rounded_note(table) == ""


def test_openb_gpu_spec_becomes_the_gpu_model_a_pod_requires(tmp_path):
    trace = openb(
        "p-v,1000,1,1,1000,V100M16|V100M32,LS,Running,1000,,1000",
        "p-a,1000,1,1,1000,A100,LS,Running,1000,,1000",
        "p-any,1000,1,1,1000,,LS,Running,1000,,1000",
    )
    table = load_trace(write(tmp_path, trace))
    # the table in jobtraces/gpu_spec.py; blank = any model
    assert gpu_model_requirements(table).tolist() == ["V100", "A100-40GB|A100-80GB", ""]
    again = load_trace(write_job_table(table, tmp_path / "h.csv"))
    assert gpu_model_requirements(again).tolist() == ["V100", "A100-40GB|A100-80GB", ""]
    # a trace where no pod names a model has no column (every pod takes any model)
    assert GPU_MODEL not in load_trace(write(tmp_path, OPENB_TRACE, "b.csv")).frame.columns


def test_openb_censoring(tmp_path):
    table = load_trace(write(tmp_path, OPENB_TRACE))
    frame = table.frame.set_index("pod")
    # earliest non-zero time is p-share's creation at 1000; the latest event is 1900
    assert (table.trace_start_s, table.trace_end_s) == (1000, 1900)
    assert (frame.loc["p-before", "submit_s"], frame.loc["p-before", "start_s"]) == (1000, 1000)
    assert math.isnan(frame.loc["p-pending", "start_s"])
    assert frame.loc["p-pending", "end_s"] == 1450  # pending stops at the deletion
    assert math.isnan(frame.loc["p-multi", "end_s"])
    censoring = table.censoring
    assert censoring.started_before_trace == 1  # p-before
    assert censoring.running_at_end == 2  # p-before and p-multi have no deletion
    assert censoring.never_scheduled == 1  # p-pending
    assert censoring.dropped == {}


DROPPED = [
    ("p-x,1000,1,1,1000,,LS,Failed,0,0,0", "ended before the trace", "deletion-zero"),
    ("p-x,1000,1,1,1000,,LS,Failed,1100,1150,1200", "deleted before scheduled", "end<start"),
    ("p-x,1000,1,1,1000,,LS,Running,1100,,1050", "scheduled before created", "start<submit"),
]


@pytest.mark.parametrize(
    "row, reason", [d[:2] for d in DROPPED], ids=[d[2] for d in DROPPED]
)
def test_openb_unusable_rows_are_counted(tmp_path, row, reason):
    table = load_trace(write(tmp_path, openb("p-ok,1000,1,1,1000,,LS,Running,1000,,1000", row)))
    assert table.censoring.dropped == {reason: 1}
    assert table.frame["pod"].tolist() == ["p-ok"]
    assert reason in table.censoring.describe()


def test_dlrm_field_mapping_and_censoring(tmp_path):
    text = dlrm(
        dlrm_row("i0", "HN", "app_0", 12, 1, 120.0, "", "", ""),  # before start, to the end
        dlrm_row("i1", "CN", "app_0", 64, 0, 320.5, "", "", 500),  # before start, ends 500
        dlrm_row("i2", "HN", "app_1", 8, 1, 40.0, 100, 130, 900),
        dlrm_row("i3", "CN", "app_1", 2, 0, 16.0, 200, "", ""),  # never scheduled
    )
    table = load_trace(write(tmp_path, text))
    frame = table.frame.set_index("pod")
    assert frame.loc["i0", "role"] == "worker"  # HN runs the GPU compute
    assert frame.loc["i1", "role"] == "ps"  # CN serves embeddings / parameters
    assert frame.loc["i1", "job_id"] == "app_0" and frame.loc["i1", "job_name"] == "app_0"
    assert frame.loc["i1", "cpu_milli"] == 64_000  # 64 cores x 1000
    assert frame.loc["i1", "memory_bytes"] == round(320.5 * GIB)
    assert (frame.loc["i2", "gpus"], frame.loc["i2", "gpu_milli"]) == (1, 1000)
    assert (frame.loc["i0", "submit_s"], frame.loc["i0", "start_s"]) == (0, 0)
    assert math.isnan(frame.loc["i3", "start_s"])
    # times are seconds from the trace start: 0 .. the latest event (900)
    assert (table.trace_start_s, table.trace_end_s) == (0, 900)
    assert table.censoring.started_before_trace == 2  # i0, i1
    assert table.censoring.running_at_end == 1  # i0 (i3 never started)
    assert table.censoring.never_scheduled == 1  # i3


def test_headstart_round_trip(tmp_path):
    original = load_trace(write(tmp_path, OPENB_TRACE))
    for name in ("table.csv", "table.csv.gz"):
        path = write_job_table(original, tmp_path / name)
        again = load_trace(path)
        assert again.frame.equals(original.frame), name
        assert (again.trace_start_s, again.trace_end_s) == (1000, 1900)
        assert again.censoring.started_before_trace == 1
        assert again.censoring.running_at_end == 2
        assert again.censoring.never_scheduled == 1


def test_headstart_without_metadata_line_uses_the_data(tmp_path):
    path = write_job_table(load_trace(write(tmp_path, OPENB_TRACE)), tmp_path / "t.csv")
    body = path.read_text().split("\n", 1)[1]
    bare = write(tmp_path, body, "bare.csv")
    table = load_trace(bare)
    # earliest submit (1000) to latest event (1900)
    assert (table.trace_start_s, table.trace_end_s) == (1000, 1900)


@pytest.mark.parametrize("name", ["trace.csv.gz", "trace.csv", "trace"], ids=str)
def test_gzip_is_detected_by_magic_bytes(tmp_path, name):
    table = load_trace(write(tmp_path, OPENB_TRACE, name, compress=True))
    assert len(table) == 5


@pytest.mark.parametrize(
    "text, expected",
    [
        (OPENB_TRACE, "alibaba-openb"),
        (dlrm(dlrm_row("i0", "HN", "a", 1, 1, 1, "", "", "")), "alibaba-dlrm"),
    ],
    ids=["openb", "dlrm"],
)
def test_detection(tmp_path, text, expected):
    assert detect_format(write(tmp_path, text)) == expected


def test_detect_headstart(tmp_path):
    path = write_job_table(load_trace(write(tmp_path, OPENB_TRACE)), tmp_path / "h.csv")
    assert detect_format(path) == "headstart"


def test_format_forces_the_parser(tmp_path):
    path = write(tmp_path, OPENB_TRACE)
    assert load_trace(path, format="alibaba-openb").source.endswith("(alibaba-openb)")
    with pytest.raises(InputError, match=r"trace.csv:1: missing column\(s\) instance_sn"):
        load_trace(path, format="alibaba-dlrm")


OK = "p-ok,1000,1,1,1000,,LS,Running,1000,,1000"
BAD_INPUT = [
    # (file text, message fragment) - data row 1 is line 2, row 2 line 3
    (openb(OK, "p-x,lots,1,1,1000,,LS,Running,1000,,1000"),
     "trace.csv:3: column cpu_milli: 'lots' is not a number", "non-numeric"),
    (openb(OK, "p-x,1000,nan,1,1000,,LS,Running,1000,,1000"),
     "trace.csv:3: column memory_mib: 'nan' is not a number", "nan"),
    (openb("p-x,1000,1,-1,1000,,LS,Running,1000,,1000"),
     "trace.csv:2: column num_gpu: -1 is negative", "negative"),
    (openb("p-x,,1,1,1000,,LS,Running,1000,,1000"),
     "trace.csv:2: column cpu_milli: value is blank", "blank-resource"),
    (openb("p-x,1000,1,1.5,1000,,LS,Running,1000,,1000"),
     "trace.csv:2: column num_gpu: 1.5 is not a whole number", "fractional-gpu-count"),
    (openb("p-x,1000,1,1,1200,,LS,Running,1000,,1000"),
     "trace.csv:2: column gpu_milli: 1200 is more than one GPU", "share-over-1000"),
    (openb(OK, OK), "trace.csv:3: column name: 'p-ok' appears twice", "duplicate-pod"),
    (OPENB_HEADER.replace(",qos", "").replace("num_gpu,", "") + "\nx",
     "trace.csv:1: missing column(s) num_gpu", "missing-column"),
    (OPENB_HEADER, "trace.csv: the trace has no rows", "header-only"),
    ("", "trace.csv: the file is empty", "empty-file"),
    ("when,gpus_running\n0,1", "trace.csv:1: header (gpus_running, when) is not a known trace "
     "format; pass --format", "unknown-header"),
    ("time,gpus_running\n0,1", "trace.csv:1: a demand series ('time' column, then gpus_running "
     "per tick), not a job table of pods; forecast it with `headstart backtest --series",
     "aggregate-series"),
    (dlrm(dlrm_row("i0", "HN", "a", 1, "x", 1, "", "", "")),
     "trace.csv:2: column gpu_request: 'x' is not a number", "dlrm-gpu"),
    (dlrm(dlrm_row("i0", "HN", "a", 1, 1, 1, -5, "", "")),
     "trace.csv:2: column creation_time: -5 is negative", "dlrm-negative-time"),
    # Cast to int64 as is, these would wrap to a negative number ("is negative").
    (openb("p-x,1000,1e20,1,1000,,LS,Running,1000,,1000"),
     "trace.csv:2: column memory_mib: 1e20 is implausibly large", "memory-overflows-int64"),
    (openb("p-x,1e300,1,1,1000,,LS,Running,1000,,1000"),
     "trace.csv:2: column cpu_milli: 1e300 is implausibly large", "cpu-overflows-int64"),
    (dlrm(dlrm_row("i0", "HN", "a", 1, 1, "2e9", "", "", "")),
     "trace.csv:2: column memory_request: 2e9 is implausibly large", "dlrm-memory-overflow"),
    (openb("p-x,1000,1,1,1000,,LS,Running,1000,,1e400"),
     "trace.csv:2: column scheduled_time: '1e400' is not a number", "overflowing-literal"),
    (openb(OK) + "\np-y,1,1,1,1,,LS,Running,1,,1,extra,fields",
     "trace.csv: malformed CSV", "too-many-fields"),
]


@pytest.mark.parametrize(
    "text, message", [b[:2] for b in BAD_INPUT], ids=[b[2] for b in BAD_INPUT]
)
def test_bad_input_is_one_line_naming_file_line_and_column(tmp_path, text, message):
    path = tmp_path / "trace.csv"
    path.write_text(text)
    with pytest.raises(InputError) as raised:
        load_trace(path)
    assert message in str(raised.value)
    assert "\n" not in str(raised.value)


def test_bad_headstart_metadata_line(tmp_path):
    path = write_job_table(load_trace(write(tmp_path, OPENB_TRACE)), tmp_path / "h.csv")
    path.write_text(path.read_text().replace("trace_end_s=1900.0", "trace_end_s=soon"))
    with pytest.raises(InputError, match=r"h.csv:1: trace_end_s: 'soon' is not a number"):
        load_trace(path)


def test_headstart_fractional_resource(tmp_path):
    path = write_job_table(load_trace(write(tmp_path, OPENB_TRACE)), tmp_path / "h.csv")
    lines = path.read_text().split("\n")
    lines[2] = lines[2].replace(",12000,", ",12000.5,")  # line 3: first data row
    path.write_text("\n".join(lines))
    with pytest.raises(InputError, match=r"h.csv:3: column cpu_milli: 12000.5 is not a whole"):
        load_trace(path)


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda p: load_trace(p / "missing.csv"), "missing.csv: no such file"),
        (lambda p: load_trace(p / "x.csv", format="parquet"), "unknown trace format 'parquet'"),
    ],
    ids=["no-file", "unknown-format-name"],
)
def test_missing_file_and_unknown_format(tmp_path, call, message):
    with pytest.raises(InputError, match=message):
        call(tmp_path)


def test_corrupt_gzip(tmp_path):
    path = tmp_path / "broken.csv.gz"
    path.write_bytes(gzip.compress(OPENB_TRACE.encode())[:40])
    with pytest.raises(InputError, match="broken.csv.gz: cannot read"):
        load_trace(path)


def test_known_at_survives_a_round_trip_and_formats_without_it_are_blank(tmp_path):
    from jobtraces.jobtable import KNOWN_AT, JobTable, known_at

    openb_table = load_trace(write(tmp_path, OPENB_TRACE))
    assert np.isnan(known_at(openb_table)).all()  # Alibaba traces carry no lead
    dlrm_table = load_trace(write(tmp_path, dlrm(dlrm_row("i0", "worker", "a", 8, 1, 32, 0,
                                                          10, 900)), "dlrm.csv"))
    assert np.isnan(known_at(dlrm_table)).all()
    # p-share (submit 1000) known 300 s ahead, p-multi (submit 1200) at creation
    frame = openb_table.frame.copy()
    frame[KNOWN_AT] = np.where(frame["pod"] == "p-share", 700.0, np.nan)
    table = JobTable(frame, "t", openb_table.trace_start_s, openb_table.trace_end_s,
                     openb_table.censoring)
    for name in ("table.csv", "table.csv.gz"):
        again = load_trace(write_job_table(table, tmp_path / name))
        np.testing.assert_array_equal(known_at(again), known_at(table))
    # a file written before the column existed reads with blanks
    path = write_job_table(openb_table, tmp_path / "plain.csv")
    old = "\n".join(line.rsplit(",", 1)[0] for line in path.read_text().splitlines()[1:])
    assert "known_at_s" not in old
    assert np.isnan(known_at(load_trace(write(tmp_path, old, "old.csv")))).all()


def test_known_at_after_creation_is_refused_at_its_line(tmp_path):
    path = write_job_table(load_trace(write(tmp_path, OPENB_TRACE)), tmp_path / "t.csv")
    lines = path.read_text().splitlines()
    row = lines[2].split(",")  # data row 1 = file line 3
    row[-1] = str(float(row[4]) + 5)  # known_at = submit_s + 5
    lines[2] = ",".join(row)
    bad = write(tmp_path, "\n".join(lines), "bad.csv")
    with pytest.raises(InputError, match=r"bad.csv:3: column known_at_s: .* is after submit_s"):
        load_trace(bad)


def test_the_openb_node_list_given_as_the_trace_says_what_it_is(tmp_path):
    """It lies beside the pod lists; '--format' would not help, the pod list would."""
    path = tmp_path / "openb_node_list_gpu_node.csv"
    path.write_text("sn,cpu_milli,memory_mib,gpu,model\nopenb-node-0001,64000,262144,2,G2\n")
    with pytest.raises(InputError, match=r"openb_node_list_gpu_node.csv:1: the openb node list "
                                         r"\(one row per node: .*\), not a trace of pods; give "
                                         r"its pod list \(openb_pod_list_\*.csv\)"):
        load_trace(path)
