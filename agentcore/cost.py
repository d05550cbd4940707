"""What a model call cost, in US dollars, from the prices the ``genai-prices``
package keeps (the optional extra ``agentcore[prices]``; ``docs/controls.md``,
"Limits and cost").

``import agentcore`` never imports the package: the first run that prices a
step does, and a run in a process without it prices nothing (its costs are
None, without a warning: nobody asked for prices). A ``cost`` limit
(:class:`agentcore.UsageLimits`) needs it, and is a ``ConfigError`` at
``run()`` without it.

A call is priced by its model's ``model_id`` and ``base_url`` (the built-in
adapters have both): ``genai-prices`` finds the provider from the URL
(``api.anthropic.com``, ``api.openai.com``, Bedrock's and Vertex's regional
hosts, Azure's, OpenRouter's ...) and the model from its id, and prices the
usage at the prices in effect now. A model without a ``base_url`` (the test
doubles, a ``Model`` of your own), a local server or a model the package
does not list has no price: its cost is None, logged once per model per
process: a WARNING for a model the package does not list at a provider it
does (a new model: update the package), DEBUG for an endpoint it does not
know; a model without a ``base_url`` is not logged (nothing to price it at).

:func:`price_usage` maps agentcore's :class:`~agentcore.types.Usage` onto the
package's usage (``docs/usage.md`` says what each agentcore field counts):

====================================  =========================================
genai-prices                          agentcore
====================================  =========================================
``input_tokens``                      ``input + cache_write``: every prompt
                                      token (agentcore's ``input`` holds the
                                      cache reads but not the writes; the
                                      package's holds both)
``cache_read_tokens``                 ``cache_read``
``cache_write_tokens``                ``cache_write``
``cache_write_1h_tokens``             ``cache_write`` when the call asked for
                                      the one-hour cache
                                      (``ModelSettings(cache_ttl="1h")``:
                                      every cache point of a request has the
                                      same lifetime), else 0
``output_tokens``                     ``output`` (reasoning included: every
                                      API agentcore speaks bills reasoning
                                      as output, and the package lists no
                                      separate reasoning price)
``web_searches``                      ``web_search_requests``
``storage_searches``                  ``file_search_requests``
``code_executions``                   ``code_execution_requests``
====================================  =========================================

``web_fetch_requests`` has no price of its own (Anthropic bills a fetched
page as the input tokens it adds). A price per request, where a model has
one, is charged once per call: price each call's usage, never a sum of
several calls' usage (a run's cost is the sum of its steps' costs).
"""

from __future__ import annotations

import importlib.util
import logging
import threading
from collections.abc import Callable
from decimal import Decimal
from typing import Any

from agentcore.settings import ModelSettings
from agentcore.types import Usage

__all__ = [
    "ONE_HOUR_TTL",
    "Pricer",
    "model_name",
    "model_settings_ttl",
    "price_usage",
    "prices_installed",
    "usage_for_prices",
]

_log = logging.getLogger("agentcore")

PRICES_PACKAGE = "genai_prices"
"""The module the ``agentcore[prices]`` extra installs (``genai-prices``)."""
ONE_HOUR_TTL = "1h"
"""The ``ModelSettings.cache_ttl`` whose cache writes are priced at the one-hour rate."""


def prices_installed() -> bool:
    """True when ``genai-prices`` can be imported (without importing it)."""
    return importlib.util.find_spec(PRICES_PACKAGE) is not None


def usage_for_prices(usage: Usage, cache_ttl: str | None = None) -> dict[str, int]:
    """``usage`` as the keyword arguments of ``genai_prices.Usage`` (the
    module docstring's table); ``cache_ttl`` is the cache lifetime the call
    asked for (``ModelSettings.cache_ttl``; None: the provider's default)."""
    counts = {
        "input_tokens": usage.input + usage.cache_write,
        "cache_read_tokens": usage.cache_read,
        "cache_write_tokens": usage.cache_write,
        "cache_write_1h_tokens": usage.cache_write if cache_ttl == ONE_HOUR_TTL else 0,
        "output_tokens": usage.output,
        "web_searches": usage.web_search_requests,
        "storage_searches": usage.file_search_requests,
        "code_executions": usage.code_execution_requests,
    }
    return {key: count for key, count in counts.items() if count}


