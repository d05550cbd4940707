"""A small MCP server written with the official SDK, for the MCP examples.

    pip install 'agentcore[mcp]'
    python examples/mcp_server.py                # MCP over stdin/stdout
    python examples/mcp_server.py --http 8000    # streamable HTTP, http://127.0.0.1:8000/mcp

Its tools: ``capital`` (the capital of a country, from a small table) and
``distance_km`` (the great-circle distance between two capitals). Each
parameter's schema carries ``examples``, so agentcore's offline
``TestModel`` calls them with sensible arguments.
"""

from __future__ import annotations

import math
import sys
from typing import Annotated

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import Field

CAPITALS = {
    "France": ("Paris", 48.857, 2.352),
    "Germany": ("Berlin", 52.520, 13.405),
    "Italy": ("Rome", 41.903, 12.496),
    "Japan": ("Tokyo", 35.690, 139.692),
    "Kenya": ("Nairobi", -1.286, 36.817),
    "Peru": ("Lima", -12.046, -77.043),
}

Country = Annotated[str, Field(description="The country's English name.", examples=["France"])]

server = MCPServer("capitals", log_level="WARNING")


def _entry(country: str) -> tuple[str, float, float]:
    try:
        return CAPITALS[country.strip().title()]
    except KeyError:
        raise ToolError(f"unknown country {country!r}; known: {', '.join(CAPITALS)}") from None


@server.tool(annotations=ToolAnnotations(read_only_hint=True), structured_output=False)
def capital(country: Country) -> str:
    """The capital city of a country."""
    return _entry(country)[0]


@server.tool(annotations=ToolAnnotations(read_only_hint=True), structured_output=False)
def distance_km(
    from_country: Country,
    to_country: Annotated[str, Field(description="The other country.", examples=["Italy"])],
) -> str:
    """The great-circle distance in km between the capitals of two countries."""
    _, lat1, lon1 = _entry(from_country)
    _, lat2, lon2 = _entry(to_country)
    p1, p2, dl = math.radians(lat1), math.radians(lat2), math.radians(lon2 - lon1)
    angle = math.acos(min(1.0, math.sin(p1) * math.sin(p2) + math.cos(p1) * math.cos(p2) * math.cos(dl)))
    return f"{6371 * angle:.0f} km"


if __name__ == "__main__":
    if "--http" in sys.argv:
        port = int(sys.argv[sys.argv.index("--http") + 1])
        server.run("streamable-http", host="127.0.0.1", port=port)
    else:
        server.run("stdio")
