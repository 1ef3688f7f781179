"""Secrets at rest: Fernet with a key derived from LOADMASTER_ENCRYPTION_KEY (or SECRET_KEY).

A dedicated key lets an operator rotate SECRET_KEY (sessions) without losing every stored webhook;
SECRET_KEY is only the fallback so the embedded demo works with no extra configuration.
"""

from __future__ import annotations

import base64
import hashlib

from cryptography.fernet import Fernet, InvalidToken
from django.conf import settings


def _fernet() -> Fernet:
    # settings.LOADMASTER_ENCRYPTION_KEY comes from env_str() in console/settings.py.
    material = getattr(settings, "LOADMASTER_ENCRYPTION_KEY", "") or settings.SECRET_KEY
    # Domain-separate the derivation so the Fernet key is never equal to SECRET_KEY itself.
    digest = hashlib.sha256(b"loadmaster-alerts-v1:" + material.encode()).digest()
    return Fernet(base64.urlsafe_b64encode(digest))


def encrypt(plain: str) -> str:
    return _fernet().encrypt(plain.encode()).decode()


def decrypt(token: str) -> str:
    try:
        return _fernet().decrypt(token.encode()).decode()
    except InvalidToken:
        # The key changed since the secret was stored: say so instead of sending garbage to Slack.
        raise ValueError("stored secret cannot be decrypted (encryption key changed?)") from None


def mask(secret: str) -> str:
    """Enough to recognise which secret it is, never enough to use it."""
    if not secret:
        return ""
    return "…" + secret[-4:] if len(secret) > 12 else "…"
