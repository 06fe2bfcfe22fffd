"""recordio.keys: the scalar fast path of ``hash_words`` gives the bits of the plain numpy fold."""

import numpy as np
import pytest

from recordio import keys


def reference_mix(x):
    """SplitMix64's finaliser as published (Steele, Lea, Flood 2014), on a uint64 array."""
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


def numpy_fold(*words):
    """The general path: every word folded in numpy (the definition of the bits)."""
    with np.errstate(over="ignore"):
        h = np.atleast_1d(np.uint64(0x243F6A8885A308D3))
        for w in words:
            h = reference_mix(h + np.uint64(0x9E3779B97F4A7C15) + np.asarray(w, np.int64).astype(np.uint64))
        return h


def test_splitmix64_gives_the_published_bits_on_ints_and_arrays():
    # SplitMix64 seeded 0: its first output mixes the state 0x9E3779B97F4A7C15
    assert keys.splitmix64(0x9E3779B97F4A7C15) == 0xE220A8397B1DCDAF
    xs = np.random.default_rng(3).integers(0, 2 ** 63, 1000, dtype=np.int64).astype(np.uint64) * np.uint64(2)
    xs[:3] = [0, 1, 2 ** 64 - 1]
    with np.errstate(over="ignore"):
        want = reference_mix(xs)
    got = keys.splitmix64(xs)
    assert got.dtype == np.uint64
    np.testing.assert_array_equal(got, want)
    assert [keys.splitmix64(int(x)) for x in xs[:50]] == want[:50].tolist()


EDGE_WORDS = [
    (0,),
    (-1, 2 ** 63 - 1, -2 ** 63),
    (5, np.int64(7), np.array([3]), 9),
    (1, np.array(4), np.arange(5)),
    (1, 2, 3, np.arange(12).reshape(3, 4), 7),
    (np.array([[3]]), 1),
    (True, np.int32(-5), np.uint8(200)),
    (3, np.arange(4)[:, None] + np.arange(2), np.array([1])),
]


@pytest.mark.parametrize("words", EDGE_WORDS, ids=range(len(EDGE_WORDS)))
def test_hash_words_matches_numpy_fold(words):
    got, want = keys.hash_words(*words), numpy_fold(*words)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)


def test_hash_words_random_scalars_match():
    rng = np.random.default_rng(7)
    for _ in range(300):
        words = [int(w) for w in rng.integers(-2 ** 63, 2 ** 63 - 1, rng.integers(1, 8), dtype=np.int64)]
        np.testing.assert_array_equal(keys.hash_words(*words), numpy_fold(*words))


def test_hash_words_out_of_range_word_is_refused_as_before():
    with pytest.raises(OverflowError):
        keys.hash_words(2 ** 64)


@pytest.mark.parametrize("parent,child", [(0, 0), (3, 2), (2 ** 62, 17), (np.int64(9), np.int32(4))])
def test_derive_uid_matches_numpy_fold(parent, child):
    assert keys.derive_uid(parent, child) == int(numpy_fold(parent, child)[0] >> np.uint64(1))


def test_keys_draws_unchanged_by_fast_path():
    k = keys.Keys(11, 2, [5], 123)
    draws = 4 * np.arange(10)[:, None] + np.arange(4)
    bits = numpy_fold(11, 2, np.array([5]), 123, draws)
    want = (bits >> np.uint64(11)).astype(np.float64) * (1.0 / (1 << 53))
    np.testing.assert_array_equal(k.uniform(draws), want)


ONE_ROW_DRAWS = [0, 7, -3, 2 ** 63 - 1, np.int64(5), np.array([2]), np.arange(4)[:, None],
                 4 * np.arange(10)[:, None] + np.arange(4), np.arange(200)]


