"""Table-driven tests of the ReAct parser over the format deviations real models produce."""

from __future__ import annotations

import time
from typing import Any

import pytest

from agents.mcp.executor import coerce_arguments
from controllers.react_parser import FORMAT_REMINDER, parse_action_input, parse_react

PODS = "kubernetes-server.pods_list"
LOGS = "kubernetes-server.pods_log"

# (id, reply text, expected kind, expected fields)
CASES: list[tuple[str, str, str, dict[str, Any]]] = [
    # ---- the canonical shapes
    ("standard_action", 'Thought: Check pods.\nAction: kubernetes-server.pods_list\n'
     'Action Input: {"namespace": "prod"}',
     "action", {"thought": "Check pods.", "action": PODS, "action_input": {"namespace": "prod"}}),
    ("standard_final", "Thought: I know enough.\nFinal Answer: The pod is OOMKilled.",
     "final_answer", {"thought": "I know enough.", "final_answer": "The pod is OOMKilled."}),
    ("final_without_thought", "Final Answer: Disk full on node-3.", "final_answer",
     {"thought": "", "final_answer": "Disk full on node-3."}),
    ("action_without_thought", 'Action: kubernetes-server.pods_list\nAction Input: {"namespace": "a"}',
     "action", {"thought": "", "action": PODS, "action_input": {"namespace": "a"}}),
    ("unmarked_preamble_is_thought", 'Let me look at pods first.\nAction: kubernetes-server.pods_list\n'
     'Action Input: {"namespace": "a"}', "action", {"thought": "Let me look at pods first.", "action": PODS}),
    # ---- case, markdown and whitespace
    ("lowercase_markers", 'thought: x\naction: kubernetes-server.pods_list\naction input: {"namespace": "a"}',
     "action", {"thought": "x", "action": PODS, "action_input": {"namespace": "a"}}),
    ("uppercase_final", "THOUGHT: done\nFINAL ANSWER: root cause found", "final_answer",
     {"final_answer": "root cause found"}),
    ("bold_markers", '**Thought:** check\n**Action:** kubernetes-server.pods_list\n'
     '**Action Input:** {"namespace": "a"}',
     "action", {"thought": "check", "action": PODS, "action_input": {"namespace": "a"}}),
    ("bold_name_colon_outside", '**Thought**: check\n**Action**: kubernetes-server.pods_list\n'
     '**Action Input**: {"namespace": "a"}', "action", {"thought": "check", "action": PODS}),
    ("heading_markers", '### Thought\nI should list pods.\n### Action\nkubernetes-server.pods_list\n'
     '### Action Input\n{"namespace": "a"}', "action",
     {"thought": "I should list pods.", "action": PODS, "action_input": {"namespace": "a"}}),
    ("heading_final_answer", "## Thought\nEnough data.\n## Final Answer\n### Root cause\nBad config map.",
     "final_answer", {"thought": "Enough data.", "final_answer": "### Root cause\nBad config map."}),
    ("extra_whitespace", '\n\n  Thought:    spaced   \n\n  Action:   kubernetes-server.pods_list  \n\n'
     '  Action Input:   {"namespace": "a"}  \n\n', "action",
     {"thought": "spaced", "action": PODS, "action_input": {"namespace": "a"}}),
    ("bullet_markers", '- Thought: x\n- Action: kubernetes-server.pods_list\n- Action Input: {"namespace": "a"}',
     "action", {"action": PODS, "action_input": {"namespace": "a"}}),
    ("underscored_action_input", 'Action: kubernetes-server.pods_list\nAction_Input: {"namespace": "a"}',
     "action", {"action_input": {"namespace": "a"}}),
    ("multiline_thought", "Thought: line one\nline two\n\nline three\nFinal Answer: ok",
     "final_answer", {"thought": "line one\nline two\n\nline three"}),
    ("two_thought_markers_merge", "Thought: a\nThought: b\nFinal Answer: ok", "final_answer", {"thought": "a\n\nb"}),
    ("quoted_marker_in_prose_not_split", "Thought: the audit log says 'Action: denied' for the SA.\n"
     "Final Answer: RBAC denies it.", "final_answer", {"thought": "the audit log says 'Action: denied' for the SA."}),
    ("thoughts_plural", "Thoughts: hmm\nFinal Answer: ok", "final_answer", {"thought": "hmm"}),
    # ---- same-line sections
    ("thought_and_action_same_line", 'Thought: I need the pods. Action: kubernetes-server.pods_list\n'
     'Action Input: {"namespace": "a"}', "action", {"thought": "I need the pods.", "action": PODS}),
    ("action_and_input_same_line", 'Action: kubernetes-server.pods_list Action Input: {"namespace": "a"}',
     "action", {"action": PODS, "action_input": {"namespace": "a"}}),
    ("all_on_one_line", 'Thought: check. Action: kubernetes-server.pods_list Action Input: {"namespace": "a"}',
     "action", {"thought": "check.", "action": PODS, "action_input": {"namespace": "a"}}),
    ("final_answer_mid_line", "I have all the data. Final Answer: the node is out of memory.", "final_answer",
     {"thought": "I have all the data.", "final_answer": "the node is out of memory."}),
    ("final_answer_phrase_in_reasoning_is_not_a_marker", "Thought: I cannot give a Final Answer: data is missing."
     '\nAction: prometheus.query\nAction Input: {"query": "up"}', "action", {"action": "prometheus.query"}),
    ("final_answer_glued_after_period", "Enough.Final Answer: memory leak", "final_answer",
     {"final_answer": "memory leak"}),
    # ---- code fences
    ("fenced_json_input", 'Thought: t\nAction: kubernetes-server.pods_list\nAction Input:\n```json\n'
     '{"namespace": "prod"}\n```', "action", {"action_input": {"namespace": "prod"}}),
    ("fenced_input_hides_markers", 'Action: prometheus.query\nAction Input:\n```\n{"query": "up"}\n'
     'Observation: not real\n```', "action", {"action": "prometheus.query", "action_input": {"query": "up"}}),
    ("backticked_action_name", 'Action: `kubernetes-server.pods_list`\nAction Input: `{"namespace": "a"}`',
     "action", {"action": PODS, "action_input": {"namespace": "a"}}),
    ("whole_reply_fenced", '```\nThought: t\nAction: kubernetes-server.pods_list\n'
     'Action Input: {"namespace": "a"}\n```',
     "action", {"action": PODS, "action_input": {"namespace": "a"}}),
    ("marker_inside_thought_fence_ignored", "Thought: the log says\n```\nAction: rm -rf\n```\nFinal Answer: benign",
     "final_answer", {"final_answer": "benign"}),
    # ---- text after final answer
    ("text_after_final_answer_kept", "Final Answer: Root cause: OOM.\n\n## Recommendations\n1. Raise limits.\n"
     "Action: scale the deployment.", "final_answer",
     {"final_answer": "Root cause: OOM.\n\n## Recommendations\n1. Raise limits.\nAction: scale the deployment."}),
    ("final_answer_wins_over_action", 'Thought: t\nAction: kubernetes-server.pods_list\n'
     'Action Input: {"namespace": "a"}'
     "\nFinal Answer: concluded", "final_answer", {"final_answer": "concluded"}),
    # ---- hallucinated observations
    ("hallucinated_observation_cut", 'Thought: t\nAction: kubernetes-server.pods_list\nAction Input: {"namespace": "a"}'
     "\nObservation: pod-1 Running\nThought: all fine\nFinal Answer: nothing wrong", "action",
     {"action": PODS, "action_input": {"namespace": "a"}, "final_answer": ""}),
    ("hallucinated_observation_same_line", 'Action: kubernetes-server.pods_list\nAction Input: {"namespace": "a"} '
     "Observation: pod-1 Running", "action", {"action_input": {"namespace": "a"}}),
    ("invented_based_on_block_cut", "Action: kubernetes-server.pods_log\nAction Input: name: web-1\nnamespace: prod\n"
     "[Based on the logs above, the pod is OOMKilled.]\nFinal Answer: OOM", "action",
     {"action_input": {"name": "web-1", "namespace": "prod"}, "final_answer": ""}),
    ("invented_based_on_after_json_cut", 'Action: kubernetes-server.pods_list\nAction Input: {"namespace": "a"}\n'
     "[Based on this output, every pod is running.]\nFinal Answer: all fine", "action",
     {"action_input": {"namespace": "a"}, "final_answer": ""}),
    ("invented_observation_after_pairs_mid_line_cut", "Action: kubernetes-server.pods_list\n"
     "Action Input: namespace=prod observation: 3 pods running", "action", {"action_input": {"namespace": "prod"}}),
    ("bold_observation_cut", 'Action: prometheus.query\nAction Input: {"query": "up"}\n**Observation:** 1',
     "action", {"action_input": {"query": "up"}}),
    ("observation_in_thought_before_action_kept", 'Thought: Observation: the alert fired twice.\n'
     'Action: prometheus.query\nAction Input: {"query": "up"}', "action",
     {"thought": "Observation: the alert fired twice."}),
    ("second_action_ignored", 'Thought: a\nAction: kubernetes-server.pods_list\nAction Input: {"namespace": "a"}\n'
     'Thought: b\nAction: prometheus.query\nAction Input: {"query": "up"}', "action",
     {"thought": "a", "action": PODS, "action_input": {"namespace": "a"}}),
    # ---- missing-action recovery
    ("recover_inline_lowercase_action", 'Thought: I will use action: kubernetes-server.pods_list now\n'
     'Action Input: {"namespace": "a"}', "action", {"action": PODS}),
    ("recover_tool_name_line", 'Thought: I need pod logs.\n`kubernetes-server.pods_log`\n'
     'Action Input: {"name": "p", "namespace": "a"}', "action", {"action": LOGS}),
    ("recover_single_known_tool_mentioned", 'Thought: calling prometheus.query for the error rate\n'
     'Action Input: {"query": "rate(errors[5m])"}', "action", {"action": "prometheus.query"}),
    ("action_line_carries_json", 'Action: kubernetes-server.pods_list {"namespace": "a"}', "action",
     {"action": PODS, "action_input": {"namespace": "a"}}),
    ("action_json_on_next_line", 'Action: kubernetes-server.pods_list\n{"namespace": "a"}', "action",
     {"action": PODS, "action_input": {"namespace": "a"}}),
    ("action_call_syntax", 'Action: kubernetes-server.pods_log(name="web-1", namespace="prod")', "action",
     {"action": LOGS, "action_input": {"name": "web-1", "namespace": "prod"}}),
    ("action_with_prose", 'Action: use kubernetes-server.pods_list to list them\nAction Input: {"namespace": "a"}',
     "action", {"action": PODS}),
    ("no_args_tool_without_input", "Thought: see namespaces\nAction: kubernetes-server.namespaces_list",
     "action", {"action": "kubernetes-server.namespaces_list", "action_input": {}}),
    ("empty_action_input_is_empty_dict", "Action: kubernetes-server.namespaces_list\nAction Input:", "action",
     {"action_input": {}}),
    # ---- action input formats
    ("yaml_input", "Action: kubernetes-server.pods_log\nAction Input:\nname: web-1\nnamespace: prod\ntail: 50",
     "action", {"action_input": {"name": "web-1", "namespace": "prod", "tail": 50}}),
    ("key_value_commas", "Action: kubernetes-server.pods_log\nAction Input: name=web-1, namespace=prod, tail=20",
     "action", {"action_input": {"name": "web-1", "namespace": "prod", "tail": 20}}),
    ("key_value_newlines", 'Action: kubernetes-server.pods_log\nAction Input:\nname="web-1"\nnamespace=prod',
     "action", {"action_input": {"name": "web-1", "namespace": "prod"}}),
    ("colon_pairs_with_commas", "Action: kubernetes-server.pods_log\nAction Input: name: web-1, namespace: prod",
     "action", {"action_input": {"name": "web-1", "namespace": "prod"}}),
    ("raw_string_input", "Action: prometheus.query\nAction Input: sum by (pod) (rate(errors_total[5m]))",
     "action", {"action_input": "sum by (pod) (rate(errors_total[5m]))"}),
    ("single_quoted_dict", "Action: kubernetes-server.pods_list\nAction Input: {'namespace': 'a'}", "action",
     {"action_input": {"namespace": "a"}}),
    ("json_with_trailing_text", 'Action: kubernetes-server.pods_list\nAction Input: {"namespace": "a"} (the app ns)',
     "action", {"action_input": {"namespace": "a"}}),
    ("colon_and_equals_pairs_on_one_line", "Action: kubernetes-server.pods_log\n"
     "Action Input: namespace: kube-system, pod=coredns-abc", "action",
     {"action_input": {"namespace": "kube-system", "pod": "coredns-abc"}}),
    ("equals_pairs_separated_by_spaces", "Action: kubernetes-server.pods_log\n"
     "Action Input: namespace=kube-system pod=coredns-abc", "action",
     {"action_input": {"namespace": "kube-system", "pod": "coredns-abc"}}),
    ("mixed_pairs_over_lines_and_commas", "Action: kubernetes-server.pods_log\nAction Input:\nnamespace: kube-system\n"
     "pod=coredns-abc, tail=20", "action", {"action_input": {"namespace": "kube-system", "pod": "coredns-abc",
                                                               "tail": 20}}),
    ("malformed_line_keeps_the_other_pairs", "Action: kubernetes-server.pods_log\nAction Input:\nname: web-1\n"
     "namespace: prod\nthis line is not a pair\ntail: 50", "action",
     {"action_input": {"name": "web-1", "namespace": "prod", "tail": 50}}),
    ("json_values_arrive_typed", "Action: kubernetes-server.pods_log\nAction Input: replicas: 3, "
     'labels: ["a","b"], dry_run: true, options: {"limit": 10}', "action",
     {"action_input": {"replicas": 3, "labels": ["a", "b"], "dry_run": True, "options": {"limit": 10}}}),
    ("json_values_after_equals_arrive_typed", "Action: kubernetes-server.pods_log\n"
     'Action Input: replicas=3, dry_run=true, labels=["a","b"]', "action",
     {"action_input": {"replicas": 3, "dry_run": True, "labels": ["a", "b"]}}),
    ("selector_value_keeps_its_own_pairs", "Action: kubernetes-server.pods_list\n"
     "Action Input: labelSelector: app=web,tier=frontend, namespace: prod", "action",
     {"action_input": {"labelSelector": "app=web,tier=frontend", "namespace": "prod"}}),
    # ---- unknown tools and server.tool validation
    ("tool_name_case_is_canonicalised", "action: Kubernetes-Server.Pods_List\naction input: namespace=prod",
     "action", {"action": PODS, "action_input": {"namespace": "prod"}}),
    ("unknown_tool", 'Action: kubernetes-server.nodes_top\nAction Input: {}', "unknown_tool",
     {"action": "kubernetes-server.nodes_top"}),
    ("bare_tool_name_rejected", 'Action: pods_list\nAction Input: {"namespace": "a"}', "unknown_tool",
     {"action": "pods_list"}),
    # ---- malformed shapes
    ("empty_reply", "   \n ", "malformed", {}),
    ("thought_only", "Thought: I should check the pods.", "malformed", {"thought": "I should check the pods."}),
    ("plain_prose", "The service looks unhealthy.", "malformed", {}),
    ("input_without_action", 'Thought: hmm\nAction Input: {"namespace": "a"}', "malformed", {}),
    ("action_missing_required_input", "Action: kubernetes-server.pods_list", "malformed", {"action": ""}),
    ("empty_action", "Action:\nAction Input: {}", "malformed", {}),
    ("empty_final_answer", "Thought: done\nFinal Answer:", "malformed", {}),
]


