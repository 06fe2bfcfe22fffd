"""Exact comparison of rows: same keys, same types, same dtypes and shapes, NaN equal to NaN."""

import numpy as np


def values_equal(a, b):
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return (isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and a.dtype == b.dtype
                and a.shape == b.shape and np.array_equal(a, b, equal_nan=a.dtype.kind == "f"))
    if type(a) is not type(b):
        return False
    if isinstance(a, (float, np.floating)) and np.isnan(a):
        return bool(np.isnan(b))
    return a == b


def rows_equal(a, b):
    return a.keys() == b.keys() and all(values_equal(a[k], b[k]) for k in a)


def assert_rows_equal(got, expected):
    assert len(got) == len(expected), f"{len(got)} rows, expected {len(expected)}"
    for i, (g, e) in enumerate(zip(got, expected)):
        assert rows_equal(g, e), f"row {i} differs:\n got      {g!r}\n expected {e!r}"
