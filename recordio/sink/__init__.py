"""DataSink: a device prefetch queue (``datasink``) with its channel, ring of device buffers,
device backends and status report. Imports torch when a sink is built, not on import."""

import importlib

__all__ = ["DataSink"]


def __getattr__(name):
    if name == "DataSink":
        return importlib.import_module("recordio.sink.datasink").DataSink
    raise AttributeError(f"module 'recordio.sink' has no attribute {name!r}")
