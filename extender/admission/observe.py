"""The admitter's reads of the cluster besides its cache, into one frozen observation.

A round plans from the cache (`planner.snapshot_of`: gated pods, gang records, nodes,
owners) and from what this reader last read, handed over as one `RoundAsk`
(`observe`). It reads, every call through the admitter's one rate limit
(`extender.admission.throttle`):
- cluster-autoscaler's status ConfigMap (`admission.autoscaler_status`), one GET every
  `AUTOSCALER_STATUS_SECONDS`: the node groups' sizes; absent or unreadable: the
  configured `max_size`s, and /admission says which source each domain's headroom came
  from;
- Karpenter's NodePools (`admission.nodepools`), one LIST as often, where
  `karpenter.sh/v1` is served (`locality.admission.nodepools`); a fault keeps the last
  read;
- the overprovisioner's worker plans (`admission.elastic.worker_plans`, one GET every
  `refresh_seconds`: `extender.admission.worker_plans`); absent, forbidden or
  unreadable: no plans (KOD2's rules alone);
- PodDisruptionBudgets (`disruption_budgets`), only when a gang is about to be evicted,
  in its pods' namespaces: read every round they would be a LIST per namespace for an
  eviction that is rare.
A change of what the status, the pools or the plans say replans at once (`refresh_*`
answer whether it changed).

Must not: decide (`locality.admission` does), write, touch the cache.
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
from collections.abc import Mapping, Sequence
from typing import Any

from kubernetes.client.exceptions import ApiException

from bucketing.catalog import BUILTIN_CATALOGS, load_catalog
from bucketing.resources import Resources, resources_from_list
from common.errors import InputError
from extender.admission.planning_process import RoundAsk
from extender.admission.worker_plans import WorkerPlanReader
from kube.autoscaler_status import AutoscalerStatus, parse_autoscaler_status
from locality.admission.budgets import Budget, parse_budget
from locality.admission.config import AdmissionConfig
from locality.admission.nodepools import what_counts
from locality.config import LocalityConfig
from locality.model import JobKey, Pod
from locality.suspension import JobName, JobSuspension

log = logging.getLogger("headstart.extender.admitter")

# cluster-autoscaler rewrites its status every scan (10 s by default); a group's max
# size changes only when someone edits the group, its current size as nodes come.
AUTOSCALER_STATUS_SECONDS = 30.0


class AdmissionReader:
    """What the last reads found; `observe` hands it to a round. core, custom, policy:
    (throttled) CoreV1Api, CustomObjectsApi and PolicyV1Api; None: nothing is read (no
    API client), and a round plans from the configuration alone."""

    def __init__(self, core: Any | None, custom: Any | None, policy: Any | None,
                 config: AdmissionConfig) -> None:
        self._core = core
        self._custom = custom
        self._policy = policy
        self.config = config
        self.autoscaler = AutoscalerStatus()
        """The last read of cluster-autoscaler's status ConfigMap."""
        self._status_read_at: float | None = None
        self.nodepools: tuple[Mapping[str, Any], ...] = ()
        """The NodePools of the last read (empty: none, not served or not read)."""
        self.nodepools_detail = "not read"
        self.plans = WorkerPlanReader(core, config.elastic.worker_plans) \
            if core is not None else None

    def observe(self, now: float, batch_jobs: Mapping[JobName, JobSuspension],
                undisruptable: frozenset[JobKey]) -> RoundAsk:
        """The round's frozen view of what was read (event loop), with the batch/v1 Jobs
        seen and the gangs whose eviction budgets refused lately (the writer's)."""
        return RoundAsk(now, self.autoscaler.groups, self.nodepools,
                        self.autoscaler.detail if self.autoscaler.found
                        and self.autoscaler.groups is None else None,
                        self.plans.plans if self.plans is not None else {},
                        batch_jobs, undisruptable)

    def summary(self) -> dict[str, Any]:
        """What the reads found, as GET /admission shows it."""
        return {
            "autoscaler_status": self.autoscaler.detail,
            "nodepools": self.nodepools_detail,
            "worker_plans": self.plans.detail if self.plans is not None else "not read",
            "worker_plan_problems": list(self.plans.problems) if self.plans else [],
        }

    async def refresh_autoscaler(self, now: float) -> bool:
        """Read CA's status ConfigMap and Karpenter's NodePools when
        `AUTOSCALER_STATUS_SECONDS` have passed since the last read (now:
        time.monotonic()); whether either changed what a round plans from."""
        if self._core is None:
            return False
        if self._status_read_at is not None and \
                now - self._status_read_at < AUTOSCALER_STATUS_SECONDS:
            return False
        self._status_read_at = now
        changed = False
        reference = self.config.autoscaler_status
        if reference:
            status = await asyncio.to_thread(self._read_status, reference)
            changed = status.groups != self.autoscaler.groups  # the headroom changed
            self.autoscaler = status
        if self.config.nodepools:
            pools, self.nodepools_detail = await asyncio.to_thread(self._read_nodepools)
            if pools is not None and [what_counts(p) for p in pools] != [
                    what_counts(p) for p in self.nodepools]:
                self.nodepools = pools
                changed = True  # what the pools can add changed
        return changed

    async def refresh_worker_plans(self, now: float) -> bool:
        """Read the worker plans when `refresh_seconds` have passed (now:
        time.monotonic()); whether they changed. Every replica reads them, so a new
        leader's first round and a follower's /explain follow the same plans."""
        return self.plans is not None and self.config.elastic.enabled and \
            await self.plans.refresh(now, self.config.elastic.worker_plans)

    def _read_nodepools(self) -> tuple[tuple[Mapping[str, Any], ...] | None, str]:
        """(the NodePools, what the read found); None: keep the last ones (a fault)."""
        custom = self._custom
        assert custom is not None
        try:
            listed = custom.list_cluster_custom_object("karpenter.sh", "v1", "nodepools",
                                                       _request_timeout=10)
        except ApiException as error:
            if error.status == 404:
                return (), "karpenter.sh/v1 NodePools not served (Karpenter not installed)"
            return None, f"NodePools unreadable (API status {error.status}): last read kept"
        except Exception as error:  # noqa: BLE001 - transport faults: last read kept
            return None, f"NodePools unreadable ({type(error).__name__}): last read kept"
        pools = tuple(item for item in listed.get("items") or () if isinstance(item, Mapping))
        return pools, f"{len(pools)} NodePool(s) read"

    def _read_status(self, reference: str) -> AutoscalerStatus:
        core = self._core
        assert core is not None
        namespace, _, name = reference.partition("/")
        try:
            raw = core.read_namespaced_config_map(name, namespace, _preload_content=False,
                                                  _request_timeout=10)
            try:
                return parse_autoscaler_status(read_json(raw))
            finally:
                raw.release_conn()
        except ApiException as error:
            if error.status == 404:
                return parse_autoscaler_status(None)
            return AutoscalerStatus(detail=f"{reference} unreadable (API status "
                                           f"{error.status}): the configured max_size used")
        except Exception as error:  # noqa: BLE001 - transport faults: config until next read
            return AutoscalerStatus(detail=f"{reference} unreadable ({type(error).__name__}): "
                                           "the configured max_size used")

    def disruption_budgets(self, pods: Sequence[Pod]) -> list[Budget] | None:
        """The PodDisruptionBudgets of `pods`' namespaces (worker thread); None when they
        could not be read (a fault: nothing is evicted this round). Budgets that are not
        served or not readable to this account are not checked (each pod's eviction
        still honours them): none, and that is logged."""
        policy = self._policy
        if policy is None or not pods:
            return []
        budgets = []
        for namespace in sorted({pod.namespace for pod in pods}):
            try:
                raw = policy.list_namespaced_pod_disruption_budget(
                    namespace, _preload_content=False, _request_timeout=10)
                try:
                    listed = read_json(raw)
                finally:
                    raw.release_conn()
                budgets += [parse_budget(item, f"PodDisruptionBudget in {namespace}")
                            for item in listed.get("items") or ()]
            except ApiException as error:
                if error.status in (403, 404):
                    log.warning("PodDisruptionBudgets unreadable: a gang is evicted pod by "
                                "pod without checking them first",
                                extra={"namespace": namespace, "status": error.status})
                    return []
                return None
            except InputError as error:
                log.warning("a PodDisruptionBudget could not be read; nothing evicted",
                            extra={"error": str(error)})
                return None
            except Exception:  # noqa: BLE001 - transport faults: next round retries
                return None
        return budgets


@functools.cache
def catalog_shapes(locality: LocalityConfig) -> Mapping[str, Resources]:
    """One node's allocatable per instance type of the built-in catalogs (aws, gcp), read
    as a Node's allocatable is (`locality`'s GPU and device names): the room of a node
    group's node while none of its type exists (scale from zero)."""
    shapes = {}
    for name in BUILTIN_CATALOGS:
        catalog = load_catalog(name)
        for instance_type in catalog.instance_types:
            room = instance_type.allocatable
            listed = {"cpu": f"{room.cpu_milli}m", "memory": str(room.memory_bytes),
                      catalog.gpu_resource: f"{room.gpu_milli}m"}
            shapes[instance_type.name] = resources_from_list(
                listed, locality.gpu_resources, f"catalog {name}: {instance_type.name}",
                locality.device_names)
    return shapes


def read_json(response: Any) -> dict[str, Any]:
    """The body of a response read with `_preload_content=False`."""
    return json.loads(response.data)
