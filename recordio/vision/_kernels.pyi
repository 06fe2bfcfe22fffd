"""Types of the optional C extension ``_kernels.c`` (built by setup.py when a C compiler is there)."""

from collections.abc import Sequence

import numpy as np

def adjust(rgb: np.ndarray, kinds: bytes, b: float, c: float, s: float, h: float) -> None: ...
def lookup_chw(hwc: np.ndarray, channels: int, tables: Sequence[np.ndarray], out: np.ndarray) -> None: ...