@pytest.mark.parametrize("draw", ONE_ROW_DRAWS, ids=range(len(ONE_ROW_DRAWS)))
@pytest.mark.parametrize("more", [(), (3,), (np.arange(4)[:, None],)], ids=["none", "scalar", "column"])
def test_one_row_keys_draw_the_numpy_fold(draw, more):
    """One-sample keys reuse the (seed, epoch, row, op) state and fold small draws with Python ints:
    the same bits, floats and shapes as folding every word in numpy."""
    for seed, epoch, row, op in [(11, 2, 5, 123), (-1, 0, 2 ** 40, 2 ** 62)]:
        k = keys.Keys(seed, epoch, [row], op)
        try:
            bits = numpy_fold(seed, epoch, np.array([row]), op, draw, *more)
        except ValueError:                  # shapes that do not broadcast are refused on both paths
            with pytest.raises(ValueError):
                k.bits(draw, *more)
            return
        got = k.bits(draw, *more)
        assert got.dtype == bits.dtype and got.shape == bits.shape
        np.testing.assert_array_equal(got, bits)
        unit = (bits >> np.uint64(11)).astype(np.float64) * (1.0 / (1 << 53))
        for low, high in [(0.0, 1.0), (0.08, 1.0), (-0.5, 0.5), (1, 3)]:
            got = k.uniform(draw, low, high, *more)
            assert got.shape == unit.shape
            np.testing.assert_array_equal(got, low + (high - low) * unit)


def test_unit_floats_are_the_uniform_draws():
    k = keys.Keys(4, 1, [9], 31)
    draws = [(0,), (5,), (4, 2), (-1, 2 ** 40)]
    assert k.unit_floats(draws) == [float(k.uniform(w[0], 0.0, 1.0, *w[1:])[0]) for w in draws]
    assert k.unit_floats([(np.int64(4), np.int32(2))]) == k.unit_floats([(4, 2)])     # numpy words too
    with pytest.raises(ValueError, match="one sample"):
        keys.Keys(4, 1, [9, 10], 31).unit_floats(draws)


def test_one_row_draw_words_outside_int64_are_refused():
    k = keys.Keys(1, 0, [2], 3)
    for bad in (2 ** 63, -2 ** 63 - 1):
        with pytest.raises(OverflowError):
            k.uniform(bad)
        with pytest.raises(OverflowError):
            k.unit_floats([(0, bad)])


@pytest.mark.parametrize("row", [0, 5, -7, 2 ** 40, 2 ** 63 - 1])
def test_a_row_given_as_an_int_draws_as_the_row_array(row):
    """current_keys hands one-row Keys a Python int (its array made only when asked): the same rows, bits
    and floats as the int64 array, for every op of the row (their shared (seed, epoch, row) state)."""
    for op in (3, 2 ** 62):
        fast, plain = keys.Keys(11, 2, row, op), keys.Keys(11, 2, np.array([row], np.int64), op)
        assert len(fast) == len(plain) == 1
        draws = [(0,), (4, 2), (-1, 2 ** 40)]
        assert fast.unit_floats(draws) == plain.unit_floats(draws)
        np.testing.assert_array_equal(fast.bits(np.arange(4)[:, None]), plain.bits(np.arange(4)[:, None]))
        np.testing.assert_array_equal(fast.uniform(1, 0.5, 2.0), plain.uniform(1, 0.5, 2.0))
        assert fast.rows.dtype == np.int64 and fast.rows.tolist() == [row] and repr(fast) == repr(plain)
    with pytest.raises(OverflowError):
        keys.Keys(11, 2, 2 ** 63, 3)


@pytest.mark.parametrize("seed, epoch, rows, op, name", [
    (2 ** 64 + 5, 0, 3, 1, "seed"), (2 ** 64 + 5, 0, [3, 4], 1, "seed"), (5, -2 ** 63 - 1, 3, 1, "epoch"),
    (5, 0, 2 ** 63, 1, "row"), (5, 0, 3, 2 ** 64 + 1, "op"), (5, 0, [3, 4], 2 ** 64 + 1, "op")])
def test_a_key_outside_int64_is_refused_on_both_paths(seed, epoch, rows, op, name):
    # wrapped modulo 2**64, seed 2**64 + 5 drew seed 5's values on the one-sample path (and the batched
    # path failed with numpy's message): both name the word now
    with pytest.raises(OverflowError, match=f"{name} .* is outside int64"):
        keys.Keys(seed, epoch, rows, op).uniform(0)


def test_the_int64_bounds_are_keys():
    lo, hi = -2 ** 63, 2 ** 63 - 1
    assert keys.Keys(hi, lo, hi, lo).uniform(0)[0] == keys.Keys(hi, lo, [hi], lo).uniform(0)[0]
