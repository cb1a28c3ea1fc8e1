"""DLRover-RM's warm start: a new job's starting size and per-role requests from the most
similar past jobs.

DLRover-RM (AntGroup, VLDB 2024) starts a training job from the configurations that
similar jobs ended with, instead of from what the user guessed, then adjusts it while it
runs. The rule here:

- Similarity of a past job to the new one, in [0, 1]: the weighted share of what they
  have in common: the same image repository (the tag may differ; weight 3), the same
  namespace (1), the Jaccard overlap of their labels (1), and how close their requested
  per-pod shapes are, role by role (2: 1 - the mean relative difference of CPU, memory
  and GPUs over the roles either has; a role only one has counts as 0).
- The top `k` past jobs by similarity (then the most recent first), of those at least
  `min_similarity` alike; none: no recommendation, and why.
- Each quantity (pods per role, and each role's CPU, memory and GPUs per pod, as the
  past jobs ended with them) is exponentially smoothed over those jobs taken from the
  least to the most similar, so the most similar weighs most: s = alpha * x + (1 - alpha)
  * s, starting from the least similar one's value. Counts are rounded, at least 1.

Must not: read the store, the clock or the cluster (the history is passed in), log.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from common.errors import InputError


@dataclass(frozen=True, slots=True)
class RoleShape:
    """One role of a job: its pods and each pod's request (cores, GiB, GPUs)."""

    pods: int
    cpu: float
    memory_gib: float
    gpus: float = 0.0


@dataclass(frozen=True, slots=True)
class JobProfile:
    """A job as the warm start compares it: what it asked for at submission (`requested`)
    and, for a past job, what it ended with (`final`: its size and requests after run-time
    adjustment; the requested ones when nothing adjusted them)."""

    name: str
    image: str
    namespace: str
    labels: Mapping[str, str] = field(default_factory=dict)
    requested: Mapping[str, RoleShape] = field(default_factory=dict)
    final: Mapping[str, RoleShape] = field(default_factory=dict)
    finished_at: float = 0.0


@dataclass(frozen=True, slots=True)
class WarmStartConfig:
    k: int = 5
    alpha: float = 0.5
    min_similarity: float = 0.5

    def __post_init__(self) -> None:
        if isinstance(self.k, bool) or not isinstance(self.k, int) or self.k < 1:
            raise InputError(f"warm start k: expected a whole number >= 1, got {self.k!r}")
        if not 0 < self.alpha <= 1:
            raise InputError(f"warm start alpha: expected a number in (0, 1], got {self.alpha!r}")
        if not 0 <= self.min_similarity <= 1:
            raise InputError("warm start min_similarity: expected a number in [0, 1], got "
                             f"{self.min_similarity!r}")


@dataclass(frozen=True, slots=True)
class Recommendation:
    """The starting shape per role, the past jobs it came from (most similar first, with
    their similarity), or why there is none (`reason`; then `roles` is empty)."""

    roles: Mapping[str, RoleShape]
    based_on: tuple[tuple[str, float], ...]
    reason: str = ""


WEIGHTS = {"image": 3.0, "namespace": 1.0, "labels": 1.0, "shape": 2.0}


def repository(image: str) -> str:
    """The image without its tag or digest (`repo/name:tag@sha256:...` -> `repo/name`)."""
    name = image.split("@", 1)[0]
    slash = name.rfind("/")
    colon = name.rfind(":")
    return name[:colon] if colon > slash else name


def similarity(new: JobProfile, past: JobProfile) -> float:
    """How alike two jobs are, in [0, 1] (the module's rule)."""
    score = WEIGHTS["image"] * (repository(new.image) == repository(past.image))
    score += WEIGHTS["namespace"] * (new.namespace == past.namespace)
    keys = set(new.labels.items()) | set(past.labels.items())
    if keys:
        score += WEIGHTS["labels"] * len(set(new.labels.items()) & set(past.labels.items())) \
            / len(keys)
    else:
        score += WEIGHTS["labels"]
    score += WEIGHTS["shape"] * _shape_match(new.requested, past.requested)
    return score / sum(WEIGHTS.values())


def _shape_match(a: Mapping[str, RoleShape], b: Mapping[str, RoleShape]) -> float:
    roles = set(a) | set(b)
    if not roles:
        return 1.0
    total = 0.0
    for role in roles:
        if role not in a or role not in b:
            continue
        x, y = a[role], b[role]
        parts = [_close(x.cpu, y.cpu), _close(x.memory_gib, y.memory_gib),
                 _close(x.gpus, y.gpus)]
        total += sum(parts) / len(parts)
    return total / len(roles)


def _close(x: float, y: float) -> float:
    """1 - |x - y| / max(x, y): 1 when equal (both 0 included), 0 when one is 0."""
    high = max(x, y)
    return 1.0 if high == 0 else 1.0 - abs(x - y) / high


def recommend(new: JobProfile, history: Sequence[JobProfile],
              config: WarmStartConfig = WarmStartConfig()) -> Recommendation:
    """The warm start for `new` from `history` (the module's rule)."""
    scored = sorted(((similarity(new, past), past) for past in history if past.final),
                    key=lambda item: (-item[0], -item[1].finished_at, item[1].name))
    chosen = [(score, past) for score, past in scored if score >= config.min_similarity]
    chosen = chosen[:config.k]
    if not chosen:
        best = f" (the most alike scores {scored[0][0]:.2f})" if scored else ""
        return Recommendation({}, (), (
            f"no past job is at least {config.min_similarity:g} alike among "
            f"{len(scored)} with a final shape{best}: start from the job's own request"))
    roles = sorted({role for _, past in chosen for role in past.final})
    out = {}
    for role in roles:
        shapes = [past.final[role] for _, past in reversed(chosen) if role in past.final]
        pods, cpu, memory, gpus = (_smooth([getattr(s, name) for s in shapes], config.alpha)
                                   for name in ("pods", "cpu", "memory_gib", "gpus"))
        out[role] = RoleShape(max(1, round(pods)), cpu, memory, gpus)
    return Recommendation(out, tuple((past.name, round(score, 3)) for score, past in chosen))


def _smooth(values: Sequence[float], alpha: float) -> float:
    level = float(values[0])
    for value in values[1:]:
        level = alpha * float(value) + (1 - alpha) * level
    return level
