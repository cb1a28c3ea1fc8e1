"""An in-process fake Kubernetes API server that speaks the real API's JSON.

No API server can be installed where headstart is tested, so the adapters (the
extender's cache, the recorder, the overprovisioner's apply loop, leader election)
are tested against this fake through the official `kubernetes` client over real
HTTP on 127.0.0.1. It runs in its own thread with its own event loop, so both sync
client code and aiohttp tests can use it.

What it implements, as the real API server does:
- discovery: `/api`, `/api/v1`, `/apis`, `/apis/{group}/{version}` (a group can be
  switched off to test a missing CRD, e.g. CapacityBuffers), and `/version` (`version`);
- list (all namespaces or one) with `labelSelector` and simple `fieldSelector`,
  list `metadata.resourceVersion`; list items carry no kind/apiVersion;
- watch (`?watch=true&resourceVersion=N`): ADDED/MODIFIED/DELETED events after N as
  JSON lines; an empty or "0" resourceVersion starts with synthetic ADDED events;
  a resourceVersion older than the retained history gets an ERROR event whose
  Status has code 410 (reason Expired), as etcd compaction causes in real clusters;
  `timeoutSeconds` ends the stream;
- create (201; 409 AlreadyExists), replace (409 Conflict on a stale
  resourceVersion), delete (404 when missing), JSON merge patch, and server-side
  apply (`application/apply-patch+yaml`, `fieldManager` required, field ownership
  tracked per manager at leaf level, lists atomic; a change to a field another
  manager owns is a 409 Conflict unless `force=true`; fields the manager stops
  applying are removed);
- JSON patch (RFC 6902: add, remove, replace, test; a failed test or a bad path is a
  422, as kube-apiserver's patch handler answers);
- the pod update rules the job admitter depends on (pkg/apis/core/validation
  `ValidatePodUpdate`, 422 Invalid): scheduling gates may only be removed; a pod's
  `spec.nodeSelector` and `spec.affinity.nodeAffinity` may change only while the pod
  is gated (before the update), the selector only gaining keys, the required node
  affinity set freely when it had no terms and otherwise keeping its terms and only
  appending match expressions or fields to each (`validateNodeAffinityMutation`); the
  preferred terms freely; `spec.nodeName` never beside a gate;
- merge patches: a `metadata.uid` other than the object's is refused (422, the uid is
  immutable), a `metadata.resourceVersion` other than its current one too (409);
- the `pods/{name}/eviction` subresource (uid precondition; no PodDisruptionBudgets);
- the `pods/{name}/binding` subresource and the `bindings` collection (400 when the
  Binding names another pod than the URL, 409 when already bound or when its UID
  precondition does not match), and `/status`.

What it does not do: run controllers (a Deployment makes no pods), admission,
defaulting, validation against schemas (of pod updates, only the rules above),
strategic-merge list semantics, pagination (`limit` is ignored), bookmarks, RBAC. Tests
that need those effects create the objects themselves. `requests` records every call, so
a test can compare the calls a component makes with the RBAC rules it ships;
`applied_creations` records the path of every server-side apply that created its object,
which kube-apiserver authorizes as `create` as well as `patch` (k8s.io/apiserver
pkg/endpoints/handlers/patch.go, createAuthorizerAttributes).
"""

from __future__ import annotations

import asyncio
import copy
import json
import threading
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import yaml
from aiohttp import web

# (group/version, plural) -> (kind, namespaced)
RESOURCES: dict[tuple[str, str], tuple[str, bool]] = {
    ("v1", "pods"): ("Pod", True),
    ("v1", "nodes"): ("Node", False),
    ("v1", "namespaces"): ("Namespace", False),
    ("v1", "configmaps"): ("ConfigMap", True),
    ("v1", "secrets"): ("Secret", True),
    ("v1", "services"): ("Service", True),
    ("v1", "podtemplates"): ("PodTemplate", True),
    ("v1", "events"): ("Event", True),
    ("apps/v1", "deployments"): ("Deployment", True),
    ("apps/v1", "daemonsets"): ("DaemonSet", True),
    # What `headstart check` reads besides: RBAC objects and the placement gate.
    ("rbac.authorization.k8s.io/v1", "roles"): ("Role", True),
    ("rbac.authorization.k8s.io/v1", "rolebindings"): ("RoleBinding", True),
    ("rbac.authorization.k8s.io/v1", "clusterroles"): ("ClusterRole", False),
    ("rbac.authorization.k8s.io/v1", "clusterrolebindings"): ("ClusterRoleBinding", False),
    ("admissionregistration.k8s.io/v1", "mutatingwebhookconfigurations"):
        ("MutatingWebhookConfiguration", False),
    ("admissionregistration.k8s.io/v1", "mutatingadmissionpolicies"):
        ("MutatingAdmissionPolicy", False),
    ("admissionregistration.k8s.io/v1", "mutatingadmissionpolicybindings"):
        ("MutatingAdmissionPolicyBinding", False),
    ("coordination.k8s.io/v1", "leases"): ("Lease", True),
    ("scheduling.k8s.io/v1", "priorityclasses"): ("PriorityClass", False),
    ("policy/v1", "poddisruptionbudgets"): ("PodDisruptionBudget", True),
    ("topology.node.k8s.io/v1alpha2", "noderesourcetopologies"): ("NodeResourceTopology", False),
    ("autoscaling.x-k8s.io/v1alpha1", "capacitybuffers"): ("CapacityBuffer", True),
    ("resource.k8s.io/v1", "resourceslices"): ("ResourceSlice", False),
    ("resource.k8s.io/v1", "resourceclaims"): ("ResourceClaim", True),
    ("resource.k8s.io/v1", "resourceclaimtemplates"): ("ResourceClaimTemplate", True),
    # What the known-demand sources read (predictor.live.known_reader.WATCHED).
    ("batch/v1", "jobs"): ("Job", True),
    ("batch/v1", "cronjobs"): ("CronJob", True),
    ("kueue.x-k8s.io/v1beta2", "workloads"): ("Workload", True),
    ("kueue.x-k8s.io/v1beta2", "localqueues"): ("LocalQueue", True),
    ("kueue.x-k8s.io/v1beta2", "clusterqueues"): ("ClusterQueue", False),
    ("kueue.x-k8s.io/v1beta2", "admissionchecks"): ("AdmissionCheck", False),
    ("kueue.x-k8s.io/v1beta1", "workloads"): ("Workload", True),
    ("kueue.x-k8s.io/v1beta1", "localqueues"): ("LocalQueue", True),
    ("kueue.x-k8s.io/v1beta1", "clusterqueues"): ("ClusterQueue", False),
    ("kueue.x-k8s.io/v1beta1", "admissionchecks"): ("AdmissionCheck", False),
    ("jobset.x-k8s.io/v1alpha2", "jobsets"): ("JobSet", True),
    ("kubeflow.org/v1", "pytorchjobs"): ("PyTorchJob", True),
    ("kubeflow.org/v1", "tfjobs"): ("TFJob", True),
    ("kubeflow.org/v1", "mpijobs"): ("MPIJob", True),
    ("trainer.kubeflow.org/v1alpha1", "trainjobs"): ("TrainJob", True),
    ("ray.io/v1", "rayclusters"): ("RayCluster", True),
    ("ray.io/v1", "rayjobs"): ("RayJob", True),
    ("leaderworkerset.x-k8s.io/v1", "leaderworkersets"): ("LeaderWorkerSet", True),
    ("scheduling.x-k8s.io/v1alpha1", "podgroups"): ("PodGroup", True),
    ("scheduling.volcano.sh/v1beta1", "podgroups"): ("PodGroup", True),
    ("autoscaling.x-k8s.io/v1beta1", "capacitybuffers"): ("CapacityBuffer", True),
    ("karpenter.sh/v1", "nodepools"): ("NodePool", False),
    # headstart's own CRD (manifests/base/crds): installed with headstart, served here.
    ("headstart.io/v1alpha1", "gangs"): ("Gang", True),
}
KIND_TO_PLURAL = {(gv, kind): plural for (gv, plural), (kind, _) in RESOURCES.items()}
# CRDs a cluster may not have: served only when a test says so (`serve`).
CRD_GROUP_VERSIONS = frozenset({
    "kueue.x-k8s.io/v1beta2", "kueue.x-k8s.io/v1beta1", "jobset.x-k8s.io/v1alpha2",
    "kubeflow.org/v1", "trainer.kubeflow.org/v1alpha1", "scheduling.x-k8s.io/v1alpha1",
    "scheduling.volcano.sh/v1beta1", "karpenter.sh/v1", "leaderworkerset.x-k8s.io/v1",
    "ray.io/v1",
})
# A CRD is not installed until a test serves it. The two CapacityBuffer versions are
# separate stores here; a real API server keeps one and converts between them.
DEFAULT_OFF = frozenset({"autoscaling.x-k8s.io/v1alpha1", "autoscaling.x-k8s.io/v1beta1"}) \
    | CRD_GROUP_VERSIONS

