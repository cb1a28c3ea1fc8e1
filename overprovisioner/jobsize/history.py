"""The finished jobs DLRover-RM's warm start reads: from the overprovisioner's history
store, or from a JSON Lines file of the same profiles.

Decides the file's format by its first bytes: a SQLite store (`predictor.live.store`,
table `job_profiles`) or text, one profile a line exactly as the store keeps it
(`overprovisioner.planner.job_profile.profile_json`):

    {"name": "Job/ml/clicks-1", "image": "registry.example/train:v3", "namespace": "ml",
     "labels": {"team": "rec"}, "finished": 1795860000.0,
     "roles": {"worker": [8, 4.0, 16.0, 1.0]}}

(`roles`: per role [pods, cpu cores, memory GiB, GPUs] per pod; `finished`: Unix
seconds), with blank lines and lines starting with `#` skipped. A missing file, a line
that is not JSON or a profile field that does not parse is an error naming the file,
the line and the field. `docs/examples/warm-start-history.jsonl` is a small synthetic one.

Must not: write the file (a store is opened as it is), or recommend.
"""

from __future__ import annotations

import json
from pathlib import Path

from common.errors import InputError
from overprovisioner.planner.job_profile import profile_from_json
from predictor.live.store import open_existing
from predictor.models.warm_start import JobProfile

SQLITE_MAGIC = b"SQLite format 3\x00"


def read_profiles(path: str) -> list[JobProfile]:
    """The finished jobs' profiles in `path` (either format)."""
    file = Path(path)
    if not file.is_file():
        raise InputError(f"{path}: no such history file")
    with file.open("rb") as handle:
        sqlite = handle.read(len(SQLITE_MAGIC)) == SQLITE_MAGIC
    if sqlite:
        with open_existing(file) as store:
            return [profile_from_json(body, f"{path}: job_profiles row {n}")
                    for n, body in enumerate(store.job_profiles(), 1)]
    try:
        lines = file.read_text(encoding="utf-8").splitlines()
    except UnicodeDecodeError:
        raise InputError(f"{path}: neither a SQLite history store nor UTF-8 JSON Lines") \
            from None
    profiles = []
    for number, line in enumerate(lines, 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        try:
            body = json.loads(line)
        except json.JSONDecodeError as error:
            raise InputError(f"{path}:{number}: not JSON ({error.msg}, column "
                             f"{error.colno})") from None
        profiles.append(profile_from_json(body, f"{path}:{number}"))
    return profiles
