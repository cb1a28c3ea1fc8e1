"""Leader election on a Lease so that, of several replicas, only one writes.

Used by the overprovisioner (Lease `headstart-overprovisioner`: only the leader writes
placeholders) and the extender's job admitter (Lease `headstart-extender-admitter`:
only the leader lifts scheduling gates).

Decides: who may write. Uses the kubernetes client's own `kubernetes.leaderelection`
(LeaseLock on a `coordination.k8s.io/v1` Lease): its acquire/renew rules and its
optimistic concurrency (a replace with a stale resourceVersion is a 409, so two
candidates never both win one round).

What this module adds around the library:
- stoppable loops: the library's `acquire` and `renew_loop` never return on request;
  here they wait on a `threading.Event`, so SIGTERM ends them promptly;
- `is_leader()` is true only between winning and losing, and only while the last
  successful renewal is younger than `renew_deadline`: a leader cut off from the API
  stops writing before a follower may take over (`lease_duration` > `renew_deadline`),
  and a leader that sees another holder on the Lease stops at once;
- release on stop: the holder identity is cleared so a successor takes over at once
  instead of after `lease_duration`;
- after losing the lease the replica goes back to being a candidate (the library's
  `run` would just return);
- `lease_vacant()`: whether the Lease is held by nobody as this replica saw it last,
  so a standby may act on what a dead leader left behind (the overprovisioner enforces
  expired placeholders) without fighting a live leader.

Must not: decide anything about what the leader writes.

RBAC: leases get, create, update in the lease's namespace.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable
from typing import Any, Protocol

from kubernetes import client
from kubernetes.client.exceptions import ApiException
from kubernetes.leaderelection import electionconfig
from kubernetes.leaderelection.leaderelection import LeaderElection
from kubernetes.leaderelection.resourcelock.leaselock import LeaseLock

from kube.reachability import unreachable_reason

log = logging.getLogger("headstart.leader")
# The library logs every renewal at INFO ("has successfully acquired lease", every
# retry_period); this module says when leading starts and stops, once each.
logging.getLogger("leaderelection").setLevel(logging.WARNING)


class LeaderElectionConfig(Protocol):
    """The settings an election reads (overprovisioner.config.LeaderElectionConfig,
    locality.admission.config.AdmissionConfig)."""

    @property
    def lease_name(self) -> str: ...
    @property
    def lease_duration_s(self) -> int: ...
    @property
    def renew_deadline_s(self) -> int: ...
    @property
    def retry_period_s(self) -> int: ...


class _StoppableElection(LeaderElection):
    """The library's election with its two endless loops made stoppable."""

    def __init__(self, config: electionconfig.Config, stop: threading.Event) -> None:
        super().__init__(config)
        self.stop = stop

    def acquire(self) -> bool:
        retry = self.election_config.retry_period
        while not self.stop.is_set():
            if self.try_acquire_or_renew():
                return True
            self.stop.wait(retry)
        return False

    def renew_loop(self, leading_failed: threading.Event | None = None) -> None:
        retry = self.election_config.retry_period
        deadline_s = self.election_config.renew_deadline
        while not self.stop.is_set():
            if leading_failed is not None and leading_failed.is_set():
                return
            give_up = time.monotonic() + deadline_s
            renewed = False
            while time.monotonic() < give_up and not self.stop.is_set():
                if self.try_acquire_or_renew():
                    renewed = True
                    break
                self.stop.wait(retry)
            if not renewed:
                return
            self.stop.wait(retry)


class _TimedLeaseApi(client.CoordinationV1Api):
    """The Lease calls the library makes, each with a client-side timeout: a half-open
    connection would otherwise hang the election thread for good (and with one replica,
    nobody would write)."""

    def __init__(self, api_client: Any, timeout_s: float) -> None:
        super().__init__(api_client)
        self._timeout_s = timeout_s

    def read_namespaced_lease(self, *args: Any, **kwargs: Any) -> Any:
        kwargs.setdefault("_request_timeout", self._timeout_s)
        return super().read_namespaced_lease(*args, **kwargs)

    def create_namespaced_lease(self, *args: Any, **kwargs: Any) -> Any:
        kwargs.setdefault("_request_timeout", self._timeout_s)
        return super().create_namespaced_lease(*args, **kwargs)

    def replace_namespaced_lease(self, *args: Any, **kwargs: Any) -> Any:
        kwargs.setdefault("_request_timeout", self._timeout_s)
        return super().replace_namespaced_lease(*args, **kwargs)


