"""What `headstart expire-placeholders` does, once its options are parsed (expire_cli.py):
the dead-man's switch run by something other than the overprovisioner.

Decides: one pass of the expiry rule (`overprovisioner.service.expiry`) over the
placeholder objects in `placeholders.namespace`: every Deployment or CapacityBuffer
whose `headstart.io/valid-until` has passed is scaled down to its share of the type's
floor (its configured min), exactly as the overprovisioner's own standby would. It is
shipped as a CronJob (`manifests/base/placeholder-expiry`) with its own ServiceAccount,
which may list placeholder objects and change replica counts in that namespace and
nothing else, no volume, no leader election: when the overprovisioner crash-loops, its
volume cannot attach in a lost zone, or its Lease is held by a replica that hangs,
placeholders still stop holding GPU nodes one `expire_after` after the last write.

Exit status: 0 after a pass (whatever it shrank, logged), 1 when the objects could not
be listed or a write failed (the CronJob's next run tries again), 2 on a bad config.

Must not: write anything but replica counts; grow an object; run without a config (the
floors and the namespace are the overprovisioner's, read from the same file).
"""

from __future__ import annotations

import argparse
import logging
import time
from typing import Any

import numpy as np

from common.errors import HeadstartError
from common.logs import configure_logging
from kube.client import load_api_client
from overprovisioner.config.catalog import make_plan_config
from overprovisioner.config.checked import load_checked_config
from overprovisioner.service.apply import Applier, KubeApi
from overprovisioner.service.expiry import shrink_to_floor

log = logging.getLogger("headstart.expire-placeholders")


def run(args: argparse.Namespace) -> int:
    configure_logging(args.log_format, "info")
    # A bad config or kubeconfig is a ConfigError: `headstart` prints it in one line, 2.
    # The file is checked as the overprovisioner checks it, with the same warnings.
    checked = load_checked_config(args.config)
    for warning in checked.warnings:
        log.warning("config: %s", warning)
    config = checked.config
    api_client = load_api_client(args.kubeconfig)
    try:
        shrunk = expire_once(config, api_client, time.time())
    except HeadstartError as error:
        log.error("expiry pass failed; the next run tries again: %s", error)
        return 1
    if shrunk:
        log.warning("placeholders not renewed in time scaled to the floor by the expiry "
                    "job: %s", ", ".join(shrunk))
    else:
        log.info("no placeholder past its valid-until")
    return 0


def expire_once(config: Any, api_client: Any, now_s: float) -> list[str]:
    """One pass: the objects shrunk, as "LABEL to N". Raises HeadstartError on the first
    API failure (after the config's retries)."""

    applier = Applier(KubeApi(api_client, config.api.timeout_s), config,
                      np.random.default_rng(), time.sleep)
    observed = applier.observe()
    plan_config = make_plan_config(config)
    floors = {name: plan_config.limits(name).min for name in config.instance_types}
    shrunk = []
    for key, replicas in sorted(shrink_to_floor(observed.objects, now_s, floors).items(),
                                key=lambda item: item[0][3]):
        label = applier.scale(key, replicas, observed.objects[key].get("metadata"))
        shrunk.append(f"{label} to {replicas}")
    return shrunk
