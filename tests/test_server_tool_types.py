"""The value types of the providers' own tools: the server tool classes,
citations on text, the server-tool counts in ``Usage``, and the new parts."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from agentcore import Citation, ContentPartKind, Message, Request, Role, StreamPart, StreamPartKind, Usage
from agentcore.server_tools import CodeExecution, FileSearch, UserLocation, WebFetch, WebSearch
from agentcore.types import text_part


def test_a_web_search_keeps_what_it_was_given() -> None:
    search = WebSearch(max_uses=3, allowed_domains=["example.com"], user_location=UserLocation(city="Paris"))
    assert search.allowed_domains == ("example.com",)
    assert search.user_location is not None
    assert search.user_location.fields() == {"city": "Paris"}
    assert (search.name, WebFetch().name, CodeExecution().name, FileSearch(["vs_1"]).name) == (
        "web_search",
        "web_fetch",
        "code_execution",
        "file_search",
    )


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (
            lambda: WebSearch(max_uses=0),
            "max_uses must be an int >= 1, or None for the provider's default; got 0",
        ),
        (lambda: WebSearch(allowed_domains=[]), "allowed_domains must name at least one domain, or be None"),
        (
            lambda: WebSearch(allowed_domains=["a.com"], blocked_domains=["b.com"]),
            "WebSearch takes allowed_domains or blocked_domains, not both",
        ),
        (lambda: WebFetch(allowed_domains=[" "]), "allowed_domains must be non-empty strings, got ' '"),
        (lambda: FileSearch([]), "vector_store_ids must name at least one vector store"),
        (lambda: FileSearch(["vs"], max_num_results=True), "max_num_results must be an int >= 1"),
    ],
)
def test_a_server_tool_with_a_wrong_value_is_a_value_error(make: Any, message: str) -> None:
    with pytest.raises(ValueError, match=f"^{re.escape(message)}"):
        make()


def test_a_user_location_may_be_given_as_a_dict_of_its_fields() -> None:
    assert WebSearch(user_location={"city": "Paris", "country": "FR"}).user_location == UserLocation(
        city="Paris", country="FR"
    )
    with pytest.raises(
        TypeError, match=r"^user_location: unknown field\(s\) 'town'; a UserLocation has city"
    ):
        WebSearch(user_location={"town": "Paris"})
    with pytest.raises(
        TypeError, match=r"^user_location must be a UserLocation \(or a dict of its fields\), got str$"
    ):
        WebSearch(user_location="Paris")  # type: ignore[arg-type]  # what a caller might pass


def test_a_request_takes_server_tools_once_each() -> None:
    request = Request(server_tools=[WebSearch(), CodeExecution()])
    assert request.server_tools == (WebSearch(), CodeExecution())
    with pytest.raises(ValueError, match=r"^server_tools: WebSearch is given twice; give it once$"):
        Request(server_tools=[WebSearch(), WebSearch(max_uses=2)])
    with pytest.raises(
        TypeError, match=r"^server_tools: expected WebSearch, WebFetch, CodeExecution or FileSearch"
    ):
        Request(server_tools=["web_search"])


def test_citations_stay_on_their_text_through_the_json_round_trip() -> None:
    cited = Citation(
        url="https://example.com/a",
        title="A",
        cited_text="It is so.",
        type="web_search_result_location",
        data='{"encrypted_index": "Eo8B"}',
    )
    message = Message(Role.ASSISTANT, [text_part("It is so.", [cited]), text_part(" More.")])
    data = json.loads(json.dumps(message.to_dict()))
    assert data["content"][0]["citations"] == [cited.to_dict()]
    assert "citations" not in data["content"][1]
    again = Message.from_dict(data)
    assert again == message
    assert again.citations == [cited]
    assert Citation.from_dict({"url": "https://x"}) == Citation(url="https://x")


def test_usage_counts_server_tool_requests_and_writes_them_only_when_set() -> None:
    total = Usage(input=10, web_search_requests=2) + Usage(
        output=3, web_search_requests=1, web_fetch_requests=4
    )
    assert total == Usage(10, 3, 0, 0, 3, 4, 0, 0)
    assert total.to_dict() == {
        "input": 10,
        "output": 3,
        "cache_read": 0,
        "cache_write": 0,
        "web_search_requests": 3,
        "web_fetch_requests": 4,
    }
    assert Usage.from_dict(total.to_dict()) == total
    assert Usage(1, 2).to_dict() == {"input": 1, "output": 2, "cache_read": 0, "cache_write": 0}


def test_the_new_parts_carry_what_they_say() -> None:
    delta = StreamPart.tool_call_delta("toolu_1", "search", '{"q": ')
    assert delta.kind is StreamPartKind.TOOL_CALL_DELTA
    assert delta.tool_call is not None
    assert (delta.tool_call.id, delta.tool_call.name, delta.tool_call.input) == (
        "toolu_1",
        "search",
        '{"q": ',
    )
    cited = Citation(url="https://example.com")
    part = StreamPart.citation_event(cited)
    assert (part.kind, part.citation) == (StreamPartKind.CITATION, cited)
    assert text_part("x", [cited]).kind is ContentPartKind.TEXT
