"""`python -m packing.bench dump [--pods N] [--seed S] [--format yaml|json]`: a `kubectl get pods -o yaml`-style dump for timing.

Prints two YAML documents: a NodePool (linux, spot or on-demand) and a `kind: List` of N pending pods as the API
server returns them and kubectl prints them (keys sorted, so `items` before `kind`; long strings folded; metadata
with uid, labels, ownerReferences, annotations and the managedFields of the ReplicaSet controller and the
scheduler; one container with image, ports, env, probes and resources; the default not-ready/unreachable
tolerations; a Pending status with a PodScheduled=False condition and the scheduler's message). With
`--format json`, one List holding the NodePool and the pods, as `kubectl get nodepools,pods -A -o json` prints. Requests follow the benchmark's mixed-shape family (70% web-sized, 20%
memory-heavy, 10% CPU-heavy), so the whole `python -m packing plan` command can be timed on it, reading included:

    python -m packing.bench dump --pods 50000 > /tmp/x.yaml
    /usr/bin/time -v python -m packing plan /tmp/x.yaml --max-input-bytes 0 --output json > /dev/null
"""

from __future__ import annotations

import argparse
import itertools
import json
import random
import sys
import uuid
from collections.abc import Sequence
from typing import Any

import yaml

from packing.bench.workloads import mixed_request

NODEPOOL: dict[str, Any] = {
    "apiVersion": "karpenter.sh/v1",
    "kind": "NodePool",
    "metadata": {"name": "default"},
    "spec": {
        "template": {
            "spec": {
                "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"},
                "requirements": [
                    {"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]},
                    {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["spot", "on-demand"]},
                ],
            }
        }
    },
}


def _quantity_cpu(milli: int) -> str:
    return f"{milli // 1000}" if milli % 1000 == 0 else f"{milli}m"


def _quantity_mem(millibytes: int) -> str:
    mib = millibytes // 1000 // 2**20
    return f"{mib // 1024}Gi" if mib % 1024 == 0 else f"{mib}Mi"


def _fields(*names: str) -> dict[str, Any]:
    return {".": {}, **{f"f:{n}": {} for n in names}}


def managed_fields(owner_uid: str, ts: str) -> list[dict[str, Any]]:
    """What the API server records of who set which fields: the ReplicaSet controller (metadata and spec) and
    the scheduler (the PodScheduled condition, on the status subresource)."""
    container = {
        **_fields("image", "imagePullPolicy", "name", "terminationMessagePath", "terminationMessagePolicy"),
        "f:env": {".": {}, 'k:{"name":"APP"}': _fields("name", "value"),
                  'k:{"name":"POD_NAME"}': {**_fields("name"), "f:valueFrom": {".": {}, "f:fieldRef": {}}}},
        "f:ports": {".": {}, 'k:{"containerPort":8080,"protocol":"TCP"}': _fields("containerPort", "name", "protocol")},
        "f:readinessProbe": {**_fields("failureThreshold", "periodSeconds", "successThreshold", "timeoutSeconds"),
                             "f:httpGet": _fields("path", "port", "scheme")},
        "f:resources": {".": {}, "f:limits": _fields("memory"), "f:requests": _fields("cpu", "memory")},
    }
    return [
        {
            "apiVersion": "v1",
            "fieldsType": "FieldsV1",
            "fieldsV1": {
                "f:metadata": {
                    "f:annotations": _fields("kubectl.kubernetes.io/restartedAt"),
                    "f:generateName": {},
                    "f:labels": _fields("app", "pod-template-hash", "team"),
                    "f:ownerReferences": {".": {}, f'k:{{"uid":"{owner_uid}"}}': {}},
                },
                "f:spec": {
                    "f:containers": {'k:{"name":"main"}': container},
                    **{f"f:{k}": {} for k in ("dnsPolicy", "enableServiceLinks", "restartPolicy", "schedulerName",
                                              "securityContext", "terminationGracePeriodSeconds")},
                },
            },
            "manager": "kube-controller-manager",
            "operation": "Update",
            "time": ts,
        },
        {
            "apiVersion": "v1",
            "fieldsType": "FieldsV1",
            "fieldsV1": {"f:status": {"f:conditions": {".": {}, 'k:{"type":"PodScheduled"}': _fields(
                "lastProbeTime", "lastTransitionTime", "message", "reason", "status", "type")}}},
            "manager": "kube-scheduler",
            "operation": "Update",
            "subresource": "status",
            "time": ts,
        },
    ]


