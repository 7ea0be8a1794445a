"""Multi-step retrieval: document summaries, router and planner, and the agentic loop
(docs/design.md#agents): classify, route, plan, expand, retrieve, grade, rewrite, rerank, generate, check.

Selected per profile with ``agentic.enabled`` (off by default); every step has
an LLM path and a path without an LLM, emits an ``agent_step`` event, and runs
within the answer's time and token budget.
"""