@pytest.mark.parametrize(("text", "kind", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_reply_parses_to_expected_shape(text, kind, expected, tools):
    parsed = parse_react(text, tools)
    assert parsed.kind == kind, parsed
    for field, value in expected.items():
        assert getattr(parsed, field) == value, (field, parsed)
    if kind in ("action", "final_answer"):
        assert parsed.feedback == ""
    else:
        assert parsed.feedback


FEEDBACK: list[tuple[str, str, str]] = [
    ("empty", "", "response was empty"),
    ("thought_only", "Thought: I should check.", "neither 'Action:' nor 'Final Answer:'"),
    ("input_without_action", 'Action Input: {"namespace": "a"}', "missing 'Action:'"),
    ("action_without_input", "Action: kubernetes-server.pods_list", "missing 'Action Input:'"),
    ("empty_action", "Action:\nAction Input: {}", "empty 'Action:'"),
    ("empty_final_answer", "Final Answer:   ", "'Final Answer:' but nothing after it"),
]


@pytest.mark.parametrize(("text", "phrase"), [f[1:] for f in FEEDBACK], ids=[f[0] for f in FEEDBACK])
def test_malformed_reply_gets_specific_feedback_and_format_reminder(text, phrase, tools):
    parsed = parse_react(text, tools)
    assert parsed.kind == "malformed"
    assert parsed.feedback.startswith("FORMAT ERROR: ")
    assert phrase in parsed.feedback
    assert parsed.feedback.endswith(FORMAT_REMINDER)


def test_unknown_tool_observation_lists_every_tool_with_description(tools):
    parsed = parse_react("Action: kubernetes-server.nodes_top\nAction Input: {}", tools)
    assert parsed.feedback.startswith("Observation: Error - Unknown tool 'kubernetes-server.nodes_top'.")
    for tool in tools:
        assert f"  - {tool.name}: {tool.description}" in parsed.feedback


def test_bare_tool_name_feedback_explains_format_and_suggests_the_match(tools):
    parsed = parse_react('Action: pods_list\nAction Input: {"namespace": "a"}', tools)
    assert "must be written as server.tool" in parsed.feedback
    assert "Did you mean 'kubernetes-server.pods_list'?" in parsed.feedback


def test_action_with_no_tools_available_asks_for_final_answer():
    parsed = parse_react("Action: prometheus.query\nAction Input: {}", [])
    assert parsed.kind == "unknown_tool"
    assert "No tools are available" in parsed.feedback


def test_ambiguous_mentions_do_not_recover_an_action(tools):
    text = 'Thought: either prometheus.query or kubernetes-server.pods_list\nAction Input: {"query": "up"}'
    assert parse_react(text, tools).kind == "malformed"


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ('{"a": 1, "b": [1, 2]}', {"a": 1, "b": [1, 2]}),
        ("a: 2024-01-01", {"a": "2024-01-01"}),
        ("flag=true, count=3, ratio=0.5", {"flag": True, "count": 3, "ratio": 0.5}),
        ("'quoted'", "'quoted'"),
        ("just words here", "just words here"),
        ("", {}),
        ("msg: hello, world", {"msg": "hello, world"}),
        ("url: http://web:8080/health, method=GET", {"url": "http://web:8080/health", "method": "GET"}),
        ('x: "a, b=c", y=2', {"x": "a, b=c", "y": 2}),
        ("labels:\n  app: web\n  tier: frontend", {"labels": {"app": "web", "tier": "frontend"}}),
        ("names: ['a', 'b']", {"names": ["a", "b"]}),
        ('{"limit": NaN}', {"limit": "NaN"}),  # NaN is no JSON: jsonb would refuse to store it
        ("limit: 1e999", {"limit": "1e999"}),
        ("```yaml\nname: web-1\n```\nObservation: invented", {"name": "web-1"}),
    ],
)
def test_action_input_tiers(raw, expected):
    assert parse_action_input(raw) == expected


