"""Block Kit for a session's message and its thread replies.

Text from alerts, LLMs and users is escaped for mrkdwn (`&`, `<`, `>`), so it can neither mention
`<!channel>` nor forge links, and cut to Slack's block limits. Masking happens on the way out
(tarsy.slack.client), for every text at once."""

from __future__ import annotations

import json
import re
from datetime import datetime
from typing import Any

from tarsy.models import (
    ActionOutcome,
    ActionProposal,
    AlertSession,
    DryRunStatus,
    ProposalStatus,
    Resolution,
    SessionStatus,
    Stage,
    TriageStatus,
)

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
# The decision buttons on an action proposal: their block names the proposal (`action:<id>`).
ACTION_BLOCK_PREFIX = "action:"
ACTION_APPROVE, ACTION_REJECT = "action_approve", "action_reject"
ACTION_TEXT_MAX = 1500  # evidence, a result, a dry run's preview: the dashboard has the whole text
# What an approval runs is shown whole, never cut: its arguments fill up to this many code sections (about 29,000
# characters; with the proposal's other blocks far below Slack's 50 per message). Longer ones are decided in the
# dashboard: Slack then says so and offers no Approve.
ARGUMENT_SECTIONS_MAX = 10
CODE_FENCE = "```"
HEADING_RE = re.compile(r"^#{1,6}\s+(.+)$", re.MULTILINE)


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


def _bold_headings(text: str) -> str:
    """mrkdwn has no headings: a Markdown one (the summary's `### Actions`) becomes a bold line."""
    return HEADING_RE.sub(r"*\1*", text)


def summary_message(session: AlertSession, *, url: str) -> Message:
    """The thread reply when the session ends: the executive summary, or why it did not complete."""
    _, label = STATUS_LABEL.get(session.status, ("", session.status))
    duration = _duration(session)
    head = f"*Investigation {label.lower()}*" + (f" in {duration}" if duration else "")
    if session.status == SessionStatus.COMPLETED:
        body = session.executive_summary or session.final_analysis or "(no analysis was produced)"
        text = f"{head}\n{_bold_headings(escape(body))}"
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


# ---- approved actions -------------------------------------------------------------------------------------------


def action_ref(proposal_id: Any) -> str:
    """The thread reply showing a proposal, edited in place as it is decided and run."""
    return f"{ACTION_BLOCK_PREFIX}{proposal_id}"


def _when(moment: datetime) -> str:
    """A time each reader sees in their own time zone (Slack's date formatting), UTC as the fallback."""
    return f"<!date^{int(moment.timestamp())}^{{date_short_pretty}} {{time}}|{moment:%Y-%m-%d %H:%M} UTC>"


def _code(value: Any) -> str:
    return f"```{escape(clip(json.dumps(value, ensure_ascii=False), ACTION_TEXT_MAX))}```"


def _arguments_text(p: ActionProposal) -> str:
    return json.dumps(p.arguments, ensure_ascii=False, indent=2)


def _code_pieces(text: str) -> list[str]:
    """`text` cut into escaped pieces that each fit one code section, at line ends where a line fits."""
    room = SECTION_MAX - 2 * len(CODE_FENCE)
    pieces, current = [], ""
    for line in text.splitlines(keepends=True):
        while line:
            fits = len(escape(current + line)) <= room
            if fits:
                current, line = current + line, ""
                continue
            if current:
                pieces.append(current)
                current = ""
                continue
            cut = _fitting(line, room)  # a line longer than a section (a manifest in one string)
            pieces.append(line[:cut])
            line = line[cut:]
    return [escape(piece) for piece in [*pieces, current] if piece]


def _fitting(text: str, room: int) -> int:
    """How many characters of `text` fit in `room` once escaped."""
    used = 0
    for count, char in enumerate(text):
        used += len(escape(char))
        if used > room:
            return count
    return len(text)


def arguments_fit(p: ActionProposal) -> bool:
    """Whether Slack can show the arguments whole (ARGUMENT_SECTIONS_MAX): only then may it approve them."""
    return len(_code_pieces(_arguments_text(p))) <= ARGUMENT_SECTIONS_MAX


def _arguments_blocks(p: ActionProposal, url: str) -> list[dict[str, Any]]:
    """The arguments in full, or why they are not here and where to read (and decide) them."""
    text = _arguments_text(p)
    pieces = _code_pieces(text)
    if len(pieces) <= ARGUMENT_SECTIONS_MAX:
        return [{"type": "section", "text": {"type": "mrkdwn", "text": f"{CODE_FENCE}{piece}{CODE_FENCE}"}}
                for piece in pieces]
    where = _link(url, "the dashboard") if url else "TARSy's dashboard"
    return [_section(f":warning: *The arguments are too long to show in Slack* ({len(text):,} characters): read "
                     f"them and decide in {where}. Slack can only reject this action.")]


def _call(p: ActionProposal) -> str:
    return f"`{escape(p.server)}.{escape(p.tool)}`"


