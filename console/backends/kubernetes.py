"""The ClusterBackend over a real Kubernetes API server, with the official ``kubernetes`` client.

Objects cross as plain dicts in the API's JSON shape: every call asks for the raw response
(``_preload_content=False``) and decodes the JSON itself, instead of round-tripping through the
client's models, which would drop fields the models don't know and reformat timestamps. List items
get back the ``apiVersion``/``kind`` the API leaves out of them, as ``kubectl get -o json`` does,
because packing.kubeobjects dispatches on ``kind``.

Writes are JSON merge patches with the object's ``resourceVersion`` in them: the API server treats
it as a precondition, so a concurrent change makes the patch fail with 409 and we re-read and
retry instead of overwriting someone else's taints (merge patch replaces lists wholesale).

No Django imports: this module is used by Celery tasks and by ``manage.py watch`` alike.
"""

from __future__ import annotations

import json
import logging
import os
import random
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal, cast

import urllib3
from kubernetes import client, config
from kubernetes.client.exceptions import ApiException
from kubernetes.watch.watch import iter_resp_lines

from console.backends.base import (
    DISRUPTED_TAINT,
    UNREGISTERED_TAINT_KEY,
    EvictionOutcome,
    KubeObject,
    NodeNotFound,
    ResourceExpired,
    WatchEvent,
)

log = logging.getLogger(__name__)

INITIALIZED_LABEL = "karpenter.sh/initialized"
REGISTERED_LABEL = "karpenter.sh/registered"
MERGE_PATCH = "application/merge-patch+json"
# The client would pick application/json-patch+json (the first JSON type listed) for a dict body,
# which a real API server rejects; every patch here names its content type explicitly.

EventType = Literal["ADDED", "MODIFIED", "DELETED"]
ListFn = Callable[[], tuple[list[KubeObject], str]]
WatchFn = Callable[..., Iterator[WatchEvent]]


class ConflictError(RuntimeError):
    """A patch kept losing optimistic-concurrency races (409) after several re-reads."""


def _json(response: Any) -> Any:
    try:
        return json.loads(response.data)
    finally:
        response.release_conn()


def _consume(response: Any) -> None:
    """Read the body out so the connection can be reused, then hand it back to the pool."""
    try:
        response.data  # noqa: B018 - reading is the point
    finally:
        response.release_conn()


def _typed(obj: KubeObject, api_version: str, kind: str) -> KubeObject:
    obj.setdefault("apiVersion", api_version)
    obj.setdefault("kind", kind)
    return obj


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return obj.get("metadata") or {}


# --- watch stream ----------------------------------------------------------------------------------

class WatchStream(Iterator[WatchEvent]):
    """One watch connection's events. ``close()`` may be called from another thread to unblock it.

    BOOKMARK events are not yielded (WatchEvent has no such type) but advance ``resource_version``,
    so a resume after a quiet period starts from the bookmark, not from an older, compacted version.
    """

    def __init__(self, response: Any, api_version: str, kind: str) -> None:
        self._response = response
        self._lines = iter_resp_lines(response)
        self._api_version = api_version
        self._kind = kind
        self._closed = False
        self.resource_version: str | None = None

    def __iter__(self) -> WatchStream:
        return self

    def __next__(self) -> WatchEvent:
        for line in self._lines:
            if not line.strip():
                continue
            event = json.loads(line)
            kind, obj = event.get("type"), event.get("object") or {}
            if kind == "ERROR":
                self.close()
                code = int(obj.get("code") or 500)
                if code == 410:
                    raise ResourceExpired(obj.get("message") or "resource version expired")
                raise ApiException(status=code, reason=f"{obj.get('reason')}: {obj.get('message')}")
            if rv := _meta(obj).get("resourceVersion"):
                self.resource_version = rv
            if kind in ("ADDED", "MODIFIED", "DELETED"):
                return WatchEvent(cast(EventType, kind), _typed(obj, self._api_version, self._kind))
            # BOOKMARK (and anything newer we don't know): position only.
        self.close()
        raise StopIteration

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            # shutdown() interrupts a read blocked in another thread; close() alone would not.
            self._response.shutdown()
        except Exception:       # already released, or a urllib3 without shutdown(): close is enough
            pass
        try:
            # Close, not release: a half-read connection must not go back to the pool, and the
            # FIN tells the server to end its side of the watch.
            self._response.close()
        except Exception:
            pass


