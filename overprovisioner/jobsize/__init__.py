"""`headstart size`: one job's size from the command line, without a cluster.

The three rules the cluster applies, each called here, never restated: KALE's least
sufficient worker count (`predictor.models.throughput`), KOD2's weight
(`locality.admission.weight`) and DLRover-RM's warm start (`predictor.models.warm_start`
through `overprovisioner.planner.job_profile`). This package only reads flags and
files and prints the answers.
"""
