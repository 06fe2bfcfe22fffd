"""The compiled integer-array codec against the numpy reference (``ints_numpy``).

Same bytes out of the encoder, the same arrays out of the decoder, and the same errors (type and
message) for every malformed part: golden files, every width mix, and a seeded corruption fuzz.
"""

import os
import pickle
import struct
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from recordio import FileReader
from recordio.errors import FormatError
from recordio.mindrecord import codec, ints_numpy
from conftest import GOLDEN_COPIES, TESTS

pytestmark = pytest.mark.skipif(codec._codec is None, reason="the compiled codec is not built")

I32, I64 = np.dtype("<i4"), np.dtype("<i8")
BOUNDS = [0, 1, -1, 127, 128, -128, -129, 32767, 32768, -32768, -32769, 2**31 - 1, 2**31, -2**31,
          -2**31 - 1, 2**63 - 1, -2**63]
LOW, HIGH = [-2**7, -2**15, -2**31, -2**63], [2**7, 2**15, 2**31, 2**63]


def _mixed(rng, n, codes):
    """n int64 values whose widths are drawn from ``codes`` (0..3: 1, 2, 4, 8 bytes)."""
    picks = rng.choice(codes, n)
    low = np.array(LOW, dtype=object)[picks]
    high = np.array(HIGH, dtype=object)[picks]
    return np.array([int(rng.integers(lo, hi, dtype=np.int64, endpoint=False)) if hi < 2**63
                     else int(rng.integers(lo, hi - 1, dtype=np.int64, endpoint=True))
                     for lo, hi in zip(low, high)], dtype=np.int64)


def _outcome(fn, data, dtype):
    try:
        out = fn(data, dtype)
    except FormatError as exc:
        return ("error", str(exc))
    return ("ok", out.dtype, out.tolist())


def _c_accepts(data, dtype):
    n = codec._codec.measure(data)
    return n >= 0 and codec._codec.decode_into(data, np.empty(n, dtype))


def _in_buffer(data, rng):
    """``data`` inside a larger buffer (random bytes around it) and its range there."""
    before, after = rng.bytes(int(rng.integers(0, 9))), rng.bytes(int(rng.integers(0, 9)))
    return before + data + after, np.array([len(before)]), np.array([len(before) + len(data)])


def _ranges_outcome(data, dtype, rng):
    buf, starts, ends = _in_buffer(data, rng)
    try:
        out = codec.decompress_ranges(buf, starts, ends, dtype)
    except FormatError as exc:
        return ("error", str(exc))
    out = out[0] if isinstance(out, list) else out.reshape(-1)
    return ("ok", out.dtype, out.tolist())


def _c_ranges_accept(data, dtype, rng):
    buf, starts, ends = _in_buffer(data, rng)
    counts = np.empty(1, np.int64)
    codec._codec.measure_ranges(buf, starts, ends, counts)
    return counts[0] >= 0 and codec._codec.decode_ranges(buf, starts, ends, np.empty(counts[0], dtype)) < 0


def test_backend_is_compiled():
    """Installed from this tree, the compiled codec runs (it is built wherever the package installs)."""
    if os.environ.get("RECORDIO_CODEC") == "numpy":
        pytest.skip("RECORDIO_CODEC=numpy forces the reference")
    assert codec.BACKEND == "c"


def test_backend_can_be_forced_to_numpy():
    code = "from recordio.mindrecord import codec; print(codec.BACKEND)"
    env = dict(os.environ, RECORDIO_CODEC="numpy")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "numpy"


@pytest.mark.slow
@pytest.mark.parametrize("simd", ["0", "1"])
def test_portable_loops_agree_too(simd):
    """The decoding tests again with the vector loops switched off (RECORDIO_CODEC_SIMD=0) or limited
    to SSSE3 (=1, where the AVX2 loop runs by default), so the loops that run on other CPUs are
    checked here as well."""
    if codec._codec.SIMD <= int(simd):
        pytest.skip("those loops already run in this process")
    env = dict(os.environ, RECORDIO_CODEC_SIMD=simd)
    tests = ("same_bytes or boundaries or decompress_many or decompress_ranges or int32_overflow or corruption_fuzz "
             "or golden_rows")
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", __file__,
                           "-k", tests], env=env, capture_output=True, text=True, cwd=TESTS, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert " passed" in done.stdout