@pytest.mark.parametrize(("raw", "expected"), [
    ("{" * 50_000, "{" * 50_000),
    ("[" * 50_000, "[" * 50_000),
    ("a: " + "[" * 50_000, {"a": "[" * 50_000}),
    ("x=" + "{" * 50_000, {"x": "{" * 50_000}),
    ("labels:\n  a: &a [x, x, x, x, x, x, x, x]\n  b: &b [*a, *a, *a, *a, *a, *a, *a, *a]\n"
     "  c: [*b, *b, *b, *b, *b, *b, *b, *b]", {"labels": "", "a": "&a [x, x, x, x, x, x, x, x]",
                                                "b": "&b [*a, *a, *a, *a, *a, *a, *a, *a]",
                                                "c": "[*b, *b, *b, *b, *b, *b, *b, *b]"}),
], ids=["braces", "brackets", "value_brackets", "equals_braces", "yaml_alias_bomb"])
def test_hostile_input_stays_text_instead_of_crashing_or_expanding(raw, expected):
    assert parse_action_input(raw) == expected


# The original projects' own parser cases (tarsy-bot `test_react_parser.py`: TestParameterParsing and
# TestParameterTypeConversion) that the first port did not meet.
ORIGINAL_CASES: list[tuple[str, str, Any]] = [
    ("key_equals_value_after_a_selector", "namespace=default, labels=app=nginx, replicas=3",
     {"namespace": "default", "labels": "app=nginx", "replicas": 3}),
    ("mixed_colon_and_selector", "namespace: default, labels=app=nginx",
     {"namespace": "default", "labels": "app=nginx"}),
    ("capitalised_booleans", "enabled: True, debug: FALSE, dry_run=TRUE, force=False",
     {"enabled": True, "debug": False, "dry_run": True, "force": False}),
    ("null_spellings", "a: null, b: NULL, c: none, d: None, e=NONE", dict.fromkeys("abcde")),
    ("literal_lookalikes_stay_text", "name: true_but_not_boolean, tag: None-1", {"name": "true_but_not_boolean",
                                                                                 "tag": "None-1"}),
    ("previous_true_for_pods_log", "name: external-secrets-pod, namespace: external-secrets-operator, previous: True",
     {"name": "external-secrets-pod", "namespace": "external-secrets-operator", "previous": True}),
    ("json_array_wraps_in_input", '["item1", "item2", "item3"]', {"input": ["item1", "item2", "item3"]}),
    ("json_string_wraps_in_input", '"hello world"', {"input": "hello world"}),
    ("json_number_wraps_in_input", "42", {"input": 42}),
    ("json_true_wraps_in_input", "true", {"input": True}),
    ("json_false_wraps_in_input", "false", {"input": False}),
    ("json_null_wraps_in_input", "null", {"input": None}),
    ("capitalised_literal_wraps_in_input", "TRUE", {"input": True}),
    ("json_dict_unchanged", '{"key": "value", "number": 123}', {"key": "value", "number": 123}),
    # a selector written without spaces keeps its terms; a comma and a space start the next pair
    ("selector_terms_then_next_pair", "labels=app=nginx,tier=web, replicas=3",
     {"labels": "app=nginx,tier=web", "replicas": 3}),
    ("selector_alone", "selector=app=web,tier=frontend", {"selector": "app=web,tier=frontend"}),
]


