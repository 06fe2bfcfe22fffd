"""MindSpore's argument checks for the mindrecord classes, with MindSpore's exception types and wording.

``FileWriter``, ``FileReader`` and ``MindPage`` check their arguments as MindSpore 2.10 does
(``mindspore.mindrecord.core.shardutils.check_parameter`` / ``check_filename`` and the writer's
own checks), so a ported script meets the same :class:`~recordio.errors.ParamValueError` with the
same message. One divergence: ``num_consumer`` is not capped at the CPU count (recordio's readers
start no consumer threads, and MindSpore's default of 4 would fail on a 2-CPU machine).
"""

from __future__ import annotations

import enum
import os

from recordio.errors import ParamValueError, ParamValueTypeError

__all__ = ["FAILED", "MAX_SHARDS", "MSRStatus", "SUCCESS", "check_bool", "check_path_param", "check_num_consumer", "check_shard_num"]

MAX_SHARDS = 1000


class MSRStatus(enum.IntEnum):
    """MindSpore's status codes, returned where MindSpore's methods return one (they equal 0 and 1)."""

    SUCCESS = 0
    FAILED = 1


SUCCESS = MSRStatus.SUCCESS
FAILED = MSRStatus.FAILED
_FORBIDDEN = set('\\/:*?"<>|`&\';')


def check_path_param(path, arg_name="File path"):
    """``path`` (a str or path-like) if MindSpore accepts it as a MindRecord file name."""
    if isinstance(path, os.PathLike):
        path = os.fspath(path)
    if not path:
        raise ParamValueError(f"{arg_name} is not allowed None or empty!")
    if not isinstance(path, str):
        raise ParamValueTypeError(f"File path: {path} is not string.")
    if path.endswith("/"):
        raise ParamValueError(f"File path can not end with '/'; got {path!r}")
    name = os.path.basename(path)
    if _FORBIDDEN & set(name):
        raise ParamValueError(f"File name should not contains \\/:*?\\\"<>|`&;\\'; got {name!r}")
    if name != name.strip(" "):
        raise ParamValueError(f"File name should not start/end with space.; got {name!r}")
    return path


def check_shard_num(shard_num):
    """``shard_num`` if it is an int in [1, 1000]."""
    if shard_num is None:
        raise ParamValueError("Parameter shard_num is None.")
    if isinstance(shard_num, bool) or not isinstance(shard_num, int):
        raise ParamValueTypeError(f"Parameter shard_num's type is not int. Got {type(shard_num).__name__}.")
    if not 1 <= shard_num <= MAX_SHARDS:
        raise ParamValueError(f"Parameter shard_num's value: {shard_num} should between 1 and {MAX_SHARDS}.")
    return shard_num


def check_num_consumer(num_consumer):
    """``num_consumer`` if it is an int of at least 1 (no upper bound: see the module's note)."""
    if num_consumer is None:
        raise ParamValueError("Parameter num_consumer is None.")
    if isinstance(num_consumer, bool) or not isinstance(num_consumer, int):
        raise ParamValueTypeError(f"Parameter num_consumer is not int. Got {type(num_consumer).__name__}.")
    if num_consumer < 1:
        raise ParamValueError(f"Parameter num_consumer: {num_consumer} should between 1 and "
                              f"{os.cpu_count() or 1}.")
    return num_consumer


def check_bool(value, name):
    """``value`` if it is a bool (MindSpore: ``Parameter <name>'s type is not bool.``)."""
    if not isinstance(value, bool):
        raise ParamValueTypeError(f"Parameter {name}'s type is not bool. Got {type(value).__name__}.")
    return value
