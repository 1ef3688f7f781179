"""Karpenter's legacy objects as v1 objects: karpenter.sh/v1alpha5 Provisioner, karpenter.k8s.aws/v1alpha1
AWSNodeTemplate, karpenter.sh/v1beta1 NodePool and karpenter.k8s.aws/v1beta1 EC2NodeClass become karpenter.sh/v1
NodePools and karpenter.k8s.aws/v1 EC2NodeClasses, as Karpenter's upgrade guides describe, with a report of every
field that moved, changed meaning, was written explicitly to keep the legacy behaviour, or has no v1 equivalent.

Pure: no Django, no cluster. Used by `python -m packing convert` (packing.convert_cli), by the readers of `plan`
and `consolidate` (packing.kubeobjects, through legacy_objects) and by the console's import with ?convert=1.
"""

from __future__ import annotations

from packing.legacy.batch import (
    LEGACY_KINDS,
    Conversion,
    Tagged,
    convert_object,
    convert_objects,
    convert_tagged,
    is_legacy,
    legacy_objects,
)
from packing.legacy.report import Action, Change

__all__ = [
    "LEGACY_KINDS",
    "Action",
    "Change",
    "Conversion",
    "Tagged",
    "convert_object",
    "convert_objects",
    "convert_tagged",
    "is_legacy",
    "legacy_objects",
]
