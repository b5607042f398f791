"""Real MCP test servers built on the `mcp` SDK (stdio and streamable HTTP), used by the MCP client tests."""
