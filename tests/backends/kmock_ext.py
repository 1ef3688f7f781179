"""kmock 0.8 extended into a Kubernetes API server faithful enough for the cluster backend's tests.

The stock ``kmock.KubernetesEmulator`` stores objects and streams watch events, but (see
notes/stack.md §3) ignores label/field selectors, has no eviction subresource, answers create with
200 (which ``CustomObjectsApi.create_*`` reads as ``None``), stamps no uid/resourceVersion/
creationTimestamp, ignores ``resourceVersion`` and ``timeoutSeconds`` on watch and 404s ``/version/``.
``KarpenterEmulator`` fixes those, adds the behaviours the backend relies on in production
(optimistic concurrency on patch, watch resume with 410 Gone, DELETED when an object leaves a
selector, pagination) and gives tests handles to break things: cut every watch, expire history,
refuse watches for a while.

It reaches into private parts of kmock 0.8 (``_lock``, ``_objects``, ``_buses``, and calling
``RawHandler._handle`` past ``KubernetesEmulator._handle``), hence the exact pin in pyproject.

``KMockThread`` runs it on its own event loop in a daemon thread, because the official
``kubernetes`` client is synchronous and would deadlock against a server on the test's own loop.
"""

from __future__ import annotations

import asyncio
import base64
import collections
import copy
import datetime
import gzip
import importlib.resources
import json
import math
import re
import threading
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass
from types import TracebackType
from typing import Any, TypeVar

import aiohttp.web
import attrs
import kmock
import kubernetes.client
from kmock._internal import apps, enums, rendering

T = TypeVar("T")

PODS = kmock.resource("", "v1", "pods")
NODES = kmock.resource("", "v1", "nodes")
PDBS = kmock.resource("policy", "v1", "poddisruptionbudgets")
DAEMONSETS = kmock.resource("apps", "v1", "daemonsets")
NODEPOOLS = kmock.resource("karpenter.sh", "v1", "nodepools")
NODECLAIMS = kmock.resource("karpenter.sh", "v1", "nodeclaims")

# The CRDs Loadmaster shares with Karpenter; undeclared resources 404 in kmock (gap 8).
KARPENTER_CRDS: dict[kmock.resource, kmock.ResourceInfo] = {
    NODEPOOLS: kmock.ResourceInfo(
        kind="NodePool", singular="nodepool", namespaced=False, categories={"karpenter"},
        verbs={"get", "list", "watch", "create", "patch", "update", "delete"}, subresources={"status"},
    ),
    NODECLAIMS: kmock.ResourceInfo(
        kind="NodeClaim", singular="nodeclaim", namespaced=False, categories={"karpenter"},
        verbs={"get", "list", "watch", "create", "patch", "update", "delete"}, subresources={"status"},
    ),
}

# The field selectors the real API server accepts (anything else is a 400 there, so it is here:
# a backend that filters on e.g. spec.providerID server-side must fail in tests, not in production).
_COMMON_FIELDS = {"metadata.name", "metadata.namespace"}
SUPPORTED_FIELDS: dict[kmock.resource, set[str]] = {
    PODS: _COMMON_FIELDS | {
        "spec.nodeName", "spec.restartPolicy", "spec.schedulerName", "spec.serviceAccountName",
        "spec.hostNetwork", "status.phase", "status.podIP", "status.nominatedNodeName",
    },
    NODES: _COMMON_FIELDS | {"spec.unschedulable"},
}

_MUTATIONS = (enums.action.CREATE, enums.action.UPDATE, enums.action.DELETE)


# --- selectors -------------------------------------------------------------------------------------

@dataclass(frozen=True)
class _Requirement:
    key: str
    op: str                     # = != in notin exists !exists
    values: frozenset[str]

    def matches(self, labels: Mapping[str, str]) -> bool:
        if self.op == "exists":
            return self.key in labels
        if self.op == "!exists":
            return self.key not in labels
        if self.op in ("=", "in"):
            return self.key in labels and labels[self.key] in self.values
        return self.key not in labels or labels[self.key] not in self.values   # != / notin


