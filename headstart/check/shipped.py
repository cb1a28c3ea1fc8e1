"""The RBAC the repository ships, read from its manifests folder: what each of headstart's
ServiceAccounts is meant to be allowed.

Decides: where the manifests are (`--manifests DIR`, else the `manifests/` folder of the
checkout this headstart runs from, which the install docs run from), which objects count
(every Role, ClusterRole, RoleBinding and ClusterRoleBinding under `base/`; the overlays
and components ship none), and the namespace of a namespaced one that names none: its
folder's kustomization.yaml `namespace:`, as kustomize sets it.

Must not: call the API or decide whether a right is granted (core/rights.py).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from common.errors import InputError
from headstart.check.core.rights import Binding, RoleKey, Rule, parse_rules

RBAC_KINDS = ("Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding")


def default_manifests() -> Path | None:
    """The checkout's manifests/ folder, when headstart runs from one."""
    folder = Path(__file__).resolve().parents[2] / "manifests"
    return folder if (folder / "base").is_dir() else None


def read_shipped(manifests: Path) -> tuple[list[Binding], dict[RoleKey, tuple[Rule, ...]]]:
    """The ServiceAccounts' bindings and the shipped roles' rules; InputError naming the
    file when the folder is not headstart's manifests or a file does not parse."""
    base = manifests / "base"
    if not base.is_dir():
        raise InputError(f"{manifests}: not headstart's manifests folder (no base/ in it)")
    bindings: list[Binding] = []
    roles: dict[RoleKey, tuple[Rule, ...]] = {}
    for path in sorted(base.rglob("*.yaml")):
        source = f"manifests/{path.relative_to(manifests).as_posix()}"
        for document in _documents(path):
            kind = document.get("kind")
            if kind not in RBAC_KINDS:
                continue
            meta = document.get("metadata") or {}
            namespace = "" if kind.startswith("Cluster") else \
                str(meta.get("namespace") or _kustomize_namespace(path.parent))
            if kind in ("Role", "ClusterRole"):
                roles[(kind, namespace, str(meta.get("name")))] = parse_rules(
                    document.get("rules"))
                continue
            ref = document.get("roleRef") or {}
            for subject in document.get("subjects") or ():
                if subject.get("kind") != "ServiceAccount":
                    continue
                account = f"{subject.get('namespace') or namespace}/{subject.get('name')}"
                bindings.append(Binding(account, namespace, str(ref.get("kind")),
                                        str(ref.get("name")), source))
    if not bindings:
        raise InputError(f"{base}: no RoleBinding or ClusterRoleBinding of a ServiceAccount")
    return bindings, roles


def _documents(path: Path) -> list[dict[str, Any]]:
    try:
        return [d for d in yaml.safe_load_all(path.read_text()) if isinstance(d, dict)]
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as error:
        raise InputError(f"{path}: {' '.join(str(error).split())[:200]}") from None


def _kustomize_namespace(folder: Path) -> str:
    kustomization = folder / "kustomization.yaml"
    if not kustomization.is_file():
        return ""
    documents = _documents(kustomization)
    return str(documents[0].get("namespace") or "") if documents else ""
