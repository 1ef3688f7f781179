"""EC2NodeClass connectionTracking, cpuOptions, networkInterfaces and placementGroupSelector (Karpenter v1.14),
which import refused before: import and export unchanged, the CRD's rules at the field's path (import), at the
field (form) and in a 400 naming it (API), and the OpenAPI schema."""

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
from console.fleet.models import ChangeRecord, EC2NodeClass
from tests.fleet.conftest import nodeclass_values

# Written for these tests: a training class with an EFA card, a placement group and tuned conntrack timeouts.
FIXTURE = textwrap.dedent("""\
    apiVersion: karpenter.k8s.aws/v1
    kind: EC2NodeClass
    metadata:
      name: training
    spec:
      amiSelectorTerms:
        - alias: al2023@latest
      subnetSelectorTerms:
        - tags: {karpenter.sh/discovery: my-cluster}
      securityGroupSelectorTerms:
        - tags: {karpenter.sh/discovery: my-cluster}
      role: KarpenterNodeRole-my-cluster
      connectionTracking:
        tcpEstablishedTimeout: 7200
        udpTimeout: 30
      cpuOptions:
        nestedVirtualization: enabled
      networkInterfaces:
        - networkCardIndex: 0
          deviceIndex: 0
          interfaceType: interface
        - networkCardIndex: 1
          deviceIndex: 0
          interfaceType: efa-only
      placementGroupSelector:
        name: training-cluster
    """)


@pytest.fixture
def importer(db: Any) -> User:
    return User.objects.create_user(username="launch-importer", password="pw")


def test_import_stores_the_fields_and_export_gives_them_back_unchanged(importer: User) -> None:
    result = services.karpenter_import(texts=[("training.yaml", FIXTURE)], user=importer)
    assert [str(p) for p in result.problems] == [] and result.created
    nc = EC2NodeClass.objects.get(name="training")
    assert nc.connection_tracking == {"tcpEstablishedTimeout": 7200, "udpTimeout": 30}
    assert nc.cpu_options == {"nestedVirtualization": "enabled"}
    assert [ni["interfaceType"] for ni in nc.network_interfaces] == ["interface", "efa-only"]
    assert nc.placement_group_selector == {"name": "training-cluster"}
    exported = services.karpenter_export([nc])
    (doc,) = yaml.safe_load_all(exported)
    for key, value in yaml.safe_load(FIXTURE)["spec"].items():
        assert doc["spec"][key] == value, key
    again = services.karpenter_import(texts=[("export", exported)], user=importer)
    assert again.problems == [] and again.unchanged == result.created
    assert services.karpenter_export([EC2NodeClass.objects.get(name="training")]) == exported


def _doc(**spec: Any) -> str:
    doc = yaml.safe_load(FIXTURE)
    doc["spec"].update(spec)
    return yaml.safe_dump(doc)


_PRIMARY = {"networkCardIndex": 0, "deviceIndex": 0, "interfaceType": "interface"}


