"""What `headstart warm-start` does, once its options are parsed (warm_start_cli.py):
DLRover-RM's warm start for one job, from the finished jobs the overprovisioner kept in
its history store.

Decides: how the recommendation is shown (text or JSON): per role the pod count and one
pod's request its most similar finished jobs ended with, the jobs it came from, and, for
an elastic job (min-size/max-size), the worker count within its bounds that the
overprovisioner would write as its plan. Reads only: the manifest and the store.

Exit status: 0 with a recommendation, 1 when no finished job is alike enough (the reason
is printed), 2 on a bad file.

Must not: write the store or talk to the cluster.
"""

from __future__ import annotations

import argparse
import json
import time

from common.errors import InputError
from common.yamlfile import load_yaml_file
from locality.elastic import elastic_owner
from overprovisioner.planner.job_profile import profile_from_json, profile_of, warm_start_plan
from predictor.live.store import open_existing
from predictor.models.warm_start import WarmStartConfig, recommend


def run(args: argparse.Namespace) -> int:
    obj = load_yaml_file(args.job)
    kind = obj.get("kind") if isinstance(obj, dict) else None
    if kind not in ("Job", "PyTorchJob"):
        raise InputError(f"{args.job}: expected a Job or a PyTorchJob manifest, got kind "
                         f"{kind!r}")
    config = WarmStartConfig(args.k, args.alpha, args.min_similarity)
    profile = profile_of(obj, kind)
    with open_existing(args.history) as store:
        history = [profile_from_json(body) for body in store.job_profiles()]
    owner = elastic_owner(obj, kind)
    if owner is not None and owner.bounds is not None:
        plan, found = warm_start_plan(owner, profile, history, config, time.time(), 0.0)
    else:
        plan, found = None, recommend(profile, [p for p in history if p.name != profile.name],
                                      config)
    if args.json:
        print(json.dumps({
            "job": profile.name, "history": len(history),
            "roles": {role: {"pods": s.pods, "cpu": round(s.cpu, 3),
                             "memory_gib": round(s.memory_gib, 3), "gpus": round(s.gpus, 3)}
                      for role, s in found.roles.items()},
            "based_on": [{"job": name, "similarity": score} for name, score in found.based_on],
            "plan_size": plan.size if plan is not None else None,
            "reason": found.reason}, indent=2))
    elif not found.roles:
        print(f"{profile.name}: {found.reason} ({len(history)} finished job(s) in "
              f"{args.history})")
    else:
        print(f"{profile.name}: from {len(found.based_on)} of {len(history)} finished jobs")
        for name, score in found.based_on:
            print(f"  {name}  similarity {score:.3f}")
        for role, shape in found.roles.items():
            print(f"  {role}: {shape.pods} pod(s) of {shape.cpu:g} CPU, "
                  f"{shape.memory_gib:g} GiB, {shape.gpus:g} GPU")
        if plan is not None:
            print(f"  plan: {plan.size} ({plan.reason})")
        elif owner is None:
            print("  not elastic (no headstart.io/min-size and max-size): nothing would "
                  "be applied")
    return 0 if found.roles else 1
