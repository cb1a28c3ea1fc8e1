"""Which Jobs, JobSets, TrainJobs or Kubeflow jobs an eviction suspends, and which
headstart suspended are released."""

from __future__ import annotations

from dataclasses import replace

from locality.admission.suspend_owners import MAX_JOBS, jobs_to_release, jobs_to_suspend
from locality.suspension import JobSuspension
from tests.locality.builders import make_pod


def job(name, **changes):
    return replace(JobSuspension("ns", name, f"uid-{name}", False, None), **changes)


def jobset(name, **changes):
    return job(name, kind="JobSet", **changes)


def jobsets_job(name, owner, **changes):
    """A JobSet's Job: never suspendable itself (its JobSet decides)."""
    return job(name, controller=("JobSet", owner), problem="its controller decides",
               **changes)


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
        "a member of a StatefulSet's": ([pod("p0"), pod("p1", ("StatefulSet", "s"))], jobs(a)),
        "a JobSet's Job, its JobSet not seen": ([pod("p0", ("Job", "w"))],
                                                jobs(jobsets_job("w", "js"))),
        "a JobSet headstart may not suspend": (
            [pod("p0", ("Job", "w"))], jobs(jobsets_job("w", "js"), jobset("js", problem="x"))),
        "a member without a controller": ([pod("p0"), pod("p1", None)], jobs(a)),
        "a Job not seen": ([pod("p0")], {}),
        "a Job headstart may not suspend": ([pod("p0")], jobs(job("a", problem="kueue"))),
        "a Job already suspended": ([pod("p0")], jobs(job("a", suspended=True))),
    }
    for what, (pods, seen) in cases.items():
        assert jobs_to_suspend(pods, seen) == (), what


def test_a_jobsets_gang_suspends_its_jobset_once():
    # Leader and workers: two Jobs of one JobSet; the JobSet is what is suspended.
    seen = jobs(jobsets_job("js-leader-0", "js"), jobsets_job("js-workers-0", "js"),
                jobset("js"))
    pods = [pod("l0", ("Job", "js-leader-0")), pod("w0", ("Job", "js-workers-0")),
            pod("w1", ("Job", "js-workers-0"))]
    assert jobs_to_suspend(pods, seen) == (jobset("js"),)
    # A Job and a JobSet of the same name are two things.
    assert jobs_to_suspend([pod("p0", ("Job", "js"))], {**seen, **jobs(job("js"))}) == (
        job("js"),)


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
    assert jobs_to_release(jobs(later, owners, resumed, unseen, due), 100.0) == [due, resumed]
    assert jobs_to_release(jobs(later), 101.0) == [later]


def test_a_jobset_is_released_once_the_job_controller_has_acted_on_each_of_its_jobs():
    js = jobset("js", suspended=True, resume_at=100.0, acknowledged=True)
    done = jobsets_job("js-a", "js", suspended=True, acknowledged=True)
    busy = jobsets_job("js-b", "js", suspended=True)  # its pods not yet deleted
    other = jobsets_job("x-a", "x", suspended=True)  # another JobSet's: not waited for
    assert jobs_to_release(jobs(js, done, busy, other), 100.0) == []
    assert jobs_to_release(jobs(js, done, replace(busy, acknowledged=True), other),
                           100.0) == [js]
    # Not acknowledged by the JobSet controller itself: not yet.
    assert jobs_to_release(jobs(replace(js, acknowledged=False), done), 100.0) == []


def test_a_pytorchjobs_gang_suspends_the_pytorchjob_once():
    # Master and workers: every pod's controller is the PyTorchJob itself.
    trainer = job("bert", kind="PyTorchJob")
    pods = [pod("m0", ("PyTorchJob", "bert")), pod("w0", ("PyTorchJob", "bert")),
            pod("w1", ("PyTorchJob", "bert"))]
    assert jobs_to_suspend(pods, jobs(trainer)) == (trainer,)
    # A Job of the same name is another thing; an MPIJob not seen (mpi-operator's
    # v2beta1 is never listed as suspendable) sends its pods to eviction; a TFJob's
    # suspend the TFJob.
    assert jobs_to_suspend(pods, jobs(job("bert"))) == ()
    assert jobs_to_suspend([pod("t0", ("MPIJob", "bert"))], jobs(trainer)) == ()
    tf = job("bert", kind="TFJob")
    assert jobs_to_suspend([pod("t0", ("TFJob", "bert"))], jobs(trainer, tf)) == (tf,)
    # Released once the training operator says Suspended, and its time has come.
    held = replace(trainer, suspended=True, resume_at=10.0)
    assert jobs_to_release(jobs(held), 20.0) == []
    acted = replace(held, acknowledged=True)
    assert jobs_to_release(jobs(acted), 5.0) == []
    assert jobs_to_release(jobs(acted), 20.0) == [acted]


def trainjob_chain(**trainjob):
    """A TrainJob "t", the JobSet "t" it made and that JobSet's Job "t-node-0"."""
    return (job("t", kind="TrainJob", **trainjob),
            jobset("t", controller=("TrainJob", "t"), problem="its controller decides"),
            jobsets_job("t-node-0", "t"))


def test_a_trainjobs_gang_suspends_the_trainjob_at_the_top_of_its_chain():
    top, made, child = trainjob_chain()
    pods = [pod("n0", ("Job", "t-node-0")), pod("n1", ("Job", "t-node-0"))]
    assert jobs_to_suspend(pods, jobs(top, made, child)) == (top,)
    # The TrainJob not seen (or one headstart may not suspend): eviction, not its JobSet.
    assert jobs_to_suspend(pods, jobs(made, child)) == ()
    assert jobs_to_suspend(pods, jobs(replace(top, problem="kueue"), made, child)) == ()


def test_an_mpi_operator_mpijobs_gang_suspends_the_mpijob_over_its_launcher_job():
    # mpi-operator v2beta1: the workers' controller is the MPIJob, the launcher pod's a
    # Job the MPIJob controls.
    mpi = job("m", kind="MPIJob", version="v2beta1")
    launcher = job("m-launcher", controller=("MPIJob", "m"), problem="its controller decides")
    pods = [pod("l", ("Job", "m-launcher")), pod("w0", ("MPIJob", "m")),
            pod("w1", ("MPIJob", "m"))]
    assert jobs_to_suspend(pods, jobs(mpi, launcher)) == (mpi,)
    assert jobs_to_suspend(pods, jobs(launcher)) == ()  # the MPIJob not seen: eviction
    # Released once the MPIJob and its launcher Job say Suspended.
    held = replace(mpi, suspended=True, resume_at=1.0, acknowledged=True)
    assert jobs_to_release(jobs(held, replace(launcher, suspended=True)), 5.0) == []
    assert jobs_to_release(jobs(held, replace(launcher, suspended=True, acknowledged=True)),
                           5.0) == [held]


def test_a_trainjob_is_released_once_its_jobset_and_jobs_have_acted():
    top, made, child = trainjob_chain(suspended=True, resume_at=100.0, acknowledged=True)
    acted = {"suspended": True, "acknowledged": True}
    assert jobs_to_release(jobs(top, made, child), 100.0) == []
    assert jobs_to_release(jobs(top, replace(made, **acted), child), 100.0) == []
    assert jobs_to_release(jobs(top, replace(made, **acted), replace(child, **acted)),
                           100.0) == [top]
