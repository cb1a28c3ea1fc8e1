"""Which Jobs an eviction suspends, and which Jobs headstart suspended are released."""

from __future__ import annotations

from dataclasses import replace

from locality.admission.suspend import MAX_JOBS, jobs_to_release, jobs_to_suspend
from locality.suspension import JobSuspension
from tests.locality.builders import make_pod


def job(name, **changes):
    return replace(JobSuspension("ns", name, f"uid-{name}", False, None), **changes)


def pod(name, controller=("Job", "a")):
    return replace(make_pod(name, job="g", gpus=8), controller=controller)


def jobs(*seen):
    return {j.key: j for j in seen}


def test_a_gang_of_one_jobs_pods_suspends_that_job_once():
    assert jobs_to_suspend([pod("p0"), pod("p1")], jobs(job("a"))) == (job("a"),)


def test_a_gang_over_two_jobs_suspends_both_in_name_order():
    pods = [pod("p0", ("Job", "workers")), pod("p1", ("Job", "ps"))]
    assert jobs_to_suspend(pods, jobs(job("workers"), job("ps"))) == (job("ps"), job("workers"))


def test_one_member_not_a_suspendable_jobs_sends_the_whole_gang_to_eviction():
    a = job("a")
    cases = {
        "a member of a JobSet's": ([pod("p0"), pod("p1", ("StatefulSet", "s"))], jobs(a)),
        "a member without a controller": ([pod("p0"), pod("p1", None)], jobs(a)),
        "a Job not seen": ([pod("p0")], {}),
        "a Job headstart may not suspend": ([pod("p0")], jobs(job("a", problem="kueue"))),
        "a Job already suspended": ([pod("p0")], jobs(job("a", suspended=True))),
    }
    for what, (pods, seen) in cases.items():
        assert jobs_to_suspend(pods, seen) == (), what


def test_more_jobs_than_the_record_holds_go_by_eviction():
    many = [job(f"j{i:03}") for i in range(MAX_JOBS + 1)]
    pods = [pod(f"p{i}", ("Job", j.name)) for i, j in enumerate(many)]
    assert jobs_to_suspend(pods, jobs(*many)) == ()
    assert len(jobs_to_suspend(pods[:MAX_JOBS], jobs(*many))) == MAX_JOBS


def test_a_suspended_job_is_released_when_its_time_has_come_and_not_before():
    due = job("due", suspended=True, resume_at=100.0, acknowledged=True)
    later = job("later", suspended=True, resume_at=101.0, acknowledged=True)
    unseen = job("unseen", suspended=True, resume_at=50.0)  # its controller has not acted
    owners = job("owners", suspended=True)  # suspended by its owner: not headstart's
    resumed = job("resumed", suspended=False, resume_at=500.0)  # its owner resumed it
    assert jobs_to_release([later, owners, resumed, unseen, due], 100.0) == [due, resumed]
    assert jobs_to_release([later], 101.0) == [later]
