"""Process-wide pipeline settings (MindSpore's ``dataset.config``).

This is the one piece of documented mutable module state in recordio. Every
setter validates its argument; every getter returns the current value.

The second half of this module holds the rest of MindSpore 2.10's ``dataset.config`` that
scripts call around MindRecord pipelines (AutoTune, NUMA, watchdog, shared memory, ...), with
MindSpore's signatures, defaults, argument checks and messages. Each says in its docstring what it
does in recordio; most tune MindSpore's C++ engine and change nothing here, but keep the value, so
that a script that sets and reads them runs unchanged.
"""

import enum

from recordio.errors import type_check

__all__ = [
    "ErrorSamplesMode", "get_auto_num_workers", "get_auto_offload", "get_autotune_interval", "get_bytes_form",
    "get_callback_timeout", "get_dynamic_shape", "get_enable_autotune", "get_enable_shared_mem",
    "get_enable_watchdog", "get_error_samples_mode", "get_fast_recovery", "get_iterator_mode",
    "get_monitor_sampling_interval", "get_multiprocessing_start_method", "get_multiprocessing_timeout_interval",
    "get_num_parallel_workers", "get_numa_enable", "get_order_mode", "get_page_checks", "get_prefetch_size", "get_seed",
    "get_video_backend", "set_auto_num_workers", "set_auto_offload", "set_autotune_interval", "set_bytes_form",
    "set_callback_timeout", "set_dynamic_shape", "set_enable_autotune", "set_enable_shared_mem",
    "set_enable_watchdog", "set_error_samples_mode", "set_fast_recovery", "set_iterator_mode",
    "set_monitor_sampling_interval", "set_multiprocessing_start_method", "set_multiprocessing_timeout_interval",
    "set_num_parallel_workers", "set_numa_enable", "set_order_mode", "set_page_checks", "set_prefetch_size", "set_seed",
    "set_sending_batches", "set_video_backend",
]

DEFAULT_SEED = 5489  # MindSpore's default (the mt19937 default seed)

_settings: dict[str, int | bool] = {"seed": DEFAULT_SEED, "prefetch_size": 16, "num_parallel_workers": 2,
                                   "auto_offload": False, "page_checks": True}
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


def set_page_checks(check: bool) -> None:
    """Check each page of a dataset with checksums against its checksum the first time a reader
    (``FileReader``, ``MindDataset``) reads a row from it (default: True). ``False`` skips the
    checks of readers opened afterwards, unless they ask for ``verify=True``; a reader's own
    ``verify=False`` skips them too (docs/threat-model.md)."""
    if not isinstance(check, bool):
        raise TypeError(f"check must be a bool, got {type(check).__name__}")
    _settings["page_checks"] = check


def get_page_checks() -> bool:
    """Whether readers check pages against their checksums by default (see :func:`set_page_checks`)."""
    return bool(_settings["page_checks"])


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
    ``recordio.dataset.order.ms_order``). Read when an epoch is ordered."""
    if mode not in _ORDER_MODES:
        raise ValueError(f"order mode must be one of {_ORDER_MODES}, got {mode!r}")
    _order_mode[0] = mode


def get_order_mode() -> str:
    """The current order mode (see :func:`set_order_mode`)."""
    return _order_mode[0]


# --- the rest of MindSpore's dataset.config ----------------------------------------------------------

INT32_MAX = 2147483647

_engine: dict = {
    "enable_autotune": False, "autotune_interval": 0, "numa_enable": False, "monitor_sampling_interval": 1000,
    "auto_num_workers": False, "callback_timeout": 60, "enable_shared_mem": True, "sending_batches": 0,
    "enable_watchdog": True, "multiprocessing_timeout_interval": 300, "dynamic_shape": False,
    "fast_recovery": True, "iterator_mode": {"do_copy": False, "parallel_convert": False},
    "multiprocessing_start_method": "fork", "video_backend": "CPU",
}


class ErrorSamplesMode(enum.IntEnum):
    """MindSpore's ``config.ErrorSamplesMode``: what a map does with a sample it fails on."""

    RETURN = 0
    REPLACE = 1
    SKIP = 2


def _bool(value, message):
    if not isinstance(value, bool):
        raise TypeError(message)
    return value


def _int(value, name, low_open, upper, message, type_message=None):
    """MindSpore's check of an int setting: ``low_open`` excludes 0; ``upper`` is included."""
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(type_message or f"{name} isn't of type int.")
    if value < 0 or (low_open and value == 0) or value > upper:
        raise ValueError(message)
    return value


