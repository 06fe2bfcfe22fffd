"""Every exception recordio raises, sorted by what the caller can do about it.

Each class also inherits the builtin exception a caller would naturally catch, so
``except ValueError`` keeps working for code that does not know recordio, and the builtin
MindSpore 2.10 raises for the same fault (MindSpore raises ``RuntimeError`` for files that are
missing, exist already or are invalid, and for rows that do not fit the schema), so ``except``
clauses written for ``mindspore.mindrecord`` catch what recordio raises.

MindSpore's own exception names (``ParamValueError``, ``MRMGetMetaError``, ...) are defined here
too, with MindSpore's constructors and messages; ``recordio.mindrecord`` exports them as
``mindspore.mindrecord`` does, and recordio raises them where MindSpore does.
This module imports nothing from recordio.
"""

from typing import Any

__all__ = [
    "CategoryError",
    "ChecksumError",
    "DatasetChangedError",
    "DatasetExistsError",
    "FormatError",
    "IndexFileError",
    "MissingExtraError",
    "MissingFileError",
    "ParamValueTypeError",
    "PipelineError",
    "RecordIOError",
    "RemoteError",
    "RowRangeError",
    "SchemaError",
    "SinkTimeoutError",
    "WorkerError",
    "check_range",
    "type_check",
]

MINDSPORE_EXCEPTIONS = [
    "DbConnectionError", "MRMAddIndexError", "MRMAddSchemaError", "MRMBuildSchemaError", "MRMCloseError",
    "MRMCommitError", "MRMDefineBlobError", "MRMDefineCategoryError", "MRMDefineIndexError",
    "MRMFetchCandidateFieldsError", "MRMFetchDataError", "MRMFinishError", "MRMGenerateIndexError",
    "MRMGetMetaError", "MRMIndexGeneratorError", "MRMInitSegmentError", "MRMInvalidHeaderSizeError",
    "MRMInvalidPageSizeError", "MRMInvalidSchemaError", "MRMLaunchError", "MRMOpenError",
    "MRMOpenForAppendError", "MRMReadCategoryInfoError", "MRMSetHeaderError", "MRMUnsupportedSchemaError",
    "MRMValidateDataError", "MRMWriteDatasetError", "MindRecordException", "ParamMissError", "ParamTypeError",
    "ParamValueError", "PathNotExistsError", "UnknownError",
]


class RecordIOError(Exception):
    """Base class of every error raised by recordio."""


class SchemaError(RecordIOError, ValueError, RuntimeError):
    """A schema, an index definition or a row does not fit the rules of MindRecord."""


class FormatError(RecordIOError, ValueError, RuntimeError):
    """A file is not a valid MindRecord file (truncated, malformed, inconsistent)."""


class IndexFileError(FormatError):
    """A ``.db`` index file is missing, foreign or disagrees with its data file."""


class ChecksumError(FormatError):
    """A page's bytes do not match the checksum recorded at commit."""


class RowRangeError(RecordIOError, IndexError, RuntimeError):
    """A row position outside a dataset's rows, where MindSpore raises RuntimeError (``MindDataset[i]``)."""


class CategoryError(RecordIOError, LookupError, RuntimeError):
    """A ``MindPage`` category id, name or page the dataset does not have (MindSpore: RuntimeError)."""


class MissingFileError(RecordIOError, FileNotFoundError, RuntimeError):
    """A data file that was named (by the caller, or by a dataset's header) does not exist."""


class DatasetChangedError(RecordIOError, RuntimeError):
    """A dataset was replaced after a reader opened it; the reader refuses to mix its versions."""


class DatasetExistsError(RecordIOError, FileExistsError, RuntimeError):
    """The target dataset exists and neither ``overwrite=True`` nor append was asked for."""


class RemoteError(RecordIOError, OSError):
    """An object behind a URL could not be read or written: the message names the URL and the byte
    range; transient faults (timeouts, 5xx, reset connections) were retried before this was raised."""


class MissingExtraError(RecordIOError, ModuleNotFoundError):
    """A feature needs a package that is not installed: the message names the feature, the package
    and the ``pip install "mindrecordio[extra]"`` that installs it (``name`` is the missing module)."""


class PipelineError(RecordIOError, RuntimeError):
    """A dataset pipeline was built or used in a way it cannot run."""


class WorkerError(PipelineError):
    """A worker process or thread died without reporting an exception."""


class SinkTimeoutError(RecordIOError, TimeoutError):
    """The device sink waited longer than its timeout; the message carries the status report."""

    def __init__(self, message, report=None):
        super().__init__(message)
        self.report = report


