"""agentcore: a provider-neutral, streaming tool-use loop for large language models."""

__version__ = "0.1.0"
