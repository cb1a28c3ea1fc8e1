"""What `headstart size warm-start` (and its older name, `headstart warm-start`) does:
DLRover-RM's warm start for one job, from a history of finished jobs.

The similarity, the smoothing and the plan within the owner's bounds are
`overprovisioner.planner.job_profile.warm_start_plan`'s (through
`predictor.models.warm_start.recommend`), the calls the worker planner makes for a job
that asks. Decides: how the recommendation is shown (text or `--json`): per role the
pod count and one pod's request its most similar finished jobs ended with, the jobs it
came from, and, for an elastic job (min-size/max-size), the worker count within its
bounds that the overprovisioner would write as its plan. Reads only: the manifest and
the history (`overprovisioner.jobsize.history`).

Exit status: 0 with a recommendation, 1 when no finished job is alike enough (the reason
is printed), 2 on a bad file or flag.

Must not: write the history or talk to the cluster.
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

from common.errors import InputError
from kube.labels import MIN_SIZE_ANNOTATION
from locality.elastic import elastic_owner
from overprovisioner.jobsize.flags import number, whole
from overprovisioner.jobsize.history import read_profiles
from overprovisioner.jobsize.manifest import read_job
from overprovisioner.planner.job_profile import profile_of, warm_start_plan
from predictor.models.warm_start import WarmStartConfig, recommend


def run(args: argparse.Namespace) -> int:
    answer = recommendation(args)
    if args.json:
        print(json.dumps(answer, indent=2))
    else:
        print(text(answer, args.history))
    return 0 if answer["roles"] else 1


def recommendation(args: argparse.Namespace) -> dict[str, Any]:
    """The answer as `--json` prints it (docs/predictor.md lists its keys)."""
    config = WarmStartConfig(whole(args.k, "--k", 1), number(args.alpha, "--alpha"),
                             number(args.min_similarity, "--min-similarity"))
    obj, kind = read_job(args.job)
    profile = profile_of(obj, kind)
    history = read_profiles(args.history)
    owner = elastic_owner(obj, kind)
    if owner is not None and owner.bounds is None:
        raise InputError(f"{args.job}: {owner.problem}")
    if owner is not None:
        plan, found = warm_start_plan(owner, profile, history, config, time.time(), 0.0)
    else:
        plan, found = None, recommend(profile, [p for p in history if p.name != profile.name],
                                      config)
    return {
        "job": profile.name, "history": len(history), "elastic": owner is not None,
        "roles": {role: {"pods": s.pods, "cpu": round(s.cpu, 3),
                         "memory_gib": round(s.memory_gib, 3), "gpus": round(s.gpus, 3)}
                  for role, s in found.roles.items()},
        "based_on": [{"job": name, "similarity": score} for name, score in found.based_on],
        "plan_size": plan.size if plan is not None else None,
        "plan_reason": plan.reason if plan is not None else None,
        "reason": found.reason}


def text(answer: dict[str, Any], history: str) -> str:
    if not answer["roles"]:
        return (f"{answer['job']}: {answer['reason']} ({answer['history']} finished job(s) "
                f"in {history})")
    lines = [f"{answer['job']}: from {len(answer['based_on'])} of {answer['history']} "
             "finished jobs"]
    lines += [f"  {b['job']}  similarity {b['similarity']:.3f}" for b in answer["based_on"]]
    lines += [f"  {role}: {s['pods']} pod(s) of {s['cpu']:g} CPU, {s['memory_gib']:g} GiB, "
              f"{s['gpus']:g} GPU" for role, s in answer["roles"].items()]
    if answer["plan_size"] is not None:
        lines.append(f"  plan: {answer['plan_size']} ({answer['plan_reason']})")
    elif not answer["elastic"]:
        lines.append(f"  not elastic (no {MIN_SIZE_ANNOTATION} and max-size): nothing would "
                     "be applied")
    return "\n".join(lines)
