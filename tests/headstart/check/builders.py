"""Fixture objects for `headstart check`'s checks: a correct install built from the
repository's own manifests and configs (the Deployments of manifests/base, the EKS
overlay's configs, the example cluster-autoscaler values), and certificates made with
`cryptography`, so a test changes one part and sees its check fail."""

from __future__ import annotations

import base64
import copy
import datetime as dt
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from headstart.check.core.observed import (
    Observed,
    PriorityClass,
    Version,
    Workload,
    parse_node,
    parse_workload,
)
from kube.autoscaler_status import parse_autoscaler_status

REPO = Path(__file__).resolve().parents[3]
NOW = 1_800_000_000.0  # 2027-01-15
DAY = 86400.0
SCHEDULER_IMAGE = "registry.k8s.io/scheduler-plugins/kube-scheduler:v0.34.7"
CA_GROUPS = ("eks-g5-xlarge-pg-a-1a2b3c", "eks-p4d-24xlarge-pg-a-4d5e6f")
ALL_SERVED = {
    "admissionregistration.k8s.io/v1": frozenset({
        "mutatingadmissionpolicies", "mutatingadmissionpolicybindings",
        "mutatingwebhookconfigurations"}),
    "scheduling.x-k8s.io/v1alpha1": frozenset({"podgroups"}),
    "headstart.io/v1alpha1": frozenset({"gangs"}),
}


def shipped(path: str) -> Any:
    return yaml.safe_load((REPO / path).read_text())


def karpenter_pools() -> tuple[dict[str, Any], ...]:
    """The example NodePools of docs/install-eks.md step 3b."""
    return tuple(yaml.safe_load_all(shipped_text(
        "manifests/overlays/eks/examples/karpenter-nodepools.yaml")))


def shipped_text(path: str) -> str:
    return (REPO / path).read_text()


def deployment(path: str, image: str | None = None, available: bool = True,
               **raw_status: Any) -> Workload:
    """A shipped Deployment, as the API returns it when its rollout is done."""
    obj = copy.deepcopy(shipped(path))
    obj["metadata"]["namespace"] = "headstart"
    if image is not None:
        obj["spec"]["template"]["spec"]["containers"][0]["image"] = image
    replicas = obj["spec"].get("replicas", 1)
    obj["status"] = {"replicas": replicas, "readyReplicas": replicas if available else 0,
                     "conditions": [{"type": "Available",
                                     "status": "True" if available else "False",
                                     "message": "Deployment has minimum availability."
                                     if available else
                                     "Deployment does not have minimum availability."}],
                     **raw_status}
    return parse_workload(obj)


def autoscaler(*args: str, available: bool = True) -> Workload:
    """cluster-autoscaler as the Helm chart runs it with the EKS example values, or with
    `args` instead when given."""
    if not args:
        values = shipped("manifests/overlays/eks/examples/cluster-autoscaler-values.yaml")
        args = tuple(f"--{key}={str(value).lower() if isinstance(value, bool) else value}"
                     for key, value in values["extraArgs"].items())
        args = ("--cloud-provider=aws", "--node-group-auto-discovery=asg:tag=k8s.io/"
                "cluster-autoscaler/enabled,k8s.io/cluster-autoscaler/training", *args)
    return parse_workload({
        "kind": "Deployment",
        "metadata": {"namespace": "kube-system", "name": "cluster-autoscaler"},
        "spec": {"replicas": 1, "template": {"spec": {"containers": [{
            "name": "aws-cluster-autoscaler",
            "image": "registry.k8s.io/autoscaling/cluster-autoscaler:v1.34.1",
            "command": ["./cluster-autoscaler"], "args": list(args)}]}}},
        "status": {"readyReplicas": 1 if available else 0, "conditions": [{
            "type": "Available", "status": "True" if available else "False",
            "message": "" if available else "Deployment does not have minimum availability."}]},
    })


def autoscaler_status(*groups: str) -> Any:
    """cluster-autoscaler's status ConfigMap (the YAML of CA 1.30 and later)."""
    document = {"autoscalerStatus": "Running", "nodeGroups": [
        {"name": name, "health": {"status": "Healthy", "nodeCounts": {
            "registered": {"total": 0}}, "cloudProviderTarget": 0, "minSize": 0,
            "maxSize": 4}} for name in groups]}
    return parse_autoscaler_status({"data": {"status": yaml.safe_dump(document)}})


