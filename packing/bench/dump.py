"""`python -m packing.bench dump [--pods N] [--seed S]`: a `kubectl get pods -o yaml`-style dump for timing.

Prints two YAML documents: a NodePool (linux, spot or on-demand) and a `kind: List` of N pending pods as the API
server returns them (metadata with uid, labels, ownerReferences and managedFields-free annotations; one container
with image, ports, env, probes and resources; the default not-ready/unreachable tolerations; a Pending status with
a PodScheduled=False condition). Requests follow the benchmark's mixed-shape family (70% web-sized, 20%
memory-heavy, 10% CPU-heavy), so the whole `python -m packing plan` command can be timed on it, reading included:

    python -m packing.bench dump --pods 50000 > /tmp/x.yaml
    /usr/bin/time -v python -m packing plan /tmp/x.yaml --output json > /dev/null
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
                    "message": "0/3 nodes are available: 3 Insufficient cpu.",
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
    out.write(yaml.dump(NODEPOOL, Dumper=dumper, sort_keys=False))
    out.write("---\napiVersion: v1\nkind: List\nmetadata:\n  resourceVersion: \"\"\nitems:\n")
    for i in range(args.pods):
        text = yaml.dump([pod_object(i, rnd)], Dumper=dumper, sort_keys=False, width=1000)
        out.write(text)
    return 0
