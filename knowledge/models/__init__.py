from knowledge.models.chat import ChatSession, ChatTurn, RatedAnswer
from knowledge.models.collections import ChunkProfile, Collection, CollectionShare, LinkGrant, Subscription
from knowledge.models.documents import Chunk, Document, DocumentSummary
from knowledge.models.parameter_rows import KnowledgeSetting
from knowledge.models.profiles import Profile, ProfileCollection

__all__ = [
    "ChatSession",
    "ChatTurn",
    "Chunk",
    "ChunkProfile",
    "Collection",
    "CollectionShare",
    "Document",
    "DocumentSummary",
    "KnowledgeSetting",
    "LinkGrant",
    "Profile",
    "ProfileCollection",
    "RatedAnswer",
    "Subscription",
]

from knowledge.models.llm import LLMSettings  # noqa: E402

__all__ += ["LLMSettings"]

from knowledge.models.evaluation import EvalQuestion, EvalRun, EvalSet  # noqa: E402

__all__ += ["EvalQuestion", "EvalRun", "EvalSet"]

from knowledge.models.jobs import ProcessingJob, WorkerHeartbeat, WorkerProbe  # noqa: E402

__all__ += ["ProcessingJob", "WorkerHeartbeat", "WorkerProbe"]

from knowledge.models.sources import Source, SourceItem, SourceSync  # noqa: E402

__all__ += ["Source", "SourceItem", "SourceSync"]

from knowledge.models.quotas import Quota, UsageDay  # noqa: E402

__all__ += ["Quota", "UsageDay"]

from knowledge.models.releases import Release  # noqa: E402

__all__ += ["Release"]

from knowledge.models.model_registry import EmbeddingEndpoint, RerankEndpoint  # noqa: E402

__all__ += ["EmbeddingEndpoint", "RerankEndpoint"]
