"""The MCP server: the knowledge base as tools for agents (see knowledge.mcp.server)."""
