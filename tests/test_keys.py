"""recordio.keys: the scalar fast path of ``hash_words`` gives the bits of the plain numpy fold."""

import numpy as np
import pytest

from recordio import keys


def numpy_fold(*words):
    """The general path: every word folded in numpy (the definition of the bits)."""
    with np.errstate(over="ignore"):
        h = np.atleast_1d(np.uint64(0x243F6A8885A308D3))
        for w in words:
            h = keys._mix(h + keys._GOLDEN + keys._u64(w))
        return h


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
