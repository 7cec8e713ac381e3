"""A put of a growing ``messages`` list costs what is new (issue 41), and stays exact.

The adapter serializes only the messages whose class and fields it has not serialized
before (`eventlog.adapters._langgraph_memo`); a message changed in place, however deep,
is serialized again and read back as changed. Counted through wrappers, not timed.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import Checkpoint, empty_checkpoint

from eventlog.adapters._langgraph_memo import MessageMemo
from eventlog.adapters._langgraph_serde import StrictSerializer
from eventlog.adapters.langgraph import AsyncEventlogSaver
from eventlog.checkpoints.thread_records import Payload


@pytest.fixture
async def saver(tmp_path: Path) -> AsyncIterator[AsyncEventlogSaver]:
    async with AsyncEventlogSaver.from_conn_string(f"sqlite:///{tmp_path / 'log.db'}",
                                                  tenant_id="t") as opened:
        yield opened


class Counting:
    """Counts the messages a saver's serializer is asked to write."""

    def __init__(self, saver: AsyncEventlogSaver) -> None:
        self.messages = 0
        serde = saver.serde
        assert isinstance(serde, StrictSerializer)
        original = serde.dumps_typed

        def counted(obj: Any) -> tuple[str, bytes]:
            if isinstance(obj, BaseMessage):
                self.messages += 1
            return original(obj)

        serde.dumps_typed = counted  # type: ignore[method-assign]


async def put(saver: AsyncEventlogSaver, config: RunnableConfig, messages: list[Any],
              step: int) -> RunnableConfig:
    version = saver.get_next_version(None if step == 0 else str(step), None)
    checkpoint: Checkpoint = {
        **empty_checkpoint(), "id": str(uuid.UUID(int=step + 1)),  # increasing: the latest
        "channel_versions": {"messages": version},
        "channel_values": {"messages": list(messages)},
    }
    return await saver.aput(config, checkpoint, {"step": step}, {"messages": version})


async def latest(saver: AsyncEventlogSaver) -> list[Any]:
    found = await saver.aget_tuple({"configurable": {"thread_id": "chat"}})
    assert found is not None
    return list(found.checkpoint["channel_values"]["messages"])


def start() -> RunnableConfig:
    return {"configurable": {"thread_id": "chat", "checkpoint_ns": ""}}


async def test_a_put_serializes_only_the_new_message(saver: AsyncEventlogSaver) -> None:
    """Thirty puts of a list growing by one message: each serializes that one alone."""
    counting = Counting(saver)
    messages: list[Any] = []
    config = start()
    per_put = []
    for step in range(30):
        messages.append(AIMessage(f"message {step} " * 80, id=f"m{step}"))
        before = counting.messages
        config = await put(saver, config, messages, step)
        per_put.append(counting.messages - before)
    assert [1] * 30 == per_put
    assert messages == await latest(saver)


async def test_a_message_changed_in_place_is_stored_as_changed(
    saver: AsyncEventlogSaver,
) -> None:
    """Messages mutated between puts (a field set, a nested dict and list changed in
    place, a key added to the extra fields) are read back as they are now."""
    messages: list[Any] = [HumanMessage("hello", id="h"), AIMessage("first", id="a"),
                           AIMessage("second", id="b", additional_kwargs={"k": [1]}),
                           AIMessage("third", id="c"), AIMessage("fourth", id="d")]
    config = await put(saver, start(), messages, 0)
    messages[0].content = "hello again"
    messages[2].additional_kwargs["k"].append(2)
    messages[1].response_metadata["model"] = "x"
    config = await put(saver, config, messages, 1)
    assert messages == await latest(saver)
    messages[2].additional_kwargs["k"][0] = True  # 1 == True, but not the same value
    await put(saver, config, messages, 2)
    read = await latest(saver)
    assert [True, 2] == read[2].additional_kwargs["k"]
    assert bool is type(read[2].additional_kwargs["k"][0])


