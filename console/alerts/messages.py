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


def build(*, title: str, state: str, fields: dict[str, str], details: list[str], nodepool: str,
          at: datetime, link: str) -> tuple[str, list[dict[str, Any]]]:
    """Return (plain-text fallback, blocks). ``state`` is fired/repeated/resolved/test."""
    prefix = {"fired": "🔴", "repeated": "🔁", "resolved": "✅", "test": "🧪"}.get(state, "")
    header = _cut(f"{prefix} {title}".strip() + (" — resolved" if state == "resolved" else ""), MAX_HEADER)
    when = at.strftime("%Y-%m-%d %H:%M UTC")
    items = list(fields.items())[:MAX_FIELDS]
    blocks: list[dict[str, Any]] = [
        {"type": "header", "text": {"type": "plain_text", "text": header, "emoji": True}},
        {"type": "section", "fields": [{"type": "mrkdwn", "text": _cut(f"*{k}*\n{v}", MAX_FIELD)} for k, v in items]},
    ]
    if details:
        blocks.append({"type": "section", "text": {"type": "mrkdwn", "text": _cut("\n".join(f"• {_escape(d)}" for d in details),
                                                                                 MAX_SECTION)}})
    blocks.append({"type": "context", "elements": [
        {"type": "mrkdwn", "text": f"NodePool: *{nodepool or 'cluster'}*"},
        {"type": "mrkdwn", "text": when}]})
    blocks.append({"type": "actions", "elements": [
        {"type": "button", "text": {"type": "plain_text", "text": "Open in Loadmaster"}, "url": link[:3000]}]})
    text = _cut(f"{header} | " + "; ".join(f"{k}: {v}" for k, v in items) + f" | {nodepool or 'cluster'} {when}",
                MAX_SECTION)
    return text, blocks[:MAX_BLOCKS]


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