# --- the backend -----------------------------------------------------------------------------------

class KubernetesCluster:
    """ClusterBackend for a real cluster (see console.backends.base.ClusterBackend)."""

    def __init__(self, api_client: client.ApiClient, *, page_size: int = 500, request_timeout: float = 30.0,
                 conflict_retries: int = 5) -> None:
        self.api_client = api_client
        self.core = client.CoreV1Api(api_client)
        self.policy = client.PolicyV1Api(api_client)
        self.apps = client.AppsV1Api(api_client)
        self.page_size = page_size
        self.request_timeout = request_timeout
        self.conflict_retries = conflict_retries

    # -- construction --------------------------------------------------------------------------------

    @classmethod
    def from_kubeconfig(cls, path: str | None = None, *, context: str | None = None, **kwargs: Any) -> KubernetesCluster:
        cfg = client.Configuration()
        config.load_kube_config(config_file=path, context=context, client_configuration=cfg)
        return cls(client.ApiClient(cfg), **kwargs)

    @classmethod
    def in_cluster(cls, **kwargs: Any) -> KubernetesCluster:
        cfg = client.Configuration()
        config.load_incluster_config(client_configuration=cfg)
        return cls(client.ApiClient(cfg), **kwargs)

    @classmethod
    def from_environment(cls, kubeconfig: str | None = None, *, context: str | None = None, **kwargs: Any) -> KubernetesCluster:
        """An explicit kubeconfig wins; inside a pod, the ServiceAccount; else ~/.kube/config."""
        if not kubeconfig and os.environ.get("KUBERNETES_SERVICE_HOST"):
            return cls.in_cluster(**kwargs)
        return cls.from_kubeconfig(kubeconfig or None, context=context, **kwargs)

    # -- listing -------------------------------------------------------------------------------------

    def _list(self, call: Callable[..., Any], api_version: str, kind: str, **params: Any) -> tuple[list[KubeObject], str]:
        """All pages of a list; the resourceVersion is the first page's (the snapshot's)."""
        for _attempt in range(3):
            items: list[KubeObject] = []
            resource_version = ""
            token: str | None = None
            try:
                while True:
                    page = _json(call(limit=self.page_size, _continue=token, _preload_content=False,
                                      _request_timeout=self.request_timeout, **params))
                    meta = page.get("metadata") or {}
                    resource_version = resource_version or meta.get("resourceVersion", "")
                    items.extend(_typed(o, api_version, kind) for o in page.get("items") or [])
                    token = meta.get("continue")
                    if not token:
                        return items, resource_version
            except ApiException as e:
                if e.status != 410:     # an expired continue token: start the snapshot over
                    raise
                log.info("list %s: continue token expired, listing again", kind)
        raise ResourceExpired(f"list {kind}: continue token kept expiring")

    def _watch(self, call: Callable[..., Any], api_version: str, kind: str, resource_version: str,
               timeout_seconds: int, **params: Any) -> WatchStream:
        try:
            response = call(
                watch=True, resource_version=resource_version or None, timeout_seconds=int(timeout_seconds),
                allow_watch_bookmarks=True, _preload_content=False,
                # The read timeout outlasts the server-side one, so only a dead connection trips it.
                _request_timeout=(self.request_timeout, timeout_seconds + 30), **params,
            )
        except ApiException as e:
            if e.status == 410:
                raise ResourceExpired(str(e.reason)) from e
            raise
        return WatchStream(response, api_version, kind)

    def list_pods(self) -> tuple[list[KubeObject], str]:
        return self._list(self.core.list_pod_for_all_namespaces, "v1", "Pod")

    def watch_pods(self, resource_version: str, *, timeout_seconds: int = 60) -> WatchStream:
        return self._watch(self.core.list_pod_for_all_namespaces, "v1", "Pod", resource_version, timeout_seconds)

    def list_nodes(self) -> tuple[list[KubeObject], str]:
        return self._list(self.core.list_node, "v1", "Node")

    def watch_nodes(self, resource_version: str, *, timeout_seconds: int = 60) -> WatchStream:
        return self._watch(self.core.list_node, "v1", "Node", resource_version, timeout_seconds)

    def list_pdbs(self) -> list[KubeObject]:
        return self._list(self.policy.list_pod_disruption_budget_for_all_namespaces, "policy/v1", "PodDisruptionBudget")[0]

    def list_daemonsets(self) -> list[KubeObject]:
        return self._list(self.apps.list_daemon_set_for_all_namespaces, "apps/v1", "DaemonSet")[0]

    def list_pod_templates(self) -> list[KubeObject]:
        return self._list(self.core.list_pod_template_for_all_namespaces, "v1", "PodTemplate")[0]

    def pending_pods(self) -> list[KubeObject]:
        # Server-side narrowing (unbound, Pending) keeps the response small on big clusters; the
        # scheduler's verdict lives in a condition no field selector can reach, so filter here too.
        pods, _ = self._list(self.core.list_pod_for_all_namespaces, "v1", "Pod",
                             field_selector="spec.nodeName=,status.phase=Pending")
        return [p for p in pods if is_provisionable(p)]

    def pods_on_node(self, node_name: str) -> list[KubeObject]:
        pods, _ = self._list(self.core.list_pod_for_all_namespaces, "v1", "Pod",
                             field_selector=f"spec.nodeName={node_name}")
        return [p for p in pods if (p.get("spec") or {}).get("nodeName") == node_name]

    def node_by_provider_id(self, provider_id: str) -> KubeObject | None:
        # spec.providerID is not a supported field selector for Nodes: list and match here.
        nodes, _ = self.list_nodes()
        for node in nodes:
            if (node.get("spec") or {}).get("providerID") == provider_id:
                return node
        return None

    def get_node(self, node_name: str) -> KubeObject:
        try:
            node = _json(self.core.read_node(node_name, _preload_content=False, _request_timeout=self.request_timeout))
        except ApiException as e:
            if e.status == 404:
                raise NodeNotFound(node_name) from e
            raise
        return _typed(node, "v1", "Node")

    # -- writes --------------------------------------------------------------------------------------

    def _update_node(self, node_name: str, change: Callable[[KubeObject], dict[str, Any] | None]) -> KubeObject:
        """Read, compute a merge patch (None: nothing to do), patch with a resourceVersion precondition."""
        for _attempt in range(self.conflict_retries):
            node = self.get_node(node_name)
            patch = change(node)
            if patch is None:
                return node                 # already as wanted: no write, so repeats are free
            if rv := _meta(node).get("resourceVersion"):
                patch.setdefault("metadata", {})["resourceVersion"] = rv
            try:
                updated = _json(self.core.patch_node(node_name, patch, _content_type=MERGE_PATCH,
                                                     _preload_content=False, _request_timeout=self.request_timeout))
            except ApiException as e:
                if e.status == 409:
                    log.info("node %s changed under us; re-reading", node_name)
                    continue
                if e.status == 404:
                    raise NodeNotFound(node_name) from e
                raise
            return _typed(updated, "v1", "Node")
        raise ConflictError(f"node {node_name}: {self.conflict_retries} conflicting updates in a row")

    def cordon(self, node_name: str) -> None:
        """Taint the node karpenter.sh/disrupted:NoSchedule, as Karpenter does (not spec.unschedulable)."""
        def change(node: KubeObject) -> dict[str, Any] | None:
            taints = list((node.get("spec") or {}).get("taints") or [])
            if any(_same_taint(t, DISRUPTED_TAINT) for t in taints):
                return None
            return {"spec": {"taints": [*taints, dict(DISRUPTED_TAINT)]}}
        self._update_node(node_name, change)

    def uncordon(self, node_name: str) -> None:
        """Lift karpenter.sh/disrupted when a disruption is abandoned; other taints stay."""
        def change(node: KubeObject) -> dict[str, Any] | None:
            taints = list((node.get("spec") or {}).get("taints") or [])
            kept = [t for t in taints if not _same_taint(t, DISRUPTED_TAINT)]
            return None if len(kept) == len(taints) else {"spec": {"taints": kept}}
        self._update_node(node_name, change)

    def register_node(self, node_name: str, *, labels: Mapping[str, str],
                      taints: Sequence[Mapping[str, str]]) -> KubeObject:
        """Apply the NodeClaim's labels and taints and lift karpenter.sh/unregistered."""
        def change(node: KubeObject) -> dict[str, Any] | None:
            have_labels = _meta(node).get("labels") or {}
            want_labels = {**labels, REGISTERED_LABEL: "true"}
            label_patch = {k: v for k, v in want_labels.items() if have_labels.get(k) != v}
            current = list((node.get("spec") or {}).get("taints") or [])
            merged = [t for t in current if t.get("key") != UNREGISTERED_TAINT_KEY]
            for taint in taints:
                clean = {k: v for k, v in taint.items() if v not in (None, "")}
                # Same key and effect is the same taint: the claim's value wins.
                merged = [t for t in merged if not _same_taint(t, clean)] + [clean]
            patch: dict[str, Any] = {}
            if label_patch:
                patch["metadata"] = {"labels": label_patch}
            if _taint_set(merged) != _taint_set(current):
                patch["spec"] = {"taints": merged}
            return patch or None
        return self._update_node(node_name, change)

    def mark_initialized(self, node_name: str) -> KubeObject:
        """Label karpenter.sh/initialized=true (the lifecycle loop decides when; this only records it)."""
        def change(node: KubeObject) -> dict[str, Any] | None:
            if (_meta(node).get("labels") or {}).get(INITIALIZED_LABEL) == "true":
                return None
            return {"metadata": {"labels": {INITIALIZED_LABEL: "true"}}}
        return self._update_node(node_name, change)

    def evict(self, namespace: str, name: str) -> EvictionOutcome:
        """Ask the Eviction API; a PodDisruptionBudget answers 429. Never deletes the pod itself."""
        body = client.V1Eviction(api_version="policy/v1", kind="Eviction",
                                 metadata=client.V1ObjectMeta(name=name, namespace=namespace))
        try:
            _consume(self.core.create_namespaced_pod_eviction(name, namespace, body, _preload_content=False,
                                                              _request_timeout=self.request_timeout))
        except ApiException as e:
            if e.status == 429:
                return "blocked"        # a budget says not now: the caller waits and retries
            if e.status == 404:
                return "gone"           # already deleted: the drain has what it wanted
            raise                       # e.g. 500 for a pod under two PDBs: not ours to guess
        return "evicted"

    def delete_pod(self, namespace: str, name: str, grace_period_seconds: int) -> bool:
        """Delete the pod itself, past any PodDisruptionBudget, with this grace period (the drain of a node
        whose terminationGracePeriod ends: the pod's own grace must end by the node's deadline)."""
        body = client.V1DeleteOptions(grace_period_seconds=max(0, grace_period_seconds))
        try:
            _consume(self.core.delete_namespaced_pod(name, namespace, body=body, _preload_content=False,
                                                     _request_timeout=self.request_timeout))
        except ApiException as e:
            if e.status == 404:
                return False            # already gone: what the drain wanted
            raise
        return True

    def delete_node(self, node_name: str) -> None:
        try:
            _consume(self.core.delete_node(node_name, _preload_content=False, _request_timeout=self.request_timeout))
        except ApiException as e:
            if e.status != 404:         # already gone is the outcome we wanted
                raise


