"""Values at the pipeline's edges: a batch's list of bytes converts to one 1-D ``uint8`` array
per value, whatever the lengths; ``collate`` stacks scalars of one type."""

import numpy as np
import pytest

from recordio.dataset.values import collate, to_numpy


def _each(values):
    return [np.frombuffer(v, np.uint8) if type(v) is bytes else np.asarray(v) for v in values]


@pytest.mark.parametrize("values", [
    [bytes([i]) * 5 for i in range(4)],              # equal lengths
    [b"", b"", b""],                                 # equal and empty
    [b"ab", b"abc", b""],                            # lengths differ
    [b"ab", np.arange(2, dtype=np.uint8)],           # not all bytes
    [b"xyz"],                                        # a single value
])
def test_bytes_rows_are_uint8_arrays_of_each_value(values):
    fast, general = to_numpy(list(values)), _each(values)
    assert isinstance(fast, list) and len(fast) == len(general)
    for a, b in zip(fast, general):
        assert a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b)


def test_equal_length_rows_do_not_alias_each_other():
    rows = to_numpy([b"\x01\x02", b"\x03\x04"])
    assert rows[0].tolist() == [1, 2] and rows[1].tolist() == [3, 4]


@pytest.mark.parametrize("values,expected", [
    ([np.int32(1), np.int32(2)], np.array([1, 2], np.int32)),
    ([np.int32(1), np.int64(2)], None),              # two scalar types: not stacked by type
])
def test_collate_scalars_of_one_type(values, expected):
    out = collate(values)
    if expected is None:
        assert isinstance(out, list) and out == values
    else:
        assert out.dtype == expected.dtype and np.array_equal(out, expected)


@pytest.mark.parametrize("values", [[b"ab", b"", b"c"], [b"", b"x"]])
def test_collate_bytes_of_unequal_lengths_as_uint8_views(values):
    out = collate(values)                             # a list of 1-D uint8 arrays, as ops see bytes
    assert isinstance(out, list) and [a.tobytes() for a in out] == values
    assert all(a.dtype == np.uint8 and a.ndim == 1 for a in out)


@pytest.mark.parametrize("values", [[b"a", b"b"], [b"ab\x00", b"\x00cd"], [b"", b""], [b"z"]])
def test_collate_bytes_of_one_length_stacked(values):
    out = collate(values)                             # equal shapes are stacked, as for arrays
    assert type(out) is np.ndarray and out.dtype == np.uint8 and out.shape == (len(values), len(values[0]))
    assert [bytes(row) for row in out] == values


def test_collate_bytes_kept_for_mindspore_form():
    from recordio import config
    config.set_bytes_form("mindspore")
    try:
        assert collate([b"a", b"bc"]) == [b"a", b"bc"]
    finally:
        config.set_bytes_form("uint8")
