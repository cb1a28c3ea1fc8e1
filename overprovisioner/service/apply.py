"""Writes placeholder objects to the cluster: observe, diff, server-side apply, prune.

Decides: which API calls turn the desired objects (objects.py) into cluster state, and
the safety rules around them:
- server-side apply (`PATCH application/apply-patch+yaml`, field manager
  `headstart-overprovisioner`, `force=true` so a stray `kubectl scale` on headstart's
  own object is taken back; never used on anything else);
- before writing, an object of the same name that is not the overprovisioner's
  (`objects.owned_by_overprovisioner`: its `headstart.io/owner` annotation, not a label
  the kustomization stamps on everything) is never touched: that is a permanent error
  naming it;
- a write is skipped when the observed object already holds what is desired
  (`overprovisioner.service.diff.needs_write`), so applying the same plan twice writes
  nothing;
- prune: a bucket the plan still lists but wants 0 of keeps its Deployment (or
  CapacityBuffer) at 0 replicas: the name, history and events stay, and nothing is
  paid for. Objects of buckets the plan no longer lists (an instance type or placement
  group removed from the config, or the backend switched) are deleted, and only if
  they are the overprovisioner's (same rule);
- the CapacityBuffer backend is chosen by discovery (`auto`) or forced by config; a
  forced `capacitybuffer` on a cluster without the CRD (or with the cluster-scoped CRD
  of cluster-autoscaler 1.34.0-1.34.1, which `auto` reports and passes over) is a
  permanent error before anything is written;
  Discovery asks for v1beta1 first and falls back to v1alpha1 (deprecated upstream):
  the first version whose resource list names `capacitybuffers` (namespaced) is the
  one written and listed;
- hand-over: a bucket whose new-backend object fails keeps its old-backend objects,
  written to the plan, until the new one is written (see `apply_plan`).

Every call goes through `call_with_retry` (errors.py, on `kube.retry`); a 409 is never
sent again as it was: the next pass decides on a fresh look (the PriorityClass's
create reads what someone else created). One object failing does not stop
the others, nor the prune of buckets the plan dropped; a failed observation stops the
whole apply (the loop's expiry rule then bounds how long the previous placeholders
stay, overprovisioner.service.expiry).

Must not: decide how many placeholders (plan.py) or what they look like (objects.py).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from kubernetes.client.exceptions import ApiException

from common.errors import HeadstartError
from kube.retry import RetryPolicy
from overprovisioner.config import OverprovisionerConfig
from overprovisioner.service.diff import needs_write
from overprovisioner.service.errors import (
    ApiCallError,
    ErrorClass,
    NotOwnedError,
    call_with_retry,
)
from overprovisioner.service.objects import (
    CAPACITY_BUFFERS,
    DEPLOYMENT,
    POD_TEMPLATE,
    PRIORITY_CLASS,
    DesiredObject,
    bucket_of,
    owned_by_overprovisioner,
    placeholder_selector,
)
from overprovisioner.service.observed import Observed

FIELD_MANAGER = "headstart-overprovisioner"
APPLY_CONTENT_TYPE = "application/apply-patch+yaml"
MERGE_PATCH_CONTENT_TYPE = "application/merge-patch+json"

# (apiVersion, kind) -> (plural, namespaced)
RESOURCES: dict[tuple[str, str], tuple[str, bool]] = {
    DEPLOYMENT: ("deployments", True),
    POD_TEMPLATE: ("podtemplates", True),
    **{kind: ("capacitybuffers", True) for kind in CAPACITY_BUFFERS},
    PRIORITY_CLASS: ("priorityclasses", False),
}
# Deleting in this order never leaves a CapacityBuffer pointing at a deleted template.
PRUNE_ORDER = (*CAPACITY_BUFFERS, DEPLOYMENT, POD_TEMPLATE)


def resource_path(api_version: str, kind: str, namespace: str | None, name: str = "") -> str:
    plural, namespaced = RESOURCES[(api_version, kind)]
    prefix = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
    scope = f"/namespaces/{namespace}" if namespaced else ""
    return f"{prefix}{scope}/{plural}" + (f"/{name}" if name else "")


class KubeApi:
    """The few REST calls the overprovisioner makes, through the official client's ApiClient.

    Raises `ApiException` for a non-2xx answer (as the generated APIs do) and urllib3
    errors for transport failures; errors.py classifies both.
    """

    def __init__(self, api_client: Any, timeout_s: float) -> None:
        self.api_client = api_client
        self.timeout_s = timeout_s

    def request(
        self,
        method: str,
        path: str,
        query: Sequence[tuple[str, str]] = (),
        body: Any = None,
        content_type: str | None = None,
    ) -> dict[str, Any]:
        headers = {"Accept": "application/json"}
        if body is not None:
            headers["Content-Type"] = content_type or "application/json"
        method, url, headers, body, post = self.api_client.param_serialize(
            method=method, resource_path=path, query_params=list(query),
            header_params=headers, body=body, auth_settings=["BearerToken"],
        )
        response = self.api_client.call_api(
            method, url, headers, body, post, _request_timeout=self.timeout_s
        )
        data = response.read()
        if not 200 <= response.status <= 299:
            raise ApiException(status=response.status, reason=response.reason,
                               body=data.decode("utf-8", "replace") if data else "")
        try:
            return json.loads(data) if data else {}
        except ValueError:
            # Something in front of the API server (a proxy's HTML page): retry later.
            raise ApiException(status=502, reason="the answer is not JSON",
                               body=data[:200].decode("utf-8", "replace")) from None


@dataclass(frozen=True)
class ApplyResult:
    """What one apply did. `errors` are permanent or retried-out failures, one per object.

    held: old-backend objects kept (and written to the plan) because their bucket's
    new-backend object failed; renewed: keys of the objects this apply wrote or found
    up to date (their `headstart.io/valid-until` is current)."""

    backend: str
    written: tuple[str, ...] = ()
    unchanged: tuple[str, ...] = ()
    pruned: tuple[str, ...] = ()
    errors: tuple[HeadstartError, ...] = ()
    held: tuple[str, ...] = ()
    renewed: frozenset[tuple[str, str, str | None, str]] = frozenset()
    pruned_keys: frozenset[tuple[str, str, str | None, str]] = frozenset()
    renewed_bodies: Mapping[tuple[str, str, str | None, str], Mapping[str, Any]] = field(
        default_factory=dict)

    def objects_after(self, observed: Observed
                      ) -> dict[tuple[str, str, str | None, str], Mapping[str, Any]]:
        """headstart's objects as this apply left them (as far as it knows): the observed
        ones less the pruned, with the bodies it wrote or found up to date."""
        after = {k: v for k, v in observed.objects.items() if k not in self.pruned_keys}
        after.update(self.renewed_bodies)
        return after

    @property
    def ok(self) -> bool:
        return not self.errors


@dataclass
class Applier:
    """Applies desired placeholder objects for one config; every call retried per policy.

    on_error(kind, error) is told about every failed API attempt (the metrics count them).
    """

    api: KubeApi
    config: OverprovisionerConfig
    rng: np.random.Generator
    sleep: Callable[[float], None]
    on_error: Callable[[ErrorClass, BaseException], None] | None = None
    policy: RetryPolicy = field(init=False)

    def __post_init__(self) -> None:
        api = self.config.api
        self.policy = RetryPolicy(api.max_attempts, api.backoff_base_s, api.backoff_max_s)

    @property
    def namespace(self) -> str:
        return self.config.placeholders.namespace

    def _call(
        self, what: str, method: str, path: str, missing_ok: bool = False, **kwargs: Any
    ) -> dict[str, Any] | None:
        """One API call with retries; with missing_ok a 404 is an answer (None), not an error."""

        def call() -> dict[str, Any] | None:
            try:
                return self.api.request(method, path, **kwargs)
            except ApiException as error:
                if missing_ok and error.status == 404:
                    return None
                raise

        return call_with_retry(what, call, self.policy, self.rng, self.sleep, self.on_error)

    # ----------------------------------------------------------------- discovery
    def capacity_buffer_api(self) -> tuple[str, str]:
        """(apiVersion, problem): the CapacityBuffer apiVersion this cluster serves in a
        form headstart can write, v1beta1 before v1alpha1 (API discovery of each
        group/version), "" when none; problem: why a served one cannot be used, "" if none.

        cluster-autoscaler 1.34.0-1.34.1 shipped the CRD cluster-scoped: discovery says
        `namespaced: false` and every namespaced list or write would be a 404, every
        tick. That version is not used (a one-line permanent reason instead)."""
        problem = ""
        for group_version, _ in CAPACITY_BUFFERS:
            listing = self._call(f"discover {group_version}", "GET", f"/apis/{group_version}",
                                 missing_ok=True)
            resource = next((r for r in (listing or {}).get("resources") or []
                             if r.get("name") == "capacitybuffers"), None)
            if resource is None:
                continue
            if resource.get("namespaced") is False:
                problem = problem or (
                    f"{group_version} CapacityBuffer is cluster-scoped on this cluster (the "
                    "CRD of cluster-autoscaler 1.34.0-1.34.1); headstart writes namespaced "
                    "buffers: install the CRD of cluster-autoscaler 1.34.2 or later "
                    "(apis/config/crd/autoscaling.x-k8s.io_capacitybuffers.yaml)")
                continue
            return group_version, ""
        return "", problem

    def choose_backend(self, observed: Observed) -> str:
        """"deployment" or "capacitybuffer" for this cluster; raises if a forced one is absent."""
        wanted = self.config.placeholders.backend
        if wanted == "deployment":
            return "deployment"
        if wanted == "capacitybuffer" and not observed.capacity_buffers_served:
            versions = " or ".join(gv for gv, _ in CAPACITY_BUFFERS)
            raise ApiCallError(
                f"backend capacitybuffer ({self.config.source}: placeholders.backend)",
                "permanent", 404,
                (observed.capacity_buffer_problem + "; or set placeholders.backend to auto "
                 "or deployment") if observed.capacity_buffer_problem else
                f"this cluster does not serve CapacityBuffers ({versions}: install the CRD "
                "of your cluster-autoscaler release, cluster-autoscaler/apis/config/crd/"
                "autoscaling.x-k8s.io_capacitybuffers.yaml, or set placeholders.backend to "
                "auto or deployment)",
            )
        return "capacitybuffer" if observed.capacity_buffers_served else "deployment"

    # ------------------------------------------------------------------- observe
    def observe(self) -> Observed:
        """List headstart's placeholder objects (raises ApiCallError when it cannot)."""
        buffer_api, buffer_problem = self.capacity_buffer_api()
        kinds = [DEPLOYMENT, POD_TEMPLATE] + ([(buffer_api, "CapacityBuffer")] if buffer_api
                                              else [])
        objects: dict[tuple[str, str, str | None, str], Mapping[str, Any]] = {}
        for api_version, kind in kinds:
            listing = self._call(
                f"list {api_version} {kind} in {self.namespace}", "GET",
                resource_path(api_version, kind, self.namespace),
                query=[("labelSelector", placeholder_selector())],
            ) or {}
            for item in listing.get("items") or []:
                if not owned_by_overprovisioner(item):
                    continue  # a look-alike (copied labels) is not ours to manage
                name = item["metadata"]["name"]
                objects[(api_version, kind, self.namespace, name)] = item
        return Observed(objects, buffer_api, buffer_problem)

    # --------------------------------------------------------------------- apply
    def apply(self, desired: Sequence[DesiredObject], observed: Observed) -> tuple[
        list[DesiredObject], list[DesiredObject], list[HeadstartError], set[tuple[str, str]]
    ]:
        """SSA every desired object that differs; returns (written, unchanged, errors,
        the buckets of the objects that failed)."""
        written: list[DesiredObject] = []
        unchanged: list[DesiredObject] = []
        errors: list[HeadstartError] = []
        failed: set[tuple[str, str]] = set()
        failed_templates: set[str] = set()
        for obj in desired:
            label = _describe(obj.api_version, obj.kind, obj.namespace, obj.name)
            template = (obj.body.get("spec") or {}).get("podTemplateRef", {}).get("name")
            if (obj.api_version, obj.kind) in CAPACITY_BUFFERS and template in failed_templates:
                # Never point a buffer at a template headstart could not write (or that
                # belongs to someone else): CA would reserve capacity for that pod shape.
                errors.append(ApiCallError(label, "permanent", None,
                                           f"skipped: PodTemplate {template} was not applied"))
                failed.add(bucket_of(obj.body))
                continue
            try:
                current = observed.objects.get(obj.key)
                if current is None:
                    current = self._get_if_exists(obj)
                    if current is not None and not owned_by_overprovisioner(current):
                        raise NotOwnedError(label)
                if current is not None and not needs_write(
                        obj, current, self.config.placeholders.expire_after_s / 2):
                    unchanged.append(obj)
                    continue
                self._server_side_apply(obj, label)
                written.append(obj)
            except (ApiCallError, NotOwnedError) as error:
                errors.append(error)
                failed.add(bucket_of(obj.body))
                if (obj.api_version, obj.kind) == POD_TEMPLATE:
                    failed_templates.add(obj.name)
        return written, unchanged, errors, failed

    def prune(self, desired: Iterable[DesiredObject], observed: Observed) -> tuple[
        list[str], list[HeadstartError]
    ]:
        """Delete headstart placeholder objects no desired object names."""
        wanted = {obj.key for obj in desired}
        pruned: list[str] = []
        errors: list[HeadstartError] = []
        for kind in PRUNE_ORDER:
            for key, current in sorted(observed.objects.items(), key=lambda kv: kv[0][3]):
                if (key[0], key[1]) != kind or key in wanted or not owned_by_overprovisioner(
                    current
                ):
                    continue
                label = _describe(*key)
                try:
                    self._delete(key, label, current.get("metadata") or {})
                    pruned.append(label)
                except ApiCallError as error:
                    errors.append(error)
        return pruned, errors

    def scale(self, key: tuple[str, str, str | None, str], replicas: int,
              metadata: Mapping[str, Any] | None = None) -> str:
        """Set spec.replicas of one of headstart's Deployments or CapacityBuffers by a JSON
        merge patch (only that field: an apply with a partial body would drop the rest);
        the next server-side apply takes the field back. With the object's `metadata` as
        observed, its uid and resourceVersion are preconditions (the API server refuses
        with 409 a patch of an object re-created or changed since: it is looked at again
        at the next pass). Returns the object's label."""
        label = _describe(*key)
        api_version, kind, namespace, name = key
        path = resource_path(api_version, kind, namespace, name)
        if (api_version, kind) == DEPLOYMENT:
            # The scale subresource: the expiry job's account may change replica counts
            # and nothing else of a Deployment (a pod template is code to run).
            path += "/scale"
        guard = {field: metadata[field] for field in ("uid", "resourceVersion")
                 if metadata and metadata.get(field)}
        body: dict[str, Any] = {"spec": {"replicas": replicas}}
        if guard:
            body["metadata"] = guard
        self._call(
            f"scale {label} to {replicas}", "PATCH", path,
            query=[("fieldManager", FIELD_MANAGER)], body=body,
            content_type=MERGE_PATCH_CONTENT_TYPE,
        )
        return label

    def ensure_priority_class(self, desired: DesiredObject) -> str:
        """Create the placeholder PriorityClass if absent; verify it if present.

        A present one (shipped by the manifests, or created earlier) is never written:
        its value is immutable and its other fields do not matter to placeholders. One
        with another value or a preemptionPolicy other than Never is a permanent error,
        since placeholders at the wrong priority either never trigger scale-up or block
        real pods. Returns "created" or "unchanged".
        """
        label = _describe(desired.api_version, desired.kind, None, desired.name)
        current = self._get_if_exists(desired)
        if current is None:
            # A plain create: the account may create it and never patch it, and the
            # ValidatingAdmissionPolicy headstart-overprovisioner-priority-class refuses
            # any PriorityClass but this one (create cannot be narrowed by name in RBAC).
            try:
                self._call(f"create {label}", "POST",
                           resource_path(desired.api_version, desired.kind, None),
                           query=[("fieldManager", FIELD_MANAGER)], body=dict(desired.body))
                return "created"
            except ApiCallError as error:
                if error.status != 409:
                    raise
            # Created by someone else since the look (409 AlreadyExists): verify that one.
            current = self._get_if_exists(desired)
            if current is None:
                raise ApiCallError(label, "temporary", 409,
                                   "created and deleted by someone else meanwhile")
        value = current.get("value")
        policy = current.get("preemptionPolicy", "PreemptLowerPriority")
        if value != desired.body["value"] or policy != "Never":
            raise ApiCallError(
                label, "permanent", None,
                f"exists with value {value} and preemptionPolicy {policy}; headstart needs "
                f"value {desired.body['value']} ({self.config.source}: "
                "placeholders.priority_class_value) and preemptionPolicy Never. PriorityClass "
                "values cannot change: delete it and let headstart recreate it, or fix the "
                "config",
            )
        return "unchanged"

    def _get_if_exists(self, obj: DesiredObject) -> dict[str, Any] | None:
        label = _describe(obj.api_version, obj.kind, obj.namespace, obj.name)
        return self._call(
            f"get {label}", "GET",
            resource_path(obj.api_version, obj.kind, obj.namespace, obj.name), missing_ok=True,
        )

    def _server_side_apply(self, obj: DesiredObject, label: str) -> None:
        self._call(
            f"apply {label}", "PATCH",
            resource_path(obj.api_version, obj.kind, obj.namespace, obj.name),
            query=[("fieldManager", FIELD_MANAGER), ("force", "true")],
            body=dict(obj.body), content_type=APPLY_CONTENT_TYPE,
        )

    def _delete(self, key: tuple[str, str, str | None, str], label: str,
                metadata: Mapping[str, Any]) -> None:
        """Delete the object as observed: its uid and resourceVersion are preconditions,
        so one re-created or changed since (by anyone) is left for the next tick's look
        (409, not retried). Already gone (404) is what we wanted."""
        api_version, kind, namespace, name = key
        preconditions = {field: metadata[field] for field in ("uid", "resourceVersion")
                         if metadata.get(field)}
        self._call(
            f"delete {label}", "DELETE", resource_path(api_version, kind, namespace, name),
            missing_ok=True, query=[("propagationPolicy", "Background")],
            body={"apiVersion": "v1", "kind": "DeleteOptions",
                  "preconditions": preconditions},
        )


