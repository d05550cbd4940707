"""agentcore: a provider-neutral, streaming tool-use loop for large language models.

Start with :func:`run` and :class:`LoopOptions`; adapters live in
``agentcore.providers.anthropic`` and ``agentcore.providers.openai``; test
doubles in ``agentcore.testing``; the history policies of long runs in
``agentcore.compaction``.
"""

from agentcore.agent import Agent, handoff
from agentcore.builtin_middleware import LoggingMiddleware, RedactionMiddleware
from agentcore.caching import CacheCause, CacheReport, PrefixChange
from agentcore.context import Context, ManualClock
from agentcore.durable import CheckpointConflict, ReplayDiverged
from agentcore.engine.channel import RunReader
from agentcore.engine.loop import generate, run
from agentcore.engine.observer import RunObserver, set_observe
from agentcore.errors import (
    AgentcoreError,
    Canceled,
    ChatRequestError,
    ConfigError,
    DeadlineExceeded,
    ErrorClass,
    MCPServerError,
    MCPToolError,
    ModelError,
    RunError,
    classify_status,
)
from agentcore.fallback import DEFAULT_FALLBACK_ON, FallbackModel
from agentcore.files import File
from agentcore.guardrails import Guardrails, GuardrailTripped, Tripwire
from agentcore.limits import LimitReached, UsageLimits
from agentcore.middleware import Middleware
from agentcore.model import Model
from agentcore.options import (
    DEFAULT_MAX_RETRIES,
    DEFAULT_RETRY_BASE_DELAY,
    DEFAULT_RETRY_MAX_DELAY,
    DEFAULT_RUN_QUEUE_SIZE,
    DEFAULT_STEP_LIMIT,
    LoopOptions,
    StepDraft,
    StepPlan,
)
from agentcore.output import OutputValidationError
from agentcore.result import RunResult, StepResult
from agentcore.sessions import SessionLocked
from agentcore.settings import ModelSettings
from agentcore.tools import FunctionTool, Tool, ToolInputError, ToolSet, tool
from agentcore.types import (
    Citation,
    Compaction,
    ContentPart,
    ContentPartKind,
    FinishReason,
    Message,
    ProviderItem,
    Reasoning,
    Request,
    Role,
    StreamPart,
    StreamPartKind,
    ToolCall,
    ToolDefinition,
    ToolResult,
    Usage,
    cache_point,
    file_part,
    file_part_from_path,
    provider_item_part,
    reasoning_part,
    text_part,
    tool_call_part,
    tool_result_part,
    user_message,
)

__version__ = "0.7.0"


def _observe_with_opentelemetry(options: LoopOptions) -> RunObserver | None:
    """Trace runs with OpenTelemetry (:mod:`agentcore.integrations.otel`),
    imported at the first run after the application imported its API."""
    from agentcore.integrations.otel import observe

    return observe(options)


# Asked only once the application has imported the OpenTelemetry API: nobody can
# have set a provider before that, so a process without it imports nothing.
set_observe(_observe_with_opentelemetry, after=("opentelemetry.trace", "opentelemetry.metrics"))

__all__ = [
    "Agent",
    "AgentcoreError",
    "CacheCause",
    "CacheReport",
    "Canceled",
    "CheckpointConflict",
    "Citation",
    "Compaction",
    "ChatRequestError",
    "ConfigError",
    "ContentPart",
    "ContentPartKind",
    "Context",
    "DEFAULT_FALLBACK_ON",
    "DEFAULT_MAX_RETRIES",
    "DEFAULT_RETRY_BASE_DELAY",
    "DEFAULT_RETRY_MAX_DELAY",
    "DEFAULT_RUN_QUEUE_SIZE",
    "DEFAULT_STEP_LIMIT",
    "DeadlineExceeded",
    "ErrorClass",
    "FallbackModel",
    "File",
    "FinishReason",
    "FunctionTool",
    "LoopOptions",
    "MCPServerError",
    "MCPToolError",
    "LimitReached",
    "ManualClock",
    "Message",
    "Model",
    "ModelError",
    "ModelSettings",
    "OutputValidationError",
    "GuardrailTripped",
    "Guardrails",
    "Tripwire",
    "Middleware",
    "RedactionMiddleware",
    "LoggingMiddleware",
    "PrefixChange",
    "ProviderItem",
    "Reasoning",
    "ReplayDiverged",
    "SessionLocked",
    "Request",
    "Role",
    "RunError",
    "RunReader",
    "RunResult",
    "StepDraft",
    "StepPlan",
    "StepResult",
    "StreamPart",
    "StreamPartKind",
    "Tool",
    "ToolCall",
    "ToolDefinition",
    "ToolInputError",
    "ToolResult",
    "ToolSet",
    "Usage",
    "UsageLimits",
    "__version__",
    "cache_point",
    "classify_status",
    "file_part",
    "file_part_from_path",
    "generate",
    "handoff",
    "provider_item_part",
    "reasoning_part",
    "run",
    "text_part",
    "tool",
    "tool_call_part",
    "tool_result_part",
    "user_message",
]