# --- MindSpore's names (mindspore.mindrecord.common.exceptions) -------------------------------------

_CODES = {  # MindSpore's exception numbers and base messages, for ``error_code`` / ``error_msg``
    "UnknownError": (0, "Unknown Error."), "ParamTypeError": (1, "Param type is error."),
    "ParamValueError": (2, "Param value is error."), "ParamMissError": (3, "Param missing."),
    "PathNotExistsError": (4, "Path does not exist."), "DbConnectionError": (5, "Db connection is error."),
    "MRMOpenError": (100, "MindRecord could not open."),
    "MRMOpenForAppendError": (101, "MindRecord could not open for append."),
    "MRMInvalidPageSizeError": (102, "Failed to set page size."),
    "MRMInvalidHeaderSizeError": (103, "Failed to set header size."),
    "MRMSetHeaderError": (104, "Failed to set header."), "MRMWriteDatasetError": (105, "Failed to write dataset."),
    "MRMCommitError": (107, "Failed to commit."), "MRMLaunchError": (108, "Failed to launch."),
    "MRMFinishError": (109, "Failed to finish."), "MRMCloseError": (110, "Failed to close."),
    "MRMAddSchemaError": (111, "Failed to add schema."), "MRMAddIndexError": (112, "Failed to add index field."),
    "MRMBuildSchemaError": (113, "Failed to build schema."), "MRMGetMetaError": (114, "Failed to get meta info."),
    "MRMIndexGeneratorError": (115, "Failed to create index generator."),
    "MRMGenerateIndexError": (116, "Failed to generate index."),
    "MRMInitSegmentError": (117, "Failed to initialize segment."),
    "MRMFetchCandidateFieldsError": (118, "Failed to fetch candidate category fields."),
    "MRMReadCategoryInfoError": (119, "Failed to read category information."),
    "MRMFetchDataError": (120, "Failed to fetch data by category."),
    "MRMInvalidSchemaError": (200, "Schema is error."), "MRMValidateDataError": (201, "Raw data is valid."),
    "MRMDefineIndexError": (202, "Index field is error."), "MRMDefineBlobError": (203, "Blob field is error."),
    "MRMUnsupportedSchemaError": (204, "Schema is not supported."),
    "MRMDefineCategoryError": (205, "Category field is error."),
}


class MindRecordException(RecordIOError):
    """MindSpore's base class of mindrecord errors: ``str()`` is ``"[<class>]: <message>"`` as there.

    Subclasses take MindSpore's constructor arguments; a class without its own constructor takes
    an optional message (MindSpore's base message when none is given).
    """

    def __init__(self, message=None):
        number, base = _CODES.get(type(self).__name__, _CODES["UnknownError"])
        self.error_msg = base if message is None else message
        self._number = number
        super().__init__(self.error_msg)

    def __str__(self):
        return f"[{type(self).__name__}]: {self.error_msg}"

    @property
    def error_code(self):
        """MindSpore's numeric error code (runtime, type, level, system and module bits, then the number)."""
        module = self._number // 100 + 1
        host, error_code, common_level, system = 0b01, 0b01, 0b000, 0b00101010
        return ((host << 30) | (error_code << 28) | (common_level << 25) | (system << 17) | (module << 12)
                | (0x0FFF & self._number))


def _detail_class(name, bases, template):
    def __init__(self, error_detail):
        MindRecordException.__init__(self, template.format(error_detail))
    return type(name, bases, {"__init__": __init__, "__doc__": f"MindSpore's ``{name}``: {template}",
                              "__module__": __name__})


class UnknownError(MindRecordException):
    """MindSpore's ``UnknownError``."""


class ParamValueError(MindRecordException, ValueError):
    """MindSpore's ``ParamValueError``: ``Invalid parameter value. <detail>``"""

    def __init__(self, error_detail):
        super().__init__(f"Invalid parameter value. {error_detail}")


class ParamValueTypeError(ParamValueError, TypeError):
    """An argument of the wrong type where MindSpore raises ``ParamValueError`` (also a ``TypeError``)."""

    def __str__(self):
        return f"[ParamValueError]: {self.error_msg}"


class ParamTypeError(MindRecordException, TypeError):
    """MindSpore's ``ParamTypeError``: ``Invalid parameter type. '<name>' expect <type> type.``"""

    def __init__(self, param_name, expected_type, detail=None):
        message = f"Invalid parameter type. '{param_name}' expect {expected_type} type."
        super().__init__(message if detail is None else f"{message} {detail}")