@pytest.mark.parametrize("simd", ["0", "1"])
def test_simd_switch_is_seen_by_the_module(simd):
    code = "from recordio.mindrecord import _codec; print(_codec.SIMD)"
    env = dict(os.environ, RECORDIO_CODEC_SIMD=simd)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert int(out.stdout.strip()) <= int(simd)


# --- encoding -------------------------------------------------------------------------------------

@pytest.mark.parametrize("codes", [[0], [1], [2], [3], [0, 1], [1, 2], [0, 1, 2], [0, 1, 2, 3], [2, 3]])
@pytest.mark.parametrize("n", [0, 1, 2, 3, 4, 5, 7, 8, 31, 64, 65, 257, 2049])
def test_same_bytes_as_the_reference(codes, n):
    rng = np.random.default_rng(n * 10 + len(codes))
    values = _mixed(rng, n, codes)
    expected = ints_numpy.compress(values)
    assert codec.compress_ints(values) == expected
    if all(c < 3 for c in codes):                      # int32 input, encoded without widening
        assert codec.compress_ints(values.astype(np.int32)) == expected
    for dtype in (I64,) + ((I32,) if all(c < 3 for c in codes) else ()):
        got = codec.decompress_ints(expected, dtype)
        assert got.dtype == dtype and np.array_equal(got, values)


def test_width_boundaries_and_extremes():
    values = np.array(BOUNDS * 3, dtype=np.int64)
    packed = codec.compress_ints(values)
    assert packed == ints_numpy.compress(values)
    assert np.array_equal(codec.decompress_ints(packed, I64), values)
    widths = [len(codec.compress_ints(np.array([v]))) - 5 for v in BOUNDS]
    assert widths == [1, 1, 1, 1, 2, 1, 2, 2, 4, 2, 4, 4, 8, 4, 8, 8, 8]


@pytest.mark.parametrize("dtype", [np.int8, np.uint16, np.uint32, ">i4", ">i8", np.bool_])
def test_other_integer_inputs_encode_as_int64(dtype):
    values = np.arange(-3, 200, dtype=np.int64).astype(dtype)
    assert codec.compress_ints(values) == ints_numpy.compress(values)


def test_non_contiguous_and_2d_inputs():
    grid = np.arange(-500, 500, dtype=np.int32).reshape(20, 50)
    assert codec.compress_ints(grid[:, ::3]) == ints_numpy.compress(grid[:, ::3])
    assert codec.compress_ints(grid) == ints_numpy.compress(grid)


def test_compress_rows_is_compress_per_row():
    rng = np.random.default_rng(3)
    grid = rng.integers(-70000, 151000, (17, 300), dtype=np.int32)
    assert codec.compress_rows(grid) == [ints_numpy.compress(row) for row in grid]
    assert codec.compress_rows(np.zeros((0, 5), np.int64)) == []
    with pytest.raises(ValueError):
        codec.compress_rows(grid[0])


def test_compiled_functions_refuse_non_integer_buffers():
    for bad in (np.zeros(4, np.float32), np.zeros(4, np.int16), b"abcd"):
        with pytest.raises(TypeError):
            codec._codec.encode(bad)
    with pytest.raises(TypeError):
        codec._codec.decode_into(b"\x00\x00\x00\x00", np.zeros(0, np.float64))
    with pytest.raises(ValueError):
        codec._codec.encode_rows(np.zeros(10, np.int32), 3)


# --- decoding -------------------------------------------------------------------------------------

def test_decompress_many_stacks_equal_lengths():
    rng = np.random.default_rng(5)
    grid = rng.integers(0, 151000, (32, 2049), dtype=np.int32)
    parts = [codec.compress_ints(row) for row in grid]
    got = codec.decompress_many(parts, I32)
    assert got.dtype == I32 and got.shape == (32, 2049) and np.array_equal(got, grid)
    assert np.array_equal(codec.decompress_many(parts, I64), grid)


