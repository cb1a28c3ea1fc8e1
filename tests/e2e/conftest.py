"""End-to-end tests against real Kubernetes binaries: skipping, clusters, timings, logs.

- Every test under tests/e2e is skipped, at collection and in no time, when
  HEADSTART_E2E_BIN is unset or lacks a binary; the reason names the variable and the
  missing binaries.
- `e2e_clusters.start(spec, name)` starts a cluster in its own work dir
  (/tmp/headstart-e2e-NAME-*: etcd data, configs, logs, audit log); the caller stops it,
  and the session's end stops whatever is left. At the end a work dir is deleted unless
  a test failed while its cluster ran: then it is kept, and listed.
- A failed test's report gets the tails of its clusters' component logs.
- `e2e_timings.record(scenario, **figures)` collects measured durations: printed at the
  end of the run (and at once with -s), and written to <basetemp>/e2e-timings.json.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.audit import accesses
from tests.e2e.controlplane import (
    ClusterSpec,
    ControlPlane,
    binaries_problem,
    karpenter_problem,
)
from tests.e2e.pki import Pki

E2E_DIR = Path(__file__).resolve().parent
_TIMINGS = pytest.StashKey[dict]()
_CLUSTERS = pytest.StashKey[list]()
_FAILURES = pytest.StashKey[list]()  # (start, stop) of every failed test phase
_KEPT = pytest.StashKey[list]()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    problem = binaries_problem()
    for item in items:
        if E2E_DIR in Path(item.fspath).resolve().parents:
            item.add_marker(pytest.mark.e2e)
            if problem:
                item.add_marker(pytest.mark.skip(reason=problem))


class Timings:
    """Scenario -> figures (seconds unless the name says otherwise)."""

    def __init__(self, config: pytest.Config) -> None:
        self.figures: dict[str, dict[str, Any]] = config.stash.setdefault(_TIMINGS, {})

    def record(self, scenario: str, **figures: Any) -> None:
        entry = self.figures.setdefault(scenario, {})
        entry.update({k: round(v, 2) if isinstance(v, float) else v for k, v in figures.items()})
        print(f"\n[e2e timing] {scenario}: {json.dumps(entry)}")


@pytest.fixture(scope="session")
def e2e_timings(pytestconfig: pytest.Config) -> Timings:
    return Timings(pytestconfig)


class Clusters:
    def __init__(self, tmp_path_factory: pytest.TempPathFactory, config: pytest.Config,
                 timings: Timings) -> None:
        self.tmp = tmp_path_factory
        self.config = config
        self.timings = timings
        self._pki: Pki | None = None

    def start(self, spec: ClusterSpec, name: str) -> ControlPlane:
        problem = binaries_problem() or (karpenter_problem() if spec.karpenter else None)
        if problem:
            pytest.skip(problem)
        if self._pki is None:
            self._pki = Pki(self.tmp.mktemp("pki"))
        # Not under pytest's basetemp: pytest deletes all but its 3 latest, whoever ran
        # them, and a failed cluster's logs must stay.
        workdir = Path(tempfile.mkdtemp(prefix=f"headstart-e2e-{name}-"))
        cluster = ControlPlane(Path(os.environ["HEADSTART_E2E_BIN"]), workdir, self._pki, spec)
        self.config.stash.setdefault(_CLUSTERS, []).append(cluster)
        cluster.start()
        self.timings.record(f"cluster start ({name})", **cluster.timings)
        return cluster


@pytest.fixture(scope="session")
def e2e_clusters(tmp_path_factory: pytest.TempPathFactory, pytestconfig: pytest.Config,
                 e2e_timings: Timings) -> Clusters:
    return Clusters(tmp_path_factory, pytestconfig, e2e_timings)


@pytest.fixture
def namespace(request: pytest.FixtureRequest) -> str:
    """A namespace name unique to this test (create it on the test's cluster)."""
    return "t-" + "".join(c if c.isalnum() else "-" for c in request.node.name.lower())[:40] \
        .strip("-") + f"-{int(time.time() * 1000) % 100000}"


@pytest.fixture(autouse=True)
def headstart_never_refused(request: pytest.FixtureRequest):
    """After every scenario: no request of a headstart process was refused by RBAC (403)
    on any cluster, in the test's time. Each process runs as its ServiceAccount with
    the shipped Roles, so a missing rule shows here, in whichever scenario first needs
    it, as the 403 a user would get."""
    started = time.time()
    yield
    refused = [access for cluster in request.config.stash.get(_CLUSTERS, [])
               for access in accesses(cluster.audit_events(), cluster.credential_names)
               if access.code == 403 and access.time >= started
               and not rbac_settling(cluster, access.time)]
    assert not refused, ("RBAC refused headstart's processes (the shipped Roles lack a "
                         "rule):\n" + "\n".join(str(a) for a in refused[:20]))


RBAC_SYNC_S = 10.0


def rbac_settling(cluster: ControlPlane, at: float) -> bool:
    """Whether `at` falls within RBAC_SYNC_S of a kube-apiserver restart becoming ready
    (not its first start) or of headstart's Roles being applied: the authorizer answers
    403 for a moment then, whatever the Roles say, until its informers have synced
    (seen as one burst of every client's watches at a restart, and as the
    headstart-scheduler's first read of extension-apiserver-authentication a second
    after its RoleBinding was applied; all retried, then allowed). A rule that is really
    missing is refused again on every retry, after the window."""
    moments = [*cluster.apiserver_ready_at[1:], *cluster.rbac_applied_at]
    return any(moment - RBAC_SYNC_S <= at <= moment + RBAC_SYNC_S for moment in moments)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    outcome = yield
    report = outcome.get_result()
    if report.failed:
        item.config.stash.setdefault(_FAILURES, []).append((report.start, report.stop))
        for cluster in item.config.stash.get(_CLUSTERS, []):
            if cluster.stopped_at is None or cluster.stopped_at >= report.start:
                names = [n for n in cluster.processes if n != "etcd"]
                report.sections.append((f"e2e cluster {cluster.workdir.name}",
                                        cluster.diagnostics(names, lines=15)))


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    for workdir in config.stash.get(_KEPT, []):
        terminalreporter.write_line(f"e2e: a test failed while this cluster ran; its logs "
                                    f"are kept in {workdir}")
    figures = config.stash.get(_TIMINGS, {})
    if not figures:
        return
    terminalreporter.section("e2e timings (seconds)")
    for scenario, entry in figures.items():
        terminalreporter.write_line(f"{scenario}: {json.dumps(entry)}")
    basetemp = config._tmp_path_factory.getbasetemp()  # noqa: SLF001 - pytest's own factory
    path = Path(basetemp) / "e2e-timings.json"
    path.write_text(json.dumps(figures, indent=2))
    terminalreporter.write_line(f"written to {path}")


def pytest_sessionfinish(session: pytest.Session) -> None:
    failures = session.config.stash.get(_FAILURES, [])
    for cluster in session.config.stash.get(_CLUSTERS, []):
        cluster.stop()  # normally stopped by its fixture already; idempotent
        if any(start <= cluster.stopped_at and stop >= cluster.started_at
               for start, stop in failures):
            session.config.stash.setdefault(_KEPT, []).append(cluster.workdir)
        else:
            shutil.rmtree(cluster.workdir, ignore_errors=True)
