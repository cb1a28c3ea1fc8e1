#!/usr/bin/env bash
# GKE node pools for headstart: GPU pools with compact placement, autoscaled from zero.
# GKE adds the nvidia.com/gpu=present:NoSchedule taint and installs the driver
# (gpu-driver-version=default), and labels GPU nodes cloud.google.com/gke-accelerator,
# the label by which GKE's cluster autoscaler tells a GPU node whose driver is not yet
# ready from a node without GPUs. Compact placement on GKE Standard puts a pool's nodes
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

# The small GPU pool is a placement group of its own (pg-b), so a job that requires
# one group (headstart.io/placement-group: required, as the example TFJob and
# PyTorchJob do) can run on it; G2 supports compact placement, but check your
# machine type's (GKE "Define compact placement for GKE nodes").
gcloud container node-pools create g2-standard-4-pg-b \
  --cluster "$CLUSTER" --zone "$ZONE" \
  --machine-type g2-standard-4 \
  --accelerator type=nvidia-l4,count=1,gpu-driver-version=default \
  --placement-type COMPACT --placement-policy headstart-pg-b \
  --node-labels headstart.io/placement-group=pg-b \
  --enable-autoscaling --min-nodes 0 --max-nodes 16 --num-nodes 0