def pod_object(i: int, rnd: random.Random) -> dict[str, Any]:
    req = mixed_request(rnd)
    app = f"app-{i % 200}"
    rs = f"{app}-{(i % 200) * 7919 % 100000:05x}"
    name = f"{rs}-{uuid.UUID(int=rnd.getrandbits(128)).hex[:5]}{i}"
    ns = f"team-{i % 12}"
    ts = "2026-12-02T10:00:00Z"
    requests = {"cpu": _quantity_cpu(req.get("cpu")), "memory": _quantity_mem(req.get("memory"))}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": ns,
            "uid": str(uuid.UUID(int=rnd.getrandbits(128))),
            "resourceVersion": str(1_000_000 + i),
            "creationTimestamp": ts,
            "generateName": f"{rs}-",
            "labels": {"app": app, "pod-template-hash": rs.rsplit("-", 1)[1], "team": ns},
            "annotations": {"kubectl.kubernetes.io/restartedAt": ts},
            "managedFields": managed_fields(str(uuid.UUID(int=(i % 200) + 1)), ts),
            "ownerReferences": [
                {
                    "apiVersion": "apps/v1",
                    "kind": "ReplicaSet",
                    "name": rs,
                    "uid": str(uuid.UUID(int=(i % 200) + 1)),
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": {
            "containers": [
                {
                    "name": "main",
                    "image": f"registry.example.com/{ns}/{app}:1.{i % 40}.0",
                    "imagePullPolicy": "IfNotPresent",
                    "ports": [{"containerPort": 8080, "name": "http", "protocol": "TCP"}],
                    "env": [
                        {"name": "APP", "value": app},
                        {"name": "POD_NAME", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}}},
                    ],
                    "readinessProbe": {
                        "httpGet": {"path": "/healthz", "port": "http", "scheme": "HTTP"},
                        "periodSeconds": 10,
                        "timeoutSeconds": 1,
                        "successThreshold": 1,
                        "failureThreshold": 3,
                    },
                    "resources": {"requests": requests, "limits": {"memory": requests["memory"]}},
                    "terminationMessagePath": "/dev/termination-log",
                    "terminationMessagePolicy": "File",
                    "volumeMounts": [
                        {
                            "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount",
                            "name": f"kube-api-access-{name[-5:]}",
                            "readOnly": True,
                        }
                    ],
                }
            ],
            "dnsPolicy": "ClusterFirst",
            "enableServiceLinks": True,
            "preemptionPolicy": "PreemptLowerPriority",
            "priority": 0,
            "restartPolicy": "Always",
            "schedulerName": "default-scheduler",
            "securityContext": {},
            "serviceAccount": "default",
            "serviceAccountName": "default",
            "terminationGracePeriodSeconds": 30,
            "tolerations": [
                {
                    "effect": "NoExecute",
                    "key": "node.kubernetes.io/not-ready",
                    "operator": "Exists",
                    "tolerationSeconds": 300,
                },
                {
                    "effect": "NoExecute",
                    "key": "node.kubernetes.io/unreachable",
                    "operator": "Exists",
                    "tolerationSeconds": 300,
                },
            ],
            "volumes": [{"name": f"kube-api-access-{name[-5:]}", "projected": {"defaultMode": 420, "sources": [
                {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}}]}}],
        },
        "status": {
            "phase": "Pending",
            "qosClass": "Burstable",
            "conditions": [
                {
                    "type": "PodScheduled",
                    "status": "False",
                    "reason": "Unschedulable",
                    "message": "0/3 nodes are available: 3 Insufficient cpu. preemption: 0/3 nodes are available: 3 No "
                    "preemption victims found for incoming pod.",
                    "lastProbeTime": None,
                    "lastTransitionTime": ts,
                }
            ],
        },
    }


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m packing.bench dump")
    p.add_argument("--pods", type=int, default=50_000)
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--format", choices=("yaml", "json"), default="yaml", help="as `kubectl get -o yaml` or `-o json`")
    args = p.parse_args(argv)
    rnd = random.Random(args.seed)
    dumper: Any = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
    out = sys.stdout
    if args.format == "json":
        # one List, as `kubectl get nodepools,pods -A -o json` prints it: keys sorted, four-space indents
        out.write('{\n    "apiVersion": "v1",\n    "items": [\n')
        for i, obj in enumerate(itertools.chain([NODEPOOL], (pod_object(i, rnd) for i in range(args.pods)))):
            text = json.dumps(obj, indent=4, sort_keys=True)
            out.write(("" if i == 0 else ",\n") + "\n".join("        " + line for line in text.split("\n")))
        out.write('\n    ],\n    "kind": "List",\n    "metadata": {\n        "resourceVersion": ""\n    }\n}\n')
        return 0
    # as kubectl prints: keys sorted (so a List's items come before its kind), long strings folded at 80 columns
    out.write(yaml.dump(NODEPOOL, Dumper=dumper))
    out.write("---\napiVersion: v1\nitems:\n")
    for i in range(args.pods):
        out.write(yaml.dump([pod_object(i, rnd)], Dumper=dumper))
    out.write('kind: List\nmetadata:\n  resourceVersion: ""\n')
    return 0
