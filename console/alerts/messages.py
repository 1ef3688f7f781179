"""Block Kit messages, kept within Slack's limits so Slack never rejects an alert for its shape."""

from __future__ import annotations

from datetime import datetime
from typing import Any

MAX_BLOCKS = 50
MAX_HEADER = 150
MAX_SECTION = 3000
MAX_FIELDS = 10
MAX_FIELD = 2000


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _escape(text: str) -> str:
    # Slack's mrkdwn reads <...> as links and mentions: free text (pod names, the engine's reasons)
    # must not be able to turn into one.
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def cluster_name() -> str:
    """The name alerts give the cluster (LOADMASTER_CLUSTER_NAME; "demo" for the embedded demo)."""
    from django.conf import settings

    return str(getattr(settings, "LOADMASTER_CLUSTER_NAME", "") or "cluster")


def build(*, title: str, state: str, fields: dict[str, str], details: list[str], nodepool: str,
          at: datetime, link: str, summary: str = "", cluster: str | None = None) -> tuple[str, list[dict[str, Any]]]:
    """Return (plain-text fallback, blocks). ``state`` is fired/repeated/resolved/test.

    The header says what and where once — state, cluster, rule — and every other block adds to it:
    ``summary`` (the evaluation's sentence), the fields, the details, then the context (cluster,
    NodePool, time). The fallback, which Slack shows in notifications, carries the same header once.
    """
    cluster = cluster if cluster is not None else cluster_name()
    prefix = {"fired": "🔴", "repeated": "🔁", "resolved": "✅", "test": "🧪"}.get(state, "")
    suffix = {"resolved": " — resolved", "repeated": " — still firing"}.get(state, "")
    header = _cut(f"{prefix} [{cluster}] {title}".strip() + suffix, MAX_HEADER)
    when = at.strftime("%Y-%m-%d %H:%M UTC")
    items = list(fields.items())[:MAX_FIELDS]
    blocks: list[dict[str, Any]] = [
        {"type": "header", "text": {"type": "plain_text", "text": header, "emoji": True}},
    ]
    if summary:
        blocks.append({"type": "section", "text": {"type": "mrkdwn", "text": _cut(_escape(summary), MAX_SECTION)}})
    if items:
        blocks.append({"type": "section", "fields": [{"type": "mrkdwn", "text": _cut(f"*{k}*\n{v}", MAX_FIELD)}
                                                     for k, v in items]})
    if details:
        blocks.append({"type": "section", "text": {"type": "mrkdwn", "text": _cut("\n".join(f"• {_escape(d)}" for d in details),
                                                                                 MAX_SECTION)}})
    blocks.append({"type": "context", "elements": [
        {"type": "mrkdwn", "text": f"Cluster: *{_escape(cluster)}*"},
        {"type": "mrkdwn", "text": f"NodePool: *{_escape(nodepool) or 'all'}*"},
        {"type": "mrkdwn", "text": when}]})
    blocks.append({"type": "actions", "elements": [
        {"type": "button", "text": {"type": "plain_text", "text": "Open in Loadmaster"}, "url": link[:3000]}]})
    parts = [header + (f": {summary}" if summary else "")]
    if items:
        parts.append("; ".join(f"{k}: {v}" for k, v in items))
    parts.append(f"cluster {cluster}, NodePool {nodepool or 'all'}, {when}")
    return _cut(" | ".join(parts), MAX_SECTION), blocks[:MAX_BLOCKS]


def problems(blocks: list[dict[str, Any]]) -> list[str]:
    """What would make Slack refuse these blocks (empty when valid); used by tests and the test button."""
    found: list[str] = []
    if len(blocks) > MAX_BLOCKS:
        found.append(f"{len(blocks)} blocks > {MAX_BLOCKS}")
    for b in blocks:
        kind = b.get("type")
        if kind not in {"header", "section", "context", "actions", "divider"}:
            found.append(f"unknown block type {kind}")
        if kind == "header":
            if b["text"]["type"] != "plain_text" or len(b["text"]["text"]) > MAX_HEADER:
                found.append("header must be plain_text ≤ 150")
        if kind == "section":
            if "text" not in b and "fields" not in b:
                found.append("section without text or fields")
            if len(b.get("text", {}).get("text", "")) > MAX_SECTION:
                found.append("section text > 3000")
            flds = b.get("fields", [])
            if len(flds) > MAX_FIELDS or any(len(f["text"]) > MAX_FIELD for f in flds):
                found.append("section fields over limits")
        if kind == "actions" and not 1 <= len(b["elements"]) <= 25:
            found.append("actions elements out of range")
    return found