def _split_top_level(selector: str) -> list[str]:
    """Split on commas outside parentheses: 'a in (x,y),b' is two requirements."""
    parts, depth, cur = [], 0, ""
    for ch in selector:
        depth += ch == "("
        depth -= ch == ")"
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    parts.append(cur)
    return [p.strip() for p in parts if p.strip()]


_SET_RE = re.compile(r"^(\S+)\s+(in|notin)\s+\((.*)\)$")


def parse_label_selector(selector: str) -> list[_Requirement]:
    reqs = []
    for part in _split_top_level(selector):
        if m := _SET_RE.match(part):
            values = frozenset(v.strip() for v in m.group(3).split(",") if v.strip())
            reqs.append(_Requirement(m.group(1), m.group(2), values))
        elif "!=" in part:
            k, v = part.split("!=", 1)
            reqs.append(_Requirement(k.strip(), "!=", frozenset([v.strip()])))
        elif "=" in part:
            k, v = re.split(r"==?", part, maxsplit=1)
            reqs.append(_Requirement(k.strip(), "=", frozenset([v.strip()])))
        elif part.startswith("!"):
            reqs.append(_Requirement(part[1:].strip(), "!exists", frozenset()))
        else:
            reqs.append(_Requirement(part, "exists", frozenset()))
    return reqs


def parse_field_selector(selector: str, resource: Any) -> list[tuple[str, bool, str]]:
    """(path, equal?, value) triples; unsupported fields raise 400 as the real server does."""
    allowed = SUPPORTED_FIELDS.get(resource, _COMMON_FIELDS)
    out = []
    for part in _split_top_level(selector):
        if "!=" in part:
            path, value = part.split("!=", 1)
            equal = False
        else:
            path, value = re.split(r"==?", part, maxsplit=1)
            equal = True
        path = path.strip()
        if path not in allowed:
            raise kmock.KubernetesError(
                status=400, reason="BadRequest", message=f'field label not supported: {path}',
            )
        out.append((path, equal, value.strip()))
    return out


def _field_value(obj: Mapping[str, Any], path: str) -> str:
    cur: Any = obj
    for part in path.split("."):
        cur = cur.get(part) if isinstance(cur, Mapping) else None
    # The API server compares the string form; an absent field is "" (hence spec.nodeName= works).
    if cur is None:
        return ""
    if isinstance(cur, bool):
        return "true" if cur else "false"
    return str(cur)


@dataclass(frozen=True)
class _Selectors:
    labels: list[_Requirement]
    fields: list[tuple[str, bool, str]]

    @classmethod
    def from_request(cls, request: rendering.Request) -> _Selectors:
        return cls(
            labels=parse_label_selector(request.params.get("labelSelector", "")),
            fields=parse_field_selector(request.params.get("fieldSelector", ""), request.resource),
        )

    def matches(self, obj: Mapping[str, Any] | None) -> bool:
        if obj is None:
            return False
        labels = (obj.get("metadata") or {}).get("labels") or {}
        if not all(r.matches(labels) for r in self.labels):
            return False
        return all((_field_value(obj, p) == v) == eq for p, eq, v in self.fields)


def label_selector_matches(selector: Mapping[str, Any] | None, labels: Mapping[str, str]) -> bool:
    """A metav1.LabelSelector (matchLabels + matchExpressions); null selects nothing, {} everything."""
    if selector is None:
        return False
    for k, v in (selector.get("matchLabels") or {}).items():
        if labels.get(k) != v:
            return False
    for expr in selector.get("matchExpressions") or []:
        op = {"In": "in", "NotIn": "notin", "Exists": "exists", "DoesNotExist": "!exists"}[expr["operator"]]
        if not _Requirement(expr["key"], op, frozenset(expr.get("values") or [])).matches(labels):
            return False
    return True


# --- the emulator ----------------------------------------------------------------------------------

class _WatchCut(Exception):
    """Put into a bus to make every live watch on it drop its connection."""


