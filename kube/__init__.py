"""Talking to the Kubernetes API the same way in every service: the client and its
credentials, which failed calls are retried and how (`kube.retry`), leader election on a
Lease, whether the API server answers, and what cluster-autoscaler's status ConfigMap
says; and the pure readings of Kubernetes objects every service shares: how many pods a
workload declares (`kube.replicas`), the workload kinds (`kube.kinds`) and every
`headstart.io/` key with the node labels that name a placement group (`kube.labels`).

Imports `common` only; every package that talks to a cluster builds on it.
"""
