"""The fake API server answers the official kubernetes client the way a real one does.

These pin the behaviours the adapters rely on (list resourceVersion, watch resume and
410 Gone, 409s, server-side apply ownership, binding), so an adapter test that passes
against the fake is testing real semantics, not the fake's quirks.
"""

from __future__ import annotations

import pytest
from kubernetes import client, watch
from kubernetes.client.rest import ApiException


def make_pod(name: str, namespace: str = "default", labels: dict | None = None) -> dict:
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": labels or {}},
        "spec": {"containers": [{"name": "c", "image": "pause"}]},
    }


def make_deployment(name: str, replicas: int) -> dict:
    return {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "namespace": "headstart", "labels": {"app": name}},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "pause", "image": "registry.k8s.io/pause:3.10"}]},
            },
        },
    }


def test_list_returns_items_and_a_resource_version(fake_kube):
    fake_kube.create(make_pod("a", labels={"role": "ps"}))
    fake_kube.create(make_pod("b", labels={"role": "worker"}))
    core = client.CoreV1Api(fake_kube.api_client())
    listed = core.list_pod_for_all_namespaces()
    assert [p.metadata.name for p in listed.items] == ["a", "b"]
    assert int(listed.metadata.resource_version) >= 3
    only_ps = core.list_namespaced_pod("default", label_selector="role=ps")
    assert [p.metadata.name for p in only_ps.items] == ["a"]


def test_watch_resumes_from_a_resource_version(fake_kube):
    core = client.CoreV1Api(fake_kube.api_client())
    fake_kube.create(make_pod("a"))
    rv = core.list_namespaced_pod("default").metadata.resource_version
    fake_kube.create(make_pod("b"))
    fake_kube.delete("v1", "Pod", "a", "default")
    events = list(
        watch.Watch().stream(
            core.list_namespaced_pod, "default", resource_version=rv, timeout_seconds=1
        )
    )
    assert [(e["type"], e["object"].metadata.name) for e in events] == [
        ("ADDED", "b"), ("DELETED", "a"),
    ]


def test_watch_from_expired_resource_version_is_410(fake_kube):
    core = client.CoreV1Api(fake_kube.api_client())
    fake_kube.create(make_pod("a"))
    rv = core.list_namespaced_pod("default").metadata.resource_version
    fake_kube.create(make_pod("b"))
    fake_kube.expire_history()
    with pytest.raises(ApiException) as raised:
        for _ in watch.Watch().stream(
            core.list_namespaced_pod, "default", resource_version=rv, timeout_seconds=1
        ):
            pass
    assert raised.value.status == 410


def test_create_twice_is_409_already_exists(fake_kube):
    core = client.CoreV1Api(fake_kube.api_client())
    core.create_namespaced_pod("default", make_pod("a"))
    with pytest.raises(ApiException) as raised:
        core.create_namespaced_pod("default", make_pod("a"))
    assert raised.value.status == 409
    assert '"reason": "AlreadyExists"' in raised.value.body.replace("':", '":')


def test_replace_with_stale_resource_version_is_409(fake_kube):
    apps = client.AppsV1Api(fake_kube.api_client())
    created = apps.create_namespaced_deployment("headstart", make_deployment("d", 1))
    stale = created.metadata.resource_version
    fake_kube.replace({**make_deployment("d", 2)})
    body = make_deployment("d", 3)
    body["metadata"]["resourceVersion"] = stale
    with pytest.raises(ApiException) as raised:
        apps.replace_namespaced_deployment("d", "headstart", body)
    assert raised.value.status == 409


def test_delete_with_a_stale_precondition_is_409_and_keeps_the_object(fake_kube):
    apps = client.AppsV1Api(fake_kube.api_client())
    created = apps.create_namespaced_deployment("headstart", make_deployment("d", 1))
    fake_kube.replace({**make_deployment("d", 2)})
    stale = client.V1DeleteOptions(preconditions=client.V1Preconditions(
        uid=created.metadata.uid, resource_version=created.metadata.resource_version))
    with pytest.raises(ApiException) as raised:
        apps.delete_namespaced_deployment("d", "headstart", body=stale)
    assert raised.value.status == 409
    assert fake_kube.get("apps/v1", "Deployment", "d", "headstart") is not None
    current = fake_kube.get("apps/v1", "Deployment", "d", "headstart")["metadata"]
    apps.delete_namespaced_deployment("d", "headstart", body=client.V1DeleteOptions(
        preconditions=client.V1Preconditions(uid=current["uid"],
                                             resource_version=current["resourceVersion"])))
    assert fake_kube.get("apps/v1", "Deployment", "d", "headstart") is None


