"""Checks of the certificates headstart's processes serve and present: the extender's
serving certificate and the scheduler's client certificate (mutual TLS on the
extender's port 8888) and, before 1.36, the gate webhook's.

Decides, for each, from the files the processes are configured to read (their configs'
paths, followed to the Secret keys mounted there, so a renamed Secret is followed too):
- the Secret and its keys exist (without them the pods wait in ContainerCreating);
- the key belongs to the certificate; it is valid now; `EXPIRING_S` before its end it
  warns (cert-manager renews 30 days before: a certificate this close to its end is not
  being renewed);
- it names the host its peer calls (the scheduler's urlPrefix, the webhook's Service),
  has the extended key usage its side needs, and is signed by a CA its peer trusts (the
  scheduler's ca.crt for the extender's certificate, the extender's client CA for the
  scheduler's, the webhook's caBundle for the gate's): otherwise the handshake fails and
  every pod of headstart-scheduler waits (or, for the gate, is refused).
Parsing needs the `cryptography` package (`certs.AVAILABLE`); without it only presence is
checked and the rest is reported as skipped.

Must not: call the API, log, read the clock (`now_s` comes in).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from headstart.check.core import certs
from headstart.check.core.configs import Installed
from headstart.check.core.observed import Observed
from headstart.check.core.result import Result, fail, ok, skip, warn

EXPIRING_S = 14 * 86400.0
MUTUAL_TLS_FIX = ("with cert-manager add ../manifests/components/scheduler-tls-cert-manager; "
                  "without it, run the docs' openssl block (docs/install-eks.md step 4, "
                  "\"Certificates\")")
GATE_FIX = ("with cert-manager add ../manifests/components/gate-webhook-cert-manager; without "
            "it, run the docs' openssl block (docs/install-eks.md step 4, \"Certificates\")")
NO_CRYPTOGRAPHY = "not parsed: install the cryptography package (pip install cryptography)"


@dataclass(frozen=True)
class Pem:
    """A PEM file a process reads: where it comes from and its bytes."""

    source: str
    data: bytes | None = None
    problem: str = ""
    """Why there are no bytes ("Secret headstart-extender-tls is missing")."""


def mounted_pem(observed: Observed, installed: Installed, component: str, path: str) -> Pem:
    """The file `path` of `component`'s container, from the Secret mounted there."""
    workload = installed.workloads.get(component)
    if workload is None:
        return Pem(path, problem=f"no {component} Deployment")
    source = workload.file_source(path)
    if source is None or source.kind != "secret":
        return Pem(path, problem=f"no Secret is mounted at {path} in {workload}")
    data = observed.secrets.get(source.name)
    if data is None:
        return Pem(str(source), problem=f"Secret {source.name} (mounted by {workload}) is "
                                        "missing")
    if source.key not in data:
        return Pem(str(source), problem=f"Secret {source.name} has no key {source.key}")
    return Pem(str(source), data[source.key])


def certificate(name: str, cert: Pem, key: Pem, trust: Pem, peer: str, host: str,
                usage: str, now_s: float, make_fix: str) -> Result:
    """One certificate a process presents. trust: what its peer trusts (`peer`, in
    words); host: the name the peer calls it by ("" for a client certificate); usage:
    the extended key usage its side needs."""
    for pem in (cert, key):
        if pem.data is None:
            return fail(name, f"{pem.problem}: the pods wait in ContainerCreating", make_fix)
    if not certs.AVAILABLE:
        return skip(name, f"{cert.source} and {key.source} are there; {NO_CRYPTOGRAPHY}")
    try:
        leaf = certs.load_certificates(cert.data)[0]
    except ValueError:
        return fail(name, f"{cert.source} is not a PEM certificate", make_fix)
    renew = f"make a new one and replace the Secret: {make_fix}"
    if not certs.key_matches(leaf, key.data):
        return fail(name, f"{key.source} is not the private key of {cert.source}", renew)
    if now_s < leaf.not_before_s:
        return fail(name, f"{cert.source} is not valid before {_day(leaf.not_before_s)}", renew)
    if now_s > leaf.not_after_s:
        return fail(name, f"{cert.source} expired on {_day(leaf.not_after_s)}: {peer} refuses "
                          "it", renew)
    if host and not certs.names_host(leaf, host):
        return fail(name, f"{cert.source} names {', '.join(leaf.names) or 'no host'}, not "
                          f"{host}, the name {peer} calls it by", renew)
    if leaf.usages and usage not in leaf.usages:
        return fail(name, f"{cert.source} is for {', '.join(sorted(leaf.usages))}, not "
                          f"{usage}", renew)
    if trust.data is None:
        return fail(name, f"{trust.problem}: {peer} has no CA to check {cert.source} with",
                    make_fix)
    try:
        authorities = certs.load_certificates(trust.data)
    except ValueError:
        return fail(name, f"{trust.source} is not a PEM CA bundle", make_fix)
    if not certs.signed_by(leaf, authorities):
        return fail(name, f"{cert.source} ({leaf.subject}) is not signed by a CA in "
                          f"{trust.source}, which {peer} trusts: the handshake fails",
                    f"sign both sides' certificates with one CA and put it in both ca.crt: "
                    f"{make_fix}")
    left = leaf.not_after_s - now_s
    if left < EXPIRING_S:
        return warn(name, f"{cert.source} expires on {_day(leaf.not_after_s)}, in "
                          f"{left / 86400:.0f} days: nothing renewed it", renew)
    return ok(name, f"{cert.source}: valid until {_day(leaf.not_after_s)}"
                    + (f", for {host}" if host else "") + f", signed by a CA {peer} trusts")


