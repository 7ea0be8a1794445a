"""Text helpers every feature shares, pure and offline: words and stems (words), a chunk's quotable
sentences (sentences), a short text's language (language), token counts for the LLM (token_counts)
and for the embedding model (word_pieces), and the JSON object in an LLM's reply (json_reply).
They import nothing of the project, so any layer may use them.
"""
