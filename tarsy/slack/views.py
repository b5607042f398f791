"""Slack's requests to TARSy: the Events API (app mentions), the `/tarsy` slash command and interactivity (the
triage buttons on a session's message, the decision buttons on an action proposal and its Reject form).

Authenticated by Slack's request signature (HMAC of the raw body with the signing secret; a timestamp older
than five minutes is refused) instead of the API's auth mode; tarsy.api.cross_site exempts exactly these
paths, as Slack posts form-encoded slash commands and interactions. A signature proves who sent a request, not
that it is new: each is acted on once (tarsy.intake.replay, the cache every web process shares), known by its
Events API `event_id` (which Slack's retries keep), else by a hash of its signed timestamp and body, for as long
as the signature stays valid; a repeat is acknowledged and does nothing. They answer within Slack's three seconds:
a question only queues a chat stage, a triage action or a decision is one transaction (plus, for the actor's name
and a refusal's ephemeral answer or the Reject form, a Web API call of at most a second each)."""

from __future__ import annotations

import hashlib
import json
import logging
import os
from collections.abc import Callable
from functools import wraps
from urllib.parse import parse_qs

from django.http import HttpResponse, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST
from slack_sdk.signature import SignatureVerifier

from tarsy.intake import replay
from tarsy.web.inputs import ascii_int
from tarsy.web.responses import json_error

from . import actions, approvals, inbound
from .config import slack_config
from .payloads import MalformedAction

log = logging.getLogger(__name__)

MAX_BODY_BYTES = 64 * 1024  # Slack's event and command bodies are a few KB
MAX_TIMESTAMP_DIGITS = 12  # Unix seconds; the verifier's int() - float() arithmetic overflows on hundreds of digits
SIGNATURE_MAX_AGE_S = 5 * 60  # slack_sdk's SignatureVerifier refuses timestamps further than this from now
ALREADY_TAKEN = "TARSy already received this request; it was not acted on again."


def _refusal(request) -> JsonResponse | None:
    """None when the request is Slack's, signed with the configured secret; else the JSON error to answer."""
    config = slack_config()
    if config is None:
        return json_error(404, "not_found", "Slack is not configured")
    secret = os.environ.get(config.signing_secret_env, "")
    if not secret:
        return json_error(503, "service_unavailable", f"Slack signing secret ({config.signing_secret_env}) is not set")
    if len(request.body) > MAX_BODY_BYTES:
        return json_error(413, "payload_too_large", f"Slack requests are at most {MAX_BODY_BYTES} bytes")
    timestamp = request.headers.get("X-Slack-Request-Timestamp", "")
    signature = request.headers.get("X-Slack-Signature", "")
    try:
        body = request.body.decode("utf-8")
    except UnicodeDecodeError:
        return json_error(400, "bad_request", "request body is not UTF-8")
    if (not _well_formed(timestamp) or not signature
            or not SignatureVerifier(secret).is_valid(body, timestamp, signature)):
        return json_error(401, "unauthorized", "missing, invalid or stale Slack signature")
    return None


def _request_key(request) -> str:
    """What makes a request this one: an event's `event_id`, else its signed timestamp and body."""
    try:
        payload = json.loads(request.body)
    except ValueError:
        payload = None
    event_id = payload.get("event_id") if isinstance(payload, dict) else None
    if isinstance(event_id, str) and event_id:
        return f"event:{event_id}"
    signed = request.headers.get("X-Slack-Request-Timestamp", "").encode() + b":" + request.body
    return f"body:{hashlib.sha256(signed).hexdigest()}"


def signed_once(repeat: Callable[[], HttpResponse]):
    """A Slack endpoint: signed by Slack (else refused) and acted on once; `repeat` answers a repeated request.
    A request that fails is forgotten, so Slack's retry of it is acted on."""

    def decorate(view):
        @wraps(view)
        def wrapper(request):
            refusal = _refusal(request)
            if refusal is not None:
                return refusal
            key = _request_key(request)
            if not replay.event_claim(source="slack", event_id=key, max_age_s=SIGNATURE_MAX_AGE_S):
                return repeat()
            try:
                return view(request)
            except BaseException:
                replay.event_release(source="slack", event_id=key)
                raise
        return wrapper
    return decorate


