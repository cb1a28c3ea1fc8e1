"""The install steps users paste from docs/install-eks.md and docs/install-gke.md work,
run whole by bash with a kubectl that reports the control plane's version: the
kustomization the block writes renders with the scheduler for that minor, the user's
headstart image (docs/image.md), and the placement gate that minor serves (the policy
from 1.36, the extender's webhook before, its certificate from cert-manager or from the
docs' openssl block); the tuned buckets reach the overprovisioner, which starts on them.
tests/e2e/test_install_walkthrough.py applies the same blocks to a real kube-apiserver."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.manifests import checks

# `kubectl get --raw /version` on EKS (a "+" after the minor) and on GKE.
VERSIONS = [
    '{\n  "major": "1",\n  "minor": "33+",\n  "gitVersion": "v1.33.5-eks-3025e55"\n}',
    '{\n  "major": "1",\n  "minor": "35",\n  "gitVersion": "v1.35.2-gke.1485000"\n}',
]


def sh_block(doc: str, *marks: str, what: str) -> str:
    """The one ```sh block of `doc` holding every one of `marks`."""
    text = (checks.REPO / doc).read_text()
    blocks = [b for b in re.findall(r"```sh\n(.*?)```", text, flags=re.S)
              if all(mark in b for mark in marks)]
    assert len(blocks) == 1, f"{doc}: expected one block {what}, found {len(blocks)}"
    return blocks[0]


def install_block(doc: str) -> str:
    return sh_block(doc, "cat > my-cluster/kustomization.yaml", what="writing my-cluster")


def buckets_block(doc: str) -> str:
    return sh_block(doc, "headstart buckets tune", "my-cluster",
                    what="putting the tuned buckets in my-cluster")


def self_signed_block(doc: str) -> str:
    return sh_block(doc, "openssl req -x509", what="making the certificates")


@pytest.mark.parametrize("raw, minor", list(zip(VERSIONS, ["33", "35"], strict=True)),
                         ids=["eks", "gke"])
def test_the_documented_command_reads_the_control_planes_minor(raw, minor):
    line = next(line for line in install_block("docs/install-eks.md").splitlines()
                if line.startswith("MINOR="))
    program = re.search(r"sed -n '([^']*)'", line).group(1)
    found = subprocess.run(["sed", "-n", program], input=raw, capture_output=True, text=True,
                           check=True).stdout.strip()
    assert found == minor


IMAGE = "123456789012.dkr.ecr.us-east-1.amazonaws.com/headstart@sha256:" + "3f1c" * 16
EXTENDER_IMAGE = ("123456789012.dkr.ecr.us-east-1.amazonaws.com/headstart-extender@sha256:"
                  + "7a1e" * 16)


FAKE_KUBECTL = """#!/bin/sh
# kubectl for blocks run without a cluster: answers the version and whether cert-manager
# is installed as FAKE_MINOR and FAKE_CERT_MANAGER say (FAKE_MINOR=unreachable: as kubectl
# does with no cluster to reach); records and skips everything else.
echo "$*" >> "$KUBECTL_CALLS"
case "$*" in
  "get --raw /version")
    if [ "$FAKE_MINOR" = unreachable ]; then
      echo "The connection to the server localhost:8080 was refused" >&2; exit 1
    fi
    printf '{"major": "1", "minor": "%s+"}\\n' "$FAKE_MINOR" ;;
  "get crd certificates.cert-manager.io") [ "$FAKE_CERT_MANAGER" = yes ] ;;
esac
"""


def headstart_command(folder: Path) -> Path:
    """A `headstart` for pasted blocks: this interpreter's on this checkout, whatever PATH
    holds (a pyenv shim or another install may shadow the virtualenv's command, and an
    editable install may point at another tree)."""
    folder.mkdir(parents=True, exist_ok=True)
    command = folder / "headstart"
    command.write_text(f'#!/bin/sh\nPYTHONPATH="{checks.REPO}" exec "{sys.executable}" '
                       '-m headstart "$@"\n')
    command.chmod(0o755)
    return command


def paste(tmp_path: Path, blocks: str, minor: str, cert_manager: bool, extra_path: str = "",
          images: dict[str, str] | None = None, shell: tuple[str, ...] = ("bash", "-euc")
          ) -> subprocess.CompletedProcess:
    """Run pasted `blocks` with `shell` from `tmp_path` holding a copy of manifests/ (the
    repository's root, as the docs say), with `images` (default: IMAGE and
    EXTENDER_IMAGE as docs/image.md step 3 leaves them) and a kubectl that reports
    Kubernetes 1.`minor`; its calls go to `tmp_path / "kubectl-calls"`."""
    shutil.copytree(checks.MANIFESTS, tmp_path / "manifests")
    (tmp_path / "bin").mkdir()
    fake = tmp_path / "bin" / "kubectl"
    fake.write_text(FAKE_KUBECTL)
    fake.chmod(0o755)
    calls = tmp_path / "kubectl-calls"
    calls.touch()
    images = {"IMAGE": IMAGE, "EXTENDER_IMAGE": EXTENDER_IMAGE} if images is None else images
    return subprocess.run([*shell, blocks], cwd=tmp_path, capture_output=True, text=True,
                          env={"PATH": f"{tmp_path / 'bin'}:{extra_path}/usr/bin:/bin",
                               **images, "FAKE_MINOR": minor, "KUBECTL_CALLS": str(calls),
                               "FAKE_CERT_MANAGER": "yes" if cert_manager else "no"})


def run_blocks(tmp_path: Path, blocks: str, minor: str, cert_manager: bool,
               extra_path: str = "") -> list[dict[str, Any]]:
    """`paste` the blocks, which must succeed; return what `my-cluster` renders to (the
    real kustomize)."""
    ran = paste(tmp_path, blocks, minor, cert_manager, extra_path)
    assert ran.returncode == 0, ran.stderr
    result = subprocess.run([shutil.which("kubectl"), "kustomize", str(tmp_path / "my-cluster")],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    return [obj for obj in yaml.safe_load_all(result.stdout) if obj]


@pytest.mark.parametrize("doc", ["docs/install-eks.md", "docs/install-gke.md"],
                         ids=["eks", "gke"])
@pytest.mark.parametrize(("minor", "scheduler_image", "gate"), [
    ("33", "registry.k8s.io/scheduler-plugins/kube-scheduler:v0.33.5", "webhook"),
    ("35", "registry.k8s.io/scheduler-plugins/kube-scheduler:v0.34.7", "webhook"),
    ("36", "registry.k8s.io/kube-scheduler:v1.36.2", "policy"),
])
def test_the_install_block_as_pasted_sets_images_scheduler_and_gate(
        tmp_path, doc, minor, scheduler_image, gate):
    """The whole block: the kustomization it writes carries the user's image, the
    scheduler for the control plane's minor (upstream kube-scheduler without Coscheduling
    where no scheduler-plugins release exists) and the gate that minor serves."""
    objects = run_blocks(tmp_path, install_block(doc), minor, cert_manager=True)
    images = {(obj["metadata"]["name"], container["name"]): container["image"]
              for obj in objects if obj["kind"] == "Deployment"
              for container in obj["spec"]["template"]["spec"]["containers"]}
    assert images[("headstart-scheduler", "kube-scheduler")] == scheduler_image
    assert images[("headstart-extender", "extender")] == EXTENDER_IMAGE
    assert images[("headstart-overprovisioner", "overprovisioner")] == IMAGE
    (scheduler_config,) = [o for o in objects if o["kind"] == "ConfigMap"
                           and o["metadata"]["name"].startswith("headstart-scheduler-config")]
    plugins = yaml.safe_dump(yaml.safe_load(scheduler_config["data"]["config.yaml"]))
    assert ("Coscheduling" in plugins) is (minor != "36")
    kinds = {obj["kind"] for obj in objects}
    assert ("MutatingAdmissionPolicy" in kinds) is (gate == "policy")
    assert ("MutatingWebhookConfiguration" in kinds) is (gate == "webhook")
    certificates = sorted(obj["metadata"]["name"] for obj in objects
                          if obj["kind"] == "Certificate")
    # Mutual TLS between the scheduler and the extender on every minor; the gate's
    # certificate where the webhook is.
    assert certificates == sorted(
        ["headstart-extender-tls", "headstart-scheduler-ca", "headstart-scheduler-tls"]
        + (["headstart-extender-gate", "headstart-gate-ca"] if gate == "webhook" else []))
    secrets = {obj["metadata"]["name"]: obj["spec"]["secretName"] for obj in objects
               if obj["kind"] == "Certificate"}
    mounted = {(obj["metadata"]["name"], volume["secret"]["secretName"])
               for obj in objects if obj["kind"] == "Deployment"
               for volume in obj["spec"]["template"]["spec"]["volumes"] if "secret" in volume}
    assert {("headstart-extender", secrets["headstart-extender-tls"]),
            ("headstart-scheduler", secrets["headstart-scheduler-tls"])} <= mounted
    calls = (tmp_path / "kubectl-calls").read_text()
    # The PodGroup CRD of the release in use, and none where no release is used.
    assert ("scheduler-plugins/v0." in calls) is (minor != "36")


@pytest.mark.parametrize("doc, overlay", [("docs/install-eks.md", "eks"),
                                          ("docs/install-gke.md", "gke")], ids=["eks", "gke"])
def test_the_tuned_buckets_reach_the_overprovisioner_through_the_users_kustomization(
        tmp_path, doc, overlay):
    """The install block, then the tuning block as pasted (the real `headstart buckets
    tune` on a one-day synthetic trace instead of `your-trace.csv`; no cluster to apply
    to): the rendered ConfigMap holds the copied config, reading the tuned file, and the
    overprovisioner loads exactly the tuned list from the two files as mounted."""
    from bucketing.bucket_file import read_bucket_file
    from overprovisioner.config.catalog import resolve_catalog
    from overprovisioner.config.load import load_config

    headstart = headstart_command(tmp_path / "headstart-bin")
    trace = tmp_path / "trace" / "trace.csv"
    trace.parent.mkdir()
    subprocess.run([headstart, "trace", "synth", "--days", "1", "--out", str(trace)],
                   check=True, capture_output=True)
    tune = buckets_block(doc).replace("your-trace.csv", str(trace))
    objects = run_blocks(tmp_path / "root", install_block(doc) + tune, "33", cert_manager=True,
                         extra_path=f"{headstart.parent}:")
    [configmap] = [obj for obj in objects if obj["kind"] == "ConfigMap"
                   and obj["metadata"]["name"].startswith("headstart-overprovisioner-config")]
    mounted = tmp_path / "etc-headstart"
    mounted.mkdir()
    for key, value in configmap["data"].items():
        (mounted / key).write_text(value)
    config = load_config(mounted / "config.yaml")
    # As the service checks it at start-up: the overlay's limits name its example types
    # (p4d.24xlarge), which this tuning leaves out; they are set aside, named, not fatal.
    resolve_catalog(config)
    tuned = read_bucket_file(tmp_path / "root" / "my-cluster" / "buckets.yaml")
    assert config.instance_types == tuned.names and len(tuned.names) > 0
    shipped = yaml.safe_load((checks.MANIFESTS / "overlays" / overlay /
                              "overprovisioner-config.yaml").read_text())
    assert config.catalog == shipped["catalog"] == tuned.catalog
    # Everything else is the overlay's own config.
    assert config.horizon_s > 0 and config.placeholders.scheduler_name == "headstart-scheduler"
    set_aside = sorted(set(shipped["limits"]["per_bucket"]) - set(tuned.names))
    assert set_aside or overlay == "gke"  # EKS: the one-day trace needs no p4d.24xlarge
    every_command_runs_on(tmp_path, headstart, tmp_path / "root" / "my-cluster", trace,
                          set_aside)


def commands_taking(option: str) -> set[str]:
    """The `headstart` subcommands with `option`."""
    import argparse

    from headstart.cli import build_parser

    [subparsers] = [action for action in build_parser()._actions
                    if isinstance(action, argparse._SubParsersAction)]
    return {name for name, parser in subparsers.choices.items()
            if any(option in action.option_strings for action in parser._actions)}


WARNING = re.compile(r"(?:WARNING \S+: config|headstart simulate: warning): (.*)")


def every_command_runs_on(tmp_path: Path, headstart: Path, folder: Path, trace: Path,
                          set_aside: list[str]) -> None:
    """Every command that takes the overprovisioner's `--config` runs on the copy the
    docs leave in `folder` (`simulate` to the end; the two that need a cluster until
    they reach for it), and each warns of the limits the tuning set aside (those of
    `set_aside`) in the same words, from the same check."""
    config = str(folder / "overprovisioner-config.yaml")
    no_cluster = str(tmp_path / "no-kubeconfig")
    commands = {
        "simulate": ["simulate", "--config", config, "--trace", str(trace), "--policy",
                     "reactive", "predictive", "--json"],
        "overprovisioner": ["overprovisioner", "--config", config, "--dry-run",
                            "--kubeconfig", no_cluster, "--log-format", "text"],
        "expire-placeholders": ["expire-placeholders", "--config", config,
                                "--kubeconfig", no_cluster, "--log-format", "text"],
    }
    assert set(commands) == commands_taking("--config") - {"extender"}  # its own config
    warned = {}
    for name, argv in commands.items():
        ran = subprocess.run([headstart, *argv], capture_output=True, text=True,
                             env={"PATH": "/usr/bin:/bin", "MPLBACKEND": "Agg"})
        errors = [line for line in ran.stderr.splitlines() if ": error: " in line]
        if name == "simulate":
            assert ran.returncode == 0 and not errors, ran.stderr
        else:  # past the config: the service's history volume, or the cluster
            assert ran.returncode == 2 and len(errors) == 1, ran.stderr
            assert "limits" not in errors[0] and ("history_path" in errors[0]
                                                  or no_cluster in errors[0]), errors[0]
        warned[name] = [m.group(1) for m in map(WARNING.search, ran.stderr.splitlines()) if m]
    assert warned["simulate"] == warned["overprovisioner"] == warned["expire-placeholders"]
    assert [w.split(":")[1].strip() for w in warned["simulate"]] == [
        f"limits.per_bucket.{name}" for name in set_aside]
    assert all(w.startswith(f"{config}: ") and "buckets_file" in w for w in warned["simulate"])


@pytest.mark.parametrize("doc", ["docs/install-eks.md", "docs/install-gke.md"],
                         ids=["eks", "gke"])
@pytest.mark.parametrize(("minor", "tag"), [
    ("30", "v0.30.12"), ("33", "v0.33.5"), ("34", "v0.34.7"),
    ("35", "v0.34.7"),  # one minor older than the control plane: within the skew policy
    ("36", "none"),  # no release yet: the upstream kube-scheduler, without Coscheduling
    ("37", "none"), ("40", "none"),
    ("29", None), ("", None), ("3", None),  # unsupported, or no minor read: stop
])
def test_the_documented_release_for_each_minor(doc, minor, tag):
    block = install_block(doc)
    case = block[block.index("case "):block.index("esac") + len("esac")]
    found = subprocess.run(["bash", "-euc", case + '\necho "TAG=$TAG"'], env={
        "PATH": "/usr/bin:/bin", "MINOR": minor}, capture_output=True, text=True)
    if tag is None:
        assert found.returncode != 0 and "TAG=" not in found.stdout
        assert found.stderr.startswith("stopped: no minor of 1.30 or newer")
    else:
        assert found.returncode == 0 and found.stdout.strip().splitlines()[-1] == f"TAG={tag}"


@pytest.mark.parametrize("doc", ["docs/install-eks.md", "docs/install-gke.md"],
                         ids=["eks", "gke"])
@pytest.mark.parametrize(("images", "minor", "message"), [
    ({"EXTENDER_IMAGE": EXTENDER_IMAGE}, "33",
     "IMAGE: set IMAGE to your headstart image by digest: docs/image.md, step 3"),
    ({"IMAGE": IMAGE}, "33", "EXTENDER_IMAGE: set EXTENDER_IMAGE to your extender image"),
    ({"IMAGE": IMAGE, "EXTENDER_IMAGE": ""}, "33", "EXTENDER_IMAGE: set EXTENDER_IMAGE"),
    (None, "unreachable", "stopped: no minor of 1.30 or newer from kubectl get --raw "
     "/version ('')"),
    (None, "29", "stopped: no minor of 1.30 or newer from kubectl get --raw /version ('29')"),
], ids=["no-image", "no-extender-image", "empty-extender-image", "no-cluster", "1.29"])
def test_the_install_block_stops_on_a_mistake_and_leaves_the_shell(tmp_path, doc, images,
                                                                  minor, message):
    """Pasted into a shell without `set -e` (an interactive one): the block stops at the
    mistake with a line naming it, writes no kustomization with an empty image or a
    guessed minor and applies nothing; the shell it was pasted into goes on."""
    ran = paste(tmp_path, install_block(doc) + "echo the-shell-goes-on\n", minor,
                cert_manager=True, images=images, shell=("bash", "-c"))
    assert ran.stdout.strip().splitlines()[-1] == "the-shell-goes-on"
    assert message in ran.stderr, ran.stderr
    assert "integer expression expected" not in ran.stderr
    assert not (tmp_path / "my-cluster").exists()
    assert "apply" not in (tmp_path / "kubectl-calls").read_text()


@pytest.mark.parametrize("doc", ["docs/install-eks.md", "docs/install-gke.md"],
                         ids=["eks", "gke"])
def test_the_certificate_and_tuning_blocks_stop_without_the_install_blocks_folder(tmp_path,
                                                                                 doc):
    for name, block in (("certificates", self_signed_block(doc)), ("tuning", buckets_block(doc))):
        folder = tmp_path / name
        folder.mkdir()
        ran = paste(folder, block + "echo the-shell-goes-on\n", "33", cert_manager=False,
                    shell=("bash", "-c"))
        assert ran.stdout.strip().splitlines()[-1] == "the-shell-goes-on"
        assert "my-cluster" in ran.stderr and "No such file or directory" in ran.stderr
        assert (folder / "kubectl-calls").read_text() == ""


def test_the_component_config_is_the_shipped_one_less_coscheduling():
    shipped = yaml.safe_load((checks.MANIFESTS / "base" / "scheduler" /
                              "scheduler-config.yaml").read_text())
    component = yaml.safe_load((checks.MANIFESTS / "components" / "without-coscheduling" /
                                "scheduler-config.yaml").read_text())
    profile = shipped["profiles"][0]
    assert profile.pop("plugins") == {
        "multiPoint": {"enabled": [{"name": "Coscheduling"}]},
        "queueSort": {"enabled": [{"name": "Coscheduling"}], "disabled": [{"name": "*"}]}}
    profile["pluginConfig"] = [c for c in profile["pluginConfig"] if c["name"] != "Coscheduling"]
    assert component == shipped


def _verify(tmp_path: Path, ca: bytes, cert: bytes, *options: str) -> None:
    (tmp_path / "check-ca.crt").write_bytes(ca)
    (tmp_path / "check.crt").write_bytes(cert)
    verified = subprocess.run(["openssl", "verify", "-CAfile", str(tmp_path / "check-ca.crt"),
                               *options, str(tmp_path / "check.crt")],
                              capture_output=True, text=True)
    assert verified.returncode == 0, verified.stdout + verified.stderr


@pytest.mark.skipif(shutil.which("openssl") is None, reason="openssl is not installed")
@pytest.mark.parametrize("doc", ["docs/install-eks.md", "docs/install-gke.md"],
                         ids=["eks", "gke"])
@pytest.mark.parametrize("minor", ["33", "36"])
def test_the_openssl_certificate_block_as_pasted(tmp_path, doc, minor):
    """Without cert-manager: the install block (which finds no cert-manager CRD), then the
    docs' openssl block. The extender's Secret serves the name the scheduler's urlPrefix
    calls, for server auth, and trusts the CA that signed the scheduler's client
    certificate, for client auth only; the scheduler's trusts the extender's. Before
    1.36 the gate's Secret holds a certificate for the webhook's Service name, signed
    by the CA that the webhook's caBundle carries. Nothing of cert-manager is left."""
    import base64

    objects = run_blocks(tmp_path, install_block(doc) + self_signed_block(doc), minor,
                         cert_manager=False)
    assert not [obj for obj in objects if obj["apiVersion"].startswith("cert-manager.io/")]
    secrets = {obj["metadata"]["name"]: obj for obj in objects if obj["kind"] == "Secret"}
    for secret in secrets.values():
        assert secret["type"] == "kubernetes.io/tls"
        assert secret["metadata"]["namespace"] == "headstart"

    def data(name: str, key: str) -> bytes:
        return base64.b64decode(secrets[name]["data"][key])

    (scheduler_config,) = [o for o in objects if o["kind"] == "ConfigMap"
                           and o["metadata"]["name"].startswith("headstart-scheduler-config")]
    [stanza] = yaml.safe_load(scheduler_config["data"]["config.yaml"])["extenders"]
    host = re.fullmatch(r"https://([^:/]+):\d+/?", stanza["urlPrefix"]).group(1)
    _verify(tmp_path, data("headstart-scheduler-tls", "ca.crt"),
            data("headstart-extender-tls", "tls.crt"), "-verify_hostname", host,
            "-purpose", "sslserver")
    _verify(tmp_path, data("headstart-extender-tls", "ca.crt"),
            data("headstart-scheduler-tls", "tls.crt"), "-purpose", "sslclient")
    with pytest.raises(AssertionError):  # the extender's own cannot pose as the scheduler
        _verify(tmp_path, data("headstart-extender-tls", "ca.crt"),
                data("headstart-extender-tls", "tls.crt"), "-purpose", "sslclient")
    assert ("headstart-extender-gate-tls" in secrets) is (minor == "33")
    if minor == "33":
        (webhook,) = [obj for obj in objects if obj["kind"] == "MutatingWebhookConfiguration"]
        service = webhook["webhooks"][0]["clientConfig"]["service"]
        _verify(tmp_path, base64.b64decode(webhook["webhooks"][0]["clientConfig"]["caBundle"]),
                data("headstart-extender-gate-tls", "tls.crt"), "-verify_hostname",
                f"{service['name']}.{service['namespace']}.svc")


def test_the_docs_look_for_placeholders_where_the_overlays_keep_them():
    namespaces = {yaml.safe_load((checks.MANIFESTS / "overlays" / overlay /
                                  "overprovisioner-config.yaml").read_text())
                  ["placeholders"]["namespace"] for overlay in ("eks", "gke")}
    [namespace] = namespaces
    text = (checks.REPO / "docs" / "install-eks.md").read_text()
    removing = text[text.index("## Removing it"):]
    assert f"live in the `{namespace}` namespace" in removing
    assert f"kubectl -n {namespace} get events --field-selector reason=NotTriggerScaleUp" in text
    assert f"kubectl -n {namespace} get deploy -l headstart.io/placeholder=true" in text


LOOKS = ("kubectl get", "kubectl -n", "kubectl describe", "kubectl logs", "curl ", "aws autoscaling describe")
"""Commands that only read (or forward a port to read): a block of them is pasted a
command at a time, and one failing stops nothing."""


@pytest.mark.parametrize("doc", ["docs/install-eks.md", "docs/install-gke.md"])
def test_every_block_that_changes_the_cluster_stops_at_its_first_mistake(doc):
    # A pasted block of several commands runs on after a failed one (a wrong context, a
    # missing file) unless it runs under set -e; a subshell keeps the user's shell.
    text = (checks.REPO / doc).read_text()
    unguarded = []
    for block in re.finditer(r"^( *)```sh\n(.*?)^\1```", text, re.S | re.M):
        commands = [line.strip() for line in block.group(2).replace("\\\n", "").splitlines()
                    if line.strip() and not line.strip().startswith("#")]
        if len(commands) < 2 or commands[0].startswith("( set -eu"):
            continue
        changes = [c for c in commands
                   if not c.startswith(LOOKS) or c.startswith("kubectl -n kubeflow rollout")]
        if changes:
            unguarded.append(f"{doc}:{text[:block.start()].count(chr(10)) + 1}: {changes[0]}")
    assert not unguarded, unguarded
