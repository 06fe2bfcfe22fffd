"""Property-based fuzzing of the parsers: any input gives a result or a RecordIOError, never another exception."""

import json
import pathlib
import shutil
import struct
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from recordio import FileReader, RecordIOError
from recordio.mindrecord import codec, ints_numpy
from recordio.mindrecord import format as fmt
from recordio.mindrecord.schema import Schema
from conftest import GOLDEN_COPIES, TESTS

FAST = settings(max_examples=300, deadline=2000, suppress_health_check=[HealthCheck.function_scoped_fixture])


def _json_values():
    return st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
                        lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=12), c, max_size=5),
                        max_leaves=12)


@FAST
@given(st.binary(max_size=300))
def test_header_bytes(data):
    try:
        fmt.decode_header(data, "fuzz")
    except RecordIOError:
        pass


@pytest.mark.slow
@FAST
@given(st.dictionaries(st.sampled_from(["header_size", "index_fields", "page", "page_size", "schema",
                                        "shard_addresses", "statistics", "version", "compression_size"]),
                       _json_values()))
def test_header_objects(obj):
    obj.setdefault("version", "3.0")
    try:
        header = fmt.decode_header(json.dumps(obj).encode(), "fuzz")
        Schema(header["schema"][0]["schema"], header["version"])
    except RecordIOError:
        pass


@FAST
@given(st.binary(max_size=64))
def test_raw_records(data):
    try:
        codec.unpack_raw(data)
    except RecordIOError:
        pass


@FAST
@given(st.binary(max_size=80), st.sampled_from([np.int32, np.int64]))
def test_compressed_ints(data, dtype):
    try:
        out = codec.decompress_ints(data, np.dtype(dtype))
        assert out.dtype == dtype
    except RecordIOError:
        pass


@pytest.mark.slow
@FAST
@given(st.lists(st.integers(-(2 ** 63), 2 ** 63 - 1), max_size=40))
def test_compression_round_trip(values):
    arr = np.array(values, dtype=np.int64)
    assert np.array_equal(codec.decompress_ints(codec.compress_ints(arr), np.dtype(np.int64)), arr)


@FAST
@given(st.binary(max_size=100), st.integers(1, 4))
def test_blob_split(data, count):
    try:
        parts = codec.split_blob(data, count)
        assert len(parts) == count
    except RecordIOError:
        pass


@settings(max_examples=120, deadline=5000, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.integers(0, 70000), st.integers(0, 255)), min_size=1, max_size=6))
def test_mutated_files(tmp_path_factory, edits):
    d = tmp_path_factory.mktemp("fuzz")
    case = "arrays_variable"
    shutil.copytree(GOLDEN_COPIES / case, d / case)
    path = d / case / f"{case}.mindrecord"
    data = bytearray(path.read_bytes())
    for offset, value in edits:
        data[offset % len(data)] = value
    path.write_bytes(bytes(data))
    try:
        with FileReader(str(path)) as reader:
            rows = list(reader)
        assert len(rows) == 15
    except RecordIOError:
        pass


@pytest.mark.slow
@FAST
@given(st.lists(st.integers(-(2 ** 63), 2 ** 63 - 1), min_size=65, max_size=130))
def test_compression_small_and_bulk_paths_agree(values):
    small = ints_numpy.compress_small(values)
    assert codec.compress_ints(np.array(values, dtype=np.int64)) == small
    assert np.array_equal(codec.decompress_ints(small, np.dtype(np.int64)), np.array(values, dtype=np.int64))


# --- the campaign of tools/fuzz.py (docs/threat-model.md) ----------------------------------------

FUZZ_CASES = sorted((pathlib.Path(__file__).parent / "fuzz_cases").glob("seed-*"))


@pytest.mark.parametrize("case", FUZZ_CASES, ids=[c.name for c in FUZZ_CASES])
def test_fuzz_regression_case(case):
    """Every mutant the campaign found failing, run again: it must now fail only with a RecordIOError."""
    from recordio.tools import fuzz

    assert fuzz.replay(case) == []


def test_fuzz_cases_are_kept():
    assert len(FUZZ_CASES) >= 5


def test_fuzz_campaign_slice():
    """A fixed-seed slice of the campaign (the whole one: python -m recordio.tools.fuzz --minutes 30)."""
    done = subprocess.run([sys.executable, "-m", "recordio.tools.fuzz", "--seed", "1", "--mutants", "40"],
                          capture_output=True, text=True, timeout=600, cwd=TESTS)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "40 mutants" in done.stdout and "0 failing" in done.stdout
