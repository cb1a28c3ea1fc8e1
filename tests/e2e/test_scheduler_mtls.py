"""Mutual TLS between the REAL kube-scheduler and the extender (issue 27): the shipped
headstart-scheduler configuration, its extender stanza switched to HTTPS with a client
certificate (`enableHTTPS`, `tlsConfig.certFile/keyFile/caFile`), against an extender with
`tls_client_ca_file`. A gang of the real Job controller is filtered, prioritized and bound
through it; a client without a certificate, or with one another CA signed, is refused in
the handshake and binds nothing; the ops port (probes) asks for no certificate.

Certificates are made here with openssl: a CA for this cluster, the extender's serving
certificate (IP 127.0.0.1) and the scheduler's client certificate, both signed by it.
"""

from __future__ import annotations

import shutil
import ssl
import urllib.error
import urllib.request
from pathlib import Path

import pytest
import requests

from tests.e2e.headstart import Extender, headstart_cluster
from tests.e2e.objects import kwok_node
from tests.e2e.test_gang import groups_of, indexed_job, run_job
from tests.tlscerts import authority, signed

LOGS = ["headstart-scheduler", "headstart-extender"]
HEADSTART_SCHEDULER = "headstart-scheduler"


class TlsExtender(Extender):
    """The extender whose ops port speaks HTTPS too (same serving certificate)."""

    ca: Path

    def get(self, path: str) -> requests.Response:
        return requests.get(f"https://127.0.0.1:{self.ops_port}{path}", timeout=5,
                            verify=str(self.ca))


@pytest.fixture(scope="module")
def mtls_cluster(e2e_clusters, tmp_path_factory):
    if shutil.which("openssl") is None:
        pytest.skip("openssl is not installed")
    folder = tmp_path_factory.mktemp("pki")
    ca = authority(folder, "headstart-scheduler-ca")
    server = signed(folder, ca, "headstart-extender", "subjectAltName=IP:127.0.0.1")
    client = signed(folder, ca, "headstart-scheduler", "extendedKeyUsage=clientAuth")
    spec, port = headstart_cluster()
    [stanza] = spec.schedulers[HEADSTART_SCHEDULER]["extenders"]
    stanza["urlPrefix"] = f"https://127.0.0.1:{port}"
    stanza["enableHTTPS"] = True
    stanza["tlsConfig"] = {"certFile": str(client[0]), "keyFile": str(client[1]),
                           "caFile": str(ca[0])}
    cluster = e2e_clusters.start(spec, "scheduler-mtls")
    for name, group in (("a-0", "pg-a"), ("a-1", "pg-a")):
        cluster.kube.create("/api/v1/nodes", kwok_node(name, memory="768Gi", group=group))
    extender = TlsExtender(cluster, port=port, settings={
        "tls_cert_file": str(server[0]), "tls_key_file": str(server[1]),
        "tls_client_ca_file": str(ca[0])})
    extender.ca = ca[0]
    extender.start().wait_ready()
    yield cluster, port, folder, ca
    cluster.stop()


def test_the_scheduler_binds_through_mutual_tls_and_strangers_are_refused(
        mtls_cluster, namespace, e2e_timings):
    cluster, port, folder, ca = mtls_cluster
    cluster.kube.ensure_namespace(namespace)
    run_job(cluster, namespace, indexed_job("mtls", 2))
    assert cluster.wait("the gang bound through the extender", lambda: groups_of(
        cluster, namespace, "mtls", 2), 90, LOGS) == ["pg-a"]

    stranger = signed(folder, authority(folder, "someone-else"), "tenant",
                      "extendedKeyUsage=clientAuth")
    body = (b'{"PodName": "mtls-0", "PodNamespace": "' + namespace.encode()
            + b'", "PodUID": "x", "Node": "a-1"}')
    for who, cert in (("no certificate", None), ("another CA's", stranger)):
        context = ssl.create_default_context(cafile=str(ca[0]))
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
