"""The Record codec (ground.records) refuses what its declarations do not allow, saying where: a fixed-size tuple of
the wrong length, an object whose keys are not text."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from workbench.core.ground.codec import Record


@dataclass(frozen=True)
class Shape(Record):
    size: tuple[int, int]
    counts: dict[str, int]


def test_a_record_round_trips():
    shape = Shape(size=(28, 28), counts={"0": 5})
    assert Shape.from_dict(shape.to_dict()) == shape


@pytest.mark.parametrize("size", [[28], [28, 28, 1]])
def test_a_fixed_size_tuple_takes_exactly_its_items(size):
    with pytest.raises(ValueError, match=rf"Shape.size has {len(size)} items, not 2"):
        Shape.from_dict({"size": size, "counts": {}})


def test_an_objects_keys_are_text():
    with pytest.raises(ValueError, match="Shape.counts is dict, not an object"):
        Shape.from_dict({"size": [1, 2], "counts": {1: 5}})
