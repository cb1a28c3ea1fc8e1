#!/usr/bin/env bash
# GKE node pools for headstart: GPU pools with compact placement, autoscaled from zero.
# GKE adds the nvidia.com/gpu=present:NoSchedule taint and installs the driver
# (gpu-driver-version=default); compact placement labels the nodes with
# cloud.google.com/gke-placement-group, which headstart reads.
set -euo pipefail
CLUSTER=${CLUSTER:-training}
ZONE=${ZONE:-us-central1-a}

gcloud container node-pools create a2-highgpu-8g-pg-a \
  --cluster "$CLUSTER" --zone "$ZONE" \
  --machine-type a2-highgpu-8g \
  --accelerator type=nvidia-tesla-a100,count=8,gpu-driver-version=default \
  --placement-type COMPACT --placement-policy headstart-pg-a \
  --enable-autoscaling --min-nodes 0 --max-nodes 4 --num-nodes 0

gcloud container node-pools create g2-standard-4 \
  --cluster "$CLUSTER" --zone "$ZONE" \
  --machine-type g2-standard-4 \
  --accelerator type=nvidia-l4,count=1,gpu-driver-version=default \
  --enable-autoscaling --min-nodes 0 --max-nodes 16 --num-nodes 0