REASONS = {
    400: "BadRequest", 403: "Forbidden", 404: "NotFound", 405: "MethodNotAllowed",
    409: "Conflict", 410: "Expired", 415: "UnsupportedMediaType", 422: "Invalid",
    429: "TooManyRequests", 500: "InternalError", 503: "ServiceUnavailable",
    504: "Timeout",
}


def status_body(code: int, message: str, reason: str | None = None) -> dict[str, Any]:
    return {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": message, "reason": reason or REASONS.get(code, "Unknown"), "code": code,
    }


class ApiError(Exception):
    def __init__(self, code: int, message: str, reason: str | None = None) -> None:
        super().__init__(message)
        self.body = status_body(code, message, reason)
        self.code = code


@dataclass
class _Injected:
    method: str
    path_contains: str
    status: int | str
    count: int
    delay_s: float


@dataclass
class Gathering:
    """Requests held until `count` of them are in flight together (`FakeKube.gather`):
    `met` says whether they ever were."""

    method: str
    path_contains: str
    count: int
    timeout_s: float
    arrived: int = 0
    """Held now (all that ever came once met)."""
    met: bool = False
    released: asyncio.Event | None = None


@dataclass(frozen=True)
class _Event:
    resource_version: int
    group_version: str
    plural: str
    type: str
    object: dict[str, Any]


def _leaves(value: Any, prefix: tuple[str, ...] = ()) -> dict[tuple[str, ...], Any]:
    """Leaf paths of a JSON value: dict keys are walked, lists and scalars are leaves."""
    if isinstance(value, dict) and value:
        out: dict[tuple[str, ...], Any] = {}
        for key, item in value.items():
            out.update(_leaves(item, (*prefix, key)))
        return out
    return {prefix: value}


def _get_path(obj: Any, path: tuple[str, ...]) -> Any:
    for key in path:
        if not isinstance(obj, dict) or key not in obj:
            return _MISSING
        obj = obj[key]
    return obj


def _set_path(obj: dict, path: tuple[str, ...], value: Any) -> None:
    for key in path[:-1]:
        nxt = obj.get(key)
        if not isinstance(nxt, dict):
            nxt = obj[key] = {}
        obj = nxt
    obj[path[-1]] = copy.deepcopy(value)


def _del_path(obj: dict, path: tuple[str, ...]) -> None:
    parents = []
    for key in path[:-1]:
        if not isinstance(obj, dict) or key not in obj:
            return
        parents.append((obj, key))
        obj = obj[key]
    if isinstance(obj, dict):
        obj.pop(path[-1], None)
    for parent, key in reversed(parents):  # drop maps the removal left empty
        if parent[key] == {}:
            del parent[key]


def _merge_patch(target: Any, patch: Any) -> Any:
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = _merge_patch(result.get(key), value)
    return result


def _pointer(path: str) -> list[str]:
    if path == "":
        return []
    if not path.startswith("/"):
        raise ApiError(422, f"JSON patch: path {path!r} does not start with /")
    return [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]


