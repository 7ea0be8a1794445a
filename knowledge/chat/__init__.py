"""The chat: question -> follow-up resolution -> retrieval -> synthesis -> saved turn.

``stream`` runs one question as events (``chat_stream``, ``chat_ask``); ``payloads`` builds the events'
payloads and a turn's summary; ``sessions`` renames and deletes sessions (finding a user's session and
the scope a question searches is knowledge.access); ``sse`` writes the events as Server-Sent Events and
streams them. The public names are importable from ``knowledge.chat``.
"""

from knowledge.chat.payloads import turn_summary
from knowledge.chat.sessions import MAX_TITLE_CHARS, chat_session_delete, chat_session_rename
from knowledge.chat.sse import event_stream_response, sse_replay, sse_stream, turn_events
from knowledge.chat.stream import ChatStream, chat_ask, chat_stream
from knowledge.synthesis.answer import DIRECT_TEXT, Answer
from knowledge.synthesis.refusal import NO_RESULTS_TEXT

__all__ = [
    "DIRECT_TEXT",
    "MAX_TITLE_CHARS",
    "NO_RESULTS_TEXT",
    "Answer",
    "ChatStream",
    "chat_ask",
    "chat_session_delete",
    "chat_session_rename",
    "chat_stream",
    "event_stream_response",
    "sse_replay",
    "sse_stream",
    "turn_events",
    "turn_summary",
]
