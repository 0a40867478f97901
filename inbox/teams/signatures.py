"""The signatures of a team webhook call: the legacy ``X-Inbox-Signature`` and the Standard Webhooks headers."""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac


def sign(secret: str, body: bytes) -> str:
    """The legacy ``X-Inbox-Signature`` (no timestamp: a captured delivery could be replayed). Kept for one
    release beside the Standard Webhooks headers; receivers should verify ``webhook-signature``."""
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def signing_key(secret: str) -> bytes:
    """Standard Webhooks keys: a ``whsec_<base64>`` secret signs with its decoded bytes (so the spec's libraries
    take it as is); any other secret signs with its UTF-8 bytes."""
    if secret.startswith("whsec_"):
        try:
            return base64.b64decode(secret.removeprefix("whsec_") + "==")
        except binascii.Error:
            pass
    return secret.encode()


def standard_webhook_headers(secret: str, *, message_id: str, body: bytes, timestamp: int) -> dict[str, str]:
    """``webhook-id``, ``webhook-timestamp`` and ``webhook-signature`` as the Standard Webhooks spec signs them:
    ``v1,<base64 HMAC-SHA256 of "<id>.<timestamp>.<body>">``. Receivers refuse stale timestamps (replays) and
    duplicate ids (retries of one delivery share its id)."""
    signed = f"{message_id}.{timestamp}.".encode() + body
    digest = base64.b64encode(hmac.new(signing_key(secret), signed, hashlib.sha256).digest()).decode()
    return {"webhook-id": message_id, "webhook-timestamp": str(timestamp), "webhook-signature": f"v1,{digest}"}