def apply_json_patch(document: Any, ops: Any) -> Any:
    """RFC 6902 add, remove, replace and test on a copy of `document`; any failure is the
    422 kube-apiserver answers (endpoints/handlers/patch.go applyJSPatch)."""
    if not isinstance(ops, list):
        raise ApiError(400, "JSON patch: expected a list of operations")
    result = copy.deepcopy(document)
    for op in ops:
        kind, parts = op.get("op"), _pointer(op.get("path", ""))
        if not parts:
            raise ApiError(422, "JSON patch: the whole document cannot be patched here")
        parent: Any = result
        for part in parts[:-1]:
            if isinstance(parent, list):
                if not part.isdigit() or int(part) >= len(parent):
                    raise ApiError(422, f"JSON patch: no {op['path']}")
                parent = parent[int(part)]
            elif isinstance(parent, dict) and part in parent:
                parent = parent[part]
            else:
                raise ApiError(422, f"JSON patch: doc is missing path: {op['path']}")
        last = parts[-1]
        if isinstance(parent, list):
            index = len(parent) if last == "-" else (int(last) if last.isdigit() else -1)
            bound = len(parent) if kind == "add" else len(parent) - 1
            if not 0 <= index <= bound:
                raise ApiError(422, f"JSON patch: index out of range: {op['path']}")
        elif not isinstance(parent, dict):
            raise ApiError(422, f"JSON patch: no {op['path']}")
        elif kind != "add" and last not in parent:
            raise ApiError(422, f"JSON patch: doc is missing key: {op['path']}")
        if kind == "test":
            current = parent[index] if isinstance(parent, list) else parent[last]
            if current != op.get("value"):
                raise ApiError(422, f"JSON patch: testing value {op['path']} failed")
        elif kind == "remove":
            del parent[index if isinstance(parent, list) else last]
        elif kind == "add":
            if isinstance(parent, list):
                parent.insert(index, copy.deepcopy(op.get("value")))
            else:
                parent[last] = copy.deepcopy(op.get("value"))
        elif kind == "replace":
            parent[index if isinstance(parent, list) else last] = copy.deepcopy(op.get("value"))
        else:
            raise ApiError(422, f"JSON patch: unsupported operation {kind!r}")
    return result


