"""Webhook credentials: a shared secret as `Authorization: Bearer <secret>`, or PagerDuty's HMAC signature.

PagerDuty signs the raw body with HMAC-SHA256 and sends `X-PagerDuty-Signature: v1=<hex>[,v1=<hex>…]` (several
while a secret rotates); one match is enough. Comparisons are constant-time.
"""

from __future__ import annotations

import hashlib
import hmac


def bearer_matches(authorization: str, secret: str) -> bool:
    scheme, _, value = authorization.strip().partition(" ")
    return scheme.lower() == "bearer" and hmac.compare_digest(value.strip().encode(), secret.encode())


def pagerduty_signature(body: bytes, secret: str) -> str:
    return "v1=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def pagerduty_signature_matches(header: str, body: bytes, secret: str) -> bool:
    expected = pagerduty_signature(body, secret).encode()
    return any(hmac.compare_digest(candidate.strip().encode(), expected) for candidate in header.split(",")
               if candidate.strip())
