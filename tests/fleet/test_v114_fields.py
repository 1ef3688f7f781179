"""Karpenter v1.14 fields that import refused or dropped before: the windows2025 alias and Windows2025 family,
capacityReservationSelectorTerms, ipPrefixCount and context on EC2NodeClass, and the objects' own
metadata.labels and metadata.annotations — import, export, validation at the path, the form and the API."""

from __future__ import annotations

import textwrap
from typing import Any

import pytest
import yaml
from django.contrib.auth.models import User
from django.test import Client
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rest_framework.test import APIClient

from console.fleet import manifests, services, validation
from console.fleet.models import ChangeRecord, EC2NodeClass, NodePool
from tests.fleet.conftest import nodeclass_values, nodepool_values

# Written for these tests (not a copy of Karpenter's examples): every v1.14 feature the examples folder uses
# (several documents, object annotations, aliases of every family, amiFamily with terms, userData, kubelet,
# blockDeviceMappings, instanceStorePolicy, metadataOptions, minValues, limits, disruption, expireAfter and
# terminationGracePeriod), plus the three EC2NodeClass fields the examples do not show.
V114_FIXTURE = textwrap.dedent("""\
    # a Windows Server 2025 pool and its class
    apiVersion: karpenter.sh/v1
    kind: NodePool
    metadata:
      name: win25
      labels: {app.kubernetes.io/part-of: payments}
      annotations:
        kubernetes.io/description: "Windows 2025 nodes for the payments team"
    spec:
      template:
        metadata:
          labels: {team: payments}
        spec:
          requirements:
            - key: kubernetes.io/os
              operator: In
              values: ["windows"]
            - key: karpenter.k8s.aws/instance-family
              operator: In
              values: ["m6i", "m7i", "c6i"]
              minValues: 2
          nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: win25}
          expireAfter: 168h
          terminationGracePeriod: 2h
      disruption:
        consolidationPolicy: WhenEmpty
        consolidateAfter: 10m
      limits: {cpu: "200"}
    ---
    apiVersion: karpenter.k8s.aws/v1
    kind: EC2NodeClass
    metadata:
      name: win25
      annotations: {kubernetes.io/description: "Windows Server 2025 Core"}
    spec:
      amiSelectorTerms:
        - alias: windows2025@latest
      role: payments-nodes
      subnetSelectorTerms:
        - tags: {network: private}
      securityGroupSelectorTerms:
        - tags: {network: private}
      capacityReservationSelectorTerms:
        - tags: {reservation: payments}
          ownerID: "210987654321"
        - instanceMatchCriteria: open
      ipPrefixCount: 3
      context: c-9f8e7d
      metadataOptions:
        httpTokens: required
        httpPutResponseHopLimit: 2
    ---
    apiVersion: karpenter.k8s.aws/v1
    kind: EC2NodeClass
    metadata:
      name: win25-pinned
      labels: {tier: gold}
    spec:
      amiFamily: Windows2025
      amiSelectorTerms:
        - id: ami-0a1b2c3d4e5f60718
      instanceProfile: payments-profile
      subnetSelectorTerms:
        - id: subnet-0a1b2c3d
      securityGroupSelectorTerms:
        - id: sg-0a1b2c3d
      capacityReservationSelectorTerms:
        - id: cr-0a1b2c3d4e5f60718
      blockDeviceMappings:
        - deviceName: /dev/sda1
          ebs: {volumeSize: 80Gi, volumeType: gp3, deleteOnTermination: true}
      kubelet: {maxPods: 50}
      instanceStorePolicy: RAID0
      userData: |
        <powershell>
        Write-Host "hello"
        </powershell>
    """)


@pytest.fixture
def importer(db: Any) -> User:
    return User.objects.create_user(username="v114-importer", password="pw")


def _problems(result: services.ImportResult) -> list[str]:
    return [str(p) for p in result.problems]