def test_the_memo_gives_the_serializer_s_own_bytes() -> None:
    """A remembered payload is byte for byte what the serializer writes for the message
    as it is, and the very same object as last time while it is unchanged."""
    serde = StrictSerializer()
    memo = MessageMemo()
    message = AIMessage("text", id="m", tool_calls=[{"name": "f", "args": {"a": 1},
                                                     "id": "c"}])

    def dump(value: Any) -> Payload:
        return Payload(*serde.dumps_typed(value))

    first = memo.dump_all([message], dump)
    assert first == memo.dump_all([message], dump)
    assert first[0] is memo.dump_all([message], dump)[0]
    message.tool_calls[0]["args"]["a"] = 1.0
    changed = memo.dump_all([message], dump)
    assert dump(message) == changed[0]
    assert first[0] != changed[0]


def test_a_message_holding_other_objects_is_always_serialized() -> None:
    """A field holding anything but exact builtins (here a str subclass) is never
    remembered: its message is serialized on every call."""

    class Label(str):
        pass

    calls = []
    memo = MessageMemo()
    message = AIMessage("text", id="m", additional_kwargs={"label": Label("x")})

    def dump(value: Any) -> Payload:
        calls.append(value)
        return Payload("msgpack", b"x")

    memo.dump_all([message, message], dump)
    assert 2 == len(calls)


def test_the_memo_holds_no_more_than_its_budget() -> None:
    """Past its budget the memo drops the least recently used payloads."""
    serde = StrictSerializer()
    memo = MessageMemo(budget=20_000)
    messages = [AIMessage(f"{n} " * 500, id=str(n)) for n in range(40)]
    memo.dump_all(messages, lambda value: Payload(*serde.dumps_typed(value)))
    assert memo._bytes <= 20_000
    assert 0 < len(memo._held) < 40


def test_a_refused_pickle_leaves_the_next_one_whole() -> None:
    """After a message refused mid-pickle, the next message pickles as a fresh pickler
    pickles it (nothing of the refused one left in the pickler or its sink)."""
    from eventlog.adapters._langgraph_memo import _Pickling, _pickling

    class Label(str):
        pass

    message = AIMessage("text", id="m", additional_kwargs={"a": {"b": [1, 2, {"c": 3}]}})
    refused = AIMessage("x" * 5000, id="r", additional_kwargs={"a": [[{"b": Label("x")}]]})
    assert _pickling.fields(refused) is None
    assert _Pickling().fields(message) == _pickling.fields(message)
    assert _pickling.fields(message) is not None


def serializer() -> Callable[[Any], Payload]:
    serde = StrictSerializer()
    return lambda value: Payload(*serde.dumps_typed(value))


def test_a_list_s_payloads_are_always_its_messages_as_they_are() -> None:
    """Random lists of a pool of messages, changed in place between calls (content, a
    nested dict, 1 for True, a key added, a message of another class with the same
    fields): every payload the memo gives is what serializing that message now gives."""
    rng = random.Random(41)
    dump = serializer()
    memo = MessageMemo()
    pool: list[Any] = [AIMessage(f"m{n}", id=f"m{n}", additional_kwargs={"k": [1]})
                       for n in range(12)]
    value = pool[:6]
    for _ in range(300):
        edit = rng.randrange(6)
        target = rng.choice(pool)
        if edit == 0:
            value = [*value, rng.choice(pool)]
        elif edit == 1:
            target.content = f"{target.content}!"
        elif edit == 2:
            target.additional_kwargs["k"][0] = rng.choice([1, True, 1.0])
        elif edit == 3:
            target.response_metadata[f"r{rng.randrange(3)}"] = None
        elif edit == 4 and len(value) > 4:
            del value[rng.randrange(len(value))]
        else:
            value[rng.randrange(len(value))] = HumanMessage(**target.__dict__ | {
                "type": "human"})
        assert [dump(message) for message in value] == list(
            memo.dump_list("chat", value, dump))


def test_a_message_changed_while_serialized_is_not_remembered_so() -> None:
    """A message another thread changes while its list is serialized, and changes back:
    the next call gives it as it is then (what was serialized is not remembered as what
    the list held before)."""
    dump = serializer()
    memo = MessageMemo()
    messages: list[Any] = [AIMessage(f"m{n}", id=str(n)) for n in range(5)]
    memo.dump_list("chat", messages[:4], dump)

    def racing(value: Any) -> Payload:
        value.content = "changed meanwhile"
        return dump(value)

    memo.dump_list("chat", messages, racing)
    messages[4].content = "m4"
    assert [dump(message) for message in messages] == list(
        memo.dump_list("chat", messages, dump))
