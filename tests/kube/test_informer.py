"""The one list+watch implementation (`kube.informer`): its relist, resume, backoff and
timeout rules, tested once here for every user (the extender's cache, the recorder, the
known-demand reader, the overprovisioner's wake-up); against the fake API server over
real HTTP where the server's behaviour matters, with scripted responses where the
timing does."""

from __future__ import annotations

import threading
import time

from kube.informer import Informer, ListWatch, WatchSettings


def pod(name: str, namespace: str = "team") -> dict:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"containers": [{"name": "main"}], "nodeName": "n1"}}


def wait_for(condition, timeout=10.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.02)
    return False


def run_informer(informer):
    stop = threading.Event()
    thread = threading.Thread(target=informer.run, args=(stop,), daemon=True)
    thread.start()
    return stop, thread


def name_of(obj):
    return obj["metadata"]["name"]


def test_resumes_after_a_stop_relists_after_410_gone_and_recovers_from_errors(fake_kube):
    from kubernetes import client

    core = client.CoreV1Api(fake_kube.api_client())
    settings = WatchSettings(watch_timeout_seconds=1, backoff_initial_seconds=0.05,
                             backoff_max_seconds=0.2)
    pods = Informer("pods", core.list_pod_for_all_namespaces, name_of, settings)
    fake_kube.create(pod("early"))
    stop, thread = run_informer(pods)
    assert pods.synced.wait(10) and pods.items() == {"team/early": "early"}
    stop.set()
    thread.join(5)
    # While it is stopped the cluster changes and the history is compacted; resumed, its
    # watch from the old resourceVersion gets 410 Gone and it relists once.
    fake_kube.create(pod("late"))
    fake_kube.expire_history()
    assert pods.status.relists_total == 0  # the first list is no relist
    stop, thread = run_informer(pods)
    try:
        assert wait_for(lambda: "team/late" in pods.items())
        assert pods.status.relists_total == 1 and pods.status.errors_total == 0
        # The next two API calls fail (the re-opened watch, twice): back off, resume.
        fake_kube.fail_next("GET", "/api/v1/pods", 500, count=2)
        fake_kube.create(pod("later"))
        assert wait_for(lambda: "team/later" in pods.items() and pods.status.errors_total == 2)
        assert wait_for(lambda: pods.status.failing_since is None)
        assert "500" in pods.status.last_error
        assert pods.status.relists_total == 1  # resumed from the last version, not relisted
        fake_kube.delete("v1", "Pod", "early", namespace="team")
        assert wait_for(lambda: "team/early" not in pods.items())
    finally:
        stop.set()
        thread.join(5)


def test_an_optional_kind_not_served_is_synced_and_empty(fake_kube):
    from kubernetes import client

    custom = client.CustomObjectsApi(fake_kube.api_client())
    delivered = []
    watch = ListWatch(
        "widgets.example.com",
        lambda **kw: custom.list_cluster_custom_object("example.com", "v1", "widgets", **kw),
        name_of, lambda op, payload: delivered.append((op, payload)),
        WatchSettings(optional_recheck_seconds=30), optional=True)
    watch.start()
    try:
        assert wait_for(lambda: watch.status.synced)
        assert watch.status.absent and watch.status.errors_total == 0
        assert delivered == [("replace", [])]
    finally:
        watch.stop()
        assert watch.join(5)


def test_an_object_that_does_not_parse_is_skipped_and_counted(fake_kube):
    from kubernetes import client

    from common.errors import InputError

    def parse(obj):
        if obj["metadata"]["name"].startswith("bad"):
            raise InputError("unreadable")
        return name_of(obj)

    core = client.CoreV1Api(fake_kube.api_client())
    fake_kube.create(pod("good"))
    fake_kube.create(pod("bad-1"))
    pods = Informer("pods", core.list_pod_for_all_namespaces, parse, WatchSettings())
    stop, thread = run_informer(pods)
    try:
        assert pods.synced.wait(10)
        assert pods.items() == {"team/good": "good"}
        assert pods.status.parse_errors_total == 1
    finally:
        stop.set()
        thread.join(5)


class _EmptyStream:
    """A watch response that ends at once without an event (a proxy cutting streams)."""

    status = 200

    def stream(self, amt=None, decode_content=False):
        return iter(())

    def close(self):
        pass

    def release_conn(self):
        pass


class _ListResponse:
    data = b'{"metadata": {"resourceVersion": "7"}, "items": []}'

    def release_conn(self):
        pass


