"""Which checks run, in which order, and on what: the one place that wires the observed
cluster to the check functions.

Decides: the prerequisite checks (`--pre-install`: the control plane's version, the
placement gate it takes, the PodGroup CRD, cert-manager, an autoscaler that counts
placeholders, the device plugin; with the overprovisioner's defaults, as the shipped
config has them) and the checks of an install (those, against the installed configs,
plus headstart's Deployments and configs, the scheduler's image, the Gang CRD, the
PriorityClass, node groups and NodePools, certificates, the ServiceAccounts' rights); a
check whose input could not be read is skipped with the reason, and a check that needs
a config that does not load is skipped (the config's own check fails).

Must not: call the API, log, read the clock.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from headstart.check.core import (
    apis,
    autoscaler,
    certificates,
    devices,
    node_groups,
    rights,
    scheduler,
    workloads,
)
from headstart.check.core.configs import COMPONENTS, installed
from headstart.check.core.observed import Observed
from headstart.check.core.result import Result, skip
from overprovisioner.config import OverprovisionerConfig

Check = tuple[str, Sequence[str], Callable[[], Result]]
"""(name, the inputs it reads, the check)."""


def pre_install(observed: Observed) -> list[Result]:
    defaults = OverprovisionerConfig().placeholders
    priority, source = autoscaler.placeholder_priority_value(
        observed, defaults.priority_class_name, defaults.priority_class_value)
    return _run(observed, [
        ("kubernetes-version", (), lambda: apis.kubernetes_version(observed)),
        ("placement-gate", (), lambda: apis.gate_api(observed)),
        ("podgroup-crd", (), lambda: scheduler.podgroup_crd_pre(observed)),
        ("cert-manager", (), lambda: apis.cert_manager(observed)),
        ("autoscaler", ("autoscaler",), lambda: autoscaler.autoscaler(observed)),
        ("autoscaler-cutoff", ("autoscaler", "priorityclasses"),
         lambda: autoscaler.autoscaler_cutoff(observed, priority, source,
                                              defaults.expendable_pods_priority_cutoff)),
        ("autoscaler-schedulers", ("autoscaler",),
         lambda: autoscaler.autoscaler_schedulers(observed, defaults.scheduler_name)),
        ("capacity-buffers", ("autoscaler",),
         lambda: apis.capacity_buffers(observed, defaults, observed.autoscalers)),
        ("device-plugin", ("nodes", "daemonsets"), lambda: devices.device_plugin(observed)),
    ])


def after_install(observed: Observed) -> list[Result]:
    found = installed(observed)
    extender = found.extender.value
    over = found.overprovisioner.value
    needs_over = "the overprovisioner's config is not readable (see config/overprovisioner)"
    needs_extender = "the extender's config is not readable (see config/extender)"
    checks: list[Check] = [("kubernetes-version", (), lambda: apis.kubernetes_version(observed))]
    for component in COMPONENTS:
        checks.append((f"deployment/{workloads.DEPLOYMENTS[component]}", ("headstart",),
                       lambda c=component: workloads.deployment(found, c, observed.namespace)))
    for component in COMPONENTS:
        checks.append((f"config/{component}", ("headstart", "configmaps"),
                       lambda c=component: workloads.config(found, c)))
    checks += [
        ("scheduler-image", ("headstart", "configmaps"),
         lambda: scheduler.scheduler_image(observed, found)),
        ("podgroup-crd", ("headstart", "configmaps"),
         lambda: scheduler.podgroup_crd(observed, found)),
        ("placement-gate", ("headstart", "gate"), lambda: apis.gate(observed, found)),
        ("gang-crd", (), lambda: apis.gang_crd(observed)),
        ("autoscaler", ("autoscaler",), lambda: autoscaler.autoscaler(observed)),
    ]
    if over is None:
        checks += [(name, (), lambda name=name: skip(name, needs_over)) for name in (
            "capacity-buffers", "placeholder-priority", "autoscaler-cutoff",
            "autoscaler-schedulers")]
    else:
        placeholders = over.placeholders
        priority, source = autoscaler.placeholder_priority_value(
            observed, placeholders.priority_class_name, placeholders.priority_class_value)
        checks += [
            ("capacity-buffers", ("autoscaler",),
             lambda: apis.capacity_buffers(observed, placeholders, observed.autoscalers)),
            ("placeholder-priority", ("priorityclasses",),
             lambda: autoscaler.placeholder_priority_class(
                 observed, placeholders.priority_class_name, placeholders.priority_class_value)),
            ("autoscaler-cutoff", ("autoscaler", "priorityclasses"),
             lambda: autoscaler.autoscaler_cutoff(
                 observed, priority, source, placeholders.expendable_pods_priority_cutoff)),
            ("autoscaler-schedulers", ("autoscaler",),
             lambda: autoscaler.autoscaler_schedulers(observed, placeholders.scheduler_name)),
        ]
    checks.append(("node-groups", ("autoscaler",),
                   (lambda: node_groups.node_groups(observed, extender.admission.node_groups))
                   if extender is not None else (lambda: skip("node-groups", needs_extender))))
    checks.append(("nodepools", ("autoscaler",),
                   (lambda: node_groups.nodepools(observed, over.instance_types,
                                                  over.placeholders.placement_group_label))
                   if over is not None else (lambda: skip("nodepools", needs_over))))
    checks += [
        ("tls/extender", ("headstart", "configmaps", "secrets"),
         lambda: certificates.extender_tls(observed, found)),
        ("tls/scheduler", ("headstart", "configmaps", "secrets"),
         lambda: certificates.scheduler_tls(observed, found)),
        ("tls/gate-webhook", ("headstart", "configmaps", "secrets", "gate"),
         lambda: certificates.gate_tls(observed, found)),
        ("device-plugin", ("nodes", "daemonsets"), lambda: devices.device_plugin(observed)),
    ]
    results = _run(observed, checks)
    if "rights" in observed.unread:
        results.append(skip("rights", f"not checked: {observed.unread['rights']}"))
    results += [rights.rights(answer) for answer in observed.rights]
    return results


def _run(observed: Observed, checks: Sequence[Check]) -> list[Result]:
    results = []
    for name, inputs, check in checks:
        unread = [f"{i} ({observed.unread[i]})" for i in inputs if i in observed.unread]
        results.append(skip(name, f"could not read {', '.join(unread)}") if unread else check())
    return results