def test_v114_fixture_imports_and_exports_unchanged(importer: User) -> None:
    result = services.karpenter_import(texts=[("v114.yaml", V114_FIXTURE)], user=importer)
    assert _problems(result) == []
    assert sorted(result.created) == ["EC2NodeClass/win25", "EC2NodeClass/win25-pinned", "NodePool/win25"]
    pool, win25 = NodePool.objects.get(name="win25"), EC2NodeClass.objects.get(name="win25")
    assert pool.metadata_labels == {"app.kubernetes.io/part-of": "payments"}
    assert pool.metadata_annotations == {"kubernetes.io/description": "Windows 2025 nodes for the payments team"}
    assert win25.capacity_reservation_selector_terms == [{"tags": {"reservation": "payments"}, "ownerID": "210987654321"},
                                                         {"instanceMatchCriteria": "open"}]
    assert (win25.ip_prefix_count, win25.context) == (3, "c-9f8e7d")
    objects = [pool, win25, EC2NodeClass.objects.get(name="win25-pinned")]
    exported = services.karpenter_export(objects)
    docs = list(yaml.safe_load_all(exported))
    assert docs[0]["metadata"]["annotations"] == {"kubernetes.io/description": "Windows 2025 nodes for the payments team"}
    assert docs[1]["spec"]["ipPrefixCount"] == 3 and docs[1]["spec"]["context"] == "c-9f8e7d"
    assert docs[2]["spec"]["capacityReservationSelectorTerms"] == [{"id": "cr-0a1b2c3d4e5f60718"}]
    # every value the fixture gives comes back (export adds only the CRD defaults the API server would)
    originals = list(yaml.safe_load_all(V114_FIXTURE))
    for original, doc in zip(originals, docs, strict=True):
        for key in ("labels", "annotations"):
            assert doc["metadata"].get(key) == original["metadata"].get(key)
        for key, value in original["spec"].items():
            if key == "disruption":   # the CRD's default budget is added
                assert doc["spec"][key] == {**value, "budgets": [{"nodes": "10%"}]}
            elif key != "template":
                assert doc["spec"][key] == value, key
    history = ChangeRecord.objects.count()
    again = services.karpenter_import(texts=[("export", exported)], user=importer)
    assert _problems(again) == [] and sorted(again.unchanged) == sorted(result.created)
    assert ChangeRecord.objects.count() == history
    assert services.karpenter_export(objects) == exported


def _nodeclass_doc(**spec: Any) -> str:
    doc = yaml.safe_load(V114_FIXTURE.split("---\n")[1])
    doc["spec"].update(spec)
    return yaml.safe_dump(doc)


@pytest.mark.parametrize(("spec", "path", "message"), [
    ({"amiSelectorTerms": [{"alias": "windows2025@v1"}]}, "spec.amiSelectorTerms[0].alias",
     "windows families may only use version 'latest'"),
    ({"amiSelectorTerms": [{"alias": "windows2026@latest"}]}, "spec.amiSelectorTerms[0].alias", "family 'windows2026'"),
    ({"amiFamily": "Windows2022"}, "spec.amiFamily", "must be Windows2025 or Custom"),
    ({"capacityReservationSelectorTerms": []}, "spec.capacityReservationSelectorTerms", "may not be empty"),
    ({"capacityReservationSelectorTerms": [{"ownerID": "123456789012"}]}, "spec.capacityReservationSelectorTerms[0]",
     "expected at least one, got none, ['tags', 'id', 'instanceMatchCriteria']"),
    ({"capacityReservationSelectorTerms": [{"id": "cr-1", "instanceMatchCriteria": "open"}]},
     "spec.capacityReservationSelectorTerms", "'id' is mutually exclusive"),
    ({"capacityReservationSelectorTerms": [{"id": "reservation-1"}]}, "spec.capacityReservationSelectorTerms[0].id",
     "'reservation-1' should match '^cr-[0-9a-z]+$'"),
    ({"capacityReservationSelectorTerms": [{"tags": {"a": "b"}, "ownerID": "12"}]},
     "spec.capacityReservationSelectorTerms[0].ownerID", "'12' should match"),
    ({"capacityReservationSelectorTerms": [{"instanceMatchCriteria": "closed"}]},
     "spec.capacityReservationSelectorTerms[0].instanceMatchCriteria", "'closed' is not one of open, targeted"),
    ({"capacityReservationSelectorTerms": [{"tags": {"a": ""}}]}, "spec.capacityReservationSelectorTerms[0].tags[a]",
     "empty tag keys or values"),
    ({"capacityReservationSelectorTerms": [{"tags": {"a": "b"}, "zone": "x"}]},
     "spec.capacityReservationSelectorTerms[0]", "unknown field(s) zone"),
    ({"ipPrefixCount": -1}, "spec.ipPrefixCount", "must be a non-negative integer"),
    ({"ipPrefixCount": "3"}, "spec.ipPrefixCount", "must be an integer"),
    ({"context": 7}, "spec.context", "must be a string"),
])
def test_bad_v114_nodeclass_fields_are_named_at_their_path_and_nothing_is_saved(
        importer: User, spec: dict[str, Any], path: str, message: str) -> None:
    result = services.karpenter_import(texts=[("bad.yaml", _nodeclass_doc(**spec))], user=importer)
    found = [(p.path, p.message) for p in result.problems]
    assert any(p == path and m.startswith(message) for p, m in found), found
    assert all(str(p).startswith("bad.yaml: document 1:") for p in result.problems)
    assert not EC2NodeClass.objects.exists() and not ChangeRecord.objects.exists()


