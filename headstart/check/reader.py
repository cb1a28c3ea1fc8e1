"""Reads what `headstart check` looks at, with the user's kubeconfig, into `Observed`.

Decides which objects are read, and nothing about them: the version; which of the API
groups the checks ask about are served (`/apis/GROUP/VERSION`); headstart's three
Deployments in its namespace, the ConfigMaps and Secrets they mount, and for one that
is not available, why its pods wait; the placement gate (policy, binding, webhook); the
PriorityClasses; cluster-autoscaler's Deployments (any namespace) and its status
ConfigMap (where the extender's config says, kube-system's by default); Karpenter's
NodePools; the nodes; the device plugin's DaemonSets; and, after install, the
ServiceAccounts' rights (reader_rights.py). What the user may not read is recorded in
`unread`, and the checks that need it are skipped.

Must not: decide any check (core/), print.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any, TypeVar

from headstart.check.api import Api, ApiRefused
from headstart.check.core import apis, scheduler
from headstart.check.core.autoscaler import is_cluster_autoscaler
from headstart.check.core.configs import installed
from headstart.check.core.devices import is_device_plugin
from headstart.check.core.node_groups import NODEPOOLS
from headstart.check.core.observed import (
    Observed,
    Workload,
    parse_node,
    parse_priority_class,
    parse_version,
    parse_webhook,
    parse_workload,
    secret_data,
)
from headstart.check.core.workloads import DEPLOYMENTS
from headstart.check.reader_rights import read_rights
from kube.autoscaler_status import AutoscalerStatus, parse_autoscaler_status
from locality.admission import record
from locality.admission.config import AdmissionConfig
from overprovisioner.service.objects import CAPACITY_BUFFER_GROUP, CAPACITY_BUFFER_VERSIONS

T = TypeVar("T")
GATE = "headstart-placement-gate"
"""The placement gate's policy, binding and webhook (manifests/base/admission/
placement-gate.yaml, manifests/components/gate-webhook/webhook.yaml)."""
GROUP_VERSIONS = (apis.ADMISSION, scheduler.POD_GROUPS, record.API_VERSION,
                  *(f"{CAPACITY_BUFFER_GROUP}/{v}" for v in CAPACITY_BUFFER_VERSIONS),
                  apis.CERT_MANAGER[0], NODEPOOLS[0])


def read_cluster(api: Api, namespace: str, now_s: float, after_install: bool,
                 manifests: Path | None) -> Observed:
    unread: dict[str, str] = {}

    def attempt(what: str, read: Callable[[], T], default: T) -> T:
        try:
            return read()
        except ApiRefused as refused:
            unread.setdefault(what, str(refused))
            return default

    raw_version = api.get("/version")  # unreachable or refused credentials: exit 2 here
    version = parse_version(raw_version or {})
    served = {gv: frozenset(attempt("discovery", lambda gv=gv: _resources(api, gv), ()))
              for gv in GROUP_VERSIONS}
    observed = Observed(api.server, version, {gv: r for gv, r in served.items() if r},
                        namespace, now_s)
    if after_install:
        observed = _headstart(api, observed, attempt)
    observed = _autoscaling(api, observed, attempt)
    observed = replace(
        observed,
        priority_classes=attempt("priorityclasses", lambda: {
            str(p["metadata"]["name"]): parse_priority_class(p)
            for p in api.items("/apis/scheduling.k8s.io/v1/priorityclasses")}, {}),
        nodes=attempt("nodes", lambda: tuple(map(parse_node, api.items("/api/v1/nodes"))), ()),
        device_plugins=attempt("daemonsets", lambda: tuple(
            w for w in map(parse_workload, _typed(api.items("/apis/apps/v1/daemonsets"),
                                                  "DaemonSet"))
            if is_device_plugin(w)), ()))
    if after_install:
        if manifests is None:
            unread["rights"] = ("the repository's manifests/ folder is not beside this "
                                "headstart: pass --manifests DIR")
        else:
            rights, problem = read_rights(api, manifests)
            observed = replace(observed, rights=rights)
            if problem:
                unread["rights"] = problem
    return replace(observed, unread=dict(unread))


def _autoscaling(api: Api, observed: Observed, attempt: Callable[..., Any]) -> Observed:
    """cluster-autoscaler's Deployments and status ConfigMap (where the extender's config
    says, else the default), and Karpenter's NodePools."""
    extender = installed(observed).extender.value
    status_at = (extender.admission if extender is not None
                 else AdmissionConfig()).autoscaler_status

    def status() -> AutoscalerStatus:
        if not status_at:
            return parse_autoscaler_status(None)
        namespace, _, name = status_at.partition("/")
        return parse_autoscaler_status(api.get(
            f"/api/v1/namespaces/{namespace}/configmaps/{name}"))

    deployments = attempt("autoscaler", lambda: _typed(
        api.items("/apis/apps/v1/deployments"), "Deployment"), [])
    pools = None
    if observed.serves(*NODEPOOLS):
        pools = tuple(attempt("autoscaler", lambda: api.items(
            f"/apis/{NODEPOOLS[0]}/{NODEPOOLS[1]}"), []))
    return replace(observed, autoscalers=tuple(
        w for w in map(parse_workload, deployments) if is_cluster_autoscaler(w)),
        autoscaler_status=attempt("autoscaler", status, parse_autoscaler_status(None)),
        nodepools=pools)


