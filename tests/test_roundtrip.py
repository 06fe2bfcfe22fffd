"""Seeded property tests: random schemas, values, shard counts and call sizes round-trip exactly."""

import math
import os
import string

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from recordio import FileReader, FileWriter
from rowcheck import assert_rows_equal

SCALARS = ["int32", "int64", "float32", "float64", "string", "bytes"]
ARRAYS = ["int32", "int64", "float32", "float64"]
INT_EDGES = {"int32": [-(2 ** 31), 2 ** 31 - 1, 0, -1, 127, 128, -129, 32768],
             "int64": [-(2 ** 63), 2 ** 63 - 1, 2 ** 40, -(2 ** 40), 0]}
FLOAT_EDGES = [0.0, -0.0, 0.1, 1.5, 1e-45, 1e300, -1e300, math.inf, -math.inf, math.nan, 3.4028234663852886e38]


@st.composite
def schemas(draw):
    names = draw(st.lists(st.text(string.ascii_letters + string.digits + "_", min_size=1, max_size=6),
                          min_size=1, max_size=7, unique_by=str.lower))
    schema = {}
    for name in names:
        if draw(st.booleans()):
            schema[name] = {"type": draw(st.sampled_from(SCALARS))}
        else:
            dims = draw(st.lists(st.integers(1, 3), min_size=1, max_size=3))
            if draw(st.booleans()):
                dims[draw(st.integers(0, len(dims) - 1))] = -1
            schema[name] = {"type": draw(st.sampled_from(ARRAYS)), "shape": dims}
    return schema


def _int(draw, kind):
    low, high = (-(2 ** 31), 2 ** 31 - 1) if kind == "int32" else (-(2 ** 63), 2 ** 63 - 1)
    return draw(st.one_of(st.sampled_from(INT_EDGES[kind]), st.integers(low, high)))


def _value(draw, spec):
    kind, shape = spec["type"], spec.get("shape")
    if shape is None:
        if kind in INT_EDGES:
            return _int(draw, kind)
        if kind == "float32":
            return draw(st.one_of(st.sampled_from(FLOAT_EDGES[:5] + FLOAT_EDGES[7:]),
                                  st.floats(allow_nan=True, width=32)))
        if kind == "float64":
            return draw(st.one_of(st.sampled_from(FLOAT_EDGES), st.floats(allow_nan=True)))
        if kind == "string":
            return draw(st.text(max_size=40))
        return draw(st.binary(max_size=300))
    dims = [draw(st.integers(0, 3)) if d == -1 else d for d in shape]
    n = int(np.prod(dims))
    if kind in INT_EDGES:
        flat = [_int(draw, kind) for _ in range(n)]
    else:
        edges = FLOAT_EDGES if kind == "float64" else FLOAT_EDGES[:5] + FLOAT_EDGES[7:]
        flat = [draw(st.sampled_from(edges)) for _ in range(n)]
    return np.array(flat, dtype=kind).reshape(dims)


def _expected(spec, value):
    kind, shape = spec["type"], spec.get("shape")
    if shape is not None:
        fixed = [d for d in shape if d != -1]
        return value.reshape([-1 if d == -1 else d for d in shape]) if fixed else value.reshape(-1)
    if kind in ("string", "bytes"):
        return value
    return np.dtype(kind).type(value)


@st.composite
def datasets(draw):
    schema = draw(schemas())
    calls = []
    for _ in range(draw(st.integers(1, 3))):
        calls.append([{n: _value(draw, s) for n, s in schema.items()} for _ in range(draw(st.integers(0, 9)))])
    return schema, calls, draw(st.sampled_from([1, 2, 3, 5]))


@pytest.mark.slow
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                   HealthCheck.too_slow])
@given(data=datasets())
def test_round_trip(tmp_path_factory, data):
    schema, calls, shards = data
    out = tmp_path_factory.mktemp("rt")
    writer = FileWriter(str(out / "x.mr"), shards)
    writer.set_header_size(1 << 16)
    writer.set_page_size(1 << 15)
    writer.add_schema(schema, "property test ünicode")
    for call in calls:
        if call:
            writer.write_raw_data(call)
    writer.commit()
    expected = _in_read_order(schema, calls, shards)
    first = str(out / ("x.mr" if shards == 1 else "x.mr0"))
    with FileReader(first) as via_db, FileReader(first, use_index=False) as via_pages:
        assert_rows_equal(list(via_db), expected)
        assert_rows_equal(list(via_pages), expected)
        if len(via_db):
            assert_rows_equal([via_db[-1]], expected[-1:])


def _in_read_order(schema, calls, shards):
    per_shard = [[] for _ in range(shards)]
    for call in calls:                  # SPEC §4: leftovers go to the shards holding the fewest rows
        q, r = divmod(len(call), shards)
        fewest = sorted(range(shards), key=lambda i: (len(per_shard[i]), i))[:r]
        start = 0
        for s in range(shards):
            n = q + (1 if s in fewest else 0)
            per_shard[s] += call[start:start + n]
            start += n
    return [{k: _expected(schema[k], v) for k, v in row.items()} for rows in per_shard for row in rows]


@pytest.mark.parametrize("rows", [1, 100, 3000])
def test_many_pages_and_reader_sequence_protocol(tmp_path, rows):
    schema = {"img": {"type": "bytes"}, "label": {"type": "int32"}}
    writer = FileWriter(str(tmp_path / "x.mr"), 3)
    writer.set_header_size(1 << 16)
    writer.set_page_size(1 << 15)
    writer.add_schema(schema)
    data = [{"img": bytes([i % 251]) * (i % 5000), "label": i} for i in range(rows)]
    for start in range(0, rows, 700):
        writer.write_raw_data(data[start:start + 700])
    writer.commit()
    with FileReader(str(tmp_path / "x.mr1")) as r:
        got = list(r)
        assert sorted(int(g["label"]) for g in got) == list(range(rows))
        assert_rows_equal(r[1:rows:7], got[1:rows:7])
        assert_rows_equal(r.__getitems__([0, rows - 1]), [got[0], got[-1]])
        assert_rows_equal([r[-1]], [got[-1]])
        with pytest.raises(IndexError):
            r[rows]
        with pytest.raises(TypeError):
            r["a"]



def test_a_reader_alive_at_interpreter_exit_closes_quietly(tmp_path, monkeypatch):
    """At interpreter exit a module's globals may be None before a reader it holds is freed (a reader
    in a script's closure): its files still close, without 'Exception ignored in __del__'."""
    from recordio.mindrecord.read import shard_set as shard_set_module
    path = str(tmp_path / "g.mindrecord")
    with FileWriter(path) as w:
        w.add_schema({"x": {"type": "int32"}})
        w.write_raw_data([{"x": i} for i in range(3)])
    reader = FileReader(path)
    fds = list(reader.shard_set._fds.values())
    assert fds
    monkeypatch.setattr(shard_set_module, "os", None)       # what module teardown leaves
    reader.shard_set.__del__()
    monkeypatch.undo()
    for fd in fds:
        with pytest.raises(OSError):
            os.fstat(fd)                                    # closed
    reader.shard_set._fds.clear()
