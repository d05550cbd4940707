"""What adapters remember from one step to the next
(``agentcore.memo.MessageMemo``): found only for the very message
object and key, forgotten least recently used first, and never changing what
is sent (the digests of ``caching.MessageDigests``, the Chat Completions
messages of each step)."""

from __future__ import annotations

import gc
import weakref
from typing import Any

from agentcore import Message, Reasoning, Request, Role, user_message
from agentcore.context import Context
from agentcore.history import check_history
from agentcore.memo import MessageMemo
from agentcore.providers import config
from agentcore.providers.digests import MessageDigests, digest, fingerprint
from agentcore.providers.openai import OpenAIChatModel
from agentcore.providers.openai.chat.request import request_body as chat_body
from agentcore.providers.openai.chat.stream import REASONING, REASONING_CONTENT
from agentcore.transport.memory import MemoryTransport, Reply
from agentcore.types import reasoning_part, text_part

OK = b'data: {"choices":[{"index":0,"delta":{"content":"ok"},"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n'


def test_a_result_is_found_for_the_same_message_object_under_the_same_key() -> None:
    memo: MessageMemo[str] = MessageMemo()
    first, equal = user_message("hi"), user_message("hi")
    memo.store([(first, "mapped")], "dialect")
    assert memo.find([first, equal], "dialect") == ["mapped", None]
    assert memo.find([first], "another dialect") == [None]


def test_the_least_recently_used_results_go_first() -> None:
    memo: MessageMemo[int] = MessageMemo(keep=2)
    a, b, c = user_message("a"), user_message("b"), user_message("c")
    memo.store([(a, 1), (b, 2)], None)
    assert memo.find([a], None) == [1]  # a is now the most recently used
    memo.store([(c, 3)], None)
    assert memo.find([a, b, c], None) == [1, None, 3]


def test_a_remembered_digest_is_used_only_while_the_message_sends_the_same_json() -> None:
    digests = MessageDigests()
    hi, answer = user_message("hi"), Message(Role.ASSISTANT, [text_part("hello")])
    sent: list[Any] = [[{"type": "text", "text": "hi"}], [{"type": "text", "text": "hello"}]]
    assert digests.fingerprint(None, "sys", [hi, answer], sent) == fingerprint(None, "sys", sent)
    # A cache point in a later message marks this message's last block: a new digest.
    marked = [{"type": "text", "text": "hello", "cache_control": {"type": "ephemeral"}}]
    again = digests.fingerprint(None, "sys", [hi, answer], [sent[0], marked])
    assert again.messages == (digest(sent[0]), digest(marked))
    assert again.messages[1] != digest(sent[1])


def test_each_step_sends_the_messages_request_body_maps(transport: MemoryTransport) -> None:
    transport.add(Reply.of(OK), Reply.of(OK))
    model = OpenAIChatModel("m", base_url="http://localhost:8000/v1", transport=transport)
    here = config.origin(model.base_url)

    def turn(text: str, fmt: str) -> Message:
        return Message(
            Role.ASSISTANT, [reasoning_part(Reasoning(text=text, format=fmt, origin=here)), text_part("ok")]
        )

    thought = turn("Think.", REASONING_CONTENT)
    first = Request(messages=[user_message("a"), thought, user_message("b")])
    # The latest reasoning now has another format: the server's dialect changes,
    # and the same assistant message goes out in the new one.
    second = Request(messages=[*first.messages, turn("Other.", REASONING), user_message("c")])
    for request in (first, second):
        parts = list(model.stream(request, Context()))
        assert parts[-1].kind.value == "step-finish"
    sent = [request.json()["messages"] for request in transport.sent]
    assert sent == [
        chat_body(first, "m", origin=here)["messages"],
        chat_body(second, "m", origin=here)["messages"],
    ]
    assert sent[0][1]["reasoning_content"] == "Think."
    assert "reasoning_content" not in sent[1][1]


class Mapped:
    """A stored result whose collection a weak reference can tell."""


def test_a_result_goes_with_its_message() -> None:
    memo: MessageMemo[Mapped] = MessageMemo()
    message = user_message("a large file, say")
    memo.store([(message, Mapped())], None)
    [found] = memo.find([message], None)
    assert found is not None
    result = weakref.ref(found)
    del found, message
    gc.collect()
    assert result() is None  # the memo kept neither the message nor its result


def test_a_passed_history_keeps_no_message_alive() -> None:
    history = [user_message("hi"), Message(Role.ASSISTANT, [text_part("hello")])]
    check_history(history)
    last = weakref.ref(history[-1])
    del history
    gc.collect()
    assert last() is None
