"""Every exception recordio raises, sorted by what the caller can do about it.

Each class also inherits the builtin exception a caller would naturally catch, so
``except ValueError`` keeps working for code that does not know recordio.
This module imports nothing from recordio.
"""

__all__ = [
    "ChecksumError",
    "DatasetChangedError",
    "DatasetExistsError",
    "FormatError",
    "IndexFileError",
    "MissingFileError",
    "PipelineError",
    "RecordIOError",
    "SchemaError",
    "SinkTimeoutError",
    "WorkerError",
]


class RecordIOError(Exception):
    """Base class of every error raised by recordio."""


class SchemaError(RecordIOError, ValueError):
    """A schema, an index definition or a row does not fit the rules of MindRecord."""


class FormatError(RecordIOError, ValueError):
    """A file is not a valid MindRecord file (truncated, malformed, inconsistent)."""


class IndexFileError(FormatError):
    """A ``.db`` index file is missing, foreign or disagrees with its data file."""


class ChecksumError(FormatError):
    """A page's bytes do not match the checksum recorded at commit."""


class MissingFileError(RecordIOError, FileNotFoundError):
    """A data file that was named (by the caller, or by a dataset's header) does not exist."""


class DatasetChangedError(RecordIOError, RuntimeError):
    """A dataset was replaced after a reader opened it; the reader refuses to mix its versions."""


class DatasetExistsError(RecordIOError, FileExistsError):
    """The target dataset exists and neither ``overwrite=True`` nor append was asked for."""


class PipelineError(RecordIOError, RuntimeError):
    """A dataset pipeline was built or used in a way it cannot run."""


class WorkerError(PipelineError):
    """A worker process or thread died without reporting an exception."""


class SinkTimeoutError(RecordIOError, TimeoutError):
    """The device sink waited longer than its timeout; the message carries the status report."""

    def __init__(self, message, report=None):
        super().__init__(message)
        self.report = report
