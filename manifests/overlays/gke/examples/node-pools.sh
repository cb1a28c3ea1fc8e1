#!/usr/bin/env bash
# GKE node pools for headstart: GPU pools with compact placement, autoscaled from zero.
# GKE adds the nvidia.com/gpu=present:NoSchedule taint and installs the driver
# (gpu-driver-version=default). Compact placement on GKE Standard puts a pool's nodes
# close together but gives them no label naming the placement (the
# cloud.google.com/gke-placement-group label is an Autopilot node selector), so each
# compact pool labels its nodes headstart.io/placement-group itself (--node-labels); the
# extender and the overprovisioner read that label, and GKE's cluster autoscaler knows
# it from the pool's configuration even while the pool is at zero.
set -euo pipefail
CLUSTER=${CLUSTER:-training}
ZONE=${ZONE:-us-central1-a}

gcloud container node-pools create a2-highgpu-8g-pg-a \
  --cluster "$CLUSTER" --zone "$ZONE" \
  --machine-type a2-highgpu-8g \
  --accelerator type=nvidia-tesla-a100,count=8,gpu-driver-version=default \
  --placement-type COMPACT --placement-policy headstart-pg-a \
  --node-labels headstart.io/placement-group=pg-a \
  --enable-autoscaling --min-nodes 0 --max-nodes 4 --num-nodes 0

# No compact placement, so no placement-group label: the extender treats these nodes
# as outside any group.
gcloud container node-pools create g2-standard-4 \
  --cluster "$CLUSTER" --zone "$ZONE" \
  --machine-type g2-standard-4 \
  --accelerator type=nvidia-l4,count=1,gpu-driver-version=default \
  --enable-autoscaling --min-nodes 0 --max-nodes 16 --num-nodes 0