@pytest.mark.parametrize(("raw", "expected"), [c[1:] for c in ORIGINAL_CASES], ids=[c[0] for c in ORIGINAL_CASES])
def test_original_projects_action_input_cases(raw, expected):
    assert parse_action_input(raw) == expected


def test_a_wrapped_scalar_reaches_a_one_parameter_tool_as_that_parameter(tools):
    pods = next(tool for tool in tools if tool.name == PODS)
    logs = next(tool for tool in tools if tool.name == LOGS)
    parsed = parse_react('Action: kubernetes-server.pods_list\nAction Input: "prod"', tools)

    assert parsed.action_input == {"input": "prod"}
    assert coerce_arguments(parsed.action_input, pods.parameters) == {"namespace": "prod"}
    assert coerce_arguments({"input": 42}, pods.parameters) == {"namespace": "42"}  # a string parameter gets text
    assert coerce_arguments({"input": "web-1"}, logs.parameters) == {"input": "web-1"}  # several: left to the tool


def test_raw_input_becomes_single_input_argument(tools):
    parsed = parse_react("Action: prometheus.query\nAction Input: up == 0", tools)
    assert parsed.action_input == "up == 0"
    assert parsed.arguments == {"input": "up == 0"}


@pytest.mark.parametrize("text,answer", [
    ("Thought: ok\nFinal Answer: **Root cause**: x", "**Root cause**: x"),
    ("Thought: ok\n**Final Answer:** **Root cause**: x", "**Root cause**: x"),
    ("**Final Answer**: y", "y"),
    ("Checked. Final Answer: **b** c", "**b** c"),
])
def test_bold_at_the_start_of_an_answer_is_kept(text, answer):
    assert parse_react(text, []).final_answer == answer


