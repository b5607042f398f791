"""Who acted in Slack, as the TARSy identity the dashboard knows them by.

A claim from Slack must show up as that person's claim in the Triage view ("assigned to me") and in the
activity log, so the Slack member is mapped to the identity they sign in with: `slack.users` first (explicit,
for workspaces whose emails differ from the sign-in), else their Slack profile email (users.info, needs the
`users:read.email` scope) matched like a sign-in (tarsy.identity). Someone who matches nobody — a guest, a
member of a shared channel, anyone the team never gave a TARSy identity — cannot act (triage, decide, ask) unless
`slack.allow_unmapped` says so; then they act as `slack:<handle>`, so the log says who it was. Approving an action
needs more than a name: the identity (or one of its Django groups) must be an approver."""

from __future__ import annotations

import logging

from django.contrib.auth import get_user_model

from tarsy.errors import Forbidden
from tarsy.identity import identity_for_email

from .client import SlackGateway, SlackUnavailable
from .config import slack_config

log = logging.getLogger(__name__)

SLACK_PREFIX = "slack:"


class UnmappedMember(Forbidden):
    """A Slack member TARSy knows by no identity, while `slack.allow_unmapped` is off: nothing they ask is done."""


def slack_actor(*, user_id: str, user_name: str, gateway: SlackGateway) -> str:
    """The member's TARSy identity; raises UnmappedMember for one TARSy cannot map (unless allowed)."""
    config = slack_config()
    mapped = config.users.get(user_id, "") if config is not None else ""
    if mapped:
        return mapped
    try:
        identity = identity_for_email(gateway.user_email(user_id))
    except SlackUnavailable as exc:  # no email to match: unmapped for now
        log.warning("Slack: users.info for %s failed, so the member is not mapped: %s", user_id, exc)
        identity = ""
    if identity:
        return identity
    if config is None or not config.allow_unmapped:
        raise UnmappedMember(f"TARSy does not know this Slack member ({user_id}): map them in slack.users, or give "
                             "them a TARSy user with their Slack email")
    return f"{SLACK_PREFIX}{user_name or user_id}"


def actor_groups(identity: str) -> set[str]:
    """The Django groups of the active user signed in as `identity`, as a signed-in or API-token request would
    carry them (an approver may be named by group); none for a Slack handle or an SSO email with no user."""
    if not identity or identity.startswith(SLACK_PREFIX):
        return set()
    user_model = get_user_model()
    user = user_model.objects.filter(**{user_model.USERNAME_FIELD: identity, "is_active": True}).first()
    return set(user.groups.values_list("name", flat=True)) if user is not None else set()