@pytest.mark.parametrize(("spec", "path", "message"), [
    ({"connectionTracking": {}}, "spec.connectionTracking", "at least one of tcpEstablishedTimeout"),
    ({"connectionTracking": {"tcpEstablishedTimeout": 59}}, "spec.connectionTracking.tcpEstablishedTimeout",
     "must be an integer from 60 to 432000"),
    ({"connectionTracking": {"udpStreamTimeout": 181}}, "spec.connectionTracking.udpStreamTimeout",
     "must be an integer from 60 to 180"),
    ({"connectionTracking": {"udpTimeout": 29}}, "spec.connectionTracking.udpTimeout", "must be an integer from 30"),
    ({"connectionTracking": {"udpTimeout": 30, "tcpTimeout": 5}}, "spec.connectionTracking", "unknown field(s)"),
    ({"cpuOptions": {"nestedVirtualization": "on"}}, "spec.cpuOptions.nestedVirtualization",
     "'on' is not one of enabled, disabled"),
    ({"networkInterfaces": [{"networkCardIndex": 1, "deviceIndex": 0, "interfaceType": "interface"}]},
     "spec.networkInterfaces", "networkInterfaces must include a primary interface with interfaceType='interface'"),
    ({"networkInterfaces": [{**_PRIMARY, "interfaceType": "efa-only"}]},
     "spec.networkInterfaces", "networkInterfaces must include a primary interface"),
    ({"networkInterfaces": [_PRIMARY, _PRIMARY]}, "spec.networkInterfaces",
     "networkInterfaces must not have duplicate networkCardIndex and deviceIndex pairs"),
    ({"networkInterfaces": [_PRIMARY, {"networkCardIndex": 1, "deviceIndex": 0, "interfaceType": "efa-only"},
                            {"networkCardIndex": 1, "deviceIndex": 1, "interfaceType": "efa-only"}]},
     "spec.networkInterfaces", "networkInterfaces must not have duplicate"),
    ({"networkInterfaces": [{"networkCardIndex": 0, "deviceIndex": 0}]}, "spec.networkInterfaces[0].interfaceType",
     "interfaceType is required"),
    ({"networkInterfaces": [{**_PRIMARY, "interfaceType": "efa"}]}, "spec.networkInterfaces[0].interfaceType",
     "'efa' is not one of interface, efa-only"),
    ({"networkInterfaces": [{**_PRIMARY, "deviceIndex": -1}]}, "spec.networkInterfaces[0].deviceIndex",
     "must be a non-negative integer"),
    ({"placementGroupSelector": {}}, "spec.placementGroupSelector", "expected at least one, got none, ['name', 'id']"),
    ({"placementGroupSelector": {"name": "a", "id": "pg-1"}}, "spec.placementGroupSelector",
     "'name' and 'id' are mutually exclusive"),
    ({"placementGroupSelector": {"id": "group-1"}}, "spec.placementGroupSelector.id", "'group-1' should match"),
    ({"placementGroupSelector": {"name": ""}}, "spec.placementGroupSelector.name", "must be a non-empty string"),
])
def test_bad_values_are_named_at_their_path_and_nothing_is_saved(importer: User, spec: dict[str, Any], path: str,
                                                                message: str) -> None:
    result = services.karpenter_import(texts=[("bad.yaml", _doc(**spec))], user=importer)
    found = [(p.path, p.message) for p in result.problems]
    assert any(p == path and m.startswith(message) for p, m in found), found
    assert all(str(p).startswith("bad.yaml: document 1:") for p in result.problems)
    assert not EC2NodeClass.objects.exists() and not ChangeRecord.objects.exists()


def test_an_empty_network_interface_list_is_accepted(importer: User) -> None:
    # The CRD's primary-interface rule lets [] through (self.size() == 0).
    result = services.karpenter_import(texts=[("ok.yaml", _doc(networkInterfaces=[]))], user=importer)
    assert result.problems == [] and EC2NodeClass.objects.get(name="training").network_interfaces == []


def test_form_edits_the_fields_with_errors_at_the_field(operator_client: Client) -> None:
    data = {
        "name": "train", "ami_family": "", "ami_selector_terms": "- alias: al2023@latest",
        "subnet_selector_terms": "- tags: {k: v}", "security_group_selector_terms": "- tags: {k: v}",
        "role": "NodeRole", "instance_profile": "", "user_data": "",
        "network_interfaces": "- {networkCardIndex: 0, deviceIndex: 0, interfaceType: interface}",
        "ct_tcp_established_timeout": "3600", "ct_udp_timeout": "40",
        "placement_group_name": "pg-train", "cpu_nested_virtualization": "disabled",
    }
    page = operator_client.get("/nodeclasses/new/").content.decode()
    for name in ("network_interfaces", "ct_tcp_established_timeout", "ct_udp_stream_timeout", "ct_udp_timeout",
                 "placement_group_name", "placement_group_id", "cpu_nested_virtualization"):
        assert f'name="{name}"' in page
    response = operator_client.post("/nodeclasses/new/", data)
    assert response.status_code == 302, response.content.decode()[:2000]
    nc = EC2NodeClass.objects.get(name="train")
    assert nc.connection_tracking == {"tcpEstablishedTimeout": 3600, "udpTimeout": 40}
    assert nc.placement_group_selector == {"name": "pg-train"}
    assert nc.cpu_options == {"nestedVirtualization": "disabled"} and nc.network_interfaces == [_PRIMARY]
    detail = operator_client.get(nc.get_absolute_url()).content.decode()
    assert "pg-train" in detail and "3600" in detail
    bad = dict(data, name="train2", ct_udp_timeout="90", placement_group_name="x", placement_group_id="pg-1",
               network_interfaces="- {networkCardIndex: 0, deviceIndex: 1, interfaceType: interface}")
    response = operator_client.post("/nodeclasses/new/", bad)
    assert response.status_code == 400
    errors = response.context["form"].errors
    assert "must be an integer from 30 to 60" in errors["ct_udp_timeout"][0]
    assert "must include a primary interface" in errors["network_interfaces"][0]
    assert "'name' and 'id' are mutually exclusive" in errors["placement_group_name"][0]
    assert "'name' and 'id' are mutually exclusive" in errors["placement_group_id"][0]
    assert not EC2NodeClass.objects.filter(name="train2").exists()


