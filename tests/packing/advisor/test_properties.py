"""Properties of the advisor over random pools, pods and catalogs: it always runs; every NodePool fix is a
manifest the engine reads; a fix applied makes its finding go away; a merge patch applied twice is applied once."""

from __future__ import annotations

from typing import Any

import yaml
from hypothesis import given
from hypothesis import strategies as st

from packing.advisor import merge_patch
from packing.advisor.context import manifest_key
from packing.kubeobjects import Inputs, add_object
from tests.packing.advisor.helpers import codes, run
from tests.packing.test_properties import catalogs

# the codes whose fix, applied alone, must clear the finding
CLEARED_BY_FIX = {"LM102", "LM103", "LM111", "LM121", "LM122", "LM131", "LM141", "LM151", "LM152", "LM153", "LM163"}
ZONES = ["us-east-1a", "us-east-1b", "us-east-1c"]


@st.composite
def pools(draw: st.DrawFn, name: str) -> dict[str, Any]:
    reqs: list[dict[str, Any]] = []
    ct = draw(st.sampled_from([None, ["spot"], ["on-demand"], ["spot", "on-demand"]]))
    if ct:
        reqs.append({"key": "karpenter.sh/capacity-type", "operator": "In", "values": ct})
    zones = draw(st.lists(st.sampled_from(ZONES), max_size=2, unique=True))
    if zones:
        reqs.append({"key": "topology.kubernetes.io/zone", "operator": "In", "values": zones})
    if draw(st.booleans()):
        reqs.append({"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]})
    spec: dict[str, Any] = {"template": {"spec": {
        "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"},
        "requirements": reqs}}}
    if draw(st.booleans()):
        spec["template"]["spec"]["expireAfter"] = draw(st.sampled_from(["Never", "720h"]))
    if draw(st.booleans()):
        spec["template"]["spec"]["taints"] = [{"key": "dedicated", "value": name, "effect": "NoSchedule"}]
    if draw(st.booleans()):
        spec["limits"] = {"cpu": str(draw(st.integers(0, 40)))}
    disruption: dict[str, Any] = {}
    if draw(st.booleans()):
        disruption["consolidationPolicy"] = draw(st.sampled_from(["WhenEmpty", "WhenEmptyOrUnderutilized"]))
    if draw(st.booleans()):
        disruption["budgets"] = [{"nodes": draw(st.sampled_from(["0", "0%", "10%"]))}]
    if disruption:
        spec["disruption"] = disruption
    if draw(st.booleans()):
        spec["weight"] = draw(st.integers(1, 100))
    return {"apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": name}, "spec": spec}


@st.composite
def clusters(draw: st.DrawFn) -> list[dict[str, Any]]:
    docs: list[dict[str, Any]] = [draw(pools(n)) for n in ("a", "b")[: draw(st.integers(1, 2))]]
    for i in range(draw(st.integers(0, 3))):
        app = f"w{i}"
        spec: dict[str, Any] = {"containers": [{"name": "c", "image": "x", "resources": {"requests": {
            "cpu": draw(st.sampled_from(["250m", "1", "3"])), "memory": "1Gi"}}}]}
        if draw(st.booleans()):
            spec["tolerations"] = [{"key": "dedicated", "operator": "Exists"}]
        docs.append({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": app, "namespace": "default"},
                     "spec": {"replicas": draw(st.integers(1, 4)), "selector": {"matchLabels": {"app": app}},
                              "template": {"metadata": {"labels": {"app": app}}, "spec": spec}}})
        if draw(st.booleans()):
            field = draw(st.sampled_from([{"minAvailable": 4}, {"maxUnavailable": 0}, {"maxUnavailable": 1}]))
            docs.append({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                         "metadata": {"name": app, "namespace": "default"},
                         "spec": {**field, "selector": {"matchLabels": {"app": app}}}})
    return docs


def _text(docs: list[dict[str, Any]]) -> str:
    return yaml.safe_dump_all(docs, sort_keys=False)


@given(catalogs(), clusters())
def test_fixes_are_readable_and_clear_their_findings(types: Any, docs: list[dict[str, Any]]) -> None:
    adv = run(_text(docs), types)
    assert adv.summary()["findings"] == len(adv.findings)
    for f in adv.findings:
        if f.fix is None:
            continue
        i, doc = next((i, d) for i, d in enumerate(docs) if _fix_name(d) == (f.fix.kind, f.fix.name))
        patched = merge_patch(doc, f.fix.patch)
        add_object(patched, Inputs())  # the engine reads the fixed object (FieldError otherwise)
        if f.code in CLEARED_BY_FIX:
            after = run(_text([*docs[:i], patched, *docs[i + 1:]]), types)
            assert (f.code, f.objects) not in [(g.code, g.objects) for g in after.findings], (f.code, codes(after))


def _fix_name(doc: dict[str, Any]) -> tuple[str, str]:
    key = manifest_key(doc)
    assert key is not None
    kind, ns, name = key
    return kind, f"{ns}/{name}" if ns else name


@given(st.recursive(st.none() | st.integers() | st.text(max_size=3),
                    lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=3), c, max_size=3)),
       st.dictionaries(st.text(max_size=3), st.none() | st.integers() | st.dictionaries(
           st.text(max_size=3), st.none() | st.integers(), max_size=3), max_size=3))
def test_a_merge_patch_is_idempotent(target: Any, patch: dict[str, Any]) -> None:
    once = merge_patch(target, patch)
    assert merge_patch(once, patch) == once
