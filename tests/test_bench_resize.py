"""tools/bench_resize.py runs from a clone: fresh processes per pass, the same bytes from both
contenders, a row per case and pass kind."""

import argparse

import pytest

from recordio.tools import bench_resize
from recordio.vision import resampling


@pytest.mark.skipif(resampling.compiled_resize() is None, reason="the C kernels are not built")
def test_bench_resize_rows():
    rows = bench_resize.run(argparse.Namespace(calls=6, repeats=1, child=None))
    assert [r["name"] for r in rows] == [f"{case}, {kind}: compiled" for case in bench_resize.CASES
                                         for kind in ("first pass", "best of 1")]
    assert all(r["baseline"] == "cv2.resize" and r["value"] > 0 and r["ratio"] > 0 for r in rows)