class ParamMissError(MindRecordException, TypeError):
    """MindSpore's ``ParamMissError``: ``Param missing. '<name>' is required.``"""

    def __init__(self, param_name):
        super().__init__(f"Param missing. '{param_name}' is required.")


PathNotExistsError = _detail_class("PathNotExistsError", (MindRecordException, FileNotFoundError),
                                   "Invalid path. {}")
DbConnectionError = _detail_class("DbConnectionError", (MindRecordException, RuntimeError),
                                  "Db connection is error. Detail: {}")
MRMInvalidSchemaError = _detail_class("MRMInvalidSchemaError", (MindRecordException, SchemaError),
                                      "Schema format is error. Detail: {}")
MRMValidateDataError = _detail_class("MRMValidateDataError", (MindRecordException, SchemaError),
                                     "Raw data do not match the schema. Detail: {}")
MRMDefineIndexError = _detail_class("MRMDefineIndexError", (MindRecordException, SchemaError),
                                    "Failed to define index field. Detail: {}")
MRMDefineBlobError = _detail_class("MRMDefineBlobError", (MindRecordException, SchemaError),
                                   "Failed to define blob field. Detail: {}")
MRMUnsupportedSchemaError = _detail_class("MRMUnsupportedSchemaError", (MindRecordException, SchemaError),
                                          "Schema is not supported. Detail: {}")
MRMDefineCategoryError = _detail_class("MRMDefineCategoryError", (MindRecordException, ValueError),
                                       "Failed to define category field. Detail: {}")


class MRMOpenError(MindRecordException, RuntimeError):
    """MindSpore's ``MRMOpenError``."""

    def __init__(self):
        super().__init__("MindRecord File could not open successfully.")


class MRMOpenForAppendError(MindRecordException, RuntimeError):
    """MindSpore's ``MRMOpenForAppendError``."""

    def __init__(self):
        super().__init__("MindRecord File could not open successfully for append.")


def _plain_class(name, bases=(MindRecordException, RuntimeError)):
    return type(name, bases, {"__doc__": f"MindSpore's ``{name}``.", "__module__": __name__})


MRMInvalidPageSizeError = _plain_class("MRMInvalidPageSizeError", (MindRecordException, ValueError))
MRMInvalidHeaderSizeError = _plain_class("MRMInvalidHeaderSizeError", (MindRecordException, ValueError))
MRMSetHeaderError = _plain_class("MRMSetHeaderError")
MRMWriteDatasetError = _plain_class("MRMWriteDatasetError")
MRMCommitError = _plain_class("MRMCommitError")
MRMLaunchError = _plain_class("MRMLaunchError")
MRMFinishError = _plain_class("MRMFinishError")
MRMCloseError = _plain_class("MRMCloseError")
MRMAddSchemaError = _plain_class("MRMAddSchemaError", (MindRecordException, SchemaError))
MRMAddIndexError = _plain_class("MRMAddIndexError", (MindRecordException, SchemaError))
MRMBuildSchemaError = _plain_class("MRMBuildSchemaError", (MindRecordException, SchemaError))
MRMGetMetaError = _plain_class("MRMGetMetaError", (MindRecordException, SchemaError))
MRMIndexGeneratorError = _plain_class("MRMIndexGeneratorError")
MRMGenerateIndexError = _plain_class("MRMGenerateIndexError")
MRMInitSegmentError = _plain_class("MRMInitSegmentError")
MRMFetchCandidateFieldsError = _plain_class("MRMFetchCandidateFieldsError")
MRMReadCategoryInfoError = _plain_class("MRMReadCategoryInfoError")
MRMFetchDataError = _plain_class("MRMFetchDataError")


# -- MindSpore's argument checks (its validators' error types and wording) ------------------------------

def type_check(arg: Any, types: tuple, arg_name: str) -> None:
    """MindSpore's ``type_check``: a ``TypeError`` in its wording (bool is not an int unless listed)."""
    if int in types and bool not in types and isinstance(arg, bool) or not isinstance(arg, types):
        shown = '""' if repr(arg) == repr("") else arg
        raise TypeError(f"Argument {arg_name} with value {shown} is not of type {list(types)}, but got {type(arg)}.")


def check_range(value: Any, low: Any, high: Any, arg_name: str = "") -> None:
    """MindSpore's ``check_value`` on a closed interval."""
    if value < low or value > high:
        name = f"{arg_name} " if arg_name else ""
        raise ValueError(f"Input {name}is not within the required interval of [{low}, {high}].")
