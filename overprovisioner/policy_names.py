"""Policy names as users type them: `reactive`, `static:N`, `proportional:R[,min=M][,max=X]`,
`scheduled:HH-HH=N[,HH-HH=N...][,else=N]`, `per-type:...`, `predictive[:Q]`,
`predictive:MODEL` / `predictive:Q,MODEL` (another forecaster), `predictive:unlimited` /
`predictive:Q,unlimited` (headstart's limits lifted), `oracle`, `rate-oracle[:Q]`.

Decides the syntax, what each part means and which specs are refused (an InputError
naming the spec and what is wrong, so the CLI prints one line and exits 2).

- `static:N`: N placeholder nodes per instance type, always (the Helm-chart headroom).
- `static:TYPE=N[,TYPE=N...]`: a count per instance type (types not named: 0), as a user
  runs one overprovisioning Deployment per node group, each sized on its own. Its family
  is `per-type` (`headstart simulate` searches the cheapest such vector in hindsight:
  `overprovisioner.sim.hindsight`).
- `proportional:R`: per instance type, as cluster-proportional-autoscaler's linear mode
  drives the overprovisioning Deployment of that type (its `--nodelabels` selecting
  the type's nodes): placeholders = max(min, ceil(nodes / R)), at most max (0 = no
  max). R is CPA's `nodesPerReplica`; `coresPerReplica` gives the same count per type
  (one type's nodes have equal cores), so it is not offered. CPA turns min 0 into 1
  (kubernetes-sigs/cluster-proportional-autoscaler, linearcontroller), so min defaults
  to 1 and 0 is refused rather than silently raised.
- `scheduled:08-20=4,else=1`: N placeholder nodes per type during each hour range of the
  day (start inclusive, end exclusive, in the trace clock's hours: UTC for traces with
  Unix times), `else` outside every range (default 0). A range may wrap past midnight
  (`22-06=2`); ranges must not overlap.
- `per-type:TYPE=POLICY[+TYPE=POLICY...]`: each named instance type runs its own
  headroom (`static:N`, `proportional:...` or `scheduled:...`), types not named none, as
  a user runs one overprovisioning Deployment per node group with its own controller
  (e.g. `per-type:g4dn.xlarge=proportional:4+p4d.24xlarge=scheduled:08-20=1`). Family
  `per-type`.

Must not: build policies (build.py does) or read anything.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from common.errors import InputError
from predictor.models.registry import FORECASTER_NAMES

POLICY_HELP = (
    "reactive, static:N (N >= 0 placeholder nodes per type), static:TYPE=N[,TYPE=N...] (a "
    "count per instance type), proportional:R[,min=M][,max=X] "
    "(one placeholder per R nodes of the type, as cluster-proportional-autoscaler's linear "
    "mode), scheduled:HH-HH=N[,...][,else=N] (N placeholders per type in those UTC hours), "
    "per-type:TYPE=POLICY[+TYPE=POLICY...] (each type its own static, proportional or "
    "scheduled headroom), predictive, predictive:Q (at quantile Q), predictive:MODEL (another "
    "forecaster, e.g. predictive:0.97,conditional), predictive:unlimited and "
    "predictive:Q,unlimited (without the cost cap and per-type max), oracle, rate-oracle, "
    "rate-oracle:Q"
)
PEERS = ("static", "proportional", "scheduled", "per-type")
JUDGED = ("predictive", "rate-oracle")
UNLIMITED = "unlimited"
_RANGE = re.compile(r"^(\d{1,2})-(\d{1,2})=(\d+)$")


@dataclass(frozen=True)
class PolicySpec:
    """A parsed policy name.

    kind: reactive, static, per-type, proportional, scheduled, predictive, oracle or
        rate-oracle.
    count: static's placeholders per type; scheduled's outside its ranges (`else`).
    quantile: predictive's or rate-oracle's quantile override (None = the configured).
    nodes_per_placeholder, min_count, max_count: proportional's CPA parameters
        (max_count 0 = no max).
    hours: scheduled's ranges, (start hour, end hour, placeholders) each.
    per_type: `static:TYPE=N`'s (instance type, placeholders), in the order given.
    members: `per-type:`'s (instance type, its own headroom's spec), in the order given.
    unlimited: predictive with headstart's limits lifted (no cost cap, no per-type max):
        what the limits cost in waiting, not a policy `simulate` recommends.
    model: predictive's forecaster override (None = the configured `forecast.model`).
    """

    name: str
    kind: str
    count: int = 0
    quantile: float | None = None
    nodes_per_placeholder: int = 0
    min_count: int = 1
    max_count: int = 0
    hours: tuple[tuple[int, int, int], ...] = ()
    per_type: tuple[tuple[str, int], ...] = ()
    members: tuple[tuple[str, PolicySpec], ...] = ()
    unlimited: bool = False
    model: str | None = None

    @property
    def role(self) -> str:
        """What the run is in a comparison: `reactive` (cluster-autoscaler alone),
        `peer` (headroom users run today), `predictive` (headstart) or `yardstick` (an
        oracle that knows the future: a bound, not a policy anyone can run)."""
        if self.kind in PEERS:
            return "peer"
        if self.kind in ("oracle", "rate-oracle"):
            return "yardstick"
        return self.kind  # reactive, predictive

    @property
    def is_peer(self) -> bool:
        """A headroom users run today without headstart (static, proportional, scheduled)."""
        return self.kind in PEERS

    def count_at_hour(self, hour: int) -> int:
        """scheduled: the placeholders per type wanted during hour 0..23."""
        for start, end, count in self.hours:
            inside = start <= hour < end if start < end else (hour >= start or hour < end)
            if inside:
                return count
        return self.count


def parse_policy_name(name: str) -> PolicySpec:
    """The spec of a policy name; InputError naming what is wrong when it is not one."""
    if name in ("reactive", "predictive", "oracle", "rate-oracle"):
        return PolicySpec(name, name)
    kind, sep, value = name.partition(":")
    if not sep:
        raise InputError(f"unknown policy {name!r} (known: {POLICY_HELP})")
    if kind == "static" and "=" in value:
        return _per_type(name, value)
    if kind == "static":
        return PolicySpec(name, kind, count=_whole(name, value, "static:N needs a whole "
                                                               "number N >= 0"))
    if kind == "predictive":
        return _predictive(name, value)
    if kind == "rate-oracle":
        return PolicySpec(name, kind, quantile=_quantile(name, kind, value))
    if kind == "proportional":
        return _proportional(name, value)
    if kind == "scheduled":
        return _scheduled(name, value)
    if kind == "per-type":
        return _members(name, value)
    raise InputError(f"unknown policy {name!r} (known: {POLICY_HELP})")


def _quantile(name: str, kind: str, text: str) -> float:
    try:
        quantile = float(text)
    except ValueError:
        quantile = -1.0
    if 0.0 < quantile < 1.0:
        return quantile
    raise InputError(f"policy {name!r}: {kind}:Q needs a quantile 0 < Q < 1")


def _predictive(name: str, value: str) -> PolicySpec:
    """`predictive:` then, comma-separated, any of: a quantile, a forecaster's name,
    `unlimited` (each at most once)."""
    quantile, model, unlimited = None, None, False
    for item in (part.strip() for part in value.split(",")):
        if item == UNLIMITED and not unlimited:
            unlimited = True
        elif item in FORECASTER_NAMES and model is None:
            model = item
        elif item[:1].isdigit() or item[:1] == "." or item[:1] == "-":
            if quantile is not None:
                raise InputError(f"policy {name!r}: two quantiles")
            quantile = _quantile(name, "predictive", item)
        else:
            raise InputError(f"policy {name!r}: {item!r} is not a quantile 0 < Q < 1, a "
                             f"forecaster ({', '.join(FORECASTER_NAMES)}) or {UNLIMITED} "
                             "(each once)")
    return PolicySpec(name, "predictive", quantile=quantile, unlimited=unlimited, model=model)


def _whole(name: str, text: str, message: str) -> int:
    text = text.strip()
    if not text.isdigit():
        raise InputError(f"policy {name!r}: {message}")
    return int(text)


def _per_type(name: str, value: str) -> PolicySpec:
    counts: dict[str, int] = {}
    for item in value.split(","):
        kind, sep, number = item.partition("=")
        kind = kind.strip()
        if not sep or not kind:
            raise InputError(f"policy {name!r}: {item!r} is not TYPE=N (e.g. "
                             "static:g4dn.xlarge=2,p4d.24xlarge=1)")
        if kind in counts:
            raise InputError(f"policy {name!r}: {kind} is given twice")
        counts[kind] = _whole(name, number, f"{kind}=N needs a whole number N >= 0")
    return PolicySpec(name, "per-type", per_type=tuple(counts.items()))


def _members(name: str, value: str) -> PolicySpec:
    members: dict[str, PolicySpec] = {}
    for item in value.split("+"):
        kind, sep, policy = item.partition("=")
        kind = kind.strip()
        if not sep or not kind or not policy.strip():
            raise InputError(f"policy {name!r}: {item!r} is not TYPE=POLICY (e.g. per-type:"
                             "g4dn.xlarge=proportional:4+p4d.24xlarge=static:1)")
        if kind in members:
            raise InputError(f"policy {name!r}: {kind} is given twice")
        try:
            spec = parse_policy_name(policy.strip())
        except InputError as error:
            raise InputError(f"policy {name!r}: {kind}: {error}") from None
        if spec.kind not in ("static", "proportional", "scheduled"):
            raise InputError(f"policy {name!r}: {kind}={policy.strip()}: each type runs "
                             "static:N, proportional:... or scheduled:...")
        members[kind] = spec
    return PolicySpec(name, "per-type", members=tuple(members.items()))


def unlimited_name(policy: str) -> str:
    """The run of `policy` (predictive or predictive:Q) with the limits lifted."""
    return f"{policy},{UNLIMITED}" if ":" in policy else f"{policy}:{UNLIMITED}"


def per_type_name(counts: dict[str, int]) -> str:
    """The `static:TYPE=N,...` name of a count per type (types at 0 left out; all at 0:
    reactive's headroom, `static:0`)."""
    kept = [f"{kind}={count}" for kind, count in counts.items() if count > 0]
    return "static:" + (",".join(kept) if kept else "0")


def _proportional(name: str, value: str) -> PolicySpec:
    ratio, *options = value.split(",")
    usage = "proportional:R needs R = nodes per placeholder, a whole number >= 1 (e.g. " \
            "proportional:8 or proportional:8,min=1,max=4)"
    nodes = _whole(name, ratio, usage)
    if nodes < 1:
        raise InputError(f"policy {name!r}: {usage}")
    low, high = 1, 0
    seen: set[str] = set()
    for option in options:
        key, sep, number = option.partition("=")
        key = key.strip()
        if not sep or key not in ("min", "max") or key in seen:
            raise InputError(f"policy {name!r}: {option!r} is not min=M or max=X (each once)")
        seen.add(key)
        count = _whole(name, number, f"{key} must be a whole number >= 0")
        if key == "min":
            low = count
        else:
            high = count
    if low < 1:
        raise InputError(f"policy {name!r}: min=0 is not what it seems: cluster-proportional-"
                         "autoscaler's linear mode raises min 0 to 1; give min=1 or more")
    if high and high < low:
        raise InputError(f"policy {name!r}: max={high} is below min={low}")
    return PolicySpec(name, "proportional", nodes_per_placeholder=nodes, min_count=low,
                      max_count=high)


def _scheduled(name: str, value: str) -> PolicySpec:
    usage = ("scheduled needs HH-HH=N ranges in UTC hours 0-24, comma-separated, and "
             "optionally else=N, e.g. scheduled:08-20=4,else=1")
    ranges: list[tuple[int, int, int]] = []
    otherwise: int | None = None
    covered: set[int] = set()
    for item in value.split(","):
        item = item.strip()
        if item.startswith("else="):
            if otherwise is not None:
                raise InputError(f"policy {name!r}: else= given twice")
            otherwise = _whole(name, item[5:], f"{item!r}: else=N needs a whole number >= 0")
            continue
        match = _RANGE.match(item)
        if not match:
            raise InputError(f"policy {name!r}: {item!r} is not HH-HH=N; {usage}")
        start, end, count = (int(g) for g in match.groups())
        if start > 23 or end > 24 or start == end:
            raise InputError(f"policy {name!r}: {item!r}: hours run 0-24 and a range needs "
                             "two different hours")
        hours = set(range(start, end)) if start < end else \
            set(range(start, 24)) | set(range(0, end))
        overlap = covered & hours
        if overlap:
            raise InputError(f"policy {name!r}: {item!r} overlaps another range at hour "
                             f"{min(overlap):02d}")
        covered |= hours
        ranges.append((start, end, count))
    if not ranges:
        raise InputError(f"policy {name!r}: {usage}")
    return PolicySpec(name, "scheduled", count=otherwise or 0, hours=tuple(ranges))


def peer_size(spec: PolicySpec) -> float:
    """An ordering of a peer family's members by how much headroom they keep (the order
    their cost curve is interpolated in): static's N, proportional's 1/R (then min),
    scheduled's mean count over the day."""
    if spec.kind == "static":
        return float(spec.count)
    if spec.kind == "per-type" and spec.members:
        return sum(peer_size(member) for _, member in spec.members)
    if spec.kind == "per-type":
        return float(sum(count for _, count in spec.per_type))
    if spec.kind == "proportional":
        return 1.0 / spec.nodes_per_placeholder + 1e-6 * spec.min_count
    if spec.kind == "scheduled":
        return sum(spec.count_at_hour(h) for h in range(24)) / 24.0
    return math.nan


def schedule_name(hours: tuple[int, ...], busy: int, otherwise: int) -> str | None:
    """`scheduled:...` keeping `busy` placeholders during `hours` (contiguous runs become
    ranges, one may wrap past midnight) and `otherwise` outside; None without hours.
    Example: hours 8, 9, 10, 22, 23, 0 -> scheduled:08-11=2,22-01=2,else=1."""
    chosen = sorted(set(hours))
    if not chosen or len(chosen) == 24:
        return None
    runs: list[list[int]] = []
    for hour in chosen:
        if runs and hour == runs[-1][1]:
            runs[-1][1] = hour + 1
        else:
            runs.append([hour, hour + 1])
    if len(runs) > 1 and runs[0][0] == 0 and runs[-1][1] == 24:
        runs[0][0] = runs.pop()[0]  # one range across midnight
    ranges = ",".join(f"{start:02d}-{end:02d}={busy}" for start, end in sorted(runs))
    return f"scheduled:{ranges},else={otherwise}"


def parse_headroom(text: str, where: str = "headroom") -> PolicySpec:
    """The spec of a headroom policy; InputError naming `where` when it is not one."""
    try:
        spec = parse_policy_name(text.strip())
    except InputError as error:
        raise InputError(f"{where}: {error}") from None
    if spec.kind not in PEERS:
        raise InputError(f"{where}: {text!r} is not a headroom policy (static:..., "
                         "proportional:..., scheduled:... or per-type:...)")
    return spec


def named_types(spec: PolicySpec) -> tuple[str, ...]:
    """The instance types a per-type headroom names (none for the others)."""
    return tuple(kind for kind, _ in (spec.members or spec.per_type))