def _day(epoch_s: float) -> str:
    return datetime.fromtimestamp(epoch_s, UTC).strftime("%Y-%m-%d")


def extender_tls(observed: Observed, installed: Installed) -> Result:
    """The extender's serving certificate, as the scheduler checks it."""
    name = "tls/extender"
    config, scheduler = installed.extender.value, installed.scheduler.value
    if config is None or scheduler is None:
        return skip(name, "the extender's or the scheduler's config is not readable")
    if not config.tls_cert_file or not config.tls_key_file:
        return skip(name, "the extender serves plain HTTP (no tls_cert_file)")
    ca = scheduler.tls_files.get("caFile")
    trust = (mounted_pem(observed, installed, "scheduler", ca) if ca
             else Pem("", problem="the scheduler's tlsConfig names no caFile"))
    return certificate(name, mounted_pem(observed, installed, "extender", config.tls_cert_file),
                       mounted_pem(observed, installed, "extender", config.tls_key_file),
                       trust, "the headstart-scheduler", scheduler.extender_host, "serverAuth",
                       observed.now_s, MUTUAL_TLS_FIX)


def scheduler_tls(observed: Observed, installed: Installed) -> Result:
    """The scheduler's client certificate, as the extender checks it."""
    name = "tls/scheduler"
    config, scheduler = installed.extender.value, installed.scheduler.value
    if config is None or scheduler is None:
        return skip(name, "the extender's or the scheduler's config is not readable")
    if not config.tls_client_ca_file:
        return skip(name, "the extender asks for no client certificate (no tls_client_ca_file)")
    cert_file, key_file = scheduler.tls_files.get("certFile"), scheduler.tls_files.get("keyFile")
    if not cert_file or not key_file:
        return fail(name, "the extender requires a client certificate, and the scheduler's "
                          "tlsConfig names none: every call is refused in the handshake",
                    "ship the scheduler's config from manifests/base/scheduler")
    return certificate(name, mounted_pem(observed, installed, "scheduler", cert_file),
                       mounted_pem(observed, installed, "scheduler", key_file),
                       mounted_pem(observed, installed, "extender", config.tls_client_ca_file),
                       "the extender", "", "clientAuth", observed.now_s, MUTUAL_TLS_FIX)


def gate_tls(observed: Observed, installed: Installed) -> Result:
    """The gate webhook's serving certificate, as kube-apiserver checks it."""
    name = "tls/gate-webhook"
    webhook = observed.webhook
    if webhook is None:
        return skip(name, "no gate webhook (the MutatingAdmissionPolicy gates pods)")
    if not installed.gate_tls_dir:
        return skip(name, "the extender is not configured to serve the gate webhook")
    trust = Pem(f"MutatingWebhookConfiguration {webhook.name} caBundle",
                webhook.ca_bundle or None, problem=f"MutatingWebhookConfiguration "
                f"{webhook.name} has no caBundle")
    folder = installed.gate_tls_dir.rstrip("/")
    return certificate(name, mounted_pem(observed, installed, "extender", f"{folder}/tls.crt"),
                       mounted_pem(observed, installed, "extender", f"{folder}/tls.key"),
                       trust, "kube-apiserver", webhook.service, "serverAuth", observed.now_s,
                       GATE_FIX)
