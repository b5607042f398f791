"""Approved actions: an action agent proposes, a person decides, the execution runs and verifies
(docs/investigations.md, "Approved actions").

An action agent (`type: action`) sees its servers' allow-listed action tools with three more arguments:
`_justification` (why, citing evidence), `_expected_effect` and `_verify` ({"tool": "server.read_tool",
"arguments": {…}, "expect": "text the read shows once it worked"}). Calling one runs nothing: `tools.ActionTools`
checks the call and the proposal is created when the iteration completes (in its transaction, like a dispatch), and
the execution parks (`waiting`, no task) with the sub-agents' park and wake (`decisions`). A decision (approve,
reject; or the sweeper's expiry) wakes it once; its next iteration first runs an approved tool through the normal
MCP path, claimed before it runs so that no retry runs it twice, then re-reads the state until the expected text
shows (bounded) and records `verified`, `not_verified` or `failed` (`run`). The agent is told as a message, and
may propose a follow-up (a rollback) that again needs approval. What may not be proposed at all (a resolved alert,
the rate limit per target) is `guards`'; the `### Actions` list that ends an analysis is `report`'s.

A tool whose server supports a dry run (`dry_run` in the server's config, e.g. kubectl's `--dry-run=server`) runs
once as one when it is proposed, through the same MCP path (masked, recorded, bounded by the step's deadline): its
output is stored on the proposal for the approver, and a failing dry run is shown without blocking the proposal.
"""
