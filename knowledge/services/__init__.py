"""Services and selectors that pages, the API, MCP, commands and tasks share: one module per resource.

Writes and reads named ``<entity>_<action>`` with keyword-only arguments. Callers import the module
they need (``knowledge.services.documents``); this package re-exports nothing, so importing one
resource does not load the others.
"""
