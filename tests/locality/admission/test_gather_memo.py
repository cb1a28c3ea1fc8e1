"""Gathering with the last round's memory (`gather.JobMemo`): a job whose pods and record
are the same objects is not worked out again; any new object (a pod changed, added or
gone, a record written) gives the job as gathered from scratch."""

from __future__ import annotations

from dataclasses import replace

from locality.admission.gather import JobMemo, gather
from locality.admission.model import Domain
from locality.admission.record import GangRecord, GangState
from locality.model import JobKey
from tests.locality.admission.test_assign import CONFIG, LOCALITY, PG_KEY, job


def gathered(pods, records, memo):
    def of_job(key):
        return [p for p in pods if p.labels.get("headstart.io/job") == key.name]

    return gather(pods, records, of_job, LOCALITY, CONFIG, memo)


def test_an_unchanged_job_is_reused_and_a_changed_one_gathered_again():
    a, b = job("a", 2), job("b", 3, size=4)
    memo = JobMemo()
    first = gathered(a + b, {}, memo)
    again = gathered(a + b, {}, memo)
    assert again == first
    assert [x is y for x, y in zip(again.jobs, first.jobs, strict=True)] == [True, True]
    # b's fourth pod arrives: b is gathered again (now whole), a is still reused.
    b4 = b + job("b", 4, size=4)[3:]
    later = gathered(a + b4, {}, memo)
    assert later.jobs[0] is first.jobs[0]
    assert later.jobs[1] is not first.jobs[1]
    assert (later.jobs[1].known_pods, first.jobs[1].known_pods) == (4, 3)
    assert later == gathered(a + b4, {}, None)


def test_a_new_record_or_a_changed_pod_is_never_answered_from_memory():
    a = job("a", 2)
    memo = JobMemo()
    gathered(a, {}, memo)
    key = JobKey("ns", "a")
    record = GangRecord(key, GangState.EVICTED, Domain.parse("placement-group=pg-a"), PG_KEY,
                        name="a", requeue_at=12_345.0)
    with_record = gathered(a, {key: record}, memo)
    assert with_record.jobs[0].requeue_at == 12_345.0
    higher = [replace(a[0], priority=7), a[1]]
    assert gathered(higher, {key: record}, memo).jobs[0].priority == 7
    assert gathered(higher, {key: record}, memo) == gathered(higher, {key: record}, None)