def test_decompress_many_keeps_unequal_lengths_as_a_list():
    rows = [np.arange(n, dtype=np.int64) * 1000 for n in (3, 0, 70)]
    got = codec.decompress_many([codec.compress_ints(r) for r in rows], I64)
    assert isinstance(got, list) and all(np.array_equal(a, b) for a, b in zip(got, rows))
    assert codec.decompress_many([], I64) == []


def test_decompress_many_raises_the_row_error():
    parts = [codec.compress_ints(np.arange(10)) for _ in range(4)]
    parts[2] = parts[2][:-1]
    with pytest.raises(FormatError) as many:
        codec.decompress_many(parts, I64)
    with pytest.raises(FormatError) as one:
        ints_numpy.decompress(parts[2], I64)
    assert str(many.value) == str(one.value)


@pytest.mark.parametrize("lengths", [(2049,) * 32, (3, 0, 70, 1), (0, 0), (5,)])
def test_decompress_ranges_reads_parts_in_place(lengths):
    """Parts at ranges of one buffer (rows of a page): the arrays decompress_many gives, stacked when
    every part has the same length, else a list; the bytes between parts are never read."""
    rng = np.random.default_rng(len(lengths))
    rows = [rng.integers(-2**20, 2**20, n) >> int(rng.integers(0, 20)) for n in lengths]
    parts = [codec.compress_ints(r) for r in rows]
    gaps = [rng.bytes(int(rng.integers(0, 12))) for _ in parts]
    buf = b"".join(g + p for g, p in zip(gaps, parts))
    ends = np.cumsum([len(g) + len(p) for g, p in zip(gaps, parts)])
    starts = ends - [len(p) for p in parts]
    for dtype in (I32, I64):
        got, want = codec.decompress_ranges(buf, starts, ends, dtype), codec.decompress_many(parts, dtype)
        assert type(got) is type(want)
        if isinstance(want, list):
            assert all(a.dtype == b.dtype and np.array_equal(a, b) for a, b in zip(got, want))
        else:
            assert got.dtype == want.dtype and np.array_equal(got, want)


def test_decompress_ranges_raises_the_row_error():
    parts = [codec.compress_ints(np.arange(10)) for _ in range(4)]
    parts[2] = parts[2][:-1] + b"\x00\x00"             # trailing bytes: the count does not fill it
    ends = np.cumsum([len(p) for p in parts])
    with pytest.raises(FormatError) as ranges:
        codec.decompress_ranges(b"".join(parts), ends - [len(p) for p in parts], ends, I64)
    with pytest.raises(FormatError) as one:
        ints_numpy.decompress(parts[2], I64)
    assert str(ranges.value) == str(one.value)
    with pytest.raises(ValueError, match="outside"):
        codec._codec.measure_ranges(b"abc", np.array([0]), np.array([4]), np.empty(1, np.int64))


def test_int32_overflow_is_refused_like_the_reference():
    packed = codec.compress_ints(np.array([1, 2**31, 3], dtype=np.int64))
    assert not _c_accepts(packed, I32) and _c_accepts(packed, I64)
    assert _outcome(codec.decompress_ints, packed, I32) == _outcome(ints_numpy.decompress, packed, I32)
    grid = [codec.compress_ints(np.array([5, 6, 7])), packed]
    with pytest.raises(FormatError, match="outside the int32 range"):
        codec.decompress_many(grid, I32)