# Untrusted replies: a pattern that backtracks over a long run costs seconds per kilobyte (16 KB of spaces took 9 s).
LINEAR_INPUTS = {"spaces": " ", "thought": "Thought", "bold": "**", "action_input": "Action Input:", "dots": "a.",
                 "arguments": "a=b "}


def _best_parse_seconds(unit: str, size: int, tools) -> float:
    prefix = "Action: kubernetes-server.pods_log\nAction Input: " if unit == "a=b " else ""
    text = prefix + unit * (size // len(unit)) + "x"
    runs = []
    for _ in range(3):
        started = time.perf_counter()
        parse_react(text, tools)
        runs.append(time.perf_counter() - started)
    return min(runs)


@pytest.mark.timeout(60)
@pytest.mark.parametrize("unit", list(LINEAR_INPUTS.values()), ids=list(LINEAR_INPUTS))
def test_parse_time_is_linear_in_the_reply_length(unit, tools):
    small = _best_parse_seconds(unit, 100_000, tools)
    large = _best_parse_seconds(unit, 1_000_000, tools)
    assert large < 1.0, f"1 MB took {large:.2f} s"
    # Linear gives ~10, quadratic ~100; 35 leaves room for a loaded machine pausing the larger run.
    assert large / max(small, 1e-3) <= 35, f"100 KB {small * 1000:.1f} ms, 1 MB {large * 1000:.1f} ms"
