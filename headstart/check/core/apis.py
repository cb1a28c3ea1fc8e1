"""Checks of what the API server serves: its version, the placement gate's API, the Gang
and CapacityBuffer CRDs, cert-manager.

Decides:
- the control plane's minor against the releases headstart supports (1.30 to 1.36,
  docs/install-eks.md "What you need"): older fails, newer warns;
- the placement gate: from 1.36 the overlay's MutatingAdmissionPolicy and its binding
  (`admissionregistration.k8s.io/v1` serves `mutatingadmissionpolicies`), before 1.36
  the extender's webhook (manifests/components/gate-webhook), which needs a CA bundle and
  an extender that serves it; without either, pods for headstart-scheduler are placed
  one by one (no gang admission);
- CapacityBuffers when the overprovisioner is configured to write them: `capacitybuffer`
  needs the API; `auto` writes them whenever it is served, so then cluster-autoscaler
  must run with both buffer flags (off by default), or nothing scales up for them;
- the Gang CRD, which the extender's admitter writes its decisions to.

Must not: call the API, log, read the clock.
"""

from __future__ import annotations

from collections.abc import Sequence

from headstart.check.core.configs import Installed
from headstart.check.core.observed import Observed, Workload, flag
from headstart.check.core.result import Result, fail, ok, skip, warn
from locality.admission import record
from overprovisioner.config import PlaceholderConfig
from overprovisioner.service.objects import CAPACITY_BUFFER_GROUP, CAPACITY_BUFFER_VERSIONS

MIN_MINOR = 30
NEWEST_MINOR = 36
ADMISSION = "admissionregistration.k8s.io/v1"
POLICIES = "mutatingadmissionpolicies"
CERT_MANAGER = ("cert-manager.io/v1", "certificates")
BUFFER_FLAGS = ("capacity-buffer-controller-enabled", "capacity-buffer-pod-injection-enabled")
INSTALL = "kubectl apply -k my-cluster (docs/install-eks.md or install-gke.md, step 4)"
WEBHOOK_COMPONENTS = ("add ../manifests/components/gate-webhook (and, with cert-manager, "
                      "gate-webhook-cert-manager) to my-cluster's components and apply it "
                      "(docs/install-eks.md, \"Before Kubernetes 1.36\")")


def kubernetes_version(observed: Observed) -> Result:
    name, version = "kubernetes-version", observed.version
    if version.minor < MIN_MINOR:
        return fail(name, f"control plane {version}: headstart needs 1.{MIN_MINOR} or later "
                          "(scheduling gates, admission match conditions)",
                    f"upgrade the control plane to 1.{MIN_MINOR}-1.{NEWEST_MINOR}")
    if version.minor > NEWEST_MINOR:
        return warn(name, f"control plane {version}: newer than 1.{NEWEST_MINOR}, the newest "
                          "release headstart is tested on",
                    "follow docs/install-eks.md step 4 for your minor; report what breaks")
    return ok(name, f"control plane {version}")


def gate_api(observed: Observed) -> Result:
    """Before install: which placement gate this control plane takes."""
    name = "placement-gate"
    if observed.serves(ADMISSION, POLICIES):
        return ok(name, f"{ADMISSION} serves MutatingAdmissionPolicy: the overlay's policy "
                        "gates pods")
    return ok(name, f"no MutatingAdmissionPolicy on {observed.version}: the install block adds "
                    "the extender's gate webhook and needs its certificate")


