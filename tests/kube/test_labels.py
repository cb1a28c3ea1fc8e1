"""headstart's label, annotation and gate keys are spelt in one module, kube/labels.py:
a key written twice drifts (a reader and a writer that disagree by one letter)."""

from __future__ import annotations

import ast

from kube import labels
from tests.product_code import REPO, code_strings, product_modules

LABELS = REPO / "kube" / "labels.py"

# Messages of locality/admission/assign.py, left for the restructure of the admission
# package that runs beside this change (issue 48); each names the default key where the
# configured `locality.job_size_annotation` (or placement-group one) belongs.
NOT_YET = {
    ("locality/admission/assign.py", "annotation headstart.io/placement-group: none to let "),
    ("locality/admission/assign.py", "annotation headstart.io/job-size or its "),
    ("locality/admission/assign.py", "set the annotation headstart.io/job-size on its pods"),
    ("locality/admission/assign.py", "annotation headstart.io/job-size, a PodGroup"),
}


def test_no_product_module_but_kube_labels_spells_a_headstart_key():
    found = [(str(path.relative_to(REPO)), line, text)
             for path in product_modules() if path != LABELS
             for line, text in code_strings(path) if "headstart.io/" in text]
    left = [f"{path}:{line}: {text!r}" for path, line, text in found
            if not any(path == where and part in text for where, part in NOT_YET)]
    assert left == [], "a headstart.io/ key outside kube/labels.py: import it from there"
    # The exceptions are still needed (a fixed one must leave the list).
    for where, part in NOT_YET:
        assert any(path == where and part in text for path, _, text in found), (where, part)


def test_each_key_is_spelt_once_in_kube_labels():
    tree = ast.parse(LABELS.read_text())
    spelt = [(target.id, node.value.value) for node in tree.body
             if isinstance(node, ast.Assign | ast.AnnAssign)
             and isinstance(node.value, ast.Constant)
             for target in (node.targets if isinstance(node, ast.Assign) else [node.target])]
    values = [value for _, value in spelt]
    assert len(values) == len(set(values)), sorted(values)
    # The keys an annotation shares with a label are the same object, not a second copy.
    assert labels.PLACEMENT_GROUP_ANNOTATION is labels.PLACEMENT_GROUP_LABEL
    assert labels.GANG_JOB_ANNOTATION is labels.JOB_LABEL
    assert labels.PLACEMENT_GROUP_LABELS[0] == labels.PLACEMENT_GROUP_LABEL


def test_the_configurable_keys_default_to_kube_labels():
    from locality.admission.config import AdmissionConfig
    from locality.config import LocalityConfig
    from overprovisioner.config import PlaceholderConfig

    locality = LocalityConfig()
    assert (locality.job_size_annotation, locality.packing_annotation,
            locality.placeholder_label) == (labels.JOB_SIZE_ANNOTATION,
                                            labels.PACKING_ANNOTATION,
                                            labels.PLACEHOLDER_LABEL)
    assert (AdmissionConfig().gate, AdmissionConfig().domain_annotation) == (
        labels.PLACEMENT_GATE, labels.DOMAIN_ANNOTATION)
    assert PlaceholderConfig().placement_group_label == labels.PLACEMENT_GROUP_LABEL
