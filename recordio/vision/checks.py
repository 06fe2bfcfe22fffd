"""Parameter validation shared by the vision ops (MindSpore's rules, raised at construction), the error
for image bytes that do not decode, and the pixels the compiled parts' self-checks run on."""

import numbers

import numpy as np

from recordio.errors import FormatError
from recordio.keys import current_row

__all__ = ["FLOAT32_MAX", "PNG_SIGNATURE", "check_factor", "check_image", "check_number", "check_pixels", "check_prob",
           "check_range", "check_size", "pair", "row_phrase", "undecodable"]

FLOAT32_MAX = float(np.finfo(np.float32).max)
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def check_number(name, value, low=None, high=None, *, integer=False, low_open=False):
    """A real number (an int when ``integer``) within ``[low, high]`` (``(low, high]`` if ``low_open``)."""
    kind = numbers.Integral if integer else numbers.Real
    if isinstance(value, bool) or not isinstance(value, kind):
        want = "an int" if integer else "a number"
        raise TypeError(f"{name} must be {want}, got {type(value).__name__} {value!r}")
    too_low = low is not None and (value <= low if low_open else value < low)
    if too_low or (high is not None and value > high):
        left = "(" if low_open else "["
        raise ValueError(f"{name} must be within {left}{low}, {high}], got {value!r}")
    return value


def check_prob(name, value):
    return float(check_number(name, value, 0.0, 1.0))


def check_size(name, size):
    """MindSpore's size argument: a positive int or a sequence of two positive ints -> (h, w) or int."""
    if isinstance(size, numbers.Integral) and not isinstance(size, bool):
        return int(check_number(name, size, 1, 16777216, integer=True))
    if isinstance(size, (list, tuple)) and len(size) == 2:
        return tuple(int(check_number(f"{name}[{i}]", s, 1, 16777216, integer=True)) for i, s in enumerate(size))
    raise TypeError(f"{name} must be an int or a sequence of 2 ints, got {size!r}")


def pair(size):
    """(h, w) from an int or a 2-sequence."""
    return (size, size) if isinstance(size, int) else tuple(size)


def check_range(name, value, low=None, high=None):
    """A sequence (min, max) with min <= max, both within [low, high]."""
    if not isinstance(value, (list, tuple)) or len(value) != 2:
        raise TypeError(f"{name} must be a sequence of 2 numbers, got {value!r}")
    lo, hi = (float(check_number(f"{name}[{i}]", v, low, high)) for i, v in enumerate(value))
    if lo > hi:
        raise ValueError(f"{name} must be (min, max) with min <= max, got {value!r}")
    return lo, hi


def check_factor(name, value, *, center, low, high):
    """A colour-jitter factor: a number v -> [max(low, center - v), center + v]; a pair -> itself."""
    if isinstance(value, (list, tuple)):
        return check_range(name, value, low, high)
    check_number(name, value, 0, None if high is None else high - center)
    return max(low, center - value), center + value


def check_image(op, image, ranks=(2, 3), channels=None):
    """A numpy image of an accepted rank (and channel count when ``channels`` is given)."""
    if not isinstance(image, np.ndarray):
        raise TypeError(f"{op}: expected a numpy image array, found {type(image).__name__}")
    if channels is not None and (image.ndim != 3 or image.shape[2] != channels):
        raise ValueError(f"{op}: expected an image <H,W,{channels}>, found shape {image.shape}")
    if image.ndim not in ranks:
        want = " or ".join(f"{r}-D" for r in ranks)
        raise ValueError(f"{op}: expected a {want} image <H,W{',C' if 3 in ranks else ''}>, "
                         f"found shape {image.shape}")
    return image


def check_pixels(shape, seed=0):
    """Deterministic pseudo-random uint8 pixels of ``shape`` for a compiled part's self-check: SplitMix64 of
    the index, repeating every 64 Ki values (fresh pages for a large image's hash would cost more than the
    check; ``numpy.random``'s first use would import it, ~20 ms, in a pipeline's first row)."""
    n = int(np.prod(shape))
    x = np.arange(min(n, 1 << 16), dtype=np.uint64)
    x += np.uint64(seed * 0x9E3779B97F4A7C15 % 2 ** 64)
    for shift, factor in ((30, 0xBF58476D1CE4E5B9), (27, 0x94D049BB133111EB)):
        x ^= x >> np.uint64(shift)
        x *= np.uint64(factor)
    x ^= x >> np.uint64(31)
    return np.resize((x >> np.uint64(56)).astype(np.uint8), n).reshape(shape)


def row_phrase():
    """`` (row N)`` of the row the calling thread's ops run on, for an error; empty outside a pipeline."""
    row = current_row()
    return "" if row is None or row[1] < 0 else f" (row {row[2]})"


def undecodable(op, buf, detail=""):
    """The :class:`~recordio.errors.FormatError` for image bytes ``buf`` that ``op`` could not decode:
    a JPEG or PNG that is cut short or damaged is named as one; ``detail``: the decoder's own words."""
    head, tail = bytes(buf[:8]), bytes(buf[-8:])
    said = f"; {detail}" if detail else ""
    if head[:3] == b"\xff\xd8\xff":                     # a JPEG's start: cut short, or damaged inside
        found = (f"a JPEG of {len(buf)} bytes that does not decode ("
                 + ("damaged inside" if tail.endswith(b"\xff\xd9") else "no end-of-image marker FF D9: cut short?")
                 + f"{said})")
    elif head == PNG_SIGNATURE:
        found = (f"a PNG of {len(buf)} bytes that does not decode ("
                 + ("damaged inside" if tail == b"IEND\xaeB`\x82" else "no IEND chunk at its end: cut short?")
                 + f"{said})")
    else:
        found = f"{len(buf)} bytes starting {head!r}{f' ({detail})' if detail else ''}"
    return FormatError(f"{op}: cannot decode image{row_phrase()}: expected a whole JPEG or PNG, found {found}")
