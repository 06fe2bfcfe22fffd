"""recordio._keys, the one-sample folds in C: the bits of recordio.keys' Python-int folds, word for word,
and every draw of ``Keys`` the same with the part on and off (the handle set to None: the Python path)."""

import numpy as np
import pytest

from recordio import keys

_keys = pytest.importorskip("recordio._keys")

START = 0x243F6A8885A308D3
EDGES = [0, 1, -1, 2 ** 63 - 1, -2 ** 63, 2 ** 62, -2 ** 62, 2 ** 32, -2 ** 32 - 1]


def python_fold(h, words):
    """The fold as keys.py writes it in Python ints (its ``_fold_int`` in turn)."""
    for w in words:
        h = keys.splitmix64((h + 0x9E3779B97F4A7C15 + (int(w) & (2 ** 64 - 1))) & (2 ** 64 - 1))
    return h


def random_words(rng, count):
    """Word tuples of 0-7 words: uniform int64s, small ones, and the edges."""
    out = []
    for _ in range(count):
        n = int(rng.integers(0, 8))
        pick = rng.integers(0, 3, n)
        words = [int(rng.integers(-2 ** 63, 2 ** 63 - 1, dtype=np.int64)) if p == 0 else
                 int(rng.integers(-50, 50)) if p == 1 else EDGES[int(rng.integers(len(EDGES)))] for p in pick]
        out.append(tuple(words))
    return out


@pytest.fixture
def python_path(monkeypatch):
    """Turn the compiled part off in recordio.keys (and clear the caches that hold its states)."""
    def off():
        monkeypatch.setattr(keys, "_compiled", None)
        clear()

    def clear():
        keys._row_state.cache_clear()
        keys._derive_uid.cache_clear()

    clear()
    yield off
    clear()


def test_the_part_is_what_keys_uses():
    assert keys._compiled is _keys


def test_fold_gives_the_python_bits_on_random_and_edge_words():
    rng = np.random.default_rng(20261202)
    states = [0, 1, START, 2 ** 64 - 1, 2 ** 63] + [int(x) * 2 + 1 for x in rng.integers(0, 2 ** 63, 20, dtype=np.int64)]
    for words in random_words(rng, 2000) + [tuple(EDGES), ()]:
        h = states[int(rng.integers(len(states)))]
        assert _keys.fold(h, words) == python_fold(h, words), (h, words)
        assert _keys.fold_wrapping(h, words) == python_fold(h, words), (h, words)


def test_fold_takes_what_int_takes_as_python_does():
    words = (np.int64(-5), np.uint8(200), True, np.int32(-7), 3.9, "12")
    assert _keys.fold(START, words) == python_fold(START, [int(w) for w in words])
    assert _keys.fold(START, iter([1, 2])) == _keys.fold(START, [1, 2]) == python_fold(START, (1, 2))


@pytest.mark.parametrize("word", [2 ** 63, -2 ** 63 - 1, 2 ** 64, -2 ** 100, np.uint64(2 ** 63)])
def test_a_draw_word_outside_int64_is_refused_naming_it_on_both_paths(word, python_path):
    message = f"draw word {int(word)} is outside int64"
    with pytest.raises(OverflowError, match=message):
        _keys.fold(START, (1, word))
    with pytest.raises(OverflowError, match=message):
        keys.Keys(1, 2, 3, 4).unit_floats([(0,), (5, word)])
    python_path()
    with pytest.raises(OverflowError, match=message):
        keys.Keys(1, 2, 3, 4).unit_floats([(0,), (5, word)])


@pytest.mark.parametrize("word", [2 ** 64 + 5, -2 ** 70 - 3, 2 ** 63])
def test_a_key_word_wraps_modulo_2_64_as_python_does(word):
    assert _keys.fold_wrapping(START, (word, 1)) == python_fold(START, (word, 1))


@pytest.mark.parametrize("call,error", [
    (lambda: _keys.fold(-1, (1,)), OverflowError),                 # the state is a uint64
    (lambda: _keys.fold(2 ** 64, (1,)), OverflowError),
    (lambda: _keys.fold(START, 5), TypeError),                       # words must be iterable
    (lambda: _keys.fold(START, (None,)), TypeError),
    (lambda: _keys.fold(START, ("x",)), ValueError),                 # int("x")
    (lambda: _keys.fold(START), TypeError),
    (lambda: _keys.unit_floats(START, [(1,), 7]), TypeError),
])
def test_bad_arguments_raise_as_int_would(call, error):
    with pytest.raises(error):
        call()


def test_unit_floats_give_the_python_floats():
    rng = np.random.default_rng(5)
    draws = random_words(rng, 300)
    for h in (START, 2 ** 64 - 1, 12345):
        want = [(python_fold(h, words) >> 11) * (1.0 / (1 << 53)) for words in draws]
        assert _keys.unit_floats(h, draws) == want
    assert _keys.unit_floats(START, []) == []


def draws_of(seed, epoch, row, op):
    """Every one-sample draw method of Keys, as plain values."""
    k = keys.Keys(seed, epoch, row, op)
    color = [(i,) for i in range(4)] + [(4, i) for i in range(4)]
    return (k.unit_floats(color), k.unit_floats([(4 * a + b, 9) for a in range(10) for b in range(4)]),
            k.uniform(0).tolist(), k.uniform(3, -2.0, 5, 7, -1).tolist(), k.bits(2, 3).tolist(),
            k.bits(1, np.arange(3)).tolist(), k.integers(6, 0, 1000).tolist(), k.bernoulli(1, 0.3).tolist(),
            k.permutation(4, 5).tolist(), keys.derive_uid(op, row), keys.hash_words(seed, epoch, row, op).tolist())


def test_keys_draw_the_same_with_the_part_on_and_off(python_path):
    rng = np.random.default_rng(11)
    cases = [(5489, 0, 0, 0), (0, -1, 2 ** 63 - 1, 2 ** 62), (2 ** 32 - 1, 7, -3, 1)]
    cases += [(int(rng.integers(2 ** 32)), int(rng.integers(-1, 100)), int(rng.integers(2 ** 40)),
               int(rng.integers(2 ** 62))) for _ in range(40)]
    compiled = [draws_of(*case) for case in cases]
    python_path()
    assert [draws_of(*case) for case in cases] == compiled


def test_draws_and_an_op_id_recorded_before_the_part_are_unchanged(python_path):
    """Values recorded before the part existed (Python-int folds): both paths give them."""
    recorded = ([0.5317740192060341, 0.811220704703006], 2011474423898454361)
    for _ in range(2):
        k = keys.Keys(5489, 0, 123, 777)
        assert (k.unit_floats([(0,), (1,)]), keys.derive_uid(3, 4)) == recorded
        python_path()
