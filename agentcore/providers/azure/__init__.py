"""Azure OpenAI: the OpenAI Chat Completions and Responses mappings at an
Azure OpenAI resource's v1 endpoint (``model``: the endpoint, the key and
token headers, the resource's URL)."""

from agentcore.providers.azure.model import AzureOpenAIChatModel, AzureOpenAIResponsesModel

__all__ = ["AzureOpenAIChatModel", "AzureOpenAIResponsesModel"]
