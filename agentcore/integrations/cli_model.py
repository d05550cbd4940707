"""Which model the ``agentcore`` command runs: the provider, model, base URL
and key its options and environment name (:func:`choose_model`), and the
adapter built from that choice (:func:`build_model`).

* ``--model anthropic:NAME`` uses the Anthropic Messages API and needs
  ``ANTHROPIC_API_KEY``; ``--model openai:NAME`` uses OpenAI Chat Completions
  and ``--model openai-responses:NAME`` the OpenAI Responses API (for OpenAI's
  reasoning models: their reasoning is kept across tool calls), both with
  ``OPENAI_API_KEY`` and ``OPENAI_BASE_URL``. ``--model azure:DEPLOYMENT``
  and ``azure-responses:DEPLOYMENT`` reach an Azure OpenAI deployment
  (:data:`AZURE_PROVIDERS`). A bare provider name means its
  default model (:data:`DEFAULT_ANTHROPIC_MODEL`, :data:`DEFAULT_OPENAI_MODEL`,
  :data:`DEFAULT_OPENAI_RESPONSES_MODEL`).
* ``--model gemini:NAME`` uses the Gemini API with the key from
  ``GOOGLE_API_KEY`` or ``GEMINI_API_KEY`` (the first when both are set, as
  Google's own SDK does); a bare ``gemini`` means :data:`DEFAULT_GEMINI_MODEL`.
* ``--model vertex:NAME`` (Gemini) and ``vertex-anthropic:NAME`` (Claude,
  ``claude-sonnet-4@20250514``) reach Vertex AI (:data:`VERTEX_PROVIDERS`)
  with Application Default Credentials: the service account key file
  ``GOOGLE_APPLICATION_CREDENTIALS`` names, else what google-auth finds
  (``gcloud auth application-default login``, a metadata server); the
  project is ``GOOGLE_CLOUD_PROJECT``, else the one the credentials name (a
  service account key's ``project_id``, gcloud's configured project), and the location
  ``GOOGLE_CLOUD_LOCATION`` (default :data:`DEFAULT_VERTEX_LOCATION`), the
  names Google's Gen AI SDK reads.
* ``--model bedrock:MODEL_ID`` (Converse: any model Bedrock serves) and
  ``bedrock-anthropic:MODEL_ID`` (Claude through InvokeModel with the
  Anthropic mapping) reach Amazon Bedrock (:data:`BEDROCK_PROVIDERS`) in the
  Region ``AWS_REGION`` (or ``AWS_DEFAULT_REGION``, or the profile's ``region``), with a Bedrock API key
  from ``AWS_BEARER_TOKEN_BEDROCK`` when set, else SigV4 over AWS
  credentials: ``AWS_ACCESS_KEY_ID`` and ``AWS_SECRET_ACCESS_KEY`` (and
  ``AWS_SESSION_TOKEN``) from the environment, else botocore's standard
  chain for the profile ``AWS_PROFILE`` names (the shared files, SSO, a
  role), the names AWS's SDKs read.
* With ``--base-url`` the key is optional (sent when set): point ``openai:``
  at any compatible server (``--model openai:llama3.2 --base-url
  http://localhost:11434/v1`` for Ollama), or ``anthropic:`` at a gateway.
  Without it, ``ANTHROPIC_BASE_URL`` / ``OPENAI_BASE_URL`` are used when set,
  as the vendor SDKs do.
* Without ``--model``: Anthropic's default model when ``ANTHROPIC_API_KEY`` is
  set, else OpenAI's when ``OPENAI_API_KEY`` is set, else (and with no
  ``--base-url``) the offline :class:`agentcore.testing.TestModel` (with
  ``reasoning=True``: it thinks one sentence before each step), which is
  announced in one line on stderr. ``--model test`` always picks TestModel.
* An empty variable counts as unset.

The environment is the mapping the command passes (:mod:`agentcore.cli`
reads it); nothing here reads the process's environment.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

import attrs

from agentcore.errors import ConfigError
from agentcore.model import Model

DEFAULT_ANTHROPIC_MODEL = "claude-sonnet-4-5"
"""The model ``anthropic`` (without a name), or no ``--model`` with ``ANTHROPIC_API_KEY``, uses."""
DEFAULT_OPENAI_MODEL = "gpt-4o-mini"
"""The model ``openai`` (without a name), or no ``--model`` with only ``OPENAI_API_KEY``, uses."""

DEFAULT_OPENAI_RESPONSES_MODEL = "gpt-5-mini"
"""The model ``openai-responses`` (without a name) uses."""

DEFAULT_GEMINI_MODEL = "gemini-2.5-flash"
"""The model ``gemini`` (without a name) uses."""

DEFAULT_VERTEX_LOCATION = "global"
"""The location ``vertex:`` and ``vertex-anthropic:`` use without
``GOOGLE_CLOUD_LOCATION``: Vertex AI's global endpoint, which serves the
current Gemini and Claude models with higher availability than one region
(https://cloud.google.com/vertex-ai/generative-ai/docs/learn/locations); set
a region for data residency."""

PROVIDERS = (
    "anthropic",
    "openai",
    "openai-responses",
    "azure",
    "azure-responses",
    "gemini",
    "vertex",
    "vertex-anthropic",
    "bedrock",
    "bedrock-anthropic",
    "test",
)
BEDROCK_PROVIDERS = ("bedrock", "bedrock-anthropic")
"""Amazon Bedrock: the model id (or inference profile id, or ARN) as given;
the Region ``AWS_REGION`` or ``AWS_DEFAULT_REGION``; a Bedrock API key from
``AWS_BEARER_TOKEN_BEDROCK``, else AWS credentials (the module docstring)."""
VERTEX_PROVIDERS = ("vertex", "vertex-anthropic")
"""Vertex AI: OAuth access tokens from Application Default Credentials (the
file ``GOOGLE_APPLICATION_CREDENTIALS`` names, else google-auth's own
search), the project ``GOOGLE_CLOUD_PROJECT`` (else the credentials'), the location
``GOOGLE_CLOUD_LOCATION``."""
AZURE_PROVIDERS = ("azure", "azure-responses")
"""Azure OpenAI's v1 endpoint: the model is a deployment name; the key is
``AZURE_OPENAI_API_KEY`` and the resource's endpoint ``AZURE_OPENAI_ENDPOINT``
(``https://RESOURCE.openai.azure.com/``, the names Azure's quickstarts
use), or ``--base-url`` for the v1 root itself."""
_KEY_VARS = {
    "anthropic": "ANTHROPIC_API_KEY",
    "openai": "OPENAI_API_KEY",
    "openai-responses": "OPENAI_API_KEY",
    "azure": "AZURE_OPENAI_API_KEY",
    "azure-responses": "AZURE_OPENAI_API_KEY",
    "gemini": "GOOGLE_API_KEY or GEMINI_API_KEY",
}
_BASE_URL_VARS = {
    "anthropic": "ANTHROPIC_BASE_URL",
    "openai": "OPENAI_BASE_URL",
    "openai-responses": "OPENAI_BASE_URL",
}
_DEFAULT_MODELS = {
    "anthropic": DEFAULT_ANTHROPIC_MODEL,
    "openai": DEFAULT_OPENAI_MODEL,
    "openai-responses": DEFAULT_OPENAI_RESPONSES_MODEL,
    "gemini": DEFAULT_GEMINI_MODEL,
    "vertex": DEFAULT_GEMINI_MODEL,
    "test": "test-model",
}

__all__ = [
    "AZURE_PROVIDERS",
    "BEDROCK_PROVIDERS",
    "DEFAULT_ANTHROPIC_MODEL",
    "DEFAULT_GEMINI_MODEL",
    "DEFAULT_OPENAI_MODEL",
    "DEFAULT_OPENAI_RESPONSES_MODEL",
    "DEFAULT_VERTEX_LOCATION",
    "PROVIDERS",
    "VERTEX_PROVIDERS",
    "ModelChoice",
    "build_model",
    "choose_model",
]


@attrs.frozen
class ModelChoice:
    """Which model the command runs, as decided by :func:`choose_model`.

    Attributes:
        provider: one of :data:`PROVIDERS`.
        model: the model id.
        base_url: the API root, or None for the provider's default.
        api_key: the key to send ("" for none); never shown in ``repr``.
        notice: a line for stderr about the choice (the TestModel notice), or "".
        context_window: the model's context window in tokens
            (``--context-window``), given to the adapter's
            ``context_window=``; None: the adapter's own (its table by model
            id). The offline TestModel has no window and does not take it.
        project: the Google Cloud project (Vertex AI), or "".
        location: where the model runs: the Google Cloud location (Vertex
            AI) or the AWS Region (Bedrock), or "".
        credentials_file: the credentials file ``GOOGLE_APPLICATION_CREDENTIALS``
            names (Vertex AI), or "" for google-auth's own search.
        aws_keys: the AWS access key id, secret access key and session
            token ("" for none) from the environment (Bedrock), or () for
            botocore's chain; never shown in ``repr``.
        profile: the AWS profile ``AWS_PROFILE`` names (Bedrock), or "".
    """

    provider: str
    model: str
    base_url: str | None = None
    api_key: str = attrs.field(default="", repr=False)
    notice: str = ""
    context_window: int | None = None
    project: str = ""
    location: str = ""
    credentials_file: str = ""
    aws_keys: tuple[str, ...] = attrs.field(default=(), repr=False)
    profile: str = ""


def _env(env: Mapping[str, str], name: str) -> str:
    return env.get(name, "").strip()


def choose_model(spec: str | None, base_url: str | None, env: Mapping[str, str]) -> ModelChoice:
    """Decide the provider, model, base URL and key (see the module docstring).

    Args:
        spec: the ``--model`` value, or None.
        base_url: the ``--base-url`` value, or None.
        env: the environment to read the keys (and base URLs) from.

    Returns:
        The choice; nothing is constructed and no network is touched.

    Raises:
        ConfigError: an unknown provider, an empty model name, or a missing key
            for an explicitly chosen provider.
    """
    if spec is None:
        for provider in ("anthropic", "openai"):
            if _env(env, _KEY_VARS[provider]):
                return _provider_choice(provider, _DEFAULT_MODELS[provider], base_url, env)
        if base_url:
            raise ConfigError(
                "--base-url needs --model anthropic:NAME or openai:NAME to say which API the server speaks"
            )
        return ModelChoice(
            provider="test",
            model=_DEFAULT_MODELS["test"],
            notice=(
                "agentcore: no ANTHROPIC_API_KEY or OPENAI_API_KEY set; using the offline TestModel "
                "(see --help to use a real model)"
            ),
        )
    provider, _, name = spec.partition(":")
    provider = provider.strip().lower()
    name = name.strip()
    if provider not in PROVIDERS:
        raise ConfigError(
            "--model must be anthropic:MODEL, openai:MODEL, openai-responses:MODEL, azure:DEPLOYMENT, "
            "azure-responses:DEPLOYMENT, gemini:MODEL, vertex:MODEL, vertex-anthropic:MODEL, "
            "bedrock:MODEL_ID, bedrock-anthropic:MODEL_ID or test, "
            f"got {spec!r} (unknown provider {provider!r})"
        )
    if provider == "test":
        if base_url:
            raise ConfigError("--base-url does not apply to the offline test model")
        return ModelChoice(provider="test", model=name or _DEFAULT_MODELS["test"])
    if provider in AZURE_PROVIDERS:
        return _azure_choice(provider, name, base_url, env)
    if provider in BEDROCK_PROVIDERS:
        return _bedrock_choice(provider, name, base_url, env)
    if provider in VERTEX_PROVIDERS:
        return _vertex_choice(provider, name or _DEFAULT_MODELS.get(provider, ""), base_url, env)
    if ":" in spec and not name:
        raise ConfigError(f"--model {spec!r} names no model; use {provider}:MODEL or just {provider}")
    return _provider_choice(provider, name or _DEFAULT_MODELS[provider], base_url, env)


def _provider_choice(provider: str, model: str, base_url: str | None, env: Mapping[str, str]) -> ModelChoice:
    key_var = _KEY_VARS[provider]
    key = next(filter(None, (_env(env, name) for name in key_var.split(" or "))), "")
    if base_url is None and provider in _BASE_URL_VARS:
        base_url = _env(env, _BASE_URL_VARS[provider]) or None
    if not key and not base_url:
        raise ConfigError(
            f"--model {provider}:{model} needs the {key_var} environment variable "
            f"(or --base-url for a server that needs no key)"
        )
    return ModelChoice(provider=provider, model=model, base_url=base_url, api_key=key)


def _azure_choice(
    provider: str, deployment: str, base_url: str | None, env: Mapping[str, str]
) -> ModelChoice:
    """An Azure OpenAI deployment: the key from ``AZURE_OPENAI_API_KEY``
    (always: Azure wants one), the v1 root from ``--base-url`` or
    ``AZURE_OPENAI_ENDPOINT`` with ``/openai/v1`` after it."""
    if not deployment:
        raise ConfigError(f"--model {provider} needs the deployment's name: {provider}:DEPLOYMENT")
    key = _env(env, _KEY_VARS[provider])
    if not key:
        raise ConfigError(
            f"--model {provider}:{deployment} needs the AZURE_OPENAI_API_KEY environment variable "
            "(the key of the Azure OpenAI resource)"
        )
    if base_url is None:
        endpoint = _env(env, "AZURE_OPENAI_ENDPOINT")
        if not endpoint:
            raise ConfigError(
                f"--model {provider}:{deployment} needs the AZURE_OPENAI_ENDPOINT environment variable "
                "(https://RESOURCE.openai.azure.com/) or --base-url (the v1 root)"
            )
        if not endpoint.startswith(("https://", "http://")):
            raise ConfigError(
                f"AZURE_OPENAI_ENDPOINT must be the resource's endpoint, https://RESOURCE.openai.azure.com/, "
                f"got {endpoint!r}"
            )
        # the resource's endpoint, or its v1 root as Microsoft's v1 samples give it
        base_url = endpoint.rstrip("/").removesuffix("/openai/v1").removesuffix("/openai") + "/openai/v1"
    return ModelChoice(provider=provider, model=deployment, base_url=base_url, api_key=key)


def _vertex_choice(provider: str, model: str, base_url: str | None, env: Mapping[str, str]) -> ModelChoice:
    """A model on Vertex AI: the project from ``GOOGLE_CLOUD_PROJECT`` (""
    : the credentials' own, found by :func:`build_model`), the location from
    ``GOOGLE_CLOUD_LOCATION``, the credentials file from
    ``GOOGLE_APPLICATION_CREDENTIALS`` (loaded by :func:`build_model`)."""
    if not model:
        raise ConfigError(
            f"--model {provider} needs the model's id: {provider}:MODEL (e.g. claude-sonnet-4@20250514)"
        )
    return ModelChoice(
        provider=provider,
        model=model,
        base_url=base_url,
        project=_env(env, "GOOGLE_CLOUD_PROJECT"),
        location=_env(env, "GOOGLE_CLOUD_LOCATION") or DEFAULT_VERTEX_LOCATION,
        credentials_file=_env(env, "GOOGLE_APPLICATION_CREDENTIALS"),
    )


def _bedrock_choice(provider: str, model: str, base_url: str | None, env: Mapping[str, str]) -> ModelChoice:
    """A model on Amazon Bedrock: the Region from ``AWS_REGION`` or
    ``AWS_DEFAULT_REGION`` (else the profile's, found by :func:`build_model`),
    a Bedrock API key from ``AWS_BEARER_TOKEN_BEDROCK``, else the keys of the
    environment or the profile of ``AWS_PROFILE`` (resolved by :func:`build_model`)."""
    if not model:
        raise ConfigError(
            f"--model {provider} needs the model id: {provider}:MODEL_ID "
            "(e.g. us.anthropic.claude-sonnet-4-5-20250929-v1:0)"
        )
    region = _env(env, "AWS_REGION") or _env(env, "AWS_DEFAULT_REGION")
    key_id, secret = _env(env, "AWS_ACCESS_KEY_ID"), _env(env, "AWS_SECRET_ACCESS_KEY")
    return ModelChoice(
        provider=provider,
        model=model,
        base_url=base_url,
        api_key=_env(env, "AWS_BEARER_TOKEN_BEDROCK"),
        location=region,
        aws_keys=(key_id, secret, _env(env, "AWS_SESSION_TOKEN")) if key_id and secret else (),
        profile=_env(env, "AWS_PROFILE"),
    )


def _bedrock_model(choice: ModelChoice) -> Model:
    """The Bedrock adapter of ``choice``: with its API key, else signed with
    SigV4 over the environment's keys or botocore's chain.

    Raises:
        ConfigError: botocore is not installed, no credentials were found
            (naming what to set), or as the adapter raises.
    """
    from agentcore.providers import aws
    from agentcore.providers.bedrock import BedrockAnthropicModel, BedrockConverseModel

    aws.require()  # a ConfigError naming the extra when botocore is missing
    import botocore.credentials
    import botocore.exceptions
    import botocore.session

    adapter = BedrockConverseModel if choice.provider == "bedrock" else BedrockAnthropicModel
    spec = f"--model {choice.provider}:{choice.model}"
    base_url, window = choice.base_url, choice.context_window
    try:
        session = botocore.session.Session(profile=choice.profile or None)
        region = choice.location or session.get_config_variable("region")  # else the profile's
        if not region and (base_url is None or not choice.api_key):
            raise ConfigError(
                f"{spec} needs the AWS Region the requests go to and are signed for: set AWS_REGION (or "
                "AWS_DEFAULT_REGION, or region in the AWS_PROFILE's ~/.aws/config), e.g. us-east-1"
            )
        if choice.api_key:
            return adapter(
                choice.model, region=region, base_url=base_url, api_key=choice.api_key, context_window=window
            )
        if choice.aws_keys:
            found = botocore.credentials.Credentials(*choice.aws_keys[:2], choice.aws_keys[2] or None)
        else:
            found = session.get_credentials()
    except botocore.exceptions.BotoCoreError as exc:  # an unknown profile, a broken config file
        raise ConfigError(f"{spec}: {exc}") from None
    if found is None:
        raise ConfigError(
            f"--model {choice.provider}:{choice.model} needs AWS credentials: AWS_BEARER_TOKEN_BEDROCK "
            "(a Bedrock API key), AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE (a profile "
            "of ~/.aws/config: `aws configure` or `aws sso login`)"
        )
    return adapter(
        choice.model, region=region, base_url=base_url, aws_credentials=found, context_window=window
    )


def _vertex_model(choice: ModelChoice) -> Model:
    """The Vertex AI adapter of ``choice``, signed in with Application Default
    Credentials (the ``cloud-platform`` scope).

    The project is the choice's (``GOOGLE_CLOUD_PROJECT``), else the one the
    credentials name: a service account key's ``project_id``, or the project
    google-auth's search found (gcloud's configured project).

    Raises:
        ConfigError: google-auth is not installed, no credentials were
            found (naming how to get them), or no project is known (naming
            ``GOOGLE_CLOUD_PROJECT``).
    """
    try:
        import google.auth
        import google.auth.exceptions
    except ImportError:
        raise ConfigError(
            f"--model {choice.provider}: needs google-auth: pip install 'agentcore[google]'"
        ) from None
    from agentcore.providers.vertex import VertexAnthropicModel, VertexGeminiModel
    from agentcore.providers.vertex.credentials import CLOUD_PLATFORM_SCOPE, google_credentials

    scopes = [CLOUD_PLATFORM_SCOPE]
    try:
        if choice.credentials_file:
            found = _credentials_file(choice, scopes)
            project = getattr(found, "project_id", None)
        else:
            found, project = google.auth.default(scopes=scopes)
    except (google.auth.exceptions.DefaultCredentialsError, OSError, ValueError) as exc:
        raise ConfigError(
            f"--model {choice.provider}:{choice.model} needs Google Cloud credentials: run "
            "`gcloud auth application-default login`, or set GOOGLE_APPLICATION_CREDENTIALS to a service "
            f"account key file ({exc})"
        ) from None
    project = choice.project or project
    if not project:
        raise ConfigError(
            f"--model {choice.provider}:{choice.model} needs a Google Cloud project: set the "
            "GOOGLE_CLOUD_PROJECT environment variable (the credentials name none)"
        )
    adapter = VertexGeminiModel if choice.provider == "vertex" else VertexAnthropicModel
    return adapter(
        choice.model,
        credentials=google_credentials(found),
        base_url=choice.base_url,
        project=project,
        location=choice.location,
        context_window=choice.context_window,
    )


def _credentials_file(choice: ModelChoice, scopes: list[str]) -> Any:
    """The credentials of the file ``GOOGLE_APPLICATION_CREDENTIALS`` names,
    loaded by its type as google-auth recommends (a service account key, or
    the user credentials ``gcloud auth application-default login`` writes).

    Raises:
        ValueError: another type of file (set up ``gcloud`` instead), or one
            google-auth cannot read.
        OSError: the file cannot be read.
    """
    from google.oauth2 import credentials, service_account

    path = choice.credentials_file
    with open(path, encoding="utf-8") as file:
        kind = json.load(file).get("type")
    if kind == "service_account":
        return service_account.Credentials.from_service_account_file(path, scopes=scopes)  # type: ignore[no-untyped-call]
    if kind == "authorized_user":
        return credentials.Credentials.from_authorized_user_file(path, scopes=scopes)  # type: ignore[no-untyped-call]
    raise ValueError(
        f"GOOGLE_APPLICATION_CREDENTIALS ({path}) holds {kind!r} credentials; the command reads a "
        "service account key or authorized user file (for others leave it unset: google-auth searches itself)"
    )


def build_model(choice: ModelChoice) -> Model:
    """Construct the model a :class:`ModelChoice` names (no network is touched):
    the adapter with the key (none when empty), the base URL (the
    adapter's default when None) and the context window (the adapter's own
    when None; TestModel has none and never refuses a prompt as too long).

    The provider modules are imported here, so the offline path needs neither.
    """
    if choice.provider == "test":
        from agentcore.testing import TestModel

        return TestModel(model_id=choice.model, reasoning=True)
    if choice.provider in VERTEX_PROVIDERS:
        return _vertex_model(choice)
    if choice.provider in BEDROCK_PROVIDERS:
        return _bedrock_model(choice)
    adapter: Callable[..., Model]
    if choice.provider == "anthropic":
        from agentcore.providers.anthropic import AnthropicModel as adapter
    elif choice.provider == "openai":
        from agentcore.providers.openai import OpenAIChatModel as adapter
    elif choice.provider == "azure":
        from agentcore.providers.azure import AzureOpenAIChatModel as adapter
    elif choice.provider == "azure-responses":
        from agentcore.providers.azure import AzureOpenAIResponsesModel as adapter
    elif choice.provider == "gemini":
        from agentcore.providers.gemini import GeminiModel as adapter
    else:
        from agentcore.providers.openai import OpenAIResponsesModel as adapter
    window = choice.context_window
    if choice.base_url:
        return adapter(
            choice.model, api_key=choice.api_key or None, base_url=choice.base_url, context_window=window
        )
    return adapter(choice.model, api_key=choice.api_key or None, context_window=window)
