"""The MCP side: the server's tools (search, reading), reading a document, the sync status."""
