"""Prompt builder: composes the conversations every controller starts from.

System prompts stack three tiers of instructions — general SRE guidance, then each MCP server's instructions in
the agent's server order, then the agent's custom instructions — followed by the strategy's working format.
Everything that comes from outside (alert data, runbooks, earlier results, tool output) and the skills loaded from
disk enter through agents.prompts.fence, the one function that fences, checks and labels such text.
The wording lives in `templates/*.md` (readable, reviewable); this module only assembles it.
"""

from __future__ import annotations

import json
from pathlib import Path
from string import Template
from typing import Any

from agents.citations import cite
from agents.config.schema import SCHEDULED_CHECK_ALERT_TYPE
from agents.config.skills import LOAD_SKILL_TOOL, Skill
from agents.context import ChatContext, ResolvedAgentConfig, ToolResult
from agents.llm.types import ConversationMessage, ToolDefinition
from agents.prompts.checks import check_instruction
from agents.prompts.fence import Source, untrusted

_TEMPLATE_DIR = Path(__file__).with_name("templates")
_TEMPLATES: dict[str, Template] = {
    path.stem: Template(path.read_text(encoding="utf-8")) for path in sorted(_TEMPLATE_DIR.glob("*.md"))
}

NO_RUNBOOK = "No runbook is available for this alert."
NO_TOOLS_REACT = "No tools are available for this task: reply with a Final Answer."


def _render(name: str, **values: Any) -> str:
    return _TEMPLATES[name].substitute(values).strip()


def data_block(title: str, content: str, *, what: str, preface: str = "", suspected_injection: bool = False) -> str:
    """A titled section of outside content (agents.prompts.fence.untrusted): fenced, checked, labelled."""
    return untrusted(content, what=what, title=title, preface=preface, flagged=suspected_injection).text


def text_cut(text: str, limit: int) -> str:
    """At most `limit` characters of the text, saying how many were left out."""
    return text if len(text) <= limit else text[:limit] + f"\n… [{len(text) - limit} more characters]"


def evidence_text(results: list[dict[str, Any]], *, per_result: int, total: int) -> str:
    """An investigation's tool results (services.quality.session_evidence) as one judge's or reflector's data:
    `[E3] tool (error):` and the output cut to `per_result` characters, as many as fit in `total`."""
    entries: list[str] = []
    used = 0
    for result in results:
        status = " (error)" if result.get("is_error") else ""
        entry = (f"[{result['evidence_id'] or '(no id)'}] {result['tool'] or 'tool'}{status}:\n"
                 f"{text_cut(result['content'], per_result)}")
        if used + len(entry) > total:
            entries.append(f"… {len(results) - len(entries)} more tool results not shown")
            break
        entries.append(entry)
        used += len(entry)
    return "\n\n".join(entries) or "(no tool was called)"


# ---- system prompts --------------------------------------------------------------------------------------------


def instruction_tiers(config: ResolvedAgentConfig) -> list[str]:
    """General SRE instructions → (an action agent's safety rules) → MCP server instructions (in order) → agent
    custom instructions. The safety rules come before anything the operator wrote, which may narrow but not lift
    them."""
    tiers = [_render("general_instructions", agent_name=config.agent_name)]
    if config.is_action:
        tiers.append(_render("action_safety"))
    for server, text in config.server_instructions:
        if text.strip():
            tiers.append(_render("server_instructions", server=server, instructions=text.strip()))
    if config.custom_instructions.strip():
        tiers.append(_render("custom_instructions", instructions=config.custom_instructions.strip()))
    return tiers + skill_sections(config.required_skills, config.loadable_skills)


def skill_sections(required: tuple[Skill, ...], loadable: tuple[Skill, ...]) -> list[str]:
    """The required skills' bodies, then the catalog of the others by name and description (agents.config.skills).
    Read from disk, so they enter fenced and checked like any outside text, labelled as the operators' guidance to
    apply; nothing at all without skills, so prompts without them are unchanged."""
    sections = []
    if required:
        bodies = "\n\n".join(skill_block(skill.name, skill.body) for skill in required)
        sections.append(_render("required_skills", skills=bodies))
    if loadable:
        catalog = "\n".join(f"- {skill.name}: {skill.description}" for skill in loadable)
        sections.append(_render("skill_catalog", tool=LOAD_SKILL_TOOL.split(".", 1)[1], catalog=untrusted(
            catalog, what="the skills you can load, by name and description", source=Source.OPERATOR).text))
    return sections


def skill_block(name: str, body: str) -> str:
    """One skill's body as every prompt carries it (required, or returned by the load tool)."""
    return untrusted(body, what=f"the skill {name}, a procedure read from the skills directory",
                     title=f"Skill: {name}", source=Source.OPERATOR).text


def format_tool_list(tools: list[ToolDefinition]) -> str:
    """Numbered tool list for the ReAct system prompt: canonical name, description, parameters."""
    if not tools:
        return NO_TOOLS_REACT
    return "\n\n".join(_format_tool(index, tool) for index, tool in enumerate(tools, start=1))