def _valid_str(value, name, valid):
    type_check(value, (str,), name)
    if value not in valid:
        raise ValueError(f"Input {name} is not within the valid set of {valid}.")
    return value


def set_enable_autotune(enable: bool, filepath_prefix: str | None = None) -> None:
    """MindSpore's AutoTune of its C++ engine's workers and queues. No effect in recordio, whose
    pipeline sizes its thread and process stages itself; the setting is kept (and checked)."""
    _bool(enable, "enable must be of type bool.")
    if filepath_prefix and not isinstance(filepath_prefix, str):
        raise TypeError(f"json_filepath must be a str value but was: {filepath_prefix}.")
    if enable and filepath_prefix == "":
        raise RuntimeError("The value of json_filepath cannot be the empty string.")
    _engine["enable_autotune"] = enable


def get_enable_autotune() -> bool:
    """Whether :func:`set_enable_autotune` turned AutoTune on (default False; no effect in recordio)."""
    return _engine["enable_autotune"]


def set_autotune_interval(interval: int) -> None:
    """AutoTune's interval in steps (0: every epoch). No effect in recordio; kept and checked."""
    _engine["autotune_interval"] = _int(interval, "interval", False, INT32_MAX,
                                        "Interval given is not within the required range [0, INT32_MAX(2147483647)].",
                                        "interval must be of type int.")


def get_autotune_interval() -> int:
    """The AutoTune interval (default 0)."""
    return _engine["autotune_interval"]


def set_numa_enable(numa_enable: bool) -> None:
    """Bind MindSpore's engine threads to NUMA nodes. No effect in recordio; kept and checked."""
    _engine["numa_enable"] = _bool(numa_enable, "numa_enable must be a boolean dtype.")


def get_numa_enable() -> bool:
    """Whether NUMA binding was asked for (default False; no effect in recordio)."""
    return _engine["numa_enable"]


def set_monitor_sampling_interval(interval: int) -> None:
    """MindSpore's profiler sampling interval in ms. No effect in recordio; kept and checked."""
    _engine["monitor_sampling_interval"] = _int(
        interval, "interval", True, INT32_MAX, "Interval given is not within the required range (0, INT32_MAX(2147483647)].")


def get_monitor_sampling_interval() -> int:
    """The profiler sampling interval (default 1000 ms; no effect in recordio)."""
    return _engine["monitor_sampling_interval"]


def set_auto_num_workers(enable: bool) -> None:
    """Let MindSpore's engine choose each op's worker count. No effect in recordio (workers come from
    each call and :func:`set_num_parallel_workers`); kept and checked."""
    _engine["auto_num_workers"] = _bool(enable, "enable must be of type bool.")


def get_auto_num_workers() -> bool:
    """Whether automatic worker counts were asked for (default False; no effect in recordio)."""
    return _engine["auto_num_workers"]


def set_callback_timeout(timeout: int) -> None:
    """Seconds MindSpore's ``DSWaitedCallback`` waits. No effect in recordio, whose callbacks run in
    the iterating thread and never wait; kept and checked."""
    _engine["callback_timeout"] = _int(timeout, "timeout", True, INT32_MAX,
                                       "Timeout given is not within the required range.")


def get_callback_timeout() -> int:
    """The callback timeout in seconds (default 60; no effect in recordio)."""
    return _engine["callback_timeout"]


def set_enable_shared_mem(enable: bool) -> None:
    """Shared memory between MindSpore's worker processes. recordio's process workers always hand
    batches over through shared memory; the setting is kept and checked."""
    _engine["enable_shared_mem"] = _bool(enable, "enable must be of type bool.")


def get_enable_shared_mem() -> bool:
    """Whether shared memory was asked for (default True)."""
    return _engine["enable_shared_mem"]


def set_sending_batches(batch_num: int) -> None:
    """Batches MindSpore sends to an Ascend device per step. No effect in recordio; kept and checked."""
    if not isinstance(batch_num, int) or isinstance(batch_num, bool):
        raise TypeError("batch_num must be an int dtype.")
    _engine["sending_batches"] = batch_num


def set_enable_watchdog(enable: bool) -> None:
    """MindSpore's watchdog of hung worker processes. recordio's process workers are always
    watched (a dead worker raises ``WorkerError``); the setting is kept and checked."""
    _engine["enable_watchdog"] = _bool(enable, "enable must be a boolean dtype.")


