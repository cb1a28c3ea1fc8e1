"""Which job a pod belongs to, its role there, and the job's placement policy.

Decides: job identity from the configured label pairs (first pair whose job key is on
the pod wins), the role from the paired role label (case-insensitive: `ps`/`PS`,
`worker`/`Worker`, `Chief`/`Master`/`Launcher`, anything else is OTHER), and the policy
from the pod's annotations. An invalid annotation value falls back to the default and
is reported in `JobPolicy.problems`; it never raises.

Must not: look at other pods or nodes.
"""

from __future__ import annotations

from locality.config import LocalityConfig
from locality.model import JobIdentity, JobKey, JobPolicy, Locality, Packing, Pod, Role

_ROLE_ALIASES: dict[str, Role] = {
    "ps": Role.PS,
    "parameterserver": Role.PS,
    "parameter-server": Role.PS,
    "parameter_server": Role.PS,
    "worker": Role.WORKER,
    "workers": Role.WORKER,
    "chief": Role.CHIEF,
    "master": Role.CHIEF,
    "launcher": Role.CHIEF,
}


def parse_role(value: str | None) -> Role:
    """A role label value to a Role; unknown or missing values are OTHER."""
    if not value:
        return Role.OTHER
    return _ROLE_ALIASES.get(value.strip().lower(), Role.OTHER)


def job_key_of(pod: Pod, config: LocalityConfig) -> JobKey | None:
    """The pod's job, None when no configured job label is on it (or it is a placeholder)."""
    identity = identify(pod, config)
    return identity.key if identity is not None else None


def identify(pod: Pod, config: LocalityConfig) -> JobIdentity | None:
    """The pod's job and role, None for pods that belong to no job."""
    if pod.is_placeholder:
        return None
    labels = pod.labels
    for keys in config.job_labels:
        name = labels.get(keys.job)
        if name:
            return JobIdentity(JobKey(pod.namespace, name), parse_role(labels.get(keys.role)))
    return None


def job_policy(pod: Pod, config: LocalityConfig) -> JobPolicy:
    """The policy from the pod's annotations, config defaults where absent or invalid."""
    annotations = pod.annotations
    problems: list[str] = []

    packing = config.default_packing
    raw = annotations.get(config.packing_annotation)
    if raw is not None:
        try:
            packing = Packing(raw.strip().lower())
        except ValueError:
            problems.append(
                f"annotation {config.packing_annotation}={raw!r} is not pack or spread; "
                f"using {packing.value}"
            )

    group = _locality(annotations.get(config.placement_group_annotation),
                      config.placement_group_annotation, config.default_placement_group, problems)
    numa = _locality(annotations.get(config.numa_annotation),
                     config.numa_annotation, config.default_numa, problems)

    job_size: int | None = None
    raw = annotations.get(config.job_size_annotation)
    if raw is not None:
        try:
            job_size = int(raw.strip())
        except ValueError:
            job_size = None
        if job_size is None or job_size < 1:
            problems.append(
                f"annotation {config.job_size_annotation}={raw!r} is not a positive integer; "
                "ignored"
            )
            job_size = None

    return JobPolicy(packing, group, numa, job_size, tuple(problems))


def _locality(raw: str | None, key: str, default: Locality, problems: list[str]) -> Locality:
    if raw is None:
        return default
    try:
        return Locality(raw.strip().lower())
    except ValueError:
        problems.append(
            f"annotation {key}={raw!r} is not required, preferred or none; using {default.value}"
        )
        return default
