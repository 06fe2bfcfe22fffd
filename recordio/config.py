"""Process-wide pipeline settings (MindSpore's ``dataset.config``).

This is the one piece of documented mutable module state in recordio. Every
setter validates its argument; every getter returns the current value.
"""

__all__ = [
    "get_auto_offload", "get_bytes_form", "get_num_parallel_workers", "get_order_mode", "get_prefetch_size",
    "get_seed", "set_auto_offload", "set_bytes_form", "set_num_parallel_workers", "set_order_mode",
    "set_prefetch_size", "set_seed",
]

DEFAULT_SEED = 5489  # MindSpore's default (the mt19937 default seed)

_settings: dict[str, int | bool] = {"seed": DEFAULT_SEED, "prefetch_size": 16, "num_parallel_workers": 2,
                                   "auto_offload": False}
_BYTES_FORMS = ("uint8", "mindspore")
_bytes_form = ["uint8"]
_ORDER_MODES = ("recordio", "mindspore")
_order_mode = ["recordio"]


def _positive_int(name, value, limit=None):
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0 or (limit and value > limit):
        bound = f" and at most {limit}" if limit else ""
        raise ValueError(f"{name} must be an int greater than 0{bound}, got {value!r}")
    return value


def set_seed(seed: int) -> None:
    """Seed for shuffles and random ops; all ranks of a distributed job must use the same seed."""
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed <= 0xFFFFFFFF:
        raise ValueError(f"seed must be an int in [0, 2**32 - 1], got {seed!r}")
    _settings["seed"] = seed


def get_seed() -> int:
    """The current seed (5489 unless :func:`set_seed` was called)."""
    return int(_settings["seed"])


def set_prefetch_size(size: int) -> None:
    """Queue depth between pipeline stages, in rows or batches (default 16)."""
    _settings["prefetch_size"] = _positive_int("prefetch_size", size)


def get_prefetch_size() -> int:
    """The queue depth between pipeline stages (see :func:`set_prefetch_size`)."""
    return int(_settings["prefetch_size"])


def set_num_parallel_workers(num: int) -> None:
    """Default number of workers of ``map``/``batch`` when a call does not give one (default 2)."""
    _settings["num_parallel_workers"] = _positive_int("num_parallel_workers", num, 1024)


def get_num_parallel_workers() -> int:
    """The default number of workers of ``map``/``batch`` (see :func:`set_num_parallel_workers`)."""
    return int(_settings["num_parallel_workers"])


def set_auto_offload(offload: bool) -> None:
    """Offload the trailing supported ops of every map whose ``offload`` is not False."""
    if not isinstance(offload, bool):
        raise TypeError(f"offload must be a bool, got {type(offload).__name__}")
    _settings["auto_offload"] = offload


def get_auto_offload() -> bool:
    """Whether maps offload their trailing supported ops by default (see :func:`set_auto_offload`)."""
    return bool(_settings["auto_offload"])


def set_bytes_form(form: str) -> None:
    """How ``output_numpy=True`` gives ``bytes`` columns: ``"uint8"`` (default: a 1-D uint8 array,
    lossless) or ``"mindspore"`` (MindSpore 2.10's ``numpy.bytes_`` array, dtype ``S<n>``, for scripts
    that check it; numpy cannot tell ``b""`` from ``b"\\x00"`` in it and drops trailing NUL bytes
    when an element is taken out)."""
    if form not in _BYTES_FORMS:
        raise ValueError(f"bytes form must be one of {_BYTES_FORMS}, got {form!r}")
    _bytes_form[0] = form


def get_bytes_form() -> str:
    """The current bytes form (see :func:`set_bytes_form`)."""
    return _bytes_form[0]


def set_order_mode(mode: str) -> None:
    """Which row orders a ``MindDataset`` reads in: ``"recordio"`` (default: keyed permutations,
    O(1) memory, the same for any worker count, resumable at a position) or ``"mindspore"``
    (MindSpore 2.10's own orders for its seed, shuffle modes, samplers and shards, so that an
    experiment's data order carries over; a permutation per epoch, computed in Python;
    ``recordio.dataset.ms_order``). Read when an epoch is ordered."""
    if mode not in _ORDER_MODES:
        raise ValueError(f"order mode must be one of {_ORDER_MODES}, got {mode!r}")
    _order_mode[0] = mode


def get_order_mode() -> str:
    """The current order mode (see :func:`set_order_mode`)."""
    return _order_mode[0]