# --- helpers shared with the loops -----------------------------------------------------------------

def _same_taint(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    return a.get("key") == b.get("key") and a.get("effect") == b.get("effect")


def _taint_set(taints: Sequence[Mapping[str, Any]]) -> set[tuple[str, str, str]]:
    return {(t.get("key", ""), t.get("value") or "", t.get("effect", "")) for t in taints}


def is_provisionable(pod: Mapping[str, Any]) -> bool:
    """Pending because the scheduler found no node: what provisioning should act on.

    As Karpenter: PodScheduled=False/Unschedulable and no nodeName; not terminating; not already
    nominated to a node freed by preemption; not a DaemonSet's or a static (Node-owned) pod, since a
    new node would not help those and they would make us launch nodes forever.
    """
    meta, spec, status = _meta(pod), pod.get("spec") or {}, pod.get("status") or {}
    if spec.get("nodeName") or meta.get("deletionTimestamp") or status.get("nominatedNodeName"):
        return False
    if any(o.get("kind") in ("DaemonSet", "Node") for o in meta.get("ownerReferences") or []):
        return False
    return any(
        c.get("type") == "PodScheduled" and c.get("status") == "False" and c.get("reason") == "Unschedulable"
        for c in status.get("conditions") or []
    )


# --- node conditions -------------------------------------------------------------------------------

@dataclass(frozen=True)
class NodeCondition:
    """One entry of a Node's status.conditions, as the kubelet, the node controller or a diagnostic agent
    (Node Problem Detector, the EKS Node Monitoring Agent) wrote it. since: lastTransitionTime, when the
    status last flipped; None when the writer left it out or wrote something that is not a timestamp."""

    type: str
    status: str
    since: datetime | None
    reason: str = ""
    message: str = ""


def _timestamp(value: Any) -> datetime | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        # RFC 3339 as the API server writes it ("2026-01-05T12:00:00Z"); fromisoformat reads the Z since 3.11.
        when = datetime.fromisoformat(value)
    except ValueError:
        return None
    return when if when.tzinfo is not None else None


def node_conditions(node: Mapping[str, Any]) -> dict[str, NodeCondition]:
    """A Node's conditions by type (the API keeps one per type; a repeated type keeps its last entry)."""
    out: dict[str, NodeCondition] = {}
    for raw in (node.get("status") or {}).get("conditions") or []:
        if not isinstance(raw, Mapping) or not raw.get("type"):
            continue
        ctype = str(raw["type"])
        out[ctype] = NodeCondition(type=ctype, status=str(raw.get("status") or ""),
                                   since=_timestamp(raw.get("lastTransitionTime")),
                                   reason=str(raw.get("reason") or ""), message=str(raw.get("message") or ""))
    return out


# --- a watch that never ends and never loses an event ---------------------------------------------

def _describe(error: BaseException) -> str:
    # An ApiException's str() carries headers and the whole body: one line is enough for a log.
    if isinstance(error, ApiException):
        return f"HTTP {error.status} {error.reason}"
    return f"{type(error).__name__}: {error}"


def _key(obj: Mapping[str, Any]) -> tuple[str, str]:
    meta = _meta(obj)
    return meta.get("namespace") or "", meta.get("name") or ""


class Watcher:
    """List, then watch from the list's resourceVersion, forever, until ``stop()``.

    - A watch that ends (server timeout) resumes from the last resourceVersion seen.
    - Errors (connection cut, 5xx, timeouts) back off exponentially with jitter, then resume.
    - 410 Gone (history compacted) relists and yields the difference from what was last yielded:
      ADDED/MODIFIED for new or changed objects, DELETED (with the last known state) for those that
      vanished, so a consumer that only follows events still ends up with the cluster's state.

    It keeps the last state of every object it has yielded (as an informer's store does); that is
    what the diff after a relist needs. ``store`` exposes it.
    """

    # Not ValueError at large: pydantic's ValidationError is one, and a bug should not loop forever.
    RETRYABLE: tuple[type[BaseException], ...] = (
        ApiException, urllib3.exceptions.HTTPError, OSError, json.JSONDecodeError,
    )

    def __init__(self, list_fn: ListFn, watch_fn: WatchFn, *, timeout_seconds: int = 60,
                 backoff_base: float = 0.5, backoff_max: float = 30.0, emit_initial: bool = True,
                 stop_event: threading.Event | None = None, name: str = "watch") -> None:
        self._list_fn = list_fn
        self._watch_fn = watch_fn
        self.timeout_seconds = timeout_seconds
        self.backoff_base = backoff_base
        self.backoff_max = backoff_max
        self.emit_initial = emit_initial
        self.name = name
        self._stop = stop_event or threading.Event()
        self._stream: Iterator[WatchEvent] | None = None
        self.store: dict[tuple[str, str], KubeObject] = {}
        self.resource_version = ""
        self.relists = 0            # counters for the watch command's log line and the tests
        self.reconnects = 0
        self.errors = 0

    @classmethod
    def pods(cls, cluster: KubernetesCluster, **kwargs: Any) -> Watcher:
        return cls(cluster.list_pods, cluster.watch_pods, name="pods", **kwargs)

    @classmethod
    def nodes(cls, cluster: KubernetesCluster, **kwargs: Any) -> Watcher:
        return cls(cluster.list_nodes, cluster.watch_nodes, name="nodes", **kwargs)

    @property
    def stopped(self) -> bool:
        return self._stop.is_set()

    def stop(self) -> None:
        """Ask the loop to end; safe from another thread or a signal handler."""
        self._stop.set()
        stream = self._stream
        close = getattr(stream, "close", None)
        if close is not None:
            close()                 # unblock a read waiting for the next event

    def _delay(self, failures: int) -> float:
        # Full jitter: watchers restarted together don't hammer the API server in step.
        return random.uniform(0, min(self.backoff_max, self.backoff_base * 2 ** (failures - 1)))

    def _remember(self, event: WatchEvent) -> None:
        if event.type == "DELETED":
            self.store.pop(_key(event.object), None)
        else:
            self.store[_key(event.object)] = event.object
        if rv := _meta(event.object).get("resourceVersion"):
            self.resource_version = rv

    def _relist(self, emit: bool) -> Iterator[WatchEvent]:
        objects, resource_version = self._list_fn()
        fresh = {_key(o): o for o in objects}
        events: list[WatchEvent] = []
        for key, known in self.store.items():
            now = fresh.get(key)
            if now is None or _meta(now).get("uid") != _meta(known).get("uid"):
                events.append(WatchEvent("DELETED", known))     # gone, or replaced by a namesake
        for key, current in fresh.items():
            seen = self.store.get(key)
            if seen is None or _meta(current).get("uid") != _meta(seen).get("uid"):
                events.append(WatchEvent("ADDED", current))
            elif _meta(current).get("resourceVersion") != _meta(seen).get("resourceVersion"):
                events.append(WatchEvent("MODIFIED", current))
        self.store = fresh
        self.resource_version = resource_version
        self.relists += 1
        return iter(events if emit else [])

    def __iter__(self) -> Iterator[WatchEvent]:
        listed = False
        failures = 0
        while not self._stop.is_set():
            try:
                if not listed:
                    yield from self._relist(emit=self.emit_initial or self.relists > 0)
                    listed = True
                stream = self._watch_fn(self.resource_version, timeout_seconds=self.timeout_seconds)
                self._stream = stream
                if self._stop.is_set():     # stop() raced with the connect: don't block on it
                    getattr(stream, "close", lambda: None)()
                    return
                try:
                    for event in stream:
                        failures = 0
                        self._remember(event)
                        yield event
                        if self._stop.is_set():
                            return
                finally:
                    self._stream = None
                    getattr(stream, "close", lambda: None)()
                # A clean end is the server-side timeout; a bookmark may have moved us forward.
                if bookmark := getattr(stream, "resource_version", None):
                    self.resource_version = bookmark
                failures = 0
                self.reconnects += 1
            except ResourceExpired:
                log.info("%s: resourceVersion %s expired; relisting", self.name, self.resource_version)
                listed = False
                failures += 1
                if failures > 1:            # a relist that expires at once again: don't spin
                    self._stop.wait(self._delay(failures - 1))
            except self.RETRYABLE as e:
                if self._stop.is_set():
                    return                  # the error is stop() closing the connection
                failures += 1
                self.errors += 1
                delay = self._delay(failures)
                log.warning("%s: %s; retrying in %.1fs from resourceVersion %s",
                            self.name, _describe(e), delay, self.resource_version or "(relist)")
                self._stop.wait(delay)
                self.reconnects += 1