def _corruptions(rng, packed):
    """Malformed and odd variants of a valid encoding."""
    n = struct.unpack_from(">I", packed)[0] if len(packed) >= 4 else 0
    yield packed
    yield packed[:int(rng.integers(0, len(packed) + 1))]                  # truncated
    yield packed + rng.bytes(int(rng.integers(1, 9)))                      # trailing bytes
    flipped = bytearray(packed)
    flipped[int(rng.integers(0, len(packed)))] ^= 1 << int(rng.integers(0, 8))
    yield bytes(flipped)
    for count in (n + 1, max(n - 1, 0), 0xFFFFFFFF, 0x40000000, int(rng.integers(0, 2**32))):
        yield struct.pack(">I", count) + packed[4:]                        # counts that do not fit
    if n:
        wide = bytearray(packed)
        wide[4 + (n - 1) // 4] = 0xFF                                      # width codes past the end
        yield bytes(wide)
        wide[4] = 0xFF
        yield bytes(wide)


@pytest.mark.slow
def test_corruption_fuzz_matches_the_reference():
    """Seeded: random arrays, their corruptions and random bytes give the reference's result or error."""
    rng = np.random.default_rng(20240)
    cases = 0
    for trial in range(1500):
        codes = sorted(set(rng.integers(0, 4, int(rng.integers(1, 5))).tolist()))
        n = int(rng.choice([0, 1, 2, 3, 4, 5, 8, 9, 33, 64, 65, 100]))
        packed = ints_numpy.compress(_mixed(rng, n, codes))
        for data in list(_corruptions(rng, packed)) + [rng.bytes(int(rng.integers(0, 40)))]:
            for dtype in (I32, I64):
                expected = _outcome(ints_numpy.decompress, data, dtype)
                assert _outcome(codec.decompress_ints, data, dtype) == expected, (trial, data, dtype)
                assert _c_accepts(data, dtype) == (expected[0] == "ok"), (trial, data, dtype)
                assert _ranges_outcome(data, dtype, rng) == expected, (trial, data, dtype)
                assert _c_ranges_accept(data, dtype, rng) == (expected[0] == "ok"), (trial, data, dtype)
                cases += 1
    assert cases > 30000


def test_reads_stay_inside_the_part():
    """Every part placed against an unreadable page: a read past its end would crash the child."""
    script = textwrap.dedent("""
        import ctypes, mmap, numpy as np
        from recordio.mindrecord import codec, ints_numpy
        libc = ctypes.CDLL(None)
        page = mmap.PAGESIZE
        area = mmap.mmap(-1, 2 * page)
        base = ctypes.addressof(ctypes.c_char.from_buffer(area))
        assert libc.mprotect(ctypes.c_void_p(base + page), page, 0) == 0   # PROT_NONE
        view = memoryview(area)
        rng = np.random.default_rng(7)
        ok = 0
        for trial in range(4000):
            n = int(rng.integers(0, 90))
            data = ints_numpy.compress(rng.integers(-2**40, 2**40, n) >> int(rng.integers(0, 41)))
            if trial % 2:
                data = bytearray(data); data[int(rng.integers(0, len(data)))] = int(rng.integers(0, 256))
                data = bytes(data[:int(rng.integers(0, len(data) + 1))])
            view[page - len(data):page] = data
            part = view[page - len(data):page]
            for dtype in ("<i4", "<i8"):
                m = codec._codec.measure(part)
                if m >= 0:
                    ok += codec._codec.decode_into(part, np.empty(m, dtype))
                codec._codec.decode_many([part, part], np.empty(2 * max(m, 0), dtype))
        print(ok)
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=TESTS)
    assert out.returncode == 0, out.stderr
    assert int(out.stdout) > 1000


# --- golden files ------------------------------------------------------------------------------

def _golden_with_int_arrays():
    cases = []
    for case in sorted(p for p in GOLDEN_COPIES.iterdir() if p.is_dir()):
        with open(case / "calls.pkl", "rb") as f:
            schema = pickle.load(f)["schema"]
        if any("shape" in s and s["type"] in ("int32", "int64") for s in schema.values()):
            cases.append(case.name)
    return cases


GOLDEN_INTS = _golden_with_int_arrays()


@pytest.mark.parametrize("case", GOLDEN_INTS)
def test_golden_rows_equal_with_both_codecs(case, monkeypatch):
    assert len(GOLDEN_INTS) >= 4
    path = str(sorted((GOLDEN_COPIES / case).glob("*.mindrecord*"))[0]).removesuffix(".db")
    with FileReader(path) as reader:
        compiled = list(reader)
    monkeypatch.setattr(codec, "_codec", None)
    with FileReader(path) as reader:
        reference = list(reader)
    assert len(compiled) == len(reference) > 0
    arrays = 0
    for mine, theirs in zip(compiled, reference):
        assert mine.keys() == theirs.keys()
        for name, value in mine.items():
            if isinstance(value, np.ndarray):
                assert value.dtype == theirs[name].dtype and np.array_equal(value, theirs[name])
                if value.dtype.kind == "i":
                    monkeypatch.undo()
                    assert codec.compress_ints(value) == ints_numpy.compress(value)
                    monkeypatch.setattr(codec, "_codec", None)
                    arrays += 1
            else:
                assert value == theirs[name]
    assert arrays > 0


# --- MindSpore: the same bytes, the same batches ----------------------------------------------------

def _token_calls(seed=9):
    """Two write calls of token rows: ids over every width, labels, and a 0/1 attention mask."""
    rng = np.random.default_rng(seed)
    calls = []
    for size in (5, 7):
        rows = []
        for _ in range(size):
            ids = _mixed(rng, 129, [0, 1, 2]).astype(np.int32)
            rows.append({"input_ids": ids, "labels": np.roll(ids, -1), "attention_mask": np.ones(129, np.int32),
                         "positions": _mixed(rng, 40, [0, 1, 2, 3])})
        calls.append(rows)
    return calls


TOKEN_SCHEMA = {"input_ids": {"type": "int32", "shape": [-1]}, "labels": {"type": "int32", "shape": [-1]},
                "attention_mask": {"type": "int32", "shape": [-1]}, "positions": {"type": "int64", "shape": [-1]}}


@pytest.mark.mindspore
def test_token_rows_written_byte_identical_to_mindspore(mindspore_python, tmp_path):
    from ms_client import run_oracle
    from ms_oracle import to_plain
    from recordio import FileWriter

    calls = _token_calls()
    (tmp_path / "ms").mkdir()
    (tmp_path / "ours").mkdir()
    theirs, mine = str(tmp_path / "ms" / "t.mindrecord"), str(tmp_path / "ours" / "t.mindrecord")
    [answer] = run_oracle(mindspore_python, [{"op": "write", "path": theirs, "schema": TOKEN_SCHEMA, "desc": "tokens",
                                              "calls": to_plain(calls)}], tmp_path)
    assert "error" not in answer, answer
    with FileWriter(mine, 1) as writer:
        writer.add_schema(TOKEN_SCHEMA, "tokens")
        for call in calls:
            writer.write_raw_data(call)
    with open(theirs, "rb") as a, open(mine, "rb") as b:
        assert a.read() == b.read()


@pytest.mark.mindspore
def test_token_batches_equal_mindspore_batches(mindspore_python, tmp_path):
    from ms_client import run_oracle
    from ms_oracle import build_pipeline, from_plain
    import recordio.dataset as rds
    from recordio import FileWriter

    path = str(tmp_path / "tokens.mindrecord")
    with FileWriter(path, 1) as writer:
        writer.add_schema(TOKEN_SCHEMA, "tokens")
        for call in _token_calls(11):
            writer.write_raw_data(call)
    spec = {"source": {"dataset_files": path, "columns_list": ["input_ids", "labels"], "shuffle": False},
            "steps": [["batch", {"batch_size": 4, "drop_remainder": True}]]}
    [answer] = run_oracle(mindspore_python, [{"op": "pipeline", "pipeline": spec, "rows": 10}], tmp_path)
    assert "error" not in answer, answer
    theirs = from_plain(answer["rows"])
    ours = [list(b) for b in build_pipeline(rds, spec).create_tuple_iterator(num_epochs=1, output_numpy=True)]
    assert len(ours) == len(theirs) == 3
    for mine, their in zip(ours, theirs):
        for a, b in zip(mine, their, strict=True):
            assert a.shape == b.shape == (4, 129) and a.dtype == b.dtype == np.int32
            assert np.array_equal(a, b)


def test_copy_ranges_gathers_in_order_and_checks_its_arguments():
    buf = bytes(range(50))
    starts, ends = np.array([10, 0, 30, 30]), np.array([15, 3, 30, 32])
    out = np.empty(10, np.uint8)
    assert codec.copy_ranges(buf, starts, ends, out)
    assert out.tobytes() == buf[10:15] + buf[0:3] + buf[30:32]
    with pytest.raises(ValueError, match="hold 10 bytes"):
        codec.copy_ranges(buf, starts, ends, np.empty(9, np.uint8))
    with pytest.raises(ValueError, match="outside"):
        codec.copy_ranges(buf, np.array([45]), np.array([51]), np.empty(6, np.uint8))
    with pytest.raises(ValueError, match="outside"):
        codec.copy_ranges(buf, np.array([5]), np.array([4]), np.empty(0, np.uint8))
