"""openb's `gpu_spec` (the GPU model a pod of Alibaba's 2023 trace requires) in the
catalogs' GPU-model vocabulary.

Decides: which catalog `gpu_model` values satisfy each openb spec name. The table:

| openb `gpu_spec` | catalog `gpu_model`      | why |
|------------------|--------------------------|-----|
| `T4`             | `T4`                     | the same part |
| `V100M16`        | `V100`                   | catalogs do not split V100 by memory |
| `V100M32`        | `V100`                   | (AWS p3 has 16 GB, p3dn 32 GB) |
| `A10`            | `A10G`                   | AWS's A10 variant (g5) |
| `A100`           | `A100-40GB`, `A100-80GB` | either memory size is an A100 |
| `P100`           | `P100`                   | no shipped catalog has one |
| `G2`, `G3`       | `G2`, `G3`               | Alibaba's undisclosed models |

Pods asking for a model no listed type has fit no type (counted, never dropped).
A spec not in the table is kept as written (a catalog file naming that model matches
it). Several specs joined by `|` accept any of them; a blank spec accepts any model.

Must not: read files or look at a catalog (the fit rule, `bucketing.fit`, does).
"""

from __future__ import annotations

import numpy as np

from jobtraces.jobtable import ANY_MODEL, MODEL_SEPARATOR

OPENB_TO_CATALOG: dict[str, tuple[str, ...]] = {
    "T4": ("T4",),
    "V100M16": ("V100",),
    "V100M32": ("V100",),
    "A10": ("A10G",),
    "A100": ("A100-40GB", "A100-80GB"),
    "P100": ("P100",),
    "G2": ("G2",),
    "G3": ("G3",),
}


def catalog_models(spec: str) -> str:
    """One openb spec ("V100M16|V100M32", "" ...) as a requirement ("V100", "" = any)."""
    models: list[str] = []
    for name in spec.split(MODEL_SEPARATOR):
        name = name.strip()
        for model in OPENB_TO_CATALOG.get(name, (name,) if name else ()):
            if model not in models:
                models.append(model)
    return MODEL_SEPARATOR.join(models) if models else ANY_MODEL


def requirements(specs: np.ndarray) -> np.ndarray:
    """(N,) object: each row's requirement, mapping each distinct spec once."""
    specs = np.asarray(specs, dtype=object)
    mapped = {spec: catalog_models(spec) for spec in dict.fromkeys(specs.tolist())}
    return np.array([mapped[spec] for spec in specs.tolist()], dtype=object)
