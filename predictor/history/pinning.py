"""Which zone and capacity type a pod is pinned to, and the history columns that record it.

Decides: a pod's *pin*, the single zone and the single capacity type (on-demand, spot,
...) its scheduling constraints require, read from `spec.nodeSelector` and the required
node affinity (`spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution
.nodeSelectorTerms`; terms are ORed, so a value is required only when every term
requires it, with `In` and exactly one value). A pod that may run in two zones is not
pinned to a zone. Labels read:
- zone: `topology.kubernetes.io/zone` (and the deprecated
  `failure-domain.beta.kubernetes.io/zone`); a pod needing an EBS volume or a zonal
  reservation carries it;
- capacity type, normalized to `on-demand`, `spot`, or the provider's other values
  lower-cased with `_` as `-` (`reserved`, `capacity-block`): Karpenter's
  `karpenter.sh/capacity-type` (`on-demand`, `spot`, `reserved`), EKS managed node
  groups' `eks.amazonaws.com/capacityType` (`ON_DEMAND`, `SPOT`, `CAPACITY_BLOCK`), GKE's
  `cloud.google.com/gke-spot: "true"` and `cloud.google.com/gke-preemptible: "true"`
  (both `spot`).

A placeholder node is of use to a pinned pod only in its zone and of its capacity type,
so the recorder writes, beside the bucket counts (which still count every pod), the
demand of pinned pods per bucket, zone and capacity type: series
`pinned:<bucket>[@<group>]/zone=<zone>/capacity=<type>` (a part left out when the pod is
not pinned on it). None of `/`, `=` or `:` can occur in a label value, so the column
name splits back without ambiguity.

Must not: do I/O, read the clock, or log.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from predictor.history.series import series_column, split_column

ZONE_LABELS = ("topology.kubernetes.io/zone", "failure-domain.beta.kubernetes.io/zone")
CAPACITY_TYPE_LABELS = ("karpenter.sh/capacity-type", "eks.amazonaws.com/capacityType",
                        "cloud.google.com/gke-spot", "cloud.google.com/gke-preemptible")
PINNED_PREFIX = "pinned:"


@dataclass(frozen=True)
class Pin:
    """The zone and capacity type a pod requires (None: any)."""

    zone: str | None = None
    capacity_type: str | None = None

    def __bool__(self) -> bool:
        return self.zone is not None or self.capacity_type is not None


UNPINNED = Pin()


def capacity_type(key: str, value: str) -> str | None:
    """The normalized capacity type a (label key, value) requires, or None."""
    if key in ("cloud.google.com/gke-spot", "cloud.google.com/gke-preemptible"):
        return "spot" if value == "true" else None
    return value.lower().replace("_", "-") or None


def _required(spec: Mapping[str, Any], keys: Iterable[str], normalize) -> str | None:
    """The one value of `keys` every way of placing the pod requires, or None."""
    keys = tuple(keys)
    selector = spec.get("nodeSelector") or {}
    for key in keys:
        if selector.get(key):
            return normalize(key, str(selector[key]))
    affinity = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution") or {}
    terms = affinity.get("nodeSelectorTerms") or []
    found: set[str] = set()
    for term in terms:
        values = {normalize(e.get("key", ""), str(e["values"][0]))
                  for e in (term or {}).get("matchExpressions") or []
                  if e.get("key") in keys and e.get("operator") == "In"
                  and len(e.get("values") or []) == 1}
        values.discard(None)
        if len(values) != 1:
            return None  # this term lets the pod go elsewhere (or asks the impossible)
        found |= values
    return found.pop() if len(found) == 1 else None


def pod_pin(pod: Mapping[str, Any]) -> Pin:
    """The zone and capacity type a Pod (JSON) requires."""
    spec = pod.get("spec") or {}
    return Pin(_required(spec, ZONE_LABELS, lambda key, value: value or None),
               _required(spec, CAPACITY_TYPE_LABELS, capacity_type))


def pinned_column(bucket: str, group: str | None, pin: Pin) -> str:
    """The history series of pinned demand in one bucket, zone and capacity type."""
    name = PINNED_PREFIX + series_column(bucket, group)
    if pin.zone is not None:
        name += f"/zone={pin.zone}"
    if pin.capacity_type is not None:
        name += f"/capacity={pin.capacity_type}"
    return name


def split_pinned_column(column: str) -> tuple[str, str | None, Pin]:
    """Inverse of `pinned_column`: (bucket, group or None, pin)."""
    if not column.startswith(PINNED_PREFIX):
        raise ValueError(f"{column!r} is not a pinned-demand series")
    head, *parts = column[len(PINNED_PREFIX):].split("/")
    fields = dict(part.split("=", 1) for part in parts)
    bucket, group = split_column(head)
    return bucket, group, Pin(fields.get("zone"), fields.get("capacity"))