def device_plugin(tolerations: list[dict[str, str]] | None = None, ready: int = 1,
                  desired: int = 1) -> Workload:
    """The NVIDIA device plugin's DaemonSet as docs/install-eks.md step 2 installs it."""
    if tolerations is None:
        tolerations = [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
    return parse_workload({
        "kind": "DaemonSet",
        "metadata": {"namespace": "kube-system", "name": "nvdp-nvidia-device-plugin"},
        "spec": {"template": {"spec": {"tolerations": tolerations, "containers": [{
            "name": "nvidia-device-plugin-ctr",
            "image": "nvcr.io/nvidia/k8s-device-plugin:v0.17.0"}]}}},
        "status": {"desiredNumberScheduled": desired, "numberReady": ready},
    })


def gpu_node(name: str = "ip-10-0-1-7", gpus: int = 1, age_s: float = 3600.0,
             labels: dict[str, str] | None = None) -> Any:
    created = dt.datetime.fromtimestamp(NOW - age_s, dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return parse_node({
        "metadata": {"name": name, "creationTimestamp": created, "labels": labels if
                     labels is not None else {"k8s.amazonaws.com/accelerator": "nvidia-a10g",
                                              "node.kubernetes.io/instance-type": "g5.xlarge"}},
        "spec": {"taints": [{"key": "nvidia.com/gpu", "value": "present",
                             "effect": "NoSchedule"}]},
        "status": {"allocatable": {"nvidia.com/gpu": str(gpus)},
                   "conditions": [{"type": "Ready", "status": "True"}]},
    })


@dataclass(frozen=True)
class Pair:
    cert: bytes
    key: bytes
    native: Any
    private: Any


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def authority(name: str = "headstart-scheduler-ca", now: float = NOW) -> Pair:
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (x509.CertificateBuilder().subject_name(_name(name)).issuer_name(_name(name))
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(dt.datetime.fromtimestamp(now - 30 * DAY, dt.UTC))
            .not_valid_after(dt.datetime.fromtimestamp(now + 3650 * DAY, dt.UTC))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    return _pair(cert, key)


def issued(ca: Pair, name: str, dns: tuple[str, ...] = (), usage: str | None = None,
           not_before: float = NOW - DAY, not_after: float = NOW + 365 * DAY) -> Pair:
    key = ec.generate_private_key(ec.SECP256R1())
    builder = (x509.CertificateBuilder().subject_name(_name(name))
               .issuer_name(ca.native.subject).public_key(key.public_key())
               .serial_number(x509.random_serial_number())
               .not_valid_before(dt.datetime.fromtimestamp(not_before, dt.UTC))
               .not_valid_after(dt.datetime.fromtimestamp(not_after, dt.UTC)))
    if dns:
        builder = builder.add_extension(
            x509.SubjectAlternativeName([x509.DNSName(d) for d in dns]), critical=False)
    if usage:
        oid = {"serverAuth": ExtendedKeyUsageOID.SERVER_AUTH,
               "clientAuth": ExtendedKeyUsageOID.CLIENT_AUTH}[usage]
        builder = builder.add_extension(x509.ExtendedKeyUsage([oid]), critical=False)
    return _pair(builder.sign(ca.private, hashes.SHA256()), key)


def load_pair(cert_path: Path, key_path: Path) -> Pair:
    """A certificate and key made elsewhere (the install docs' openssl block)."""
    cert_pem, key_pem = cert_path.read_bytes(), key_path.read_bytes()
    return Pair(cert_pem, key_pem, x509.load_pem_x509_certificate(cert_pem),
                serialization.load_pem_private_key(key_pem, password=None))


def _pair(cert: Any, key: Any) -> Pair:
    return Pair(cert.public_bytes(serialization.Encoding.PEM),
                key.private_bytes(serialization.Encoding.PEM,
                                  serialization.PrivateFormat.PKCS8,
                                  serialization.NoEncryption()), cert, key)


def tls_secret(pair: Pair, ca: Pair | None = None) -> dict[str, bytes]:
    data = {"tls.crt": pair.cert, "tls.key": pair.key}
    if ca is not None:
        data["ca.crt"] = ca.cert
    return data


def secret_object(namespace: str, name: str, data: dict[str, bytes]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls",
            "metadata": {"namespace": namespace, "name": name},
            "data": {k: base64.b64encode(v).decode() for k, v in data.items()}}


def mutual_tls(ca: Pair | None = None, now: float = NOW) -> dict[str, dict[str, bytes]]:
    """The two Secrets of mutual TLS between the scheduler and the extender, as the
    docs' openssl block makes them: one CA, in both ca.crt, valid a year from `now`."""
    ca = ca or authority(now=now)
    server = issued(ca, "headstart-extender", ("headstart-extender.headstart.svc",),
                    "serverAuth", now - DAY, now + 365 * DAY)
    client = issued(ca, "headstart-scheduler", (), "clientAuth", now - DAY, now + 365 * DAY)
    return {"headstart-extender-tls": tls_secret(server, ca),
            "headstart-scheduler-tls": tls_secret(client, ca)}


def installed(**changes: Any) -> Observed:
    """A correct install on EKS 1.35 with cluster-autoscaler, as the install docs make it."""
    observed = Observed(
        server="https://cluster.example", version=Version(35, "v1.35.2-eks-1"),
        served=ALL_SERVED, namespace="headstart", now_s=NOW,
        headstart={
            "scheduler": deployment("manifests/base/scheduler/deployment.yaml",
                                    SCHEDULER_IMAGE),
            "extender": deployment("manifests/base/extender/deployment.yaml"),
            "overprovisioner": deployment("manifests/base/overprovisioner/deployment.yaml"),
        },
        config_maps={
            "headstart-scheduler-config": {"config.yaml": shipped_text(
                "manifests/base/scheduler/scheduler-config.yaml")},
            "headstart-extender-config": {"config.yaml": shipped_text(
                "manifests/overlays/eks/extender-config.yaml")},
            "headstart-overprovisioner-config": {"config.yaml": shipped_text(
                "manifests/overlays/eks/overprovisioner-config.yaml")},
        },
        secrets=mutual_tls(),
        gate_policy=True, gate_policy_binding=True,
        priority_classes={"headstart-placeholder": PriorityClass(-5, "Never")},
        autoscalers=(autoscaler(),), autoscaler_status=autoscaler_status(*CA_GROUPS),
        nodes=(gpu_node(),), device_plugins=(device_plugin(),),
    )
    return replace(observed, **changes)


def with_workload(observed: Observed, component: str, workload: Workload | None) -> Observed:
    return replace(observed, headstart={**observed.headstart, component: workload})


def with_config(observed: Observed, name: str, text: str) -> Observed:
    return replace(observed, config_maps={**observed.config_maps, name: {"config.yaml": text}})