def _format_tool(index: int, tool: ToolDefinition) -> str:
    head = f"{index}. {tool.name}" + (f": {tool.description.strip()}" if tool.description.strip() else "")
    properties = tool.parameters.get("properties") or {}
    if not properties:
        return f"{head}\n   Parameters: none"
    required = set(tool.parameters.get("required") or [])
    lines = [head, "   Parameters:"]
    for name, schema in properties.items():
        lines.append(f"   - {_format_parameter(name, schema, name in required)}")
    return "\n".join(lines)


def _format_parameter(name: str, schema: dict[str, Any], required: bool) -> str:
    kind = schema.get("type", "any")
    kind = "|".join(kind) if isinstance(kind, list) else kind
    text = f"{name} ({kind}, {'required' if required else 'optional'})"
    details = [schema["description"].strip().rstrip(".")] if schema.get("description") else []
    if "enum" in schema:
        details.append("one of: " + ", ".join(json.dumps(value) for value in schema["enum"]))
    if "default" in schema:
        details.append(f"default: {json.dumps(schema['default'])}")
    nested = {key: schema[key] for key in ("items", "properties") if key in schema}
    if nested:
        details.append("schema: " + json.dumps(nested, sort_keys=True))
    return text + (": " + "; ".join(details) if details else "")


def _system(config: ResolvedAgentConfig, *parts: str) -> ConversationMessage:
    return ConversationMessage(role="system", content="\n\n".join([*instruction_tiers(config), *parts]))


# ---- user messages ---------------------------------------------------------------------------------------------


def _alert_block(alert_type: str, alert_data: str) -> str:
    return data_block("Alert", alert_data or "(no alert data)", what="the alert data exactly as received",
                      preface=f"Alert type: {alert_type or 'unspecified'}")


def _context_sections(alert_type: str, alert_data: str, runbook: str, previous_stage_context: str,
                      *, runbook_required: bool = True, memories: str = "", task: str = "") -> list[str]:
    """`memories`: the recalled-memories section, already fenced as data (agents.memory.prompt). `task`: what the
    orchestrating agent asked of this sub-agent (masked), its assignment rather than data."""
    sections = [_alert_block(alert_type, alert_data)]
    if task.strip():
        sections.insert(0, f"## Your task\n\nAn orchestrating agent dispatched you to investigate this, as part of "
                           f"the investigation of the alert below. Answer it with evidence:\n\n{task.strip()}")
    if memories.strip():
        sections.append(memories.strip())
    if runbook.strip():
        sections.append(data_block("Runbook", runbook, what="the runbook for this alert"))
    elif runbook_required:
        sections.append(f"## Runbook\n\n{NO_RUNBOOK}")
    if previous_stage_context.strip():
        sections.append(data_block("Previous stage results", previous_stage_context,
                                   what="the results of the earlier stages of this investigation"))
    return sections


def _chat_user(chat: ChatContext, alert_type: str, alert_data: str, runbook: str, previous: str,
               memories: str = "") -> str:
    sections = _context_sections(alert_type, alert_data, runbook, previous, runbook_required=False,
                                 memories=memories)
    sections.append(data_block("Investigation record", chat.investigation or "(empty)",
                               what="the record of the completed investigation: reasoning, tool calls, results"))
    if chat.history:
        exchanges = "\n\n".join(
            f"Question {n}: {question.strip()}\n\nAnswer {n}: {answer.strip()}"
            for n, (question, answer) in enumerate(chat.history, start=1)
        )
        sections.append(data_block("Earlier questions and answers", exchanges,
                                   what="this chat's earlier questions and answers, oldest first"))
    return _render("chat_task", sections="\n\n".join(sections), question=chat.question.strip())


def _task_message(*, alert_type: str, alert_data: str, runbook: str, previous_stage_context: str,
                  chat: ChatContext | None, memories: str = "", task: str = "") -> ConversationMessage:
    if chat is not None:
        content = _chat_user(chat, alert_type, alert_data, runbook, previous_stage_context, memories)
    elif alert_type == SCHEDULED_CHECK_ALERT_TYPE:  # only TARSy creates these: no chain may claim the type
        name, instruction = check_instruction(alert_data)
        sections = _context_sections(alert_type, alert_data, runbook, previous_stage_context,
                                     runbook_required=False, memories=memories)
        content = _render("check_task", instruction=untrusted(
            instruction, what=f"the check `{name}`, written by the operators in TARSy's configuration: it is your "
                              "task", source=Source.OPERATOR).text,
                          sections="\n\n".join(sections))
    else:
        sections = _context_sections(alert_type, alert_data, runbook, previous_stage_context, memories=memories,
                                     task=task)
        content = _render("investigation_task", sections="\n\n".join(sections))
    return ConversationMessage(role="user", content=content)


# ---- public builders -------------------------------------------------------------------------------------------