def pod_update_problems(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """What kube-apiserver's ValidatePodUpdate says of the scheduling-gate and
    scheduling-directive part of a pod update (pkg/apis/core/validation/validation.go
    validateOnlyDeletedSchedulingGates, validateNodeSelectorMutation,
    validateNodeAffinityMutation)."""
    problems = []
    old_spec, new_spec = old.get("spec") or {}, new.get("spec") or {}
    old_gates = [g.get("name") for g in old_spec.get("schedulingGates") or []]
    new_gates = [g.get("name") for g in new_spec.get("schedulingGates") or []]
    for name in new_gates:
        if name not in old_gates:
            problems.append(f"spec.schedulingGates: Forbidden: only deletion is allowed, but "
                            f"found new scheduling gate '{name}'")
    if new_spec.get("nodeName") and new_gates:
        problems.append("spec.nodeName: Forbidden: cannot be set until all schedulingGates "
                        "have been cleared")
    gated = bool(old_gates)
    old_selector, new_selector = old_spec.get("nodeSelector") or {}, new_spec.get(
        "nodeSelector") or {}
    if old_selector != new_selector:
        if not gated or any(new_selector.get(k) != v for k, v in old_selector.items()):
            problems.append("spec.nodeSelector: Invalid value: only additions to "
                            "spec.nodeSelector are allowed (no mutations or deletions)"
                            if gated else "spec: Forbidden: pod updates may not change "
                            "fields other than ... (nodeSelector of an ungated pod)")
    old_affinity = (old_spec.get("affinity") or {}).get("nodeAffinity")
    new_affinity = (new_spec.get("affinity") or {}).get("nodeAffinity")
    if (old_affinity or None) != (new_affinity or None):
        if not gated:
            problems.append("spec: Forbidden: pod updates may not change fields other than "
                            "... (nodeAffinity of an ungated pod)")
        else:
            problems += _node_affinity_mutation(old_affinity, new_affinity)
    return problems


def _node_affinity_mutation(old: dict | None, new: dict | None) -> list[str]:
    required = "requiredDuringSchedulingIgnoredDuringExecution"
    old_required = (old or {}).get(required)
    if old_required is None:
        return []
    old_terms = old_required.get("nodeSelectorTerms") or []
    new_terms = ((new or {}).get(required) or {}).get("nodeSelectorTerms") or []
    path = f"spec.affinity.nodeAffinity.{required}.nodeSelectorTerms"
    if old_terms and len(old_terms) != len(new_terms):
        return [f"{path}: Invalid value: no additions/deletions to non-empty "
                "NodeSelectorTerms list are allowed"]
    problems = []
    for index, (old_term, new_term) in enumerate(zip(old_terms, new_terms, strict=False)):
        ok = True
        old_exprs = old_term.get("matchExpressions") or []
        old_fields = old_term.get("matchFields") or []
        new_exprs = new_term.get("matchExpressions") or []
        new_fields = new_term.get("matchFields") or []
        if not old_exprs and not old_fields and (new_exprs or new_fields):
            ok = False
        if old_exprs and new_exprs[:len(old_exprs)] != old_exprs:
            ok = False
        if old_fields and new_fields[:len(old_fields)] != old_fields:
            ok = False
        if not ok:
            problems.append(f"{path}[{index}]: Invalid value: only additions are allowed "
                            "(no mutations or deletions)")
    return problems


def _fields_v1(paths: Iterable[tuple[str, ...]]) -> dict[str, Any]:
    tree: dict[str, Any] = {}
    for path in paths:
        node = tree
        for key in path:
            node = node.setdefault(f"f:{key}", {})
    return tree


_MISSING = object()
_SYSTEM_FIELDS = {"resourceVersion", "uid", "creationTimestamp", "managedFields", "generation"}


# Resources whose `status` is an ordinary field (a CRD without the status subresource):
# writes to the object set it, as the API server does for such CRDs.
STATUS_IS_A_FIELD = frozenset({("headstart.io/v1alpha1", "gangs")})


def _owned_leaves(obj: dict[str, Any], status: bool = False) -> dict[tuple[str, ...], Any]:
    """The leaves a manager can own: everything but server-set metadata and (unless
    `status`: a resource without the status subresource) status."""
    skipped = ("apiVersion", "kind") if status else ("status", "apiVersion", "kind")
    return {
        path: value
        for path, value in _leaves(obj).items()
        if path
        and path[0] not in skipped
        and not (path[0] == "metadata" and len(path) > 1 and path[1] in _SYSTEM_FIELDS)
        and path not in (("metadata", "name"), ("metadata", "namespace"))
    }


def _match_labels(labels: dict[str, str], selector: str) -> bool:
    if not selector:
        return True
    terms, depth, current = [], 0, ""
    for char in selector:
        depth += char == "("
        depth -= char == ")"
        if char == "," and depth == 0:
            terms.append(current.strip())
            current = ""
        else:
            current += char
    terms.append(current.strip())
    for term in filter(None, terms):
        if " notin " in term or " in " in term:
            negate = " notin " in term
            key, values = term.split(" notin " if negate else " in ", 1)
            allowed = {v.strip() for v in values.strip().strip("()").split(",")}
            found = labels.get(key.strip()) in allowed
            if found == negate:
                return False
        elif "!=" in term:
            key, value = term.split("!=", 1)
            if labels.get(key.strip()) == value.strip():
                return False
        elif "=" in term:
            key, value = term.replace("==", "=").split("=", 1)
            if labels.get(key.strip()) != value.strip():
                return False
        elif term.startswith("!"):
            if term[1:].strip() in labels:
                return False
        elif term not in labels:
            return False
    return True


def _match_fields(obj: dict[str, Any], selector: str) -> bool:
    for term in filter(None, (t.strip() for t in selector.split(","))):
        negate = "!=" in term
        key, value = term.replace("==", "=").split("!=" if negate else "=", 1)
        actual = _get_path(obj, tuple(key.strip().split(".")))
        actual = "" if actual is _MISSING or actual is None else str(actual)
        if (actual == value.strip()) == negate:
            return False
    return True


class FakeKube:
    """The fake API server. `start()` it (the `fake_kube` fixture does), then point
    the kubernetes client at `url` (or use `api_client()` / `write_kubeconfig()`).

    Test-side helpers (`create`, `replace`, `delete`, `get`, `list`) change the same
    store the HTTP API serves and emit the same watch events.
    """

    def __init__(self, serve_off: Iterable[str] = DEFAULT_OFF, history_limit: int = 10_000):
        self._lock = threading.RLock()
        self._objects: dict[tuple[str, str, str, str], dict[str, Any]] = {}
        self._owners: dict[tuple[str, str, str, str], dict[str, set[tuple[str, ...]]]] = {}
        self._events: list[_Event] = []
        self._oldest_retained = 0  # watches from a resourceVersion below this get 410
        self._resource_version = 1
        self._uid_counter = 0
        self._history_limit = history_limit
        self._off = set(serve_off)
        # (group/version, plural) -> namespaced, overriding RESOURCES (`scope`)
        self._scope: dict[tuple[str, str], bool] = {}
        self._injected: list[_Injected] = []
        self._gatherings: list[Gathering] = []
        self.requests: list[tuple[str, str, str]] = []
        self.applied_creations: list[str] = []
        self.version = {"major": "1", "minor": "36", "gitVersion": "v1.36.0-fakekube"}
        """What `/version` answers."""
        self._loop: asyncio.AbstractEventLoop | None = None
        self._changed: asyncio.Event | None = None
        self._thread: threading.Thread | None = None
        self._runner: web.AppRunner | None = None
        self.url = ""

    # ---------------------------------------------------------------- lifecycle
    def start(self, port: int = 0) -> FakeKube:
        """Serve on 127.0.0.1:`port` (0: any free port; a test of a server that comes
        up late passes the port its clients were already given)."""
        ready = threading.Event()

        def run() -> None:
            self._loop = asyncio.new_event_loop()
            asyncio.set_event_loop(self._loop)
            self._changed = asyncio.Event()
            app = web.Application(client_max_size=64 * 1024**2)
            app.router.add_route("*", "/{tail:.*}", self._handle)
            self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.5)
            self._loop.run_until_complete(self._runner.setup())
            site = web.TCPSite(self._runner, "127.0.0.1", port)
            self._loop.run_until_complete(site.start())
            bound = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
            self.url = f"http://127.0.0.1:{bound}"
            ready.set()
            self._loop.run_forever()
            self._loop.run_until_complete(self._runner.cleanup())
            self._loop.close()

        self._thread = threading.Thread(target=run, name="fakekube", daemon=True)
        self._thread.start()
        if not ready.wait(10):
            raise RuntimeError("fake API server did not start")
        return self

    def stop(self) -> None:
        if self._loop and self._thread:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(10)

    def api_client(self):
        """A `kubernetes.client.ApiClient` pointed at this server."""
        from kubernetes import client

        configuration = client.Configuration()
        configuration.host = self.url
        return client.ApiClient(configuration)

    def write_kubeconfig(self, path) -> str:
        """Write a kubeconfig file for this server (for `--kubeconfig` CLI tests)."""
        config = {
            "apiVersion": "v1", "kind": "Config", "current-context": "fake",
            "clusters": [{"name": "fake", "cluster": {"server": self.url}}],
            "users": [{"name": "fake", "user": {"token": "fake-token"}}],
            "contexts": [{"name": "fake", "context": {"cluster": "fake", "user": "fake"}}],
        }
        with open(path, "w") as handle:
            yaml.safe_dump(config, handle)
        return str(path)

    # ------------------------------------------------------------- test helpers
    def serve(self, group_version: str, served: bool = True) -> None:
        """Serve or stop serving an API group/version (a CRD installed or not)."""
        with self._lock:
            (self._off.discard if served else self._off.add)(group_version)

    def scope(self, group_version: str, plural: str, namespaced: bool) -> None:
        """Serve a resource with another scope than RESOURCES says (a CRD shipped
        cluster-scoped, as cluster-autoscaler 1.34.0-1.34.1 did with CapacityBuffers):
        discovery reports it, and requests in the other scope get 404."""
        with self._lock:
            self._scope[(group_version, plural)] = namespaced

    def fail_next(
        self, method: str, path_contains: str, status: int | str = 500, count: int = 1,
        delay_s: float = 0.0,
    ) -> None:
        """Answer the next `count` matching requests with `status` (an HTTP code, or
        "timeout": hold the request `delay_s` seconds, then 504)."""
        with self._lock:
            self._injected.append(_Injected(method.upper(), path_contains, status, count, delay_s))

    def gather(self, method: str, path_contains: str, count: int,
               timeout_s: float = 10.0) -> Gathering:
        """Hold the first `count` matching requests until all `count` are in flight at
        once, then answer them normally; each is let go after `timeout_s` if the others
        never come (so a client sending them one at a time is slowed, not stuck). Read
        `met` on the answer: whether the client had them in flight together."""
        gathering = Gathering(method.upper(), path_contains, count, timeout_s)
        with self._lock:
            self._gatherings.append(gathering)
        return gathering

    async def _gathered(self, request: web.Request) -> None:
        """Wait here while `request` belongs to a gathering not yet met."""
        with self._lock:
            gathering = next((g for g in self._gatherings if g.arrived < g.count
                              and g.method in (request.method, "*")
                              and g.path_contains in request.path), None)
            if gathering is None:
                return
            if gathering.released is None:
                gathering.released = asyncio.Event()
            gathering.arrived += 1
            if gathering.arrived == gathering.count:
                gathering.met = True
                gathering.released.set()
                return
            released = gathering.released
        try:
            await asyncio.wait_for(released.wait(), gathering.timeout_s)
        except TimeoutError:
            with self._lock:
                if not gathering.met:
                    gathering.arrived -= 1  # no longer in flight with the next one

    def heal(self) -> None:
        """Drop every failure `fail_next` still holds: the API answers normally again."""
        with self._lock:
            self._injected.clear()

    def expire_history(self) -> None:
        """Forget all events so far: any watch from an older resourceVersion gets 410."""
        with self._lock:
            self._events.clear()
            self._oldest_retained = self._resource_version

    def create(self, obj: dict[str, Any], field_manager: str = "test") -> dict[str, Any]:
        gv, plural, ns = self._locate(obj)
        return copy.deepcopy(self._create(gv, plural, ns, copy.deepcopy(obj), field_manager))

    def replace(self, obj: dict[str, Any]) -> dict[str, Any]:
        gv, plural, ns = self._locate(obj)
        name = obj["metadata"]["name"]
        return copy.deepcopy(self._replace(gv, plural, ns, name, copy.deepcopy(obj), "test"))

    def delete(self, api_version: str, kind: str, name: str, namespace: str | None = None) -> None:
        plural = KIND_TO_PLURAL[(api_version, kind)]
        self._delete(api_version, plural, namespace or "", name)

    def get(
        self, api_version: str, kind: str, name: str, namespace: str | None = None
    ) -> dict[str, Any] | None:
        plural = KIND_TO_PLURAL[(api_version, kind)]
        with self._lock:
            found = self._objects.get((api_version, plural, namespace or "", name))
            return copy.deepcopy(found) if found else None

    def list(self, api_version: str, kind: str, namespace: str | None = None) -> list[dict]:
        plural = KIND_TO_PLURAL[(api_version, kind)]
        with self._lock:
            return [
                copy.deepcopy(obj)
                for (gv, pl, ns, _), obj in sorted(self._objects.items())
                if gv == api_version and pl == plural and (namespace is None or ns == namespace)
            ]

    # ------------------------------------------------------------------- store
    def _locate(self, obj: dict[str, Any]) -> tuple[str, str, str]:
        gv, kind = obj.get("apiVersion", ""), obj.get("kind", "")
        if (gv, kind) not in KIND_TO_PLURAL:
            raise ValueError(f"fakekube does not know {gv} {kind}")
        plural = KIND_TO_PLURAL[(gv, kind)]
        namespaced = RESOURCES[(gv, plural)][1]
        ns = obj.get("metadata", {}).get("namespace", "default") if namespaced else ""
        return gv, plural, ns

    def _stamp(self, gv: str, plural: str, ns: str, obj: dict[str, Any]) -> None:
        kind, namespaced = RESOURCES[(gv, plural)]
        obj["apiVersion"], obj["kind"] = gv, kind
        meta = obj.setdefault("metadata", {})
        if namespaced:
            meta["namespace"] = ns
        else:
            meta.pop("namespace", None)
        self._resource_version += 1
        meta["resourceVersion"] = str(self._resource_version)

    def _record(self, gv: str, plural: str, kind: str, obj: dict[str, Any]) -> None:
        self._events.append(
            _Event(int(obj["metadata"]["resourceVersion"]), gv, plural, kind, copy.deepcopy(obj))
        )
        if len(self._events) > self._history_limit:
            dropped = self._events[: len(self._events) - self._history_limit]
            del self._events[: len(dropped)]
            self._oldest_retained = dropped[-1].resource_version
        if self._loop and self._changed:
            self._loop.call_soon_threadsafe(self._wake)

    def _wake(self) -> None:
        assert self._changed is not None
        self._changed.set()
        self._changed = asyncio.Event()

    def _render_managed_fields(self, key: tuple[str, str, str, str], obj: dict) -> None:
        owners = self._owners.get(key, {})
        obj["metadata"]["managedFields"] = [
            {
                "manager": manager, "operation": operation, "apiVersion": key[0],
                "fieldsType": "FieldsV1", "fieldsV1": _fields_v1(sorted(paths)),
            }
            for (manager, operation), paths in sorted(owners.items()) if paths
        ]

    def _create(self, gv: str, plural: str, ns: str, obj: dict, manager: str,
                operation: str = "Update") -> dict[str, Any]:
        with self._lock:
            meta = obj.setdefault("metadata", {})
            if not meta.get("name") and meta.get("generateName"):
                self._uid_counter += 1
                meta["name"] = f"{meta['generateName']}{self._uid_counter:05x}"
            name = meta.get("name")
            if not name:
                raise ApiError(422, "metadata.name: Required value")
            key = (gv, plural, ns, name)
            if key in self._objects:
                raise ApiError(409, f'{plural} "{name}" already exists', "AlreadyExists")
            self._uid_counter += 1
            meta["uid"] = str(uuid.UUID(int=self._uid_counter))
            meta["creationTimestamp"] = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
            if plural != "pods":
                meta["generation"] = 1
            self._stamp(gv, plural, ns, obj)
            self._owners[key] = {(manager, operation): set(
                _owned_leaves(obj, (gv, plural) in STATUS_IS_A_FIELD))}
            self._render_managed_fields(key, obj)
            self._objects[key] = obj
            self._record(gv, plural, "ADDED", obj)
            return obj

    def _existing(self, gv: str, plural: str, ns: str, name: str) -> dict[str, Any]:
        obj = self._objects.get((gv, plural, ns, name))
        if obj is None:
            raise ApiError(404, f'{plural} "{name}" not found')
        return obj

    def _store_update(self, key: tuple[str, str, str, str], old: dict, new: dict) -> dict:
        if key[1] == "pods":
            problems = pod_update_problems(old, new)
            if problems:
                raise ApiError(422, f'Pod "{key[3]}" is invalid: ' + "; ".join(problems),
                               "Invalid")
        new.setdefault("metadata", {})
        for field in ("uid", "creationTimestamp", "generation"):
            if field in old["metadata"]:
                new["metadata"][field] = old["metadata"][field]
        if key[1] != "pods" and new.get("spec") != old.get("spec"):
            new["metadata"]["generation"] = old["metadata"].get("generation", 1) + 1
        if new == old:
            return old  # a no-op write does not bump resourceVersion, as on a real server
        self._stamp(key[0], key[1], key[2], new)
        self._render_managed_fields(key, new)
        self._objects[key] = new
        self._record(key[0], key[1], "MODIFIED", new)
        return new

    def _replace(self, gv: str, plural: str, ns: str, name: str, obj: dict, manager: str,
                 subresource: str = "") -> dict[str, Any]:
        with self._lock:
            key = (gv, plural, ns, name)
            old = self._existing(gv, plural, ns, name)
            sent_rv = obj.get("metadata", {}).get("resourceVersion")
            if sent_rv and sent_rv != old["metadata"]["resourceVersion"]:
                raise ApiError(
                    409,
                    f'Operation cannot be fulfilled on {plural} "{name}": the object has been '
                    "modified; please apply your changes to the latest version and try again",
                )
            if subresource == "status":
                new = copy.deepcopy(old)
                new["status"] = copy.deepcopy(obj.get("status"))
            else:
                new = obj
                new.setdefault("metadata", {})["name"] = name
                if "status" in old and "status" not in new:
                    new["status"] = copy.deepcopy(old["status"])
                owners = self._owners.setdefault(key, {})
                owners[(manager, "Update")] = owners.get((manager, "Update"), set()) | set(
                    _owned_leaves(new)
                )
            return self._store_update(key, old, new)

    def _patch_merge(self, gv: str, plural: str, ns: str, name: str, patch: dict,
                     manager: str) -> dict[str, Any]:
        with self._lock:
            key = (gv, plural, ns, name)
            old = self._existing(gv, plural, ns, name)
            uid = (patch.get("metadata") or {}).get("uid") if isinstance(patch, dict) else None
            if uid and uid != old["metadata"].get("uid"):
                # ValidateObjectMetaUpdate: the uid is immutable, so a patch naming
                # another one is refused (422), which makes it a precondition.
                raise ApiError(422, f'{RESOURCES[(gv, plural)][0]} "{name}" is invalid: '
                                    f'metadata.uid: Invalid value: "{uid}": field is immutable')
            version = (patch.get("metadata") or {}).get("resourceVersion") \
                if isinstance(patch, dict) else None
            if version and version != old["metadata"].get("resourceVersion"):
                # A resourceVersion in the patch is a precondition (the update's
                # optimistic concurrency): another one is a 409 Conflict.
                raise ApiError(409, f'Operation cannot be fulfilled on {plural} "{name}": '
                                    "the object has been modified; please apply your "
                                    "changes to the latest version and try again",
                               "Conflict")
            new = _merge_patch(copy.deepcopy(old), patch)
            new["metadata"]["resourceVersion"] = old["metadata"]["resourceVersion"]
            owners = self._owners.setdefault(key, {})
            owners[(manager, "Update")] = owners.get((manager, "Update"), set()) | set(
                _owned_leaves(patch)
            )
            return self._store_update(key, old, new)

    def _patch_json(self, gv: str, plural: str, ns: str, name: str, ops: Any,
                    manager: str) -> dict[str, Any]:
        with self._lock:
            key = (gv, plural, ns, name)
            old = self._existing(gv, plural, ns, name)
            new = apply_json_patch(old, ops)
            owners = self._owners.setdefault(key, {})
            owners[(manager, "Update")] = owners.get((manager, "Update"), set()) | set(
                _owned_leaves(new)
            ) - set(_owned_leaves(old))
            return self._store_update(key, old, new)

    def _apply(self, gv: str, plural: str, ns: str, name: str, applied: dict, manager: str,
               force: bool) -> tuple[dict[str, Any], bool]:
        with self._lock:
            key = (gv, plural, ns, name)
            applied = copy.deepcopy(applied)
            applied.setdefault("metadata", {})["name"] = name
            if key not in self._objects:
                return self._create(gv, plural, ns, applied, manager, "Apply"), True
            old = self._objects[key]
            new = copy.deepcopy(old)
            wanted = _owned_leaves(applied, (gv, plural) in STATUS_IS_A_FIELD)
            owners = self._owners.setdefault(key, {})
            conflicts = []
            for (other, _operation), paths in owners.items():
                if other == manager:
                    continue
                for path in paths & set(wanted):
                    if _get_path(old, path) != wanted[path]:
                        conflicts.append((other, path))
            if conflicts and not force:
                listed = "; ".join(f'conflict with "{m}": .{".".join(p)}' for m, p in conflicts)
                raise ApiError(409, f"Apply failed with {len(conflicts)} conflict(s): {listed}")
            for (other, _operation), paths in owners.items():
                if other != manager:
                    paths.difference_update(wanted)  # forced: ownership moves to us
            previously = owners.get((manager, "Apply"), set())
            still_owned = set().union(
                *(p for owner, p in owners.items() if owner != (manager, "Apply"))
            )
            for path in previously - set(wanted) - still_owned:
                _del_path(new, path)
            for path, value in wanted.items():
                if path:
                    _set_path(new, path, value)
            owners[(manager, "Apply")] = set(wanted)
            return self._store_update(key, old, new), False

    def _delete(self, gv: str, plural: str, ns: str, name: str) -> dict[str, Any]:
        with self._lock:
            key = (gv, plural, ns, name)
            old = self._existing(gv, plural, ns, name)
            del self._objects[key]
            self._owners.pop(key, None)
            gone = copy.deepcopy(old)
            self._stamp(gv, plural, ns, gone)
            self._record(gv, plural, "DELETED", gone)
            return gone

    def _evict(self, ns: str, name: str, eviction: dict) -> None:
        # As the API server's EvictionREST with no PodDisruptionBudget in the way: the
        # Eviction names the pod of the URL, a uid precondition must match, and the pod
        # is deleted (it gets the DisruptionTarget condition first; not modelled here).
        if (eviction.get("metadata") or {}).get("name") != name:
            raise ApiError(400, "name in URL does not match name in Eviction object")
        uid = ((eviction.get("deleteOptions") or {}).get("preconditions") or {}).get("uid")
        with self._lock:
            old = self._existing("v1", "pods", ns, name)
            if uid and uid != old["metadata"].get("uid"):
                raise ApiError(409, f"Precondition failed: UID in precondition: {uid}, "
                                    f"UID in object meta: {old['metadata'].get('uid')}")
        self._delete("v1", "pods", ns, name)

    def _bind(self, ns: str, name: str, binding: dict) -> None:
        # As the API server's BindingREST (pkg/registry/core/pod/storage/storage.go): the
        # Binding names the pod of the URL, and a UID in it is a precondition.
        metadata = binding.get("metadata") or {}
        if metadata.get("name") != name:
            raise ApiError(400, "name in URL does not match name in Binding object")
        with self._lock:
            key = ("v1", "pods", ns, name)
            old = self._existing("v1", "pods", ns, name)
            target = (binding.get("target") or {}).get("name")
            if not target:
                raise ApiError(422, "Binding.target.name: Required value")
            uid = metadata.get("uid")
            if uid and uid != old["metadata"].get("uid"):
                raise ApiError(
                    409, f"Precondition failed: UID in precondition: {uid}, "
                    f"UID in object meta: {old['metadata'].get('uid')}", "Conflict",
                )
            if old.get("spec", {}).get("nodeName"):
                raise ApiError(
                    409, f'pod {name} is already assigned to node "{old["spec"]["nodeName"]}"'
                )
            new = copy.deepcopy(old)
            new.setdefault("spec", {})["nodeName"] = target
            self._store_update(key, old, new)

    # ------------------------------------------------------------------- HTTP
    def _parse_path(self, path: str) -> tuple[str, str, str, str, str] | None:
        """-> (group_version, plural, namespace, name, subresource) or None for discovery."""
        parts = [p for p in path.split("/") if p]
        if parts[:2] == ["api", "v1"]:
            gv, rest = "v1", parts[2:]
        elif parts[:1] == ["apis"] and len(parts) >= 3:
            gv, rest = f"{parts[1]}/{parts[2]}", parts[3:]
        else:
            return None
        if not rest:
            return None
        ns = ""
        if rest[0] == "namespaces" and len(rest) >= 3:
            ns, rest = rest[1], rest[2:]
        plural = rest[0]
        name = rest[1] if len(rest) > 1 else ""
        sub = rest[2] if len(rest) > 2 else ""
        return gv, plural, ns, name, sub

    def _discovery(self, path: str) -> dict[str, Any]:
        parts = [p for p in path.split("/") if p]
        served = sorted({gv for gv, _ in RESOURCES} - self._off)
        if parts == ["api"]:
            return {"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": []}
        if parts == ["apis"]:
            groups = {}
            for gv in served:
                if "/" in gv:
                    group, version = gv.split("/")
                    entry = {"groupVersion": gv, "version": version}
                    groups.setdefault(group, {"name": group, "versions": []})["versions"].append(
                        entry
                    )
            for group in groups.values():
                group["preferredVersion"] = group["versions"][0]
            return {"kind": "APIGroupList", "apiVersion": "v1", "groups": list(groups.values())}
        gv = "v1" if parts[:2] == ["api", "v1"] else "/".join(parts[1:3])
        if gv not in served or len(parts) > (2 if gv == "v1" else 3):
            raise ApiError(404, f"the server could not find the requested resource ({path})")
        return {
            "kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv,
            "resources": [
                {
                    "name": plural, "singularName": kind.lower(),
                    "namespaced": self._scope.get((rgv, plural), namespaced),
                    "kind": kind,
                    "verbs": ["create", "delete", "get", "list", "patch", "update", "watch"],
                }
                for (rgv, plural), (kind, namespaced) in RESOURCES.items() if rgv == gv
            ],
        }

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        self.requests.append((request.method, request.path, request.query_string))
        await self._gathered(request)
        try:
            injected = self._take_injection(request)
            if injected is not None:
                if injected.status == "timeout":
                    await asyncio.sleep(injected.delay_s)
                    raise ApiError(504, "injected timeout")
                raise ApiError(int(injected.status), f"injected {injected.status}")
            if request.path == "/version" and request.method == "GET":
                return web.json_response(self.version)
            located = self._parse_path(request.path)
            if located is None:
                if request.method != "GET":
                    raise ApiError(405, "method not allowed on discovery")
                return web.json_response(self._discovery(request.path))
            gv, plural, ns, name, sub = located
            if (gv, plural) == ("v1", "bindings") and request.method == "POST" and not name:
                # the legacy collection form of pods/{name}/binding
                binding = await self._body(request)
                self._bind(ns, (binding.get("metadata") or {}).get("name", ""), binding)
                return web.json_response(
                    {"kind": "Status", "apiVersion": "v1", "status": "Success", "code": 201},
                    status=201,
                )
            if gv in self._off or (gv, plural) not in RESOURCES:
                raise ApiError(404, "the server could not find the requested resource")
            if (gv, plural) in self._scope and bool(ns) != self._scope[(gv, plural)]:
                raise ApiError(404, "the server could not find the requested resource")
            return await self._dispatch(request, gv, plural, ns, name, sub)
        except ApiError as error:
            # API Priority and Fairness answers a rejected request 429 with Retry-After.
            headers = {"Retry-After": "1"} if error.code == 429 else None
            return web.json_response(error.body, status=error.code, headers=headers)

    def _take_injection(self, request: web.Request) -> _Injected | None:
        with self._lock:
            for injected in self._injected:
                if injected.method in (request.method, "*") and (
                    injected.path_contains in request.path
                ):
                    injected.count -= 1
                    if injected.count <= 0:
                        self._injected.remove(injected)
                    return injected
        return None

    async def _body(self, request: web.Request) -> Any:
        text = await request.text()
        try:
            if request.content_type == "application/apply-patch+yaml":
                return yaml.safe_load(text)
            return json.loads(text)
        except (ValueError, yaml.YAMLError) as error:
            raise ApiError(400, f"the request body is not valid: {error}") from None

    async def _dispatch(self, request: web.Request, gv: str, plural: str, ns: str, name: str,
                        sub: str) -> web.StreamResponse:
        method, query = request.method, request.query
        manager = query.get("fieldManager", "unknown")
        if method == "GET" and not name:
            if query.get("watch") in ("true", "1"):
                return await self._watch(request, gv, plural, ns)
            return web.json_response(self._list_body(gv, plural, ns, query))
        if method == "GET":
            with self._lock:
                return web.json_response(copy.deepcopy(self._existing(gv, plural, ns, name)))
        if method == "POST" and plural == "pods" and sub == "eviction":
            self._evict(ns, name, await self._body(request))
            return web.json_response(
                {"kind": "Status", "apiVersion": "v1", "status": "Success", "code": 201},
                status=201,
            )
        if method == "POST" and plural == "pods" and sub == "binding":
            self._bind(ns, name, await self._body(request))
            return web.json_response(
                {"kind": "Status", "apiVersion": "v1", "status": "Success", "code": 201},
                status=201,
            )
        if method == "POST" and not name:
            obj = await self._body(request)
            if query.get("dryRun"):
                return web.json_response(obj, status=201)
            return web.json_response(self._create(gv, plural, ns, obj, manager), status=201)
        if method == "PUT" and name:
            obj = await self._body(request)
            return web.json_response(self._replace(gv, plural, ns, name, obj, manager, sub))
        if method == "PATCH" and name:
            body = await self._body(request)
            if request.content_type == "application/apply-patch+yaml":
                if "fieldManager" not in query:
                    raise ApiError(400, "PATCH: fieldManager is required for apply requests")
                obj, created = self._apply(
                    gv, plural, ns, name, body, manager, query.get("force") == "true"
                )
                if created:
                    self.applied_creations.append(request.path)
                return web.json_response(obj, status=201 if created else 200)
            if request.content_type in (
                "application/merge-patch+json", "application/strategic-merge-patch+json"
            ):
                return web.json_response(self._patch_merge(gv, plural, ns, name, body, manager))
            if request.content_type == "application/json-patch+json":
                return web.json_response(self._patch_json(gv, plural, ns, name, body, manager))
            raise ApiError(415, f"the fake does not support {request.content_type} patches")
        if method == "DELETE" and name:
            options = await self._body(request) if request.can_read_body else None
            preconditions = (options or {}).get("preconditions") or {}
            with self._lock:
                current = self._existing(gv, plural, ns, name)["metadata"]
                for field in ("uid", "resourceVersion"):
                    wanted = preconditions.get(field)
                    if wanted and wanted != current.get(field):
                        raise ApiError(409, f"Precondition failed: {field} in precondition: "
                                            f"{wanted}, {field} in object meta: "
                                            f"{current.get(field)}", "Conflict")
                return web.json_response(self._delete(gv, plural, ns, name))
        raise ApiError(405, f"{method} is not allowed here")

    def _matching(self, gv: str, plural: str, ns: str, query: Any) -> list[dict[str, Any]]:
        labels, fields = query.get("labelSelector", ""), query.get("fieldSelector", "")
        return [
            obj
            for (ogv, opl, ons, _), obj in sorted(self._objects.items())
            if ogv == gv and opl == plural and (not ns or ons == ns)
            and _match_labels(obj["metadata"].get("labels") or {}, labels)
            and _match_fields(obj, fields)
        ]

    def _list_body(self, gv: str, plural: str, ns: str, query: Any) -> dict[str, Any]:
        with self._lock:
            items = []
            for obj in self._matching(gv, plural, ns, query):
                item = copy.deepcopy(obj)
                item.pop("apiVersion", None)
                item.pop("kind", None)
                items.append(item)
            return {
                "kind": f"{RESOURCES[(gv, plural)][0]}List", "apiVersion": gv,
                "metadata": {"resourceVersion": str(self._resource_version)}, "items": items,
            }

    async def _watch(self, request: web.Request, gv: str, plural: str, ns: str
                     ) -> web.StreamResponse:
        query = request.query
        raw_rv = query.get("resourceVersion", "")
        timeout = float(query.get("timeoutSeconds", "300"))
        response = web.StreamResponse(headers={"Content-Type": "application/json"})
        await response.prepare(request)
        labels, fields = query.get("labelSelector", ""), query.get("fieldSelector", "")

        async def send(kind: str, obj: dict[str, Any]) -> None:
            line = json.dumps({"type": kind, "object": obj}) + "\n"
            await response.write(line.encode())

        with self._lock:
            if raw_rv in ("", "0"):
                since = self._resource_version
                initial = [copy.deepcopy(o) for o in self._matching(gv, plural, ns, query)]
            else:
                try:
                    since = int(raw_rv)
                except ValueError:
                    raise ApiError(400, f"invalid resourceVersion {raw_rv!r}") from None
                initial = []
                if since < self._oldest_retained:
                    initial = None
        if initial is None:
            await send("ERROR", status_body(
                410, f"too old resource version: {since} ({self._oldest_retained})", "Expired"
            ))
            return response
        for obj in initial:
            await send("ADDED", obj)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            with self._lock:
                if since < self._oldest_retained:
                    expired = True
                    pending: list[_Event] = []
                else:
                    expired = False
                    pending = [
                        e for e in self._events
                        if e.resource_version > since and e.group_version == gv
                        and e.plural == plural
                        and (not ns or e.object["metadata"].get("namespace") == ns)
                        and _match_labels(e.object["metadata"].get("labels") or {}, labels)
                        and _match_fields(e.object, fields)
                    ]
                    if self._events:
                        since = max(since, self._events[-1].resource_version)
                changed = self._changed
            if expired:
                await send("ERROR", status_body(410, "too old resource version", "Expired"))
                return response
            try:
                for event in pending:
                    await send(event.type, event.object)
            except (ConnectionResetError, RuntimeError):
                return response
            remaining = deadline - loop.time()
            if remaining <= 0 or request.transport is None or request.transport.is_closing():
                return response
            assert changed is not None
            try:
                await asyncio.wait_for(changed.wait(), timeout=min(remaining, 0.5))
            except TimeoutError:
                pass