def get_enable_watchdog() -> bool:
    """Whether the watchdog was asked for (default True)."""
    return _engine["enable_watchdog"]


def set_multiprocessing_timeout_interval(interval: int) -> None:
    """Seconds between MindSpore's warnings about a slow worker process. No effect in recordio;
    kept and checked."""
    _engine["multiprocessing_timeout_interval"] = _int(
        interval, "interval", True, INT32_MAX,
        "Interval given is not within the required range (0, INT32_MAX(2147483647)).")


def get_multiprocessing_timeout_interval() -> int:
    """The slow-worker warning interval (default 300 s; no effect in recordio)."""
    return _engine["multiprocessing_timeout_interval"]


def set_dynamic_shape(is_dynamic: bool) -> None:
    """MindSpore's dynamic-shape sinking to a device graph. No effect in recordio; kept and checked."""
    _engine["dynamic_shape"] = _bool(is_dynamic, "is_dynamic must be a boolean dtype.")


def get_dynamic_shape() -> bool:
    """Whether dynamic shapes were asked for (default False; no effect in recordio)."""
    return _engine["dynamic_shape"]


def set_fast_recovery(fast_recovery: bool) -> None:
    """MindSpore's choice for ``Dataset.set_init_step``: with True (default) a resumed pipeline is
    rebuilt at the step, with False it replays the steps before it. recordio never replays (random
    ops draw from each row's key, :mod:`recordio.keys`) and gives MindSpore 2.10's batches in both
    modes, including where they differ: under fast recovery a sharded concatenation restarts its
    round-robin count, as MindSpore's rebuilt pipeline does (docs/howto-resume.md)."""
    _engine["fast_recovery"] = _bool(fast_recovery, "fast_recovery must be a boolean dtype.")


def get_fast_recovery() -> bool:
    """Whether fast recovery is on (default True)."""
    return _engine["fast_recovery"]


def set_error_samples_mode(error_samples_mode: ErrorSamplesMode) -> None:
    """What a map does with a sample it fails on. recordio supports ``ErrorSamplesMode.RETURN``
    (the default: the error is raised, naming the row); ``REPLACE`` and ``SKIP``, which would
    return other rows or drop rows without a trace, are refused (docs/porting.md)."""
    type_check(error_samples_mode, (ErrorSamplesMode,), "error_samples_mode")
    if error_samples_mode != ErrorSamplesMode.RETURN:
        raise ValueError(f"recordio does not {error_samples_mode.name.lower()} samples a map fails on: a failing "
                         "sample raises an error naming its row (only ErrorSamplesMode.RETURN is supported)")


def get_error_samples_mode() -> ErrorSamplesMode:
    """Always ``ErrorSamplesMode.RETURN`` (see :func:`set_error_samples_mode`)."""
    return ErrorSamplesMode.RETURN


def set_iterator_mode(do_copy: bool = False, parallel_convert: bool = False) -> None:
    """How MindSpore's iterators convert its C++ tensors. No effect in recordio, whose iterators give
    numpy arrays (or torch tensors) without a conversion step; kept and checked."""
    type_check(do_copy, (bool,), "do_copy")
    type_check(parallel_convert, (bool,), "parallel_convert")
    _engine["iterator_mode"] = {"do_copy": do_copy, "parallel_convert": parallel_convert}


def get_iterator_mode() -> dict:
    """``{"do_copy": ..., "parallel_convert": ...}`` (both False by default; no effect in recordio)."""
    return dict(_engine["iterator_mode"])


def set_multiprocessing_start_method(start_method: str = "fork") -> None:
    """``"fork"`` or ``"spawn"``: how the pipeline's worker processes (``python_multiprocessing=True``)
    start. With ``"fork"`` (the default) they fork, or come from a fork server where this process
    already uses CUDA (a forked child could not); with ``"spawn"`` they start afresh (the map's
    operations must then be picklable)."""
    _engine["multiprocessing_start_method"] = _valid_str(start_method, "start_method", ["fork", "spawn"])


def get_multiprocessing_start_method() -> str:
    """The start method asked for (default ``"fork"``)."""
    return _engine["multiprocessing_start_method"]


def set_video_backend(backend: str) -> None:
    """``"CPU"`` or ``"Ascend"`` for MindSpore's video decoding. No effect in recordio; kept and checked."""
    _engine["video_backend"] = _valid_str(backend, "backend", ["CPU", "Ascend"])


def get_video_backend() -> str:
    """The video backend asked for (default ``"CPU"``; no effect in recordio)."""
    return _engine["video_backend"]