def apply_plan(
    applier: Applier,
    build_desired: Callable[[str, str], Sequence[DesiredObject]],
    priority_class: DesiredObject,
    observed: Observed | None = None,
) -> tuple[ApplyResult, Observed]:
    """One full apply: observe (unless given), choose the backend, PriorityClass, apply,
    hand over, prune. `build_desired(backend, capacity_buffer_api)` makes the objects.

    Hand-over between backends (`auto` switching Deployments <-> CapacityBuffers): a
    bucket whose new-backend object failed to write keeps its old-backend objects, and
    they keep following the plan (their replicas are written as the new ones would
    be), until a tick writes the new ones; only then are the old ones pruned. Prune
    runs whatever else failed: objects of buckets the plan no longer lists go even
    when some other write failed.

    Raises ApiCallError when the cluster cannot be observed, the forced backend is
    missing or the PriorityClass is wrong: then nothing is written (the loop's expiry
    rule, overprovisioner.service.expiry, bounds how long the previous placeholders stay).
    Per-object failures are collected in the result instead.
    """
    if observed is None:
        observed = applier.observe()
    backend = applier.choose_backend(observed)
    applier.ensure_priority_class(priority_class)
    desired = list(build_desired(backend, observed.capacity_buffer_api))
    written, unchanged, errors, failed = applier.apply(desired, observed)
    held: list[DesiredObject] = []
    if failed:
        other = "deployment" if backend == "capacitybuffer" else "capacitybuffer"
        held = [obj for obj in build_desired(other, observed.capacity_buffer_api)
                if obj.key in observed.objects and bucket_of(obj.body) in failed]
        held_written, held_unchanged, held_errors, _ = applier.apply(held, observed)
        written += held_written
        unchanged += held_unchanged
        errors += held_errors
    pruned, prune_errors = applier.prune([*desired, *held], observed)
    result = ApplyResult(
        backend, _labels(written), _labels(unchanged), tuple(pruned),
        tuple(errors + prune_errors), _labels(held),
        frozenset(obj.key for obj in written + unchanged),
        frozenset(key for key in observed.objects if _describe(*key) in pruned),
        {obj.key: obj.body for obj in written + unchanged},
    )
    return result, observed


def _labels(objects: Iterable[DesiredObject]) -> tuple[str, ...]:
    return tuple(_describe(*obj.key) for obj in objects)


def _describe(api_version: str, kind: str, namespace: str | None, name: str) -> str:
    return f"{api_version} {kind} {namespace + '/' if namespace else ''}{name}"