class LeaderElector:
    """Runs the election in a daemon thread; `is_leader()` is what the loop asks."""

    def __init__(
        self,
        api_client: Any,
        namespace: str,
        config: LeaderElectionConfig,
        identity: str | None = None,
        on_change: Callable[[bool], None] | None = None,
    ) -> None:
        self.config = config
        self.namespace = namespace
        # POD_NAME (downward API, set by the manifests) is unique per pod; elsewhere the
        # host name plus a random suffix keeps two processes on one host apart.
        self.identity = identity or os.environ.get("POD_NAME") or (
            f"{socket.gethostname()}-{uuid.uuid4().hex[:8]}"
        )
        self.on_change = on_change
        self._stop = threading.Event()
        self._leading = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = LeaseLock(config.lease_name, namespace, self.identity)
        # LeaseLock builds its API on the default client; point it at ours, with every
        # call bounded by the renew deadline (as client-go does).
        self._lock.api_instance = _TimedLeaseApi(api_client, float(config.renew_deadline_s))
        self._election: _StoppableElection | None = None

    def _set(self, leading: bool) -> None:
        was = self._leading.is_set()
        (self._leading.set if leading else self._leading.clear)()
        if was != leading:
            log.info("%s %s leading", self.identity, "started" if leading else "stopped")
            if self.on_change is not None:
                self.on_change(leading)

    def is_leader(self) -> bool:
        election = self._election
        if not self._leading.is_set() or election is None:
            return False
        # The library keeps "leading" until its renew deadline even after it has seen
        # another holder on the Lease; that holder may already be writing.
        record = election.observed_record
        if record is None or record.holder_identity != self.identity:
            return False
        last_renew_ms = election.observed_time_milliseconds
        return time.time() * 1000 - last_renew_ms < self.config.renew_deadline_s * 1000

    def lease_vacant(self) -> bool:
        """True when, as this replica last saw the Lease, nobody holds it: its holder was
        cleared (released), or its record has not changed for `lease_duration` (the
        holder stopped renewing; client-go's expiry rule, measured on this replica's
        clock from when it saw the record change). False before the Lease was read, and
        while this replica leads. A standby enforces the placeholders' expiry only then
        (overprovisioner.service.expiry), so it never fights a live leader."""
        election = self._election
        record = election.observed_record if election is not None else None
        if record is None or self.is_leader():
            return False
        if not record.holder_identity:
            return True
        silent_ms = time.time() * 1000 - election.observed_time_milliseconds
        return silent_ms > self.config.lease_duration_s * 1000

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="headstart-leader", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            election_config = electionconfig.Config(
                self._lock,
                lease_duration=self.config.lease_duration_s,
                renew_deadline=self.config.renew_deadline_s,
                retry_period=self.config.retry_period_s,
                onstarted_leading=lambda: self._set(True),
                onstopped_leading=lambda: self._set(False),
            )
            self._election = _StoppableElection(election_config, self._stop)
            try:
                self._election.run()
            except Exception as error:  # timeouts, odd API answers: keep trying
                # An unreachable server is logged once for every caller by
                # kube.reachability; only other faults are worth a warning here.
                quiet = unreachable_reason(error) is not None
                log.log(logging.DEBUG if quiet else logging.WARNING,
                        "leader election round failed: %s: %s", type(error).__name__, error)
                self._set(False)
            self._stop.wait(self.config.retry_period_s)

    def stop(self, release: bool = True, timeout_s: float = 5.0) -> None:
        """Stop campaigning; if leading, give the Lease up so a successor need not wait."""
        was_leader = self._leading.is_set()
        self._set(False)
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout_s)
        if release and was_leader:
            self._release()

    def _release(self) -> None:
        api = self._lock.api_instance
        try:
            lease = api.read_namespaced_lease(self.config.lease_name, self.namespace)
            if lease.spec is None or lease.spec.holder_identity != self.identity:
                return
            lease.spec.holder_identity = None
            lease.spec.lease_duration_seconds = 1
            api.replace_namespaced_lease(self.config.lease_name, self.namespace, lease)
        except ApiException as error:  # the lease expires on its own anyway
            log.warning("could not release lease %s: %s", self.config.lease_name, error.reason)