def gate(observed: Observed, installed: Installed) -> Result:
    """After install: the policy and its binding, or the webhook with a CA bundle and an
    extender serving it."""
    name = "placement-gate"
    webhook = observed.webhook
    if webhook is not None:
        extender = installed.workloads.get("extender")
        if not webhook.ca_bundle:
            return fail(name, f"MutatingWebhookConfiguration {webhook.name} has no caBundle: "
                              "kube-apiserver cannot call it and refuses every pod for "
                              "headstart-scheduler", "with cert-manager: add "
                        "../manifests/components/gate-webhook-cert-manager; without: the "
                        "docs' openssl block patches caBundle (docs/install-eks.md step 4)")
        if extender is not None and not flag(extender.argv(), "gate-webhook-port") and \
                not (installed.extender.value and installed.extender.value.gate_webhook_port):
            return fail(name, f"MutatingWebhookConfiguration {webhook.name} calls the extender, "
                              f"but {extender} does not serve the webhook: pods "
                              "for headstart-scheduler are refused", WEBHOOK_COMPONENTS)
        return ok(name, f"MutatingWebhookConfiguration {webhook.name} -> {webhook.service}")
    if observed.serves(ADMISSION, POLICIES):
        if observed.gate_policy and observed.gate_policy_binding:
            return ok(name, "MutatingAdmissionPolicy and its binding are installed")
        missing = "its binding is" if observed.gate_policy else "the policy is"
        return fail(name, f"MutatingAdmissionPolicy gate: {missing} missing, so pods for "
                          "headstart-scheduler are not gated and are placed one by one",
                    f"{INSTALL}; the objects are manifests/base/admission/placement-gate.yaml")
    return fail(name, f"no placement gate: {observed.version} serves no "
                      "MutatingAdmissionPolicy and no gate webhook is installed, so pods for "
                      "headstart-scheduler are placed one by one", WEBHOOK_COMPONENTS)


def gang_crd(observed: Observed) -> Result:
    name, api = "gang-crd", record.API_VERSION
    if observed.serves(api, record.PLURAL):
        return ok(name, f"{api} {record.PLURAL} served")
    return fail(name, f"{api} {record.PLURAL} is not served: the extender's admitter cannot "
                      "record its decisions and admits no job",
                f"{INSTALL}; the CRD is manifests/base/crds/gangs.headstart.io.yaml")


def served_buffer_version(observed: Observed) -> str | None:
    """The CapacityBuffer API the overprovisioner would write (v1beta1 first), or None."""
    for version in CAPACITY_BUFFER_VERSIONS:
        api = f"{CAPACITY_BUFFER_GROUP}/{version}"
        if observed.serves(api, "capacitybuffers"):
            return api
    return None


def capacity_buffers(observed: Observed, placeholders: PlaceholderConfig,
                     autoscalers: Sequence[Workload]) -> Result:
    """The overprovisioner's backend against the API served and cluster-autoscaler's flags."""
    name = "capacity-buffers"
    backend = placeholders.backend
    if backend == "deployment":
        return skip(name, "placeholders.backend: deployment (balloon Deployments)")
    api = served_buffer_version(observed)
    if api is None:
        if backend == "capacitybuffer":
            return fail(name, "placeholders.backend: capacitybuffer, but no CapacityBuffer API "
                              "is served: the overprovisioner writes no placeholders",
                        "install the CapacityBuffer CRD of your cluster-autoscaler release "
                        "(docs/install-eks.md step 3), or set placeholders.backend: deployment")
        return ok(name, "no CapacityBuffer API served: placeholders are balloon Deployments")
    missing = sorted({f"--{f}" for ca in autoscalers for f in BUFFER_FLAGS
                      if (flag(ca.argv(), f) or ["false"])[-1].lower() != "true"})
    if missing:
        return fail(name, f"placeholders.backend: {backend} writes {api} CapacityBuffers, but "
                          f"cluster-autoscaler runs without {' and '.join(missing)}: nothing "
                          "scales up for them",
                    "add both flags to cluster-autoscaler (docs/install-eks.md step 3, "
                    "CapacityBuffers), or set placeholders.backend: deployment")
    return ok(name, f"placeholders.backend: {backend} writes {api} CapacityBuffers"
              + (", and cluster-autoscaler runs with both buffer flags" if autoscalers else ""))


def cert_manager(observed: Observed) -> Result:
    name = "cert-manager"
    if observed.serves(*CERT_MANAGER):
        return ok(name, "cert-manager's Certificate API is served: the install block lets it "
                        "make and renew headstart's certificates")
    return warn(name, "cert-manager is not installed: the extender and the scheduler wait for "
                      "their certificates until you make them",
                "install cert-manager first, or run the docs' openssl block right after the "
                "install block (docs/install-eks.md step 4, \"Certificates\")")