@pytest.mark.parametrize(("metadata", "path", "message"), [
    ({"labels": {"app": "a b"}}, "metadata.labels[app]", "value 'a b' must be at most 63"),
    ({"labels": {"-bad": "x"}}, "metadata.labels[-bad]", "'-bad': name part"),
    ({"annotations": {"Bad_Prefix/x": "y"}}, "metadata.annotations[Bad_Prefix/x]", "'Bad_Prefix/x': prefix"),
    ({"annotations": {"note": 3}}, "metadata.annotations[note]", "annotation values must be strings"),
    ({"annotations": {"big": "x" * (validation.TOTAL_ANNOTATION_SIZE_LIMIT + 1)}}, "metadata.annotations",
     "annotations may not be larger than 262144 bytes"),
])
def test_bad_object_metadata_is_named_at_its_path(importer: User, metadata: dict[str, Any], path: str,
                                                  message: str) -> None:
    for index, kind in ((0, "NodePool"), (1, "EC2NodeClass")):
        doc = yaml.safe_load(V114_FIXTURE.split("---\n")[index])
        doc["metadata"] = {"name": "x", **metadata}
        result = services.karpenter_import(texts=[("m.yaml", yaml.safe_dump(doc))], user=importer)
        found = [(p.path, p.message) for p in result.problems]
        assert any(p == path and m.startswith(message) for p, m in found), (kind, found)
    assert not NodePool.objects.exists() and not EC2NodeClass.objects.exists()


def test_windows2025_family_has_karpenters_windows_defaults() -> None:
    from console.backends import aws
    nodeclass = {"ami_selector_terms": [{"alias": "windows2025@latest"}]}
    assert aws.ami_family(nodeclass) == "Windows2025"
    [root] = aws.block_device_mappings(nodeclass)
    assert root["DeviceName"] == "/dev/sda1" and root["Ebs"]["VolumeSize"] == 50


def test_form_edits_the_new_fields_with_errors_at_the_field(operator_client: Client) -> None:
    data = {
        "name": "win", "ami_family": "", "ami_selector_terms": "- alias: windows2025@latest",
        "subnet_selector_terms": "- tags: {k: v}", "security_group_selector_terms": "- tags: {k: v}",
        "role": "NodeRole", "instance_profile": "", "user_data": "",
        "capacity_reservation_selector_terms": "- instanceMatchCriteria: targeted\n  tags: {team: ml}",
        "ip_prefix_count": "2", "context": "c-1", "metadata_labels": "team=ml",
        "metadata_annotations": "kubernetes.io/description=Windows nodes",
    }
    page = operator_client.get("/nodeclasses/new/").content.decode()
    for name in ("capacity_reservation_selector_terms", "ip_prefix_count", "context", "metadata_labels",
                 "metadata_annotations"):
        assert f'name="{name}"' in page
    response = operator_client.post("/nodeclasses/new/", data)
    assert response.status_code == 302, response.content.decode()[:2000]
    nc = EC2NodeClass.objects.get(name="win")
    assert nc.capacity_reservation_selector_terms == [{"instanceMatchCriteria": "targeted", "tags": {"team": "ml"}}]
    assert (nc.ip_prefix_count, nc.context, nc.metadata_labels) == (2, "c-1", {"team": "ml"})
    assert nc.metadata_annotations == {"kubernetes.io/description": "Windows nodes"}
    bad = dict(data, name="win2", capacity_reservation_selector_terms="- id: cr-1\n  ownerID: '123456789012'",
               ip_prefix_count="-4", metadata_labels="team=a b")
    response = operator_client.post("/nodeclasses/new/", bad)
    assert response.status_code == 400
    errors = response.context["form"].errors
    assert "'id' is mutually exclusive" in errors["capacity_reservation_selector_terms"][0]
    assert "ip_prefix_count" in errors and "metadata_labels" in errors
    assert not EC2NodeClass.objects.filter(name="win2").exists()


