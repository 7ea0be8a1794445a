"""Server-rendered pages: one module per area (collections, chat, profiles, marketplace), their URL list and
the `knowledge_page` wrapper they share. Thin: access comes from knowledge.access, writes from services."""