def build_react_messages(*, config: ResolvedAgentConfig, tools: list[ToolDefinition], alert_type: str,
                         alert_data: str, runbook: str, previous_stage_context: str,
                         chat: ChatContext | None = None, memories: str = "",
                         task: str = "") -> list[ConversationMessage]:
    """ReAct: tools are described in the system prompt and called through the text format."""
    parts = ([_render("chat_system")] if chat is not None else []) + [
        _render("react_format", tool_list=format_tool_list(tools))
    ]
    return [
        _system(config, *parts),
        _task_message(alert_type=alert_type, alert_data=alert_data, runbook=runbook,
                      previous_stage_context=previous_stage_context, chat=chat, memories=memories, task=task),
    ]


def build_native_messages(*, config: ResolvedAgentConfig, tools: list[ToolDefinition], alert_type: str,
                          alert_data: str, runbook: str, previous_stage_context: str,
                          chat: ChatContext | None = None, memories: str = "",
                          task: str = "") -> list[ConversationMessage]:
    """Native thinking: tools are bound to the request, so the prompt only explains how to work."""
    parts = ([_render("chat_system")] if chat is not None else []) + [
        _render("native_format") if tools else _render("no_tools")
    ]
    return [
        _system(config, *parts),
        _task_message(alert_type=alert_type, alert_data=alert_data, runbook=runbook,
                      previous_stage_context=previous_stage_context, chat=chat, memories=memories, task=task),
    ]


def build_synthesis_messages(*, config: ResolvedAgentConfig, alert_type: str, alert_data: str, runbook: str,
                             parallel_results: str) -> list[ConversationMessage]:
    """Synthesis: one tool-less call over the formatted investigations of a parallel stage."""
    sections = _context_sections(alert_type, alert_data, runbook, "", runbook_required=False)
    sections.append(data_block("Parallel investigations", parallel_results,
                               what="the parallel agents' investigations, each with its full history"))
    return [
        _system(config, _render("synthesis_system")),
        ConversationMessage(role="user", content=_render("synthesis_task", sections="\n\n".join(sections))),
    ]


def forced_conclusion_prompt(strategy: str) -> str:
    """User message after the iteration limit: answer now, without tools (ReAct must still use `Final Answer:`)."""
    return _render("forced_conclusion_react" if strategy == "react" else "forced_conclusion_native")


def evidence_label(result: ToolResult) -> str:
    """How the model is told which id to cite for a result ("" when it has none)."""
    return f"Evidence {cite(result.evidence_id)} (cite it as {cite(result.evidence_id)}). " \
        if result.evidence_id else ""


def tool_output(result: ToolResult) -> str:
    """One tool result as every strategy gives it to the model: its evidence id, errors and summaries labelled, and
    the output fenced and checked (agents.prompts.fence; flagged too when the executor found instructions in the
    output before it was summarized). A loaded skill is the operators' guidance and says so instead."""
    name, evidence = result.call.name, evidence_label(result)
    if result.guidance:
        return untrusted(result.content, what=f"the skill that {name} loaded, a procedure read from the skills "
                                              "directory", source=Source.OPERATOR).text
    if result.is_error:
        preface, what = f"{evidence}ERROR: {name} failed.", "its error output"
    elif result.summarized:
        preface, what = f"{evidence}{name} returned a large result, summarized below.", "the summary of its output"
    else:
        preface, what = f"{evidence}{name} returned the result below.", "its output"
    return untrusted(result.content, what=what, preface=preface, flagged=result.suspected_injection).text


def format_observation(result: ToolResult) -> str:
    """ReAct: the tool result as the `Observation:` user message."""
    return f"Observation: {tool_output(result)}"


def tool_response(result: ToolResult) -> str:
    """Native thinking: the tool result as the content of its `tool` message (function response)."""
    return tool_output(result)


def summarization_messages(*, server: str, tool: str, result: str, investigation_so_far: str,
                           max_tokens: int) -> list[ConversationMessage]:
    """Summarize a large MCP result, keeping every fact relevant to the investigation so far."""
    sections = []
    if investigation_so_far.strip():
        sections.append(data_block("Investigation so far", investigation_so_far,
                                   what="what the investigation has done so far, to judge what is relevant"))
    sections.append(data_block(f"Result of {server}.{tool}", result, what="the tool output to summarize"))
    return [
        ConversationMessage(role="system", content=_render("summarization_system", max_tokens=max_tokens)),
        ConversationMessage(role="user", content=_render("summarization_user", server=server, tool=tool,
                                                         sections="\n\n".join(sections))),
    ]


def executive_summary_messages(*, alert_type: str, final_analysis: str) -> list[ConversationMessage]:
    """A one-to-three sentence summary of the final analysis for the on-call engineer."""
    user = _render("executive_summary_user", alert_type=alert_type or "unspecified",
                   sections=data_block("Final analysis", final_analysis, what="the investigation's final analysis"))
    return [
        ConversationMessage(role="system", content=_render("executive_summary_system")),
        ConversationMessage(role="user", content=user),
    ]