def test_eviction_deletes_the_pod_its_uid_names(fake_kube):
    core = client.CoreV1Api(fake_kube.api_client())
    created = core.create_namespaced_pod("default", make_pod("a"))

    def eviction(uid):
        return client.V1Eviction(metadata=client.V1ObjectMeta(name="a", namespace="default"),
                                 delete_options=client.V1DeleteOptions(
                                     preconditions=client.V1Preconditions(uid=uid)))

    with pytest.raises(ApiException) as raised:
        core.create_namespaced_pod_eviction("a", "default", eviction("other"))
    assert raised.value.status == 409
    core.create_namespaced_pod_eviction("a", "default", eviction(created.metadata.uid))
    assert fake_kube.get("v1", "Pod", "a", "default") is None


APPLY = "application/apply-patch+yaml"


def apply_deployment(fake_kube, body: dict, manager: str, force: bool = False) -> dict:
    apps = client.AppsV1Api(fake_kube.api_client())
    result = apps.patch_namespaced_deployment(
        body["metadata"]["name"], "headstart", body, field_manager=manager, force=force,
        _content_type=APPLY,
    )
    return fake_kube.api_client().sanitize_for_serialization(result)


def test_server_side_apply_owns_fields_and_conflicts_with_other_managers(fake_kube):
    created = apply_deployment(fake_kube, make_deployment("d", 2), "headstart-overprovisioner")
    assert created["spec"]["replicas"] == 2
    assert created["metadata"]["managedFields"][0]["manager"] == "headstart-overprovisioner"
    again = apply_deployment(fake_kube, make_deployment("d", 2), "headstart-overprovisioner")
    # an apply that changes nothing does not bump the resourceVersion
    assert again["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]
    with pytest.raises(ApiException) as raised:
        apply_deployment(fake_kube, make_deployment("d", 5), "someone-else")
    assert raised.value.status == 409
    assert "spec.replicas" in raised.value.body
    forced = apply_deployment(fake_kube, make_deployment("d", 5), "someone-else", force=True)
    assert forced["spec"]["replicas"] == 5


def test_apply_removes_fields_the_manager_stopped_applying(fake_kube):
    body = make_deployment("d", 1)
    body["metadata"]["annotations"] = {"headstart.io/reason": "forecast"}
    apply_deployment(fake_kube, body, "m")
    del body["metadata"]["annotations"]
    updated = apply_deployment(fake_kube, body, "m")
    assert "annotations" not in updated["metadata"]


def test_binding_sets_node_name_once(fake_kube):
    core = client.CoreV1Api(fake_kube.api_client())
    fake_kube.create(make_pod("a"))
    binding = client.V1Binding(
        metadata=client.V1ObjectMeta(name="a"),
        target=client.V1ObjectReference(kind="Node", name="node-1"),
    )
    core.create_namespaced_pod_binding("a", "default", binding, _preload_content=False)
    assert fake_kube.get("v1", "Pod", "a", "default")["spec"]["nodeName"] == "node-1"
    with pytest.raises(ApiException) as raised:
        core.create_namespaced_binding("default", binding, _preload_content=False)
    assert raised.value.status == 409


def test_binding_checks_the_pod_name_and_uid_precondition(fake_kube):
    core = client.CoreV1Api(fake_kube.api_client())
    created = fake_kube.create(make_pod("a"))
    fake_kube.create(make_pod("b"))
    target = client.V1ObjectReference(kind="Node", name="node-1")
    other = client.V1Binding(metadata=client.V1ObjectMeta(name="b"), target=target)
    with pytest.raises(ApiException) as raised:  # the URL names a, the Binding b
        core.create_namespaced_pod_binding("a", "default", other, _preload_content=False)
    assert raised.value.status == 400
    stale = client.V1Binding(metadata=client.V1ObjectMeta(name="a", uid="not-a"), target=target)
    with pytest.raises(ApiException) as raised:
        core.create_namespaced_pod_binding("a", "default", stale, _preload_content=False)
    assert raised.value.status == 409
    assert "nodeName" not in fake_kube.get("v1", "Pod", "a", "default")["spec"]
    exact = client.V1Binding(
        metadata=client.V1ObjectMeta(name="a", uid=created["metadata"]["uid"]), target=target)
    core.create_namespaced_pod_binding("a", "default", exact, _preload_content=False)
    assert fake_kube.get("v1", "Pod", "a", "default")["spec"]["nodeName"] == "node-1"


def test_discovery_serves_a_crd_group_only_when_enabled(fake_kube):
    apis = client.ApisApi(fake_kube.api_client())
    names = {g.name for g in apis.get_api_versions().groups}
    assert "autoscaling.x-k8s.io" not in names
    fake_kube.serve("autoscaling.x-k8s.io/v1alpha1")
    names = {g.name for g in apis.get_api_versions().groups}
    assert "autoscaling.x-k8s.io" in names


def test_injected_failures_are_answered_then_cleared(fake_kube):
    core = client.CoreV1Api(fake_kube.api_client())
    fake_kube.fail_next("GET", "/api/v1/nodes", 503)
    with pytest.raises(ApiException) as raised:
        core.list_node()
    assert raised.value.status == 503
    assert core.list_node().items == []
    assert ("GET", "/api/v1/nodes", "") in fake_kube.requests
