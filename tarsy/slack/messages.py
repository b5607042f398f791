"""Block Kit for a session's message and its thread replies.

Text from alerts, LLMs and users is escaped for mrkdwn (`&`, `<`, `>`), so it can neither mention
`<!channel>` nor forge links, and cut to Slack's block limits. Masking happens on the way out
(tarsy.slack.client), for every text at once."""

from __future__ import annotations

from typing import Any

from tarsy.models import AlertSession, Resolution, SessionStatus, Stage, TriageStatus

SECTION_MAX = 2900  # Slack refuses a section text over 3000 characters
FALLBACK_MAX = 3000  # the notification text; the blocks carry the message
STATUS_LABEL: dict[str, tuple[str, str]] = {
    SessionStatus.PENDING: (":hourglass:", "Queued"),
    SessionStatus.IN_PROGRESS: (":mag:", "Investigating"),
    SessionStatus.CANCELLING: (":hourglass_flowing_sand:", "Cancelling"),
    SessionStatus.COMPLETED: (":white_check_mark:", "Completed"),
    SessionStatus.FAILED: (":x:", "Failed"),
    SessionStatus.CANCELLED: (":no_entry_sign:", "Cancelled"),
    SessionStatus.TIMED_OUT: (":alarm_clock:", "Timed out"),
}
SEVERITY_EMOJI = {"critical": ":red_circle:", "high": ":large_orange_circle:", "warning": ":large_yellow_circle:",
                  "info": ":large_blue_circle:"}

Message = tuple[str, list[dict[str, Any]]]  # (fallback text, blocks)

# The triage buttons: their block names the session (`triage:<id>`), each action_id a triage action.
TRIAGE_BLOCK_PREFIX = "triage:"
TRIAGE_ACTION_IDS = {"triage_claim": "claim", "triage_acknowledge": "acknowledge", "triage_resolve": "resolve",
                     "triage_reopen": "reopen"}
NOTE_MAX = 600  # a resolution note shown in Slack; the dashboard has the whole note


def escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def clip(text: str, limit: int = SECTION_MAX) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _fallback(text: str) -> str:
    """The notification text: escaped like the blocks (Slack parses it for mentions too)."""
    return clip(escape(text), FALLBACK_MAX)


def _section(text: str) -> dict[str, Any]:
    return {"type": "section", "text": {"type": "mrkdwn", "text": clip(text)}}


def _context(*texts: str) -> dict[str, Any]:
    return {"type": "context", "elements": [{"type": "mrkdwn", "text": clip(t)} for t in texts if t]}


def _link(url: str, label: str = "Open in TARSy") -> str:
    return f"<{url}|{label}>" if url else ""


def _duration(session: AlertSession) -> str:
    seconds = session.duration_seconds
    if seconds is None:
        return ""
    minutes, secs = divmod(int(seconds), 60)
    return f"{minutes}m {secs}s" if minutes else f"{secs}s"


def stage_line(stage: Stage | None, chain_stages: int) -> str:
    """`analysis (1/2)` for a chain stage; a synthesis stage names itself."""
    if stage is None:
        return "starting"
    position = f" ({stage.chain_stage_index + 1}/{chain_stages})" if stage.chain_stage_index is not None else ""
    return f"{stage.name}{position}"


def _alert_name(session: AlertSession) -> str:
    """Which alert: its title, else its type."""
    return session.title or f"{session.alert_type} alert"


def session_message(session: AlertSession, *, stage: Stage | None, chain_stages: int, url: str) -> Message:
    """The session's message, updated in place as the investigation moves on."""
    emoji, label = STATUS_LABEL.get(session.status, (":grey_question:", session.status))
    title = f"{emoji} *{label}*: {escape(_alert_name(session))}"
    fields = [f"*Severity*\n{SEVERITY_EMOJI.get(session.severity, '')} {escape(session.severity)}",
              f"*Alert type · chain*\n{escape(session.alert_type)} · {escape(session.chain_id)}"]
    if session.is_terminal:
        fields.append(f"*Duration*\n{_duration(session) or '-'}")
    else:
        fields.append(f"*Stage*\n{escape(stage_line(stage, chain_stages))}")
    blocks: list[dict[str, Any]] = [
        _section(title),
        {"type": "section", "fields": [{"type": "mrkdwn", "text": f} for f in fields]},
    ]
    if session.status in (SessionStatus.FAILED, SessionStatus.TIMED_OUT) and session.error_message:
        blocks.append(_section(f"*Reason*: {escape(session.error_message)}"))
    if session.is_terminal and session.triage_status:
        blocks += [_section(triage_line(session)), _triage_actions(session)]
    if url:
        blocks.append({"type": "actions", "elements": [
            {"type": "button", "text": {"type": "plain_text", "text": "Open in TARSy"}, "url": url,
             "action_id": "open_session"}]})
    blocks.append(_context(f"Session `{session.id}`", "Reply with `@TARSy <question>` once it has finished"))
    return _fallback(f"{label}: {_alert_name(session)} ({session.severity})"), blocks