def _acknowledged() -> HttpResponse:
    return JsonResponse({"ok": True})


def _well_formed(timestamp: str) -> bool:
    """Unix seconds in ASCII digits: the verifier reads the header with int(), which raises on anything else."""
    return len(timestamp) <= MAX_TIMESTAMP_DIGITS and ascii_int(timestamp) is not None


@csrf_exempt
@require_POST
@signed_once(_acknowledged)
def events(request):
    """Events API: the URL verification handshake, and `app_mention` events (questions in a thread). A retry of an
    event (same `event_id`, e.g. after a slow first answer) is a repeat: it is not asked twice."""
    try:
        payload = json.loads(request.body)
    except ValueError:
        return json_error(400, "bad_request", "request body is not JSON")
    if not isinstance(payload, dict):
        return json_error(400, "bad_request", "request body must be a JSON object")
    if payload.get("type") == "url_verification":
        return JsonResponse({"challenge": str(payload.get("challenge", ""))})
    event = payload.get("event")
    if payload.get("type") == "event_callback" and isinstance(event, dict) and event.get("type") == "app_mention":
        thread_ts = str(event.get("thread_ts") or "")
        if thread_ts:
            inbound.mention_in_thread(channel=str(event.get("channel", "")), thread_ts=thread_ts,
                                      text=str(event.get("text", "")), user=str(event.get("user", "")))
    return JsonResponse({"ok": True})


def _form(request) -> dict[str, str]:
    return {k: v[0] for k, v in parse_qs(request.body.decode("utf-8")).items()}


@csrf_exempt
@require_POST
@signed_once(lambda: JsonResponse({"response_type": "ephemeral", "text": ALREADY_TAKEN}))
def commands(request):
    """`/tarsy ask|claim|ack|resolve|reopen|approve|reject|help …`: the reply is shown to the one who typed it
    (ephemeral)."""
    form = _form(request)
    text, user = form.get("text", ""), form.get("user_id", "")
    if not user:
        return json_error(400, "bad_request", "a slash command carries `user_id`")
    verb = text.strip().partition(" ")[0].lower()
    if verb == "ask":
        reply = inbound.slash_command(text=text, user=user, user_name=form.get("user_name", ""))
    elif verb in ("approve", "reject"):
        reply = approvals.slash_command(text=text, user_id=user, user_name=form.get("user_name", ""))
    else:
        reply = actions.slash_command(text=text, user_id=user, user_name=form.get("user_name", ""))
    return JsonResponse({"response_type": "ephemeral", "text": reply})


@csrf_exempt
@require_POST
@signed_once(_acknowledged)
def interactions(request):
    """Interactivity (form-encoded, the JSON in `payload`): `block_actions` from the triage and decision buttons,
    and `view_submission` of the Reject form. Slack shows nothing of a click's answer body (a refusal reaches the
    member as an ephemeral message); a form's refusal is answered as errors under its field, an empty 200 closes
    it."""
    try:
        payload = json.loads(_form(request).get("payload", ""))
    except ValueError:
        return json_error(400, "bad_request", "an interaction carries its JSON in the `payload` form field")
    if not isinstance(payload, dict) or not isinstance(payload.get("type"), str):
        return json_error(400, "bad_request", "`payload` must be a JSON object with a `type`")
    try:
        if payload["type"] == "view_submission":
            errors = approvals.submission(payload)
            return JsonResponse(errors) if errors else HttpResponse(status=200)
        if payload["type"] != "block_actions":
            return JsonResponse({"ok": True})  # TARSy has no shortcuts: nothing else is its own
        click, decision = actions.read_click(payload), approvals.read_click(payload)
    except MalformedAction as exc:
        return json_error(400, "bad_request", str(exc))
    if click is not None:
        actions.click(click)
    elif decision is not None:
        approvals.click(decision)
    return JsonResponse({"ok": True})
