"""Clients and helpers every feature shares: the LLM client and its JSON replies, token counting,
the embedding model, and word-level text helpers. Public names only; they import nothing from the
features (ingestion, retrieval, synthesis, agents), so any of them may use these.
"""