def test_api_reads_writes_and_refuses_the_fields(operator_client: APIClient) -> None:
    values = nodeclass_values(connection_tracking={"udpStreamTimeout": 100}, cpu_options={"nestedVirtualization":
                                                                                         "enabled"},
                              network_interfaces=[_PRIMARY], placement_group_selector={"id": "pg-0abc"})
    response = operator_client.post("/api/nodeclasses/", values, format="json")
    assert response.status_code == 201, response.content
    body = operator_client.get("/api/nodeclasses/default/").json()
    assert body["connection_tracking"] == {"udpStreamTimeout": 100} and body["network_interfaces"] == [_PRIMARY]
    assert body["cpu_options"] == {"nestedVirtualization": "enabled"}
    assert body["placement_group_selector"] == {"id": "pg-0abc"}
    for change, field in (({"connection_tracking": {"udpTimeout": 61}}, "connection_tracking"),
                          ({"cpu_options": {"nestedVirtualization": "yes"}}, "cpu_options"),
                          ({"network_interfaces": [_PRIMARY, _PRIMARY]}, "network_interfaces"),
                          ({"placement_group_selector": {"id": "x"}}, "placement_group_selector")):
        response = operator_client.patch("/api/nodeclasses/default/", change, format="json")
        assert response.status_code == 400 and field in response.json(), response.content
    assert EC2NodeClass.objects.get(name="default").connection_tracking == {"udpStreamTimeout": 100}
    schema = operator_client.get("/api/schema/").content.decode()
    for name in ("connection_tracking", "cpu_options", "network_interfaces", "placement_group_selector"):
        assert name in schema


_tracking = st.fixed_dictionaries({}, optional={k: st.integers(low, high)
                                               for k, (low, high) in validation.CONNECTION_TRACKING_RANGES.items()})
_extra_interface = st.fixed_dictionaries({"networkCardIndex": st.integers(1, 7), "deviceIndex": st.integers(0, 3),
                                          "interfaceType": st.sampled_from(validation.INTERFACE_TYPES)})


@st.composite
def _interfaces(draw: st.DrawFn) -> list[dict[str, Any]]:
    if draw(st.booleans()):
        return []
    extra = draw(st.lists(_extra_interface, max_size=4, unique_by=lambda ni: (ni["networkCardIndex"], ni["deviceIndex"])))
    efa_cards: set[int] = set()
    kept = []
    for ni in extra:   # at most one efa-only per card, as the CRD's rule says
        if ni["interfaceType"] == "efa-only":
            if ni["networkCardIndex"] in efa_cards:
                continue
            efa_cards.add(ni["networkCardIndex"])
        kept.append(ni)
    return [dict(_PRIMARY), *kept]


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tracking=_tracking, nested=st.sampled_from(["", *validation.NESTED_VIRTUALIZATION]), interfaces=_interfaces(),
       placement=st.one_of(st.just({}), st.builds(lambda n: {"name": n}, st.text(min_size=1, max_size=20)),
                           st.builds(lambda i: {"id": f"pg-{i}"}, st.from_regex(r"\A[0-9a-z]{1,17}\Z"))))
def test_property_launch_fields_valid_by_the_crd_round_trip(tracking: dict[str, int], nested: str,
                                                            interfaces: list[dict[str, Any]],
                                                            placement: dict[str, str]) -> None:
    values = {**nodeclass_values(), "connection_tracking": tracking,
              "cpu_options": {"nestedVirtualization": nested} if nested else {}, "network_interfaces": interfaces,
              "placement_group_selector": placement}
    assert validation.check_nodeclass(values) == []
    (doc,) = manifests.load_yaml_documents(manifests.dump_yaml([manifests.nodeclass_to_manifest(values)]))
    imported, structural = manifests.fields_from_manifest(doc)
    assert structural == []
    assert {k: imported[k] for k in values} == values
