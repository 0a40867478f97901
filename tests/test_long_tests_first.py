"""The collection order that starts every pytest-xdist worker with its share of the long tests."""

from __future__ import annotations

import pytest

from tests.conftest import long_tests_first


class Item:
    def __init__(self, name: str, long: bool) -> None:
        self.name, self.long = name, long

    def get_closest_marker(self, name: str):
        return pytest.mark.long if name == "long" and self.long else None

    def __repr__(self) -> str:
        return self.name


def test_each_workers_block_begins_with_its_long_tests_and_nothing_is_lost():
    items = [Item(f"t{n}", long=n in (7, 8, 9, 17, 18)) for n in range(21)]
    ordered = long_tests_first(items, 4)
    assert sorted(ordered, key=items.index) == items  # every test, once
    # worksteal's blocks: 21 // 4 = 5, then 16 // 3 = 5, 11 // 2 = 5, 6
    blocks = [ordered[0:5], ordered[5:10], ordered[10:15], ordered[15:21]]
    assert [[item.name for item in block if item.long] for block in blocks] == [["t7", "t18"], ["t8"], ["t9"], ["t17"]]
    assert all(block[0].long for block in blocks)
    assert [item.name for item in blocks[0][:2]] == ["t7", "t18"]


def test_one_worker_or_no_long_test_keeps_the_order():
    items = [Item(f"t{n}", long=n == 3) for n in range(6)]
    assert long_tests_first(items, 1) == items
    plain = [Item(f"t{n}", long=False) for n in range(6)]
    assert long_tests_first(plain, 4) == plain
