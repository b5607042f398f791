"""Real MCP test servers built on the `mcp` SDK (stdio and streamable HTTP) for the MCP client and controller tests."""