class _CountingStop(threading.Event):
    """Stops the watch after `limit` waits; records what it was asked to wait."""

    def __init__(self, limit: int) -> None:
        super().__init__()
        self.waits: list[float] = []
        self.limit = limit

    def wait(self, timeout=None):
        self.waits.append(timeout)
        if len(self.waits) >= self.limit:
            self.set()
        return self.is_set()


def test_a_watch_that_ends_at_once_is_not_reopened_in_a_hot_loop():
    calls = {"watch": 0}

    def list_call(**kwargs):
        if kwargs.get("watch"):
            calls["watch"] += 1
            if calls["watch"] >= 200:
                stop.set()  # without a pause the loop only ends here
            return _EmptyStream()
        return _ListResponse()

    settings = WatchSettings(backoff_initial_seconds=0.5, backoff_max_seconds=4.0)
    informer = Informer("pods", list_call, lambda obj: None, settings)
    stop = _CountingStop(limit=3)
    informer.run(stop)
    # Each empty watch is followed by a pause of the initial backoff: 3 watches, 3 waits.
    assert calls["watch"] == 3
    assert stop.waits == [0.5, 0.5, 0.5]
    assert informer.status.errors_total == 0 and informer.synced.is_set()


def test_list_and_watch_calls_carry_a_read_timeout_and_the_callers_arguments():
    # A half-open connection (a load balancer dropping an idle stream) never ends a
    # watch by itself: without a client-side read timeout the cache would go stale while
    # looking fresh, and stale snapshots would be recorded as observed ticks.
    seen = []

    def list_call(**kwargs):
        seen.append(kwargs)
        return _EmptyStream() if kwargs.get("watch") else _ListResponse()

    settings = WatchSettings(watch_timeout_seconds=300)
    informer = Informer("pods", list_call, lambda obj: None, settings,
                        list_kwargs={"namespace": "headstart", "label_selector": "a=b"})
    informer.run(_CountingStop(limit=1))
    listed, watched = seen[0], seen[1]
    assert listed["_request_timeout"] == 60.0 and listed["limit"] == 500
    # connect 10 s; read the server's 300 s watch timeout plus 30 s of slack.
    assert watched["_request_timeout"] == (10.0, 330.0)
    assert watched["resource_version"] == "7" and watched["allow_watch_bookmarks"]
    for call in (listed, watched):
        assert (call["namespace"], call["label_selector"]) == ("headstart", "a=b")


class _OpenStream(_EmptyStream):
    """A watch response that streams nothing until the test ends it (a quiet cluster)."""

    def __init__(self, until: threading.Event) -> None:
        self.until = until

    def stream(self, amt=None, decode_content=False):
        self.until.wait(10)
        return iter(())


def test_a_resumed_watch_is_fresh_while_it_streams_not_only_when_it_ends():
    # Found by the e2e suite: a watch refused once (APF's 429 at start-up) and resumed
    # stayed "failing" until that watch ended (300 s), so the known-demand source it fed
    # was reported stale and left out of the plan for minutes.
    from kubernetes.client.exceptions import ApiException

    done = threading.Event()
    calls = {"watch": 0}

    def list_call(**kwargs):
        if not kwargs.get("watch"):
            return _ListResponse()
        calls["watch"] += 1
        if calls["watch"] == 1:
            raise ApiException(status=429, reason="Too Many Requests")
        return _OpenStream(done)

    settings = WatchSettings(backoff_initial_seconds=0.01, watch_timeout_seconds=300)
    informer = Informer("clusterqueues", list_call, lambda obj: None, settings)
    stop = threading.Event()
    thread = threading.Thread(target=informer.run, args=(stop,), daemon=True)
    thread.start()
    try:
        assert wait_for(lambda: calls["watch"] == 2 and informer.status.streaming)
        assert informer.status.errors_total == 1
        assert informer.status.failing_since is None
        assert informer.fresh(time.time(), max_stale_s=0.0)
    finally:
        stop.set()
        done.set()
        thread.join(5)


def test_a_sink_whose_loop_is_closed_ends_the_watch():
    def closed(op, payload):
        raise RuntimeError("Event loop is closed")

    def list_call(**kwargs):
        return _EmptyStream() if kwargs.get("watch") else _ListResponse()

    watch = ListWatch("pods", list_call, name_of, closed, WatchSettings())
    watch.start()
    assert watch.join(5)