def test_api_reads_writes_and_refuses_the_new_fields(operator_client: APIClient) -> None:
    values = nodeclass_values(ami_selector_terms=[{"alias": "windows2025@latest"}], ami_family="",
                              capacity_reservation_selector_terms=[{"id": "cr-0abc"}], ip_prefix_count=1,
                              context="c-2", metadata_annotations={"kubernetes.io/description": "d"})
    response = operator_client.post("/api/nodeclasses/", values, format="json")
    assert response.status_code == 201, response.content
    body = operator_client.get("/api/nodeclasses/default/").json()
    assert body["capacity_reservation_selector_terms"] == [{"id": "cr-0abc"}] and body["ip_prefix_count"] == 1
    assert body["context"] == "c-2" and body["metadata_annotations"] == {"kubernetes.io/description": "d"}
    for change, field in (({"ip_prefix_count": -1}, "ip_prefix_count"),
                          ({"capacity_reservation_selector_terms": [{"ownerID": "1"}]},
                           "capacity_reservation_selector_terms"),
                          ({"metadata_labels": {"a": "b c"}}, "metadata_labels")):
        response = operator_client.patch("/api/nodeclasses/default/", change, format="json")
        assert response.status_code == 400 and field in response.json(), response.content
    response = operator_client.post("/api/nodepools/", nodepool_values(metadata_labels={"x": "no spaces"}), format="json")
    assert response.status_code == 400 and "metadata_labels" in response.json()
    schema = operator_client.get("/api/schema/").content.decode()
    for name in ("capacity_reservation_selector_terms", "ip_prefix_count", "context", "metadata_annotations"):
        assert name in schema


_tag = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789-./*", min_size=1, max_size=12)
_term = st.one_of(
    st.builds(lambda i: {"id": f"cr-{i}"}, st.from_regex(r"\A[0-9a-z]{1,17}\Z")),
    st.fixed_dictionaries({"tags": st.dictionaries(_tag, _tag, min_size=1, max_size=3)},
                          optional={"ownerID": st.from_regex(r"\A[0-9]{12}\Z"),
                                    "instanceMatchCriteria": st.sampled_from(validation.INSTANCE_MATCH_CRITERIA)}),
    st.fixed_dictionaries({"instanceMatchCriteria": st.sampled_from(validation.INSTANCE_MATCH_CRITERIA)}))


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(terms=st.lists(_term, max_size=4), prefixes=st.one_of(st.none(), st.integers(0, validation.INT32_MAX)),
       context=st.text(max_size=20), annotations=st.dictionaries(st.sampled_from(["a", "kubernetes.io/description"]),
                                                                st.text(max_size=30), max_size=2))
def test_property_v114_nodeclass_fields_round_trip(terms: list[dict[str, Any]], prefixes: int | None, context: str,
                                                   annotations: dict[str, str]) -> None:
    values = {**nodeclass_values(), "capacity_reservation_selector_terms": terms, "ip_prefix_count": prefixes,
              "context": context, "metadata_annotations": annotations, "metadata_labels": {}}
    assert validation.check_nodeclass(values) == []
    (doc,) = manifests.load_yaml_documents(manifests.dump_yaml([manifests.nodeclass_to_manifest(values)]))
    imported, structural = manifests.fields_from_manifest(doc)
    assert structural == []
    assert {k: imported[k] for k in values} == values
