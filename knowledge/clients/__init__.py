"""Clients every feature shares: the LLM client, the embedding model and the embedding and rerank
endpoints. Public names only; they import nothing from the features (ingestion, retrieval,
synthesis, agents), so any of them may use these. The pure text helpers they use (token counts, word
pieces, JSON replies) are knowledge.text.
"""
