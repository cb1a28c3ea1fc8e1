"""Checks of the autoscaler against the placeholders: is there one, does
cluster-autoscaler count the placeholders, and the placeholders' PriorityClass.

Decides:
- an autoscaler is there when a cluster-autoscaler Deployment is (any namespace), its
  status ConfigMap is (a managed one, as GKE runs, shows only that), or Karpenter's
  NodePools are; with none, nothing launches nodes for placeholders or jobs;
- cluster-autoscaler ignores pods below `--expendable-pods-priority-cutoff` (default
  -10): the placeholders' priority (their PriorityClass, or the overprovisioner's
  `placeholders.priority_class_value` before it exists) must be at or above it, and the
  overprovisioner's `expendable_pods_priority_cutoff` should say the same (it validates
  the priority against that number); Karpenter has no cutoff;
- `--allowed-scheduler-names`, when set, must name the placeholders' scheduler, or CA
  never scales up for them (nor for the training pods of the same scheduler);
- the placeholders' PriorityClass: the value the overprovisioner is configured with,
  below 0 and preemptionPolicy Never, or the overprovisioner stops with a permanent
  error (overprovisioner.service.apply.ensure_priority_class).

Must not: call the API, log, read the clock.
"""

from __future__ import annotations

from headstart.check.core.observed import Observed, Workload, flag
from headstart.check.core.result import Result, fail, ok, skip, warn

CA_DEFAULT_CUTOFF = -10
"""cluster-autoscaler's default --expendable-pods-priority-cutoff (config/flags/flags.go)."""
CA_INSTALL = ("install cluster-autoscaler (docs/install-eks.md step 3) or Karpenter (3b); "
              "on GKE, enable autoscaling on the GPU node pools (docs/install-gke.md)")


def is_cluster_autoscaler(workload: Workload) -> bool:
    """A Deployment runs cluster-autoscaler: its image or its command is named so."""
    for container in workload.containers:
        image = container.image.split("@", 1)[0].rsplit("/", 1)[-1].split(":", 1)[0]
        command = container.argv[0].rsplit("/", 1)[-1] if container.argv else ""
        if "cluster-autoscaler" in (image, command):
            return True
    return False


def autoscaler(observed: Observed) -> Result:
    name = "autoscaler"
    found = []
    for ca in observed.autoscalers:
        if not ca.available:
            return fail(name, f"cluster-autoscaler {ca} is not available "
                              f"({ca.problem})",
                        f"kubectl -n {ca.namespace} describe deployment {ca.name}")
        found.append(f"cluster-autoscaler ({ca})")
    status = observed.autoscaler_status
    if not observed.autoscalers and status.found:
        found.append("cluster-autoscaler outside the cluster's Deployments (its status "
                     f"ConfigMap{', Running' if status.running else ''})")
    if observed.nodepools:
        names = sorted(str((p.get("metadata") or {}).get("name")) for p in observed.nodepools)
        found.append(f"Karpenter NodePools {', '.join(names)}")
    if not found:
        return fail(name, "no cluster-autoscaler Deployment, no cluster-autoscaler status "
                          "ConfigMap and no Karpenter NodePool: nothing launches nodes for "
                          "placeholders or jobs", CA_INSTALL)
    return ok(name, "; ".join(found))


def placeholder_priority_value(observed: Observed, class_name: str, configured: int
                               ) -> tuple[int, str]:
    """The placeholders' priority and where it comes from: their PriorityClass where it
    exists, else the overprovisioner's configured value (which it will create)."""
    found = observed.priority_classes.get(class_name)
    if found is not None:
        return found.value, f"PriorityClass {class_name}"
    return configured, "placeholders.priority_class_value"


def autoscaler_cutoff(observed: Observed, priority: int, priority_source: str,
                      configured_cutoff: int) -> Result:
    name = "autoscaler-cutoff"
    if not observed.autoscalers:
        if observed.autoscaler_status.found:
            return skip(name, "cluster-autoscaler's flags are not visible (it runs outside "
                              f"the cluster's Deployments): its cutoff must be <= {priority}")
        return skip(name, "no cluster-autoscaler Deployment (Karpenter has no expendable "
                          "cutoff)" if observed.nodepools else "no cluster-autoscaler")
    for ca in observed.autoscalers:
        values = flag(ca.argv(), "expendable-pods-priority-cutoff")
        try:
            cutoff = int(values[-1]) if values else CA_DEFAULT_CUTOFF
        except ValueError:
            return fail(name, f"{ca}: --expendable-pods-priority-cutoff={values[-1]} is not "
                              "an integer", "set it to an integer, -10 by default")
        said = f"--expendable-pods-priority-cutoff={cutoff}" + ("" if values else " (default)")
        if priority < cutoff:
            return fail(name, f"placeholders run at priority {priority} ({priority_source}), "
                              f"below {ca}'s {said}: it ignores them and launches nothing",
                        f"run cluster-autoscaler with --expendable-pods-priority-cutoff at "
                        f"most {priority} (Helm: extraArgs.expendable-pods-priority-cutoff; "
                        "-10 in docs/install-eks.md step 3) and set placeholders."
                        "expendable_pods_priority_cutoff to the same")
        if cutoff != configured_cutoff:
            return warn(name, f"{ca} runs with {said}, the overprovisioner's placeholders."
                              f"expendable_pods_priority_cutoff says {configured_cutoff}",
                        f"set placeholders.expendable_pods_priority_cutoff: {cutoff} in the "
                        "overprovisioner's config")
    return ok(name, f"placeholders at priority {priority} ({priority_source}) are at or above "
                    "cluster-autoscaler's expendable cutoff")


def autoscaler_schedulers(observed: Observed, scheduler_name: str) -> Result:
    name = "autoscaler-schedulers"
    if not observed.autoscalers:
        return skip(name, "no cluster-autoscaler Deployment to read flags from")
    for ca in observed.autoscalers:
        allowed = [n.strip() for value in flag(ca.argv(), "allowed-scheduler-names")
                   for n in value.split(",") if n.strip()]
        if allowed and scheduler_name not in allowed:
            return fail(name, f"{ca} scales up only for pods of {', '.join(allowed)} "
                              f"(--allowed-scheduler-names): never for placeholders and jobs "
                              f"of {scheduler_name}",
                        f"add {scheduler_name} to --allowed-scheduler-names, or drop the flag")
    return ok(name, f"cluster-autoscaler considers pods of {scheduler_name}")


def placeholder_priority_class(observed: Observed, class_name: str, value: int) -> Result:
    name = "placeholder-priority"
    found = observed.priority_classes.get(class_name)
    fix = (f"kubectl delete priorityclass {class_name}, then kubectl apply -k my-cluster "
           "(manifests/base/priorityclass.yaml); a PriorityClass's value cannot change")
    if found is None:
        return warn(name, f"PriorityClass {class_name} is missing: the overprovisioner creates "
                          "it again when it starts", "kubectl apply -k my-cluster "
                    "(manifests/base/priorityclass.yaml)")
    if found.value != value or found.preemption_policy != "Never":
        return fail(name, f"PriorityClass {class_name} has value {found.value} and "
                          f"preemptionPolicy {found.preemption_policy}; the overprovisioner "
                          f"needs {value} and Never, and stops until they match", fix)
    return ok(name, f"PriorityClass {class_name}: value {found.value}, preemptionPolicy Never")