def price_usage(usage: Usage, model_id: str, base_url: str, cache_ttl: str | None = None) -> Decimal:
    """The price in US dollars of one model call that used ``usage``.

    Args:
        usage: the call's usage (one call: a price per request is charged once).
        model_id: the model's id, as sent to the API.
        base_url: the API root the call went to; it names the provider.
        cache_ttl: the cache lifetime the call asked for; None: the default.

    Returns:
        The total price, as ``genai-prices`` computes it for the prices in
        effect now.

    Raises:
        ModuleNotFoundError: ``genai-prices`` is not installed (``pip install 'agentcore[prices]'``).
        LookupError: the package knows no provider for ``base_url`` or no
            such model there.
        ValueError: the package refused the usage.
    """
    import genai_prices  # the optional extra, imported only here

    counts = usage_for_prices(usage, cache_ttl)
    calculation = genai_prices.calc_price(genai_prices.Usage(**counts), model_id, provider_api_url=base_url)
    return calculation.total_price


def model_settings_ttl(model: Any, settings: ModelSettings | None) -> str | None:
    """The cache lifetime a call to ``model`` with the run's ``settings``
    asks for: the run's ``cache_ttl`` when set, else the model's own
    (an adapter's ``settings``), else None."""
    if settings is not None and settings.cache_ttl is not None:
        return settings.cache_ttl
    own = getattr(model, "settings", None)
    return own.cache_ttl if isinstance(own, ModelSettings) else None


_unpriced: set[tuple[str, str]] = set()
"""The models (id, base URL) a WARNING said have no price: once per process,
not per run (a server running a local model would log it at every request)."""
_unpriced_lock = threading.Lock()


class Pricer:
    """Prices a run's model calls, and says once per model when it cannot.

    Args:
        price: the price function (:func:`price_usage`); tests pass their own.
        installed: whether ``genai-prices`` is installed; None: look.
        warned: the models already warned about; None: the process's.
    """

    def __init__(
        self,
        price: Callable[[Usage, str, str, str | None], Decimal] = price_usage,
        installed: bool | None = None,
        warned: set[tuple[str, str]] | None = None,
    ) -> None:
        self._price = price
        self.installed = prices_installed() if installed is None else installed
        self._warned = _unpriced if warned is None else warned

    def unknown_reason(self, model: Any) -> str | None:
        """Why ``model`` has no price (a zero usage priced to find out), or
        None when it has one (or prices are not installed: see :attr:`installed`)."""
        if not self.installed:
            return None
        _cost, reason = self._priced(Usage(), model, None)
        return reason

    def cost(self, usage: Usage, model: Any, settings: ModelSettings | None = None) -> Decimal | None:
        """The price of one call to ``model`` that used ``usage`` (with the
        run's ``settings``); None when prices are not installed or the model
        has none: logged once per model per process, as a WARNING when
        genai-prices lists the provider but not the model, else (a local
        server) at DEBUG; not at all for a model without a ``base_url`` (a
        test double: nothing to price it at)."""
        if not self.installed:
            return None
        cost, reason = self._priced(usage, model, model_settings_ttl(model, settings))
        if reason is not None and isinstance(getattr(model, "base_url", None), str):
            key = (str(getattr(model, "model_id", "?")), str(getattr(model, "base_url", "")))
            with _unpriced_lock:
                first = key not in self._warned
                self._warned.add(key)
            if first:
                # A provider genai-prices lists, without this model (a new one: its
                # prices lag), is worth a WARNING; an endpoint it does not know (a
                # local server, a gateway of your own) is expected.
                level = logging.WARNING if _provider_listed(model) else logging.DEBUG
                _log.log(level, "agentcore: no price for %s: %s; its cost is None", model_name(model), reason)
        return cost

    def _priced(self, usage: Usage, model: Any, cache_ttl: str | None) -> tuple[Decimal | None, str | None]:
        model_id = getattr(model, "model_id", None)
        base_url = getattr(model, "base_url", None)
        if not isinstance(model_id, str) or not isinstance(base_url, str):
            return None, "the model has no base_url to tell its provider by"
        try:
            return self._price(usage, model_id, base_url, cache_ttl), None
        except (LookupError, ValueError) as exc:
            return None, f"genai-prices: {exc}"


def _provider_listed(model: Any) -> bool:
    """True when genai-prices lists a provider at ``model``'s ``base_url``."""
    base_url = getattr(model, "base_url", None)
    if not isinstance(base_url, str):
        return False
    from genai_prices import data_snapshot

    try:
        data_snapshot.get_snapshot().find_provider(None, None, base_url)
    except LookupError:
        return False
    return True


def model_name(model: Any) -> str:
    """``model`` as a message names it: its class, id and base URL."""
    model_id = getattr(model, "model_id", None)
    base_url = getattr(model, "base_url", None)
    name = f"{type(model).__name__}({model_id!r}"
    return name + (f" at {base_url})" if isinstance(base_url, str) else ")")