def _headstart(api: Api, observed: Observed, attempt: Callable[..., Any]) -> Observed:
    namespace = observed.namespace
    raw = {component: attempt("headstart", lambda name=name: api.get(
        f"/apis/apps/v1/namespaces/{namespace}/deployments/{name}"), None)
        for component, name in DEPLOYMENTS.items()}
    workloads: dict[str, Workload | None] = {}
    for component, obj in raw.items():
        workload = parse_workload({**obj, "kind": "Deployment"}) if obj else None
        if workload is not None and not workload.available:
            workload = replace(workload, waiting=attempt(
                "headstart", lambda obj=obj: _waiting(api, namespace, obj), ()))
        workloads[component] = workload
    present = [w for w in workloads.values() if w is not None]
    config_maps = {name: attempt("configmaps", lambda name=name: _data(api.get(
        f"/api/v1/namespaces/{namespace}/configmaps/{name}")), None)
        for name in sorted({n for w in present for n in w.mounted("configMap")})}
    secrets = {name: attempt("secrets", lambda name=name: _secret(api.get(
        f"/api/v1/namespaces/{namespace}/secrets/{name}")), None)
        for name in sorted({n for w in present for n in w.mounted("secret")})}
    admission = f"/apis/{apis.ADMISSION}"
    webhook = attempt("gate", lambda: api.get(
        f"{admission}/mutatingwebhookconfigurations/{GATE}"), None)
    policy = binding = False
    if observed.serves(apis.ADMISSION, apis.POLICIES):
        policy = attempt("gate", lambda: api.get(
            f"{admission}/mutatingadmissionpolicies/{GATE}") is not None, False)
        binding = attempt("gate", lambda: api.get(
            f"{admission}/mutatingadmissionpolicybindings/{GATE}") is not None, False)
    return replace(observed, headstart=workloads, config_maps=config_maps, secrets=secrets,
                   webhook=parse_webhook(webhook) if webhook else None, gate_policy=policy,
                   gate_policy_binding=binding)


def _resources(api: Api, group_version: str) -> tuple[str, ...]:
    found = api.get(f"/apis/{group_version}") or {}
    return tuple(str(r.get("name")) for r in found.get("resources") or ()
                 if "/" not in str(r.get("name")))


def _typed(items: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    """List items carry no kind: give them theirs."""
    return [{**item, "kind": kind} for item in items]


def _data(configmap: dict[str, Any] | None) -> dict[str, str] | None:
    return None if configmap is None else {str(k): str(v) for k, v in
                                          (configmap.get("data") or {}).items()}


def _secret(secret: dict[str, Any] | None) -> dict[str, bytes] | None:
    return None if secret is None else secret_data(secret)


def _waiting(api: Api, namespace: str, deployment: dict[str, Any]) -> tuple[str, ...]:
    """Why the Deployment's pods are not ready: each container's waiting reason (with
    its message's start), else an unscheduled pod's reason, counted over its pods."""
    labels = ((deployment.get("spec") or {}).get("selector") or {}).get("matchLabels") or {}
    selector = ",".join(f"{k}={v}" for k, v in sorted(labels.items()))
    if not selector:
        return ()
    reasons: dict[str, int] = {}
    for pod in api.items(f"/api/v1/namespaces/{namespace}/pods",
                         [("labelSelector", selector)]):
        status = pod.get("status") or {}
        found = [
            f"{waiting.get('reason')}: {' '.join(str(waiting.get('message', '')).split())[:80]}"
            .rstrip(": ")
            for c in status.get("containerStatuses") or ()
            if (waiting := (c.get("state") or {}).get("waiting"))]
        if not found:
            found = [f"{c.get('reason')}: {' '.join(str(c.get('message', '')).split())[:80]}"
                     for c in status.get("conditions") or ()
                     if c.get("type") == "PodScheduled" and c.get("status") == "False"]
        for reason in found or [str(status.get("phase", "unknown"))]:
            reasons[reason] = reasons.get(reason, 0) + 1
    return tuple(f"{reason} x{count}" if count > 1 else reason
                 for reason, count in sorted(reasons.items()))