def _decision_buttons(p: ActionProposal) -> dict[str, Any]:
    """Approve ("runs as shown": only when the arguments are shown whole) and Reject."""
    approve = {"type": "button", "action_id": ACTION_APPROVE, "value": str(p.id), "style": "primary",
               "text": {"type": "plain_text", "text": "Approve"},
               "confirm": {"title": {"type": "plain_text", "text": "Run this action?"},
                           "text": {"type": "mrkdwn", "text": f"{_call(p)} runs as shown, then TARSy verifies it."},
                           "confirm": {"type": "plain_text", "text": "Approve"},
                           "deny": {"type": "plain_text", "text": "Cancel"}}}
    reject = {"type": "button", "action_id": ACTION_REJECT, "value": str(p.id), "style": "danger",
              "text": {"type": "plain_text", "text": "Reject…"}}
    elements = [approve, reject] if arguments_fit(p) else [reject]
    return {"type": "actions", "block_id": action_ref(p.id), "elements": elements}


def _decision_line(p: ActionProposal) -> str:
    """Who decided, when and why; once it ran, how it went."""
    said = f": “{escape(clip(p.comment, NOTE_MAX))}”" if p.comment else ""
    when = _when(p.decided_at) if p.decided_at else ""
    if p.status == ProposalStatus.EXPIRED:
        return f":hourglass: *Expired* {when}: nobody decided in time; it did not run."
    if p.status == ProposalStatus.WITHDRAWN:
        approved = f" after approval by {escape(p.decided_by)} {when}{said}" if p.decided_by else ""
        return f":leftwards_arrow_with_hook: *Withdrawn*{approved}: {escape(p.reason)}. It did not run."
    if p.status == ProposalStatus.REJECTED:
        return f":no_entry_sign: *Rejected* by {escape(p.decided_by)} {when}{said}. It did not run."
    line = f":white_check_mark: *Approved* by {escape(p.decided_by)} {when}{said}"
    ran: dict[str, str] = {ActionOutcome.VERIFIED: ":large_green_circle: Ran: *verified*",
                           ActionOutcome.NOT_VERIFIED: ":warning: Ran: *not verified*",
                           ActionOutcome.FAILED: ":x: *Failed*"}
    return f"{line}\n{ran[p.outcome]}" if p.outcome in ran else line


def _dry_run(p: ActionProposal) -> str:
    """The server's preview of the change, so approvers see in the thread what the dashboard shows."""
    cut = " (cut: the dashboard shows all of it)" if len(p.dry_run) > ACTION_TEXT_MAX else ""
    if p.dry_run_status == DryRunStatus.RAN:
        preview = escape(clip(p.dry_run, ACTION_TEXT_MAX))
        return f"*Dry run* (the server's preview; nothing was changed){cut}\n```{preview}```"
    if p.dry_run_status == DryRunStatus.FAILED:
        return f"*Dry run failed*{cut}\n```{escape(clip(p.dry_run, ACTION_TEXT_MAX))}```"
    return "*Dry run*: none for this tool"


def action_message(p: ActionProposal, *, agent: str, url: str) -> Message:
    """The proposal as the approvers see it: what runs, why, what it should change and how that is checked; the
    Approve / Reject buttons while it waits, then who decided (shown in place of the buttons)."""
    pending = p.status == ProposalStatus.PENDING
    head = ":raised_hand: *Action proposed: approval needed*" if pending else ":raised_hand: *Action proposed*"
    verify = (f"*Verification*\n`{escape(p.verify_tool)}` {_code(p.verify_arguments)} shows "
              f"“{escape(clip(p.verify_expect, NOTE_MAX))}”")
    blocks: list[dict[str, Any]] = [
        _section(f"{head} by {escape(agent)}\n{_call(p)} with these arguments:"),
        *_arguments_blocks(p, url),
        _section(f"*Why*\n{escape(p.justification)}"),
        _section(f"*Expected effect*\n{escape(p.expected_effect)}"),
        _section(verify),
    ]
    if p.dry_run_status:
        blocks.append(_section(_dry_run(p)))
    if pending:
        blocks += [_decision_buttons(p), _context(f"Expires {_when(p.expires_at)}")]
    else:
        blocks.append(_section(_decision_line(p)))
    blocks.append(_context(f"Action `{p.id}`", "`/tarsy approve|reject &lt;action ID&gt; …`", _link(url)))
    state = "approval needed" if pending else str(ProposalStatus(p.status).label).lower()
    return _fallback(f"Action proposed: {p.server}.{p.tool} ({state})"), blocks


def action_outcome_message(p: ActionProposal, *, url: str) -> Message:
    """How an approved action went: verified, not verified (with the last read as evidence), or failed."""
    if p.outcome == ActionOutcome.VERIFIED:
        text = (f":large_green_circle: *Action verified*: {_call(p)} ran and `{escape(p.verify_tool)}` shows "
                f"“{escape(clip(p.verify_expect, NOTE_MAX))}”.")
    elif p.outcome == ActionOutcome.NOT_VERIFIED:
        text = (f":warning: *Action not verified*: {_call(p)} ran but `{escape(p.verify_tool)}` does not show "
                f"“{escape(clip(p.verify_expect, NOTE_MAX))}”. The agent may propose a follow-up.\n*Last read*\n"
                f"```{escape(clip(p.evidence or '(none)', ACTION_TEXT_MAX))}```")
    else:
        text = f":x: *Action failed*: {_call(p)}\n```{escape(clip(p.result or '(no result)', ACTION_TEXT_MAX))}```"
    label = str(ActionOutcome(p.outcome).label).lower() if p.outcome in ActionOutcome.values else p.outcome
    return _fallback(f"Action {label}: {p.server}.{p.tool}"), [_section(text), _context(_link(url))]