@dataclass(frozen=True)
class _Change:
    rv: int
    type: str
    obj: dict[str, Any]
    old: dict[str, Any] | None        # state before; decides ADDED/DELETED for selector-filtered watches


def _api_version(resource: Any) -> str:
    return f"{resource.group}/{resource.version}" if resource.group else resource.version


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _status(code: int, reason: str, message: str, details: Any = None) -> kmock.KubernetesError:
    # Non-empty details, or kmock substitutes a traceback of its own.
    return kmock.KubernetesError(status=code, reason=reason, message=message, details=details or {"causes": []})


@attrs.define(kw_only=True)
class KarpenterEmulator(kmock.KubernetesEmulator):
    """A stateful Kubernetes API with resourceVersions, selectors, evictions and watch resume."""

    history_limit: int = 1000                               # watch events kept per resource for resume
    refuse_watches: bool = attrs.field(default=False, init=False)   # while set: watch → 503
    watch_log: list[dict[str, str]] = attrs.field(factory=list, init=False)  # params of each watch
    live_watches: int = attrs.field(default=0, init=False)
    _rv: int = attrs.field(default=0, init=False)
    _changes: dict[Any, collections.deque[_Change]] = attrs.field(init=False, factory=dict)
    _compacted: dict[Any, int] = attrs.field(factory=dict, init=False)   # resume below this → 410
    _created: dict[int, tuple[Any, str | None, str]] = attrs.field(factory=dict, init=False)

    def __attrs_post_init__(self) -> None:
        super().__attrs_post_init__()
        self.fallback["post", kmock.subresource("eviction")] << self._serve_eviction
        # The client's VersionApi asks for /version/ (trailing slash); kmock serves only /version.
        self.fallback["get /version/"] << self._serve_server_version
        # = resources.load_bundled(), minus its deprecated importlib call (an error under -W error).
        bundled = importlib.resources.files("kmock._internal").joinpath("resources.json.gz").read_bytes()
        self.resources.load_data(gzip.decompress(bundled))
        for res, info in KARPENTER_CRDS.items():
            self.resources[res] = info

    # -- state changes (always under self._lock) ----------------------------------------------------

    def _changelog(self, resource: Any) -> collections.deque[_Change]:
        if resource not in self._changes:
            self._changes[resource] = collections.deque()
        return self._changes[resource]

    async def _emit(self, resource: Any, type_: str, obj: Mapping[str, Any], old: Mapping[str, Any] | None) -> None:
        change = _Change(self._rv, type_, copy.deepcopy(dict(obj)), copy.deepcopy(dict(old)) if old else None)
        log = self._changelog(resource)
        log.append(change)
        if len(log) > self.history_limit:
            # Forgetting history is what makes a real server answer 410 to an old resume point.
            dropped = log.popleft()
            self._compacted[resource] = max(self._compacted.get(resource, 0), dropped.rv + 1)
        await self._buses[resource].put(change)

    def _bump(self, obj: kmock.Object) -> str:
        self._rv += 1
        # Via .raw: nested dicts read through the Object view come back wrapped (not JSON-able).
        obj["metadata"] = dict(obj.raw.get("metadata") or {}, resourceVersion=str(self._rv))
        return str(self._rv)

    async def _create(self, request: rendering.Request) -> None:
        assert request.resource is not None
        data = copy.deepcopy(request.data or {})
        meta = data.setdefault("metadata", {})
        if not meta.get("name") and meta.get("generateName"):
            meta["name"] = meta["generateName"] + uuid.uuid4().hex[:5]
        if not meta.get("name"):
            raise _status(422, "Invalid", "metadata.name: Required value")
        namespace = request.namespace or meta.get("namespace")
        if namespace:
            meta["namespace"] = namespace
        key = (request.resource, namespace, meta["name"])
        if key in self._objects and not self._objects[key].deleted:
            raise _status(409, "AlreadyExists", f'{request.resource.plural} "{meta["name"]}" already exists')
        self._rv += 1
        meta.update(uid=str(uuid.uuid4()), resourceVersion=str(self._rv), creationTimestamp=_now(), generation=1)
        meta.pop("deletionTimestamp", None)
        if key in self._objects:
            self._objects[key].create(data)
        else:
            self._objects[key] = data
        self._created[request.id] = key
        await self._emit(request.resource, "ADDED", data, None)

    async def _update(self, request: rendering.Request) -> None:
        assert request.resource is not None and request.name is not None
        key = (request.resource, request.namespace, request.name)
        if key not in self._objects or self._objects[key].deleted:
            raise kmock.KubernetesObjectNotFoundError()
        obj = self._objects[key]
        old = copy.deepcopy(dict(obj.last.raw))
        patch = request.data
        # A resourceVersion in a patch is a precondition (optimistic concurrency), as on a real server.
        if isinstance(patch, Mapping):
            want = (patch.get("metadata") or {}).get("resourceVersion")
            if want and want != old["metadata"].get("resourceVersion"):
                raise _status(
                    409, "Conflict", f'Operation cannot be fulfilled on {request.resource.plural} '
                    f'"{request.name}": the object has been modified; please apply your changes to the '
                    f'latest version and try again',
                )
        if isinstance(patch, list):
            # JSON-patch: kmock applies it with jsonpatch; a failed "test" op is a 422 upstream.
            try:
                obj.patch(patch)  # type: ignore[arg-type]  # kmock's hint omits its JSON-patch support
            except Exception as e:
                raise _status(422, "Invalid", f"the JSON patch could not be applied: {e}") from e
        else:
            obj.patch(patch or {})
        fixed = {k: old["metadata"][k] for k in ("uid", "creationTimestamp", "name", "namespace") if k in old["metadata"]}
        obj["metadata"] = dict(obj.raw.get("metadata") or {}, **fixed)      # immutable on a real server
        self._bump(obj)
        await self._emit(request.resource, "MODIFIED", obj.raw, old)
        meta = obj.get("metadata") or {}
        if meta.get("deletionTimestamp") and not meta.get("finalizers"):
            await self._delete_now(request.resource, key)

    async def _delete(self, resource: Any, namespace: str | None, name: str, options: Any = None) -> None:
        key = (resource, namespace, name)
        if key not in self._objects or self._objects[key].deleted:
            raise kmock.KubernetesObjectNotFoundError()
        obj = self._objects[key]
        meta = obj.get("metadata") or {}
        pre = (options or {}).get("preconditions") or {} if isinstance(options, Mapping) else {}
        if (pre.get("uid") and pre["uid"] != meta.get("uid")) or (
            pre.get("resourceVersion") and pre["resourceVersion"] != meta.get("resourceVersion")
        ):
            raise _status(409, "Conflict", f"Precondition failed: {pre}")
        if meta.get("deletionTimestamp"):
            return                                          # already terminating
        if meta.get("finalizers"):
            old = copy.deepcopy(dict(obj.last.raw))
            obj.patch({"metadata": {"deletionTimestamp": _now()}})
            self._bump(obj)
            await self._emit(resource, "MODIFIED", obj.raw, old)
            return
        await self._delete_now(resource, key)

    async def _delete_now(self, resource: Any, key: tuple[Any, str | None, str]) -> None:
        obj = self._objects[key]
        old = copy.deepcopy(dict(obj.last.raw))
        self._rv += 1
        final = copy.deepcopy(old)
        final["metadata"]["resourceVersion"] = str(self._rv)
        obj.history.append(final)          # so DELETE's response and history show the final state
        obj.delete()
        await self._emit(resource, "DELETED", final, old)

    # -- request dispatch ----------------------------------------------------------------------------

    async def _handle(self, request: rendering.Request) -> aiohttp.web.StreamResponse:
        # Replaces KubernetesEmulator._handle: same idea (apply the change, then let reactions and
        # fallbacks render the answer), but with stamping, preconditions and a change log.
        mutation = request.action in _MUTATIONS and (request.name is not None or request.action == enums.action.CREATE)
        if request.resource is not None and mutation and request.subresource in (None, "status"):
            async with self._lock:
                if request.action == enums.action.CREATE:
                    await self._create(request)
                elif request.action == enums.action.UPDATE:
                    await self._update(request)
                elif request.action == enums.action.DELETE:
                    await self._delete(request.resource, request.namespace, request.name or "", request.data)
        try:
            return await apps.RawHandler._handle(self, request)
        finally:
            self._created.pop(request.id, None)

    async def _serve_create(self, request: rendering.Request) -> rendering.Payload:
        key = self._created[request.id]
        async with self._lock:
            raw = self._objects[key].raw
        return rendering.Response(status=201, payload=raw)      # the client deserializes only 201

    def _matching(self, request: rendering.Request, selectors: _Selectors) -> list[dict[str, Any]]:
        items = []
        for (res, ns, _name), obj in self._objects.items():
            if res == request.resource and not obj.deleted and (request.namespace is None or ns == request.namespace):
                raw = obj.raw
                if selectors.matches(raw):
                    items.append(raw)
        return items

    async def _serve_list(self, request: rendering.Request) -> rendering.Payload:
        if request.resource not in self._get_resources():
            raise kmock.KubernetesResourceNotFoundError()
        selectors = _Selectors.from_request(request)
        async with self._lock:
            items = self._matching(request, selectors)
            rv = str(self._rv)
        items.sort(key=lambda o: (o["metadata"].get("namespace", ""), o["metadata"]["name"]))
        meta: dict[str, Any] = {"resourceVersion": rv}
        # Pagination, as the backend asks for pages: the continue token carries the position.
        limit = int(request.params.get("limit") or 0)
        start = 0
        if token := request.params.get("continue"):
            start = json.loads(base64.urlsafe_b64decode(token))["start"]
            meta["resourceVersion"] = json.loads(base64.urlsafe_b64decode(token))["rv"]
        if limit:
            page = items[start:start + limit]
            if start + limit < len(items):
                meta["continue"] = base64.urlsafe_b64encode(
                    json.dumps({"start": start + limit, "rv": meta["resourceVersion"]}).encode()
                ).decode()
            items = page
        kind = self.resources[request.resource].kind or ""
        return {"apiVersion": _api_version(request.resource), "kind": f"{kind}List", "metadata": meta, "items": items}

    async def _serve_watch(self, request: rendering.Request) -> AsyncIterator[rendering.Payload]:
        assert request.resource is not None
        resource = request.resource
        self.watch_log.append(dict(request.params))
        if self.refuse_watches:
            raise _status(503, "ServiceUnavailable", "watches are refused (test fault)")
        selectors = _Selectors.from_request(request)
        since = request.params.get("resourceVersion", "")
        timeout = float(request.params.get("timeoutSeconds") or 0) or math.inf
        bookmarks = request.params.get("allowWatchBookmarks") == "true"
        yield b""                                   # send the headers now: the stream is open

        bus = self._buses[resource]
        async with self._lock:
            backlog: list[dict[str, Any]] = []
            if since in ("", "0"):
                # No resume point: synthetic ADDED for the current state, as the real server does.
                backlog = [{"type": "ADDED", "object": o} for o in self._matching(request, selectors)]
            elif not since.isdigit() or int(since) < self._compacted.get(resource, 0):
                expired = {"type": "ERROR", "object": {
                    "apiVersion": "v1", "kind": "Status", "metadata": {}, "status": "Failure",
                    "code": 410, "reason": "Expired", "message": f"too old resource version: {since}",
                }}
                backlog = [expired]
            else:
                backlog = [ev for c in self._changelog(resource) if c.rv > int(since)
                           if (ev := self._as_seen(c, selectors, request.namespace))]
            last_rv = self._rv
            mark = await bus.mark()                  # under the lock: nothing slips between the two

        self.live_watches += 1
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        try:
            for ev in backlog:
                yield ev
                if ev["type"] == "ERROR":
                    return
            while True:
                remaining = deadline - loop.time()
                if remaining <= 0:
                    if bookmarks:
                        # Tell the client how far it has seen even if no event matched its selector.
                        kind = self.resources[resource].kind
                        yield {"type": "BOOKMARK", "object": {
                            "kind": kind, "apiVersion": _api_version(resource), "metadata": {"resourceVersion": str(max(last_rv, self._rv))},
                        }}
                    return                          # a clean end, as a server-side timeout is
                try:
                    change = await asyncio.wait_for(bus.get(since=mark), remaining)
                except TimeoutError:
                    continue
                except _WatchCut:
                    raw = request._raw_request
                    if raw is not None and raw.transport is not None:
                        raw.transport.abort()       # drop the TCP connection mid-stream, no clean EOF
                    return
                if isinstance(change, _Change) and (ev := self._as_seen(change, selectors, request.namespace)):
                    last_rv = change.rv
                    yield ev
        finally:
            self.live_watches -= 1
            await bus.unmark(mark)

    @staticmethod
    def _as_seen(change: _Change, selectors: _Selectors, namespace: str | None) -> dict[str, Any] | None:
        """The event a selector-filtered watch sees: objects entering/leaving it are ADDED/DELETED."""
        if namespace is not None and change.obj.get("metadata", {}).get("namespace") != namespace:
            return None
        now = change.type != "DELETED" and selectors.matches(change.obj)
        before = change.old is not None and selectors.matches(change.old)
        if now and before:
            return {"type": "MODIFIED", "object": change.obj}
        if now:
            return {"type": "ADDED", "object": change.obj}
        if before:
            return {"type": "DELETED", "object": change.obj}
        return None

    # -- eviction ------------------------------------------------------------------------------------

    async def _serve_eviction(self, request: rendering.Request) -> rendering.Payload:
        """policy/v1 Eviction: deletes the pod unless a PodDisruptionBudget forbids it (429)."""
        if request.resource != PODS or request.name is None:
            raise kmock.KubernetesEndpointNotFoundError()
        ns, name = request.namespace, request.name
        async with self._lock:
            key = (PODS, ns, name)
            if key not in self._objects or self._objects[key].deleted:
                raise _status(404, "NotFound", f'pods "{name}" not found')
            pod = self._objects[key].raw
            phase = (pod.get("status") or {}).get("phase")
            # As the apiserver: terminal, pending and terminating pods ignore budgets.
            if not pod["metadata"].get("deletionTimestamp") and phase not in ("Succeeded", "Failed", "Pending"):
                self._check_budgets(pod, ns)
            await self._delete(PODS, ns, name, (request.data or {}).get("deleteOptions"))
        return rendering.Response(status=201, payload={
            "apiVersion": "v1", "kind": "Status", "metadata": {}, "status": "Success", "code": 201,
        })

    def _check_budgets(self, pod: Mapping[str, Any], ns: str | None) -> None:
        labels = pod["metadata"].get("labels") or {}
        budgets = [
            obj.raw for (res, pns, _), obj in self._objects.items()
            if res == PDBS and pns == ns and not obj.deleted
            and label_selector_matches((obj.raw.get("spec") or {}).get("selector"), labels)
        ]
        if len(budgets) > 1:
            raise _status(500, "InternalError",
                          "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.")
        if not budgets:
            return
        pdb = budgets[0]
        spec = pdb.get("spec") or {}
        # No disruption controller here: compute its status now (expected = pods the budget selects).
        selected = [
            obj.raw for (res, pns, _), obj in self._objects.items()
            if res == PODS and pns == ns and not obj.deleted
            and label_selector_matches(spec.get("selector"), (obj.raw["metadata"].get("labels") or {}))
        ]
        # A real budget counts the owning controller's replicas; with no controllers here, a test can
        # pin that number in status.expectedPods (e.g. a pod already evicted still counts as expected).
        expected = max(len(selected), int((pdb.get("status") or {}).get("expectedPods") or 0))
        healthy = sum(1 for p in selected if _is_healthy(p))

        def scaled(v: Any) -> int:
            if isinstance(v, str) and v.endswith("%"):
                return math.ceil(int(v[:-1]) * expected / 100)
            return int(v)

        if spec.get("maxUnavailable") is not None:
            desired = max(0, expected - scaled(spec["maxUnavailable"]))
        elif spec.get("minAvailable") is not None:
            desired = scaled(spec["minAvailable"])
        else:
            desired = expected
        allowed = healthy - desired
        # An unhealthy pod may go while the budget is met (unhealthyPodEvictionPolicy IfHealthyBudget).
        ok = allowed >= 1 if _is_healthy(pod) else allowed >= 0
        if not ok:
            pdb_name = pdb["metadata"]["name"]
            raise _status(
                429, "TooManyRequests", "Cannot evict pod as it would violate the pod's disruption budget.",
                {"causes": [{"reason": "DisruptionBudget",
                             "message": f"The disruption budget {pdb_name} needs {desired} healthy pods and has {healthy} currently"}]},
            )

    # -- test controls (coroutines: run them with KMockThread.call) ----------------------------------

    async def cut_watches(self, resource: Any = None) -> None:
        """Drop every live watch connection (of one resource, or all) as a network failure would."""
        for res, bus in list(self._buses.items()):
            if resource is None or res == resource:
                await bus.put(_WatchCut())

    async def expire(self, resource: Any = None) -> None:
        """Forget the change history: any resume from a resourceVersion seen so far gets 410 Gone."""
        async with self._lock:
            for res in {*self._changes, *([resource] if resource is not None else [])}:
                if resource is None or res == resource:
                    self._compacted[res] = self._rv + 1
                    self._changelog(res).clear()
            # Move on one version so a list taken now is a valid resume point (as after compaction).
            self._rv += 1

    @property
    def resource_version(self) -> int:
        return self._rv


