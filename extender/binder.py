"""The bind verb's side effect: create the pod's Binding through the API.

Decides: the Binding object and the call, both as kube-scheduler's DefaultBinder makes
them (pkg/scheduler/framework/plugins/defaultbinder: the pod's namespace, name and UID,
target the node, POSTed to the pod's `binding` subresource, which RBAC authorizes as
`create` on `pods/binding`), and how an API failure becomes the protocol's `Error`
text. The UID is a precondition: the API server refuses to bind a pod re-created under
the same name. The sync client runs in the default executor so the event loop keeps
serving filter and prioritize meanwhile.

Must not: record placements (the handler does, once the Binding exists).
"""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from typing import Protocol

from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException

from extender.wire import BindingArgs
from kube.client import discard


class Binder(Protocol):
    async def bind(self, args: BindingArgs) -> str:
        """Create the Binding; return "" on success, else the error text."""
        ...


class ApiBinder:
    """Creates `pods/binding` subresources with the official client."""

    def __init__(self, api_client: k8s.ApiClient, request_timeout_seconds: float = 3.0,
                 workers: int = 32):
        """request_timeout_seconds: below the scheduler's httpTimeout
        (`ExtenderConfig.bind_timeout_seconds`, checked at start-up); workers: Bindings
        created at once (`ExtenderConfig.bind_workers`)."""
        self._core = k8s.CoreV1Api(api_client)
        self._timeout = request_timeout_seconds
        self._workers = ThreadPoolExecutor(workers, thread_name_prefix="headstart-bind")

    async def bind(self, args: BindingArgs) -> str:
        metadata = {"name": args.pod_name, "namespace": args.pod_namespace}
        if args.pod_uid:
            metadata["uid"] = args.pod_uid  # a precondition: never bind a re-created pod
        body = {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": metadata,
            "target": {"apiVersion": "v1", "kind": "Node", "name": args.node},
        }
        def create() -> None:
            # POST /api/v1/namespaces/{ns}/pods/{name}/binding, as client-go's
            # Pods(ns).Bind does (not the `bindings` collection, a separate RBAC resource).
            response = self._core.create_namespaced_pod_binding(
                args.pod_name,
                args.pod_namespace,
                body,
                _preload_content=False,  # the generated model rejects the API's Binding echo
                _request_timeout=self._timeout,
            )
            discard(response)  # an unread body would poison the pooled connection

        try:
            await asyncio.get_running_loop().run_in_executor(self._workers, create)
        except ApiException as error:
            return (
                f"binding {args.pod_namespace}/{args.pod_name} to {args.node} failed: "
                f"API status {error.status} {error.reason}"
            )
        except Exception as error:  # noqa: BLE001 - network faults become the protocol's Error
            return (
                f"binding {args.pod_namespace}/{args.pod_name} to {args.node} failed: "
                f"{type(error).__name__}: {error}"
            )
        return ""
