"""The per-process background helpers: the batching thread (announcements) and the live sender's merging
of queued pushes."""

from __future__ import annotations

import threading

from inbox.core.background import Batcher
from inbox.live import push as live


def test_values_added_together_are_handled_in_one_call_and_flush_waits_for_them() -> None:
    calls: list[list[int]] = []
    batcher = Batcher("test-batcher", calls.append, linger=0.5)
    for value in range(5):
        batcher.add(value)
    batcher.flush(timeout=5)
    assert calls == [[0, 1, 2, 3, 4]]
    batcher.add(5)
    batcher.flush(timeout=5)
    assert calls == [[0, 1, 2, 3, 4], [5]]


def test_a_failing_call_does_not_stop_the_thread() -> None:
    handled: list[list[str]] = []
    failed = threading.Event()

    def handle(values: list[str]) -> None:
        if "boom" in values:
            failed.set()
            raise RuntimeError("the broker is down")
        handled.append(values)

    batcher = Batcher("test-batcher", handle)
    batcher.add("boom")
    assert failed.wait(5)
    batcher.add("next")
    batcher.flush(timeout=5)
    assert handled == [["next"]] and batcher.thread.is_alive()


def test_a_process_gets_one_batcher_and_a_forked_child_its_own(monkeypatch) -> None:
    get = Batcher.per_process("test-batcher", lambda values: None)
    assert get() is get()
    first = get()
    monkeypatch.setattr("os.getpid", lambda: first.pid + 1)
    assert get() is not first


def message(event: str, n: int) -> dict:
    return {"type": "inbox.event", "id": f"{event}-{n}", "event": event, "payload": {"n": n}}


def test_queued_pushes_to_the_same_groups_leave_as_one_message_in_order() -> None:
    a, b = ["inbox.staff", "inbox.agent.1"], ["inbox.staff", "inbox.agent.2"]
    together = {"type": "inbox.events", "events": [message("item.created", 2), message("item.created", 3)]}
    batch = [
        (a, message("item.created", 1), None),
        (a, together, None),
        ([], {}, threading.Event()),  # a flush marker sends nothing
        (b, message("item.decided", 4), None),
        (a, message("item.created", 5), None),
    ]
    sent = live._coalesce(batch)
    assert [groups for groups, _ in sent] == [a, b, a]
    assert sent[0][1]["type"] == "inbox.events"
    assert [event["payload"]["n"] for event in sent[0][1]["events"]] == [1, 2, 3]
    assert sent[1][1] == message("item.decided", 4) and sent[2][1] == message("item.created", 5)


def test_a_long_burst_is_split_into_messages_of_bounded_size() -> None:
    groups = ["inbox.staff"]
    sent = live._coalesce([(groups, message("item.created", n), None) for n in range(live.MAX_MERGED * 2 + 1)])
    assert [len(m["events"]) if m["type"] == "inbox.events" else 1 for _, m in sent] == [live.MAX_MERGED] * 2 + [1]


class RecordingLayer:
    def __init__(self) -> None:
        self.sent: list[tuple[str, dict]] = []

    async def group_send(self, group: str, message: dict) -> None:
        self.sent.append((group, message))


def test_a_burst_from_several_threads_arrives_whole_in_order_and_wakes_the_sender_once_per_batch(
    monkeypatch, settings
) -> None:
    settings.INBOX_LIVE_BATCH_SECONDS = 0.2
    layer = RecordingLayer()
    monkeypatch.setattr(live, "get_channel_layer", lambda: layer)
    sender = live._Sender()
    wakes: list[object] = []
    call_soon_threadsafe = sender.loop.call_soon_threadsafe

    def counted(callback, *args):
        wakes.append(callback)
        return call_soon_threadsafe(callback, *args)

    sender.loop.call_soon_threadsafe = counted  # type: ignore[method-assign]

    def burst(thread: int) -> None:
        for n in range(250):
            sender.submit_many([([f"inbox.agent.{thread}"], message(f"t{thread}", n))])

    threads = [threading.Thread(target=burst, args=(number,)) for number in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    sender.flush(timeout=5)

    received: dict[str, list[int]] = {}
    for group, sent in layer.sent:
        events = sent["events"] if sent["type"] == "inbox.events" else [sent]
        received.setdefault(group, []).extend(event["payload"]["n"] for event in events)
    assert received == {f"inbox.agent.{number}": list(range(250)) for number in range(4)}
    # 1,000 pushes within a fifth of a second: a wake-up for the first of the batch (and the flush), not per push.
    assert len(wakes) <= 20, f"{len(wakes)} wake-ups for 1,000 pushes"