def _is_healthy(pod: Mapping[str, Any]) -> bool:
    status = pod.get("status") or {}
    if pod.get("metadata", {}).get("deletionTimestamp") or status.get("phase") != "Running":
        return False
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in status.get("conditions") or [])


# --- running it for the sync client ----------------------------------------------------------------

class KMockThread:
    """Run a KarpenterEmulator on a private event loop in a daemon thread.

    The loop is created and run only in that thread and never installed in the main thread, so it
    cannot collide with pytest-asyncio's per-test loops (asyncio_default_fixture_loop_scope).
    """

    def __init__(self, **emulator_kwargs: Any) -> None:
        self._kwargs = emulator_kwargs
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self._stop: asyncio.Event | None = None
        self._thread = threading.Thread(target=self._run, name="kmock", daemon=True)
        self.emulator: KarpenterEmulator
        self.url = ""

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)           # thread-local: the main thread is untouched
        try:
            self._loop.run_until_complete(self._main())
        except BaseException as e:                    # surface start-up failures in __enter__
            self._error = e
            self._ready.set()
        finally:
            self._loop.close()

    async def _main(self) -> None:
        self._stop = asyncio.Event()
        # The emulator's asyncio primitives must belong to this loop, so it is built here.
        async with KarpenterEmulator(**self._kwargs) as emulator, kmock.Server(emulator) as server:
            self.emulator = emulator
            self.url = str(server.url).rstrip("/")
            self._ready.set()
            await self._stop.wait()
            # Open watches would hold the server's shutdown until their timeouts: drop them.
            await emulator.cut_watches()

    def __enter__(self) -> KMockThread:
        self._thread.start()
        if not self._ready.wait(10) or self._error is not None:
            raise RuntimeError("kmock did not start") from self._error
        return self

    def __exit__(self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None) -> None:
        if self._stop is not None and not self._loop.is_closed():
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(10)

    def call(self, fn: Callable[[], Awaitable[T]], timeout: float = 10) -> T:
        """Run a coroutine (e.g. ``emulator.cut_watches``) on the emulator's loop and wait for it."""
        async def wrapper() -> T:
            return await fn()
        return asyncio.run_coroutine_threadsafe(wrapper(), self._loop).result(timeout)

    def api_client(self) -> kubernetes.client.ApiClient:
        cfg = kubernetes.client.Configuration()
        cfg.host = self.url
        return kubernetes.client.ApiClient(cfg)
