"""The replay's pods by name, with the ones kube-scheduler still has to place kept apart.

Every bind and every cluster-autoscaler scan looks only at the pods no gate holds and
no node holds yet; with thousands of gated pods waiting, finding those few by scanning
every pod was most of a replay's time. `PodTable` keeps them as pods are set and
removed, and gives them in the order the table itself iterates (a pod keeps the place
it was first added at), so a replay decides exactly as a scan of the whole table did.
`version` counts its changes: what was decided from the pods at one version need not
be decided again at the same version (`ClusterSide.unchanged`). `listener`, when set, is
told of every change (the pod before, the pod after; None for none), so what is counted
from the pods (a policy's demand: `gangs.headroom`) follows them without a scan.

Must not: decide anything about the pods (the cluster side and the engine do).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable

from locality.model import Pod

Listener = Callable[[Pod | None, Pod | None], None]


class PodTable(dict[str, Pod]):
    """A dict of pods by name that also knows which are pending (ungated, unbound).
    Only `[name] = pod`, `pop` and `del` may change it."""

    def __init__(self) -> None:
        super().__init__()
        self._pending: set[str] = set()
        self._place: dict[str, int] = {}
        self._counter = itertools.count()
        self.version = 0
        self.listener: Listener | None = None

    def __setitem__(self, name: str, pod: Pod) -> None:
        old = self.get(name)
        if old is None:
            self._place[name] = next(self._counter)
        self.version += 1
        super().__setitem__(name, pod)
        if self.listener is not None:
            self.listener(old, pod)
        if pod.scheduling_gates or pod.node_name is not None:
            self._pending.discard(name)
        else:
            self._pending.add(name)

    def pop(self, name: str, *default: Pod) -> Pod:  # type: ignore[override]
        self._pending.discard(name)
        if self._place.pop(name, None) is not None:
            self.version += 1
            pod = super().pop(name)
            if self.listener is not None:
                self.listener(pod, None)
            return pod
        return super().pop(name, *default)

    def __delitem__(self, name: str) -> None:
        self.pop(name)

    def has_pending(self) -> bool:
        return bool(self._pending)

    def pending(self) -> list[str]:
        """The pods no gate and no node holds, in the table's own order."""
        return sorted(self._pending, key=self._place.__getitem__)