def _resolution_label(resolution: str) -> str:
    return str(Resolution(resolution).label).lower() if resolution in Resolution.values else resolution


def triage_line(session: AlertSession) -> str:
    """Where the finished session stands with the team: needs review, whose it is, how it was resolved."""
    if session.triage_status == TriageStatus.IN_PROGRESS:
        return f":raising_hand: *In progress* · {escape(session.assignee)}"
    if session.triage_status == TriageStatus.RESOLVED:
        note = f": {escape(clip(session.resolution_note, NOTE_MAX))}" if session.resolution_note else ""
        who = f" · {escape(session.assignee)}" if session.assignee else ""
        return f":white_check_mark: *Resolved* as {_resolution_label(session.resolution)}{who}{note}"
    return ":eyes: *Needs review*"


def _button(label: str, action_id: str, style: str = "") -> dict[str, Any]:
    button = {"type": "button", "text": {"type": "plain_text", "text": label}, "action_id": action_id,
              "value": TRIAGE_ACTION_IDS[action_id]}
    return {**button, "style": style} if style else button


def _triage_actions(session: AlertSession) -> dict[str, Any]:
    """The buttons the session's triage state allows (the service decides; these only offer)."""
    if session.triage_status == TriageStatus.RESOLVED:
        elements = [_button("Reopen", "triage_reopen")]
    else:
        elements = [] if session.triage_status == TriageStatus.IN_PROGRESS else [
            _button("Claim", "triage_claim", "primary")]
        elements += [_button("Acknowledge", "triage_acknowledge"), {
            "type": "static_select", "action_id": "triage_resolve",
            "placeholder": {"type": "plain_text", "text": "Resolve as…"},
            "options": [{"text": {"type": "plain_text", "text": str(label)}, "value": value}
                        for value, label in Resolution.choices]}]
    return {"type": "actions", "block_id": f"{TRIAGE_BLOCK_PREFIX}{session.id}", "elements": elements}


def triage_message(*, action: str, actor: str, session: AlertSession, note: str, url: str) -> Message:
    """A thread reply for a triage action: who did what (from Slack or the dashboard)."""
    emoji, head = {
        "claim": (":raising_hand:", f"Claimed by {actor}"),
        "assign": (":arrow_right:", f"Assigned to {session.assignee} by {actor}"),
        "acknowledge": (":ok_hand:", f"Acknowledged by {actor} (resolved as dismissed)"),
        "resolve": (":white_check_mark:", f"Resolved as {_resolution_label(session.resolution)} by {actor}"),
        "reopen": (":leftwards_arrow_with_hook:", f"Reopened by {actor}: needs review again"),
    }.get(action, (":memo:", f"Triage {action} by {actor}"))
    text = head + (f": {clip(note, NOTE_MAX)}" if note else "")
    return _fallback(text), [_section(f"{emoji} {escape(text)}"), _context(_link(url))]


def summary_message(session: AlertSession, *, url: str) -> Message:
    """The thread reply when the session ends: the executive summary, or why it did not complete."""
    _, label = STATUS_LABEL.get(session.status, ("", session.status))
    duration = _duration(session)
    head = f"*Investigation {label.lower()}*" + (f" in {duration}" if duration else "")
    if session.status == SessionStatus.COMPLETED:
        body = session.executive_summary or session.final_analysis or "(no analysis was produced)"
        text = f"{head}\n{escape(body)}"
    else:
        body = session.error_message or label
        text = f"{head}\n*Reason*: {escape(body)}"
    return _fallback(f"Investigation {label.lower()}: {body}"), [_section(text), _context(_link(url))]


def attached_message(*, kind: str, data: str, url: str, repeats: int = 1) -> Message:
    """An occurrence (same alert again) or related alerts (same group) joining the session; `repeats` of them
    merged into one reply during a storm, showing the latest."""
    if kind == "occurrence":
        head = "*The alert fired again*" if repeats == 1 else f"*The alert fired {repeats} more times* (the latest:)"
    else:
        head = ("*A related alert joined this investigation*" if repeats == 1
                else f"*{repeats} related alerts joined this investigation* (the latest:)")
    excerpt = clip(data, 2400)
    return _fallback(head.replace("*", "")), [_section(f"{head}\n```{escape(excerpt)}```"), _context(_link(url))]


def resolved_message(*, text: str, url: str) -> Message:
    """The monitoring source reports the session's alert as resolved."""
    return _fallback(text), [_section(f":large_green_circle: {escape(text)}"), _context(_link(url))]


def answer_message(*, question: str, answer: str, ok: bool, url: str) -> Message:
    """A follow-up question and the chat agent's answer (or why there is none)."""
    quoted = "\n".join(f"&gt; {line}" for line in escape(clip(question, 600)).splitlines() or [""])
    verdict = escape(answer) if ok else f":x: No answer: {escape(answer or 'the chat failed')}"
    return _fallback(f"Answer: {answer}"), [_section(f"{quoted}\n{verdict}"), _context(_link(url))]


def notice_message(text: str) -> Message:
    return _fallback(text), [_section(escape(text))]
