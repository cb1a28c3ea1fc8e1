"""Mutual TLS between the REAL kube-scheduler and the extender, as shipped (issue 27): the
headstart-scheduler configuration's extender stanza (`https://`, `enableHTTPS`,
`tlsConfig.certFile/keyFile/caFile`) and the extender config's `tls_cert_file`,
`tls_key_file`, `tls_client_ca_file`, with certificates the install docs' openssl
functions make (scheduler_tls.py; every e2e cluster runs this way). A gang of the real Job
controller is filtered, prioritized and bound through it; a client without a
certificate, with one another CA signed, or with the extender's own serving
certificate (same CA, server auth only) is refused in the handshake and binds nothing;
the ops port (probes) speaks plain HTTP and asks for no certificate.
"""

from __future__ import annotations

import ssl
import urllib.error
import urllib.request

import pytest
import requests

from tests.e2e.headstart import Extender, headstart_cluster
from tests.e2e.objects import kwok_node
from tests.e2e.scheduler_tls import scheduler_pki
from tests.e2e.test_gang import groups_of, indexed_job, run_job
from tests.tlscerts import authority, signed

LOGS = ["headstart-scheduler", "headstart-extender"]


@pytest.fixture(scope="module")
def mtls_cluster(e2e_clusters):
    spec, port = headstart_cluster()
    [stanza] = spec.schedulers["headstart-scheduler"]["extenders"]
    assert stanza["urlPrefix"] == f"https://127.0.0.1:{port}" and stanza["enableHTTPS"]
    cluster = e2e_clusters.start(spec, "scheduler-mtls")
    for name, group in (("a-0", "pg-a"), ("a-1", "pg-a")):
        cluster.kube.create("/api/v1/nodes", kwok_node(name, memory="768Gi", group=group))
    extender = Extender(cluster, port=port)
    extender.start().wait_ready()
    yield cluster, port, extender
    cluster.stop()


def test_the_scheduler_binds_through_mutual_tls_and_strangers_are_refused(
        mtls_cluster, namespace, e2e_timings, tmp_path):
    cluster, port, extender = mtls_cluster
    pki = scheduler_pki()
    cluster.kube.ensure_namespace(namespace)
    run_job(cluster, namespace, indexed_job("mtls", 2))
    assert cluster.wait("the gang bound through the extender", lambda: groups_of(
        cluster, namespace, "mtls", 2), 90, LOGS) == ["pg-a"]
    # The ops port: plain HTTP, no certificate asked (kubelet's probes, Prometheus).
    assert requests.get(f"http://127.0.0.1:{extender.ops_port}/readyz", timeout=5).ok

    stranger = signed(tmp_path, authority(tmp_path, "someone-else"), "tenant",
                      "extendedKeyUsage=clientAuth")
    body = (b'{"PodName": "mtls-0", "PodNamespace": "' + namespace.encode()
            + b'", "PodUID": "x", "Node": "a-1"}')
    for who, cert in (("no certificate", None), ("another CA's", stranger),
                      ("the extender's serving certificate", pki.server)):
        context = ssl.create_default_context(cafile=str(pki.ca))
        if cert is not None:
            context.load_cert_chain(str(cert[0]), str(cert[1]))
        request = urllib.request.Request(f"https://127.0.0.1:{port}/bind", data=body,
                                         headers={"Content-Type": "application/json"})
        with pytest.raises((ssl.SSLError, urllib.error.URLError, ConnectionError)):
            urllib.request.urlopen(request, timeout=5, context=context).read()
            pytest.fail(f"a client with {who} reached /bind")
    # nothing moved: the pods are where the scheduler bound them
    pods = cluster.kube.list(f"/api/v1/namespaces/{namespace}/pods",
                             label_selector="headstart.io/job=mtls")
    assert sorted(p["spec"]["nodeName"] for p in pods) == ["a-0", "a-1"], pods
