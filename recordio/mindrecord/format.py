"""The MindRecord file layout: header, pages, entries, file names. No I/O.

::

    offset 0          8                8+L                     HS          HS+PS       HS+2PS
           +----------+----------------+-----------------------+-----------+-----------+--
           | L: u64LE | header JSON(L) | (never written: zeros)| page 0    | page 1    | ...
           +----------+----------------+-----------------------+-----------+-----------+--

A page holds entries ``[u64 LE n][n bytes]``; only its first ``page_size`` bytes
(from the page object in the header) are meaningful. BLOB pages hold one row
group's blobs; RAW pages hold the msgpack records of one or more row groups.
See ``docs/FORMAT.md`` for the prose version; this module is the only place
that computes an offset.
"""

import functools
import json
import os
import stat
import struct

from recordio.errors import FormatError, MissingFileError
from recordio.mindrecord.params import check_path_param, check_shard_num

__all__ = [
    "DEFAULT_HEADER_SIZE", "DEFAULT_PAGE_SIZE", "ENTRY_PREFIX", "HEADER_PREFIX", "Page",
    "check_header_size", "check_page_size", "decode_header", "encode_header", "entry_prefix",
    "page_offset", "shard_file_names",
]

VERSION = "3.0"
SUPPORTED_VERSIONS = ("2.0", "3.0")
DEFAULT_HEADER_SIZE = 1 << 24
DEFAULT_PAGE_SIZE = 1 << 25
HEADER_SIZE_RANGE = (1 << 14, 1 << 27)
PAGE_SIZE_RANGE = (1 << 15, 1 << 28)
MAX_HEADER_LENGTH = 1 << 27          # readers refuse a header length field above 128 MiB
MAX_READ_FILES = 4096
HEADER_PREFIX = 8                    # the u64 LE header length
ENTRY_PREFIX = 8                     # the u64 LE length in front of every page entry
ENCRYPT_TAIL = b"ENCRYPT"            # MindSpore treats a file ending in this as encrypted
BLOB, RAW = "BLOB_DATA", "RAW_DATA"
_U64LE = struct.Struct("<Q")
_REQUIRED_KEYS = ("header_size", "index_fields", "page", "page_size", "schema", "shard_addresses",
                  "statistics", "version")
_INDEXABLE = ("int32", "int64", "float32", "float64", "string")
MAX_INT = 1 << 62                    # no count, id or offset read from a file may exceed this


def _dump(value):
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


# --- sizes and names ----------------------------------------------------------------------------

def _check_size(kind, value, bounds):
    low, high = bounds
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{kind} must be an int, got {type(value).__name__}")
    if not low <= value <= high:
        raise ValueError(f"{kind}: {value} should be in range [{low} bytes, {high} bytes]")
    if value % 4:
        raise ValueError(f"{kind}: {value} should be divided by four")
    return value


def check_header_size(value):
    return _check_size("header size", value, HEADER_SIZE_RANGE)


def check_page_size(value):
    return _check_size("page size", value, PAGE_SIZE_RANGE)


def shard_file_names(file_name, shard_num):
    """MindSpore's shard names: ``x`` for one shard, ``x0..x3`` or ``x00..x10`` for several."""
    check_shard_num(shard_num)
    file_name = check_path_param(file_name)
    if shard_num == 1:
        return [file_name]
    width = len(str(shard_num - 1))
    return [file_name + str(i).rjust(width, "0") for i in range(shard_num)]


# --- offsets -----------------------------------------------------------------------------------

def page_offset(header_size, page_size, page_id):
    """Absolute file offset of page ``page_id``."""
    return header_size + page_id * page_size


def entry_prefix(length):
    """The 8-byte little-endian length prefix of a page entry."""
    return _U64LE.pack(length)


# --- pages -------------------------------------------------------------------------------------

class Page:
    """One page object of a header's ``page`` list (``size`` is the number of used bytes)."""

    __slots__ = ("page_id", "kind", "type_id", "shard_id", "start_row", "end_row", "size", "groups")

    def __init__(self, page_id, kind, type_id, shard_id, start_row=0, end_row=0, size=0, groups=None):
        self.page_id, self.kind, self.type_id, self.shard_id = page_id, kind, type_id, shard_id
        self.start_row, self.end_row, self.size = start_row, end_row, size
        self.groups = [] if groups is None else groups     # RAW pages: [[row_group_id, offset], ...]

    def to_json(self):
        groups = [{"id": g, "offset": o} for g, o in self.groups] or [{"id": 0, "offset": 0}]
        return {"end_row_id": self.end_row, "page_id": self.page_id, "page_size": self.size,
                "page_type": self.kind, "page_type_id": self.type_id, "row_group_ids": groups,
                "shard_id": self.shard_id, "start_row_id": self.start_row}

    @classmethod
    def from_json(cls, obj, where):
        try:
            kind = obj["page_type"]
            if kind not in (BLOB, RAW):
                raise FormatError(f"{where}: unknown page_type {kind!r}")
            groups = [[g["id"], g["offset"]] for g in obj["row_group_ids"]]
            if kind == BLOB:
                groups = []
            values = [obj[k] for k in ("page_id", "page_type_id", "shard_id", "start_row_id", "end_row_id",
                                       "page_size")]
            _check_ints(values + [v for g in groups for v in g], where)
            return cls(values[0], kind, *values[1:], groups)
        except (KeyError, TypeError, ValueError) as exc:
            raise FormatError(f"{where}: malformed page object {_short(obj)}: {exc!r}") from None


def _check_ints(values, where):
    """Every value a plain int in [0, 2^62): ids, rows and sizes of a page object."""
    for value in values:
        if type(value) is not int or not 0 <= value < MAX_INT:
            raise FormatError(f"{where}: expected an integer in [0, 2^62), found {_short(value)}")


def _short(value):
    text = repr(value)
    return text if len(text) <= 200 else text[:197] + "..."


# --- header ------------------------------------------------------------------------------------

def encode_header(header_size, page_size, index_fields, pages, compression_size, schema, blob_fields,
                  desc, shard_addresses, shard_id):
    """The exact header text MindSpore writes (fixed top-level order, nested values sorted)."""
    index = [{"index_field": f, "schema_id": 0} for f in index_fields] or None
    page = [p.to_json() for p in pages] or None
    schema_obj = [{"blob_fields": list(blob_fields), "desc": desc, "schema": schema}]
    text = (f'{{"header_size":{header_size},"index_fields":{_dump(index)},"page":{_dump(page)},'
            f'"page_size":{page_size},"compression_size":{compression_size},"schema":{_dump(schema_obj)},'
            f'"shard_addresses":{_dump(shard_addresses)},"shard_id":{shard_id},"statistics":null,'
            f'"version":"{VERSION}"}}').encode("utf-8")
    if HEADER_PREFIX + len(text) > header_size:
        raise ValueError(f"shard header is too big: {HEADER_PREFIX + len(text)} bytes do not fit in "
                         f"header_size {header_size}; raise it with set_header_size()")
    return _U64LE.pack(len(text)) + text


def check_least_size(file_size, path):
    """MindSpore's error (its exact words) for a data file shorter than the 8-byte header length."""
    if file_size < HEADER_PREFIX:
        raise FormatError(f"Invalid file, the size of mindrecord file: {file_size} is smaller than the lower "
                          f"limit: {HEADER_PREFIX}.\n Please check file path: {path} and use 'FileWriter' to "
                          f"generate valid mindrecord files.")


def header_length(prefix, path, file_size):
    """The header length from the first 8 bytes, checked against the file size."""
    check_least_size(file_size, path)
    length = _U64LE.unpack(prefix[:HEADER_PREFIX])[0]
    if length > MAX_HEADER_LENGTH:
        raise FormatError(f"Invalid file, the size of mindrecord file header is larger than the upper limit. "
                          f"{path} is not a MindRecord file: its first 8 bytes {bytes(prefix[:8])!r} are not a "
                          f"header length (they read as {length}, over the 128 MiB limit)")
    if HEADER_PREFIX + length > file_size:
        raise FormatError(f"{path}: header of {length} bytes is cut off (file has {file_size} bytes): a truncated "
                          f"file, or not a MindRecord file")
    return length


def decode_header(text, path):
    """Parse and validate header JSON bytes; returns the dict with ``page`` as :class:`Page` objects."""
    try:
        header = json.loads(bytes(text).rstrip(b"\x00").decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise FormatError(f"{path}: header is not valid JSON: {exc}") from None
    if not isinstance(header, dict):
        raise FormatError(f"{path}: header JSON is a {type(header).__name__}, expected an object")
    missing = [k for k in _REQUIRED_KEYS if k not in header]
    if missing:
        raise FormatError(f"{path}: header lacks required key(s) {', '.join(missing)}")
    version = header["version"]
    if version not in SUPPORTED_VERSIONS:
        raise FormatError(f"{path}: format version {version!r} is not supported "
                          f"(expected one of {', '.join(SUPPORTED_VERSIONS)})")
    _check_header_types(header, path)
    header["page"] = [Page.from_json(p, f"{path}: page {i}") for i, p in enumerate(header["page"] or [])]
    return header


def _check_header_types(header, path):
    for key, (_, high) in (("header_size", HEADER_SIZE_RANGE), ("page_size", PAGE_SIZE_RANGE)):
        value = header[key]
        if isinstance(value, bool) or not isinstance(value, int) or not 0 < value <= high:
            raise FormatError(f"{path}: header {key} must be a positive int of at most {high}, "
                              f"found {_short(value)}")
    if header["header_size"] < HEADER_PREFIX:
        raise FormatError(f"{path}: header_size {header['header_size']} is smaller than 8")
    compression = header.get("compression_size", 0)
    if isinstance(compression, bool) or not isinstance(compression, int) or abs(compression) >= MAX_INT:
        raise FormatError(f"{path}: header compression_size must be an int, found {_short(compression)}")
    schema = header["schema"]
    if (not isinstance(schema, list) or len(schema) != 1 or not isinstance(schema[0], dict)
            or not isinstance(schema[0].get("schema"), dict)):
        raise FormatError(f"{path}: header schema must be a list of one object with a 'schema' map")
    addresses = header["shard_addresses"]
    if not isinstance(addresses, list) or not addresses or not all(isinstance(a, str) for a in addresses):
        raise FormatError(f"{path}: header shard_addresses must be a non-empty list of file names")
    for name in addresses:
        check_file_name(name, f"{path}: header shard_addresses")
    if len(addresses) > MAX_READ_FILES:
        raise FormatError(f"{path}: {len(addresses)} shards exceed the limit of {MAX_READ_FILES}")
    _check_index_fields(header, path)
    if header["page"] is not None and not isinstance(header["page"], list):
        raise FormatError(f"{path}: header page must be a list or null")


def _check_index_fields(header, path):
    """``index_fields``: null or a list of ``{"index_field": <a scalar field of the schema>, ...}``."""
    fields = header["index_fields"]
    if fields is None:
        return
    schema = header["schema"][0]["schema"]
    if not isinstance(fields, list) or len(fields) > len(schema):
        raise FormatError(f"{path}: header index_fields must be a list (at most one per field) or null")
    for entry in fields:
        name = entry.get("index_field") if isinstance(entry, dict) else None
        spec = schema.get(name) if isinstance(name, str) else None
        if not isinstance(spec, dict) or "shape" in spec or spec.get("type") not in _INDEXABLE:
            raise FormatError(f"{path}: header index_fields entry {_short(entry)} does not name a scalar "
                              f"field of the schema (expected {', '.join(_INDEXABLE)}; found "
                              f"{_short(spec)})")


def check_file_name(name, where):
    """``name`` if it is a plain file name (what ``shard_addresses`` and ``SHARD_NAME`` hold): no
    separator, not ``.``/``..``, not absolute, no NUL; else :class:`FormatError` naming ``where``."""
    if (not isinstance(name, str) or not name or name in (".", "..") or "\x00" in name
            or "/" in name or "\\" in name or os.sep in name or (os.altsep and os.altsep in name) or len(name) > 255
            or not _encodable(name)):
        raise FormatError(f"{where}: {_short(name)} is not a plain file name (a dataset's files sit in one "
                          f"folder)")
    return name


def _encodable(name):
    try:
        os.fsencode(name)
        return True
    except UnicodeError:
        return False


def check_inside(path, where=None):
    """``path`` unless it is a symlink leading out of its folder (:class:`FormatError`).

    Files a dataset names (siblings from a header, every ``.db``) must lie in the folder of the
    file that names them; only the files a caller names may be symlinks to anywhere."""
    folder = os.path.realpath(os.path.dirname(os.path.abspath(path)))
    real = os.path.realpath(path)
    if os.path.dirname(real) != folder:
        raise FormatError(f"{where or path}: {path} is a symlink leading out of the dataset's folder "
                          f"(to {real}); a dataset's files must lie in one folder")
    return path


def open_regular(path, missing=MissingFileError):
    """A read-only descriptor of the regular file ``path``: never blocks on a FIFO or a device,
    which are refused with :class:`FormatError`; a missing file raises ``missing``."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise missing(f"Invalid file, mindrecord file: {path} can not be found. Please check whether the "
                      f"mindrecord file exists and do not rename the mindrecord file. The file {path} does not "
                      f"exist or permission denied.") from None
    except IsADirectoryError:
        raise FormatError(f"{path}: is a directory, not a MindRecord file") from None
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise FormatError(f"{path}: is not a regular file (found {_file_kind(mode)}); a dataset's files "
                          f"are regular files")
    return fd


def _file_kind(mode):
    kinds = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
             (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))
    return next((text for test, text in kinds if test(mode)), "a special file")


def blob_rows(pages):
    """Rows of a data file: the rows of its blob pages (every row has one blob entry)."""
    return sum(p.end_row - p.start_row for p in pages if p.kind == BLOB)


class FileHeader:
    """One data file's header, read once, with the facts derived from it.

    ``header`` is the decoded dict (``page`` as :class:`Page` objects), ``raw`` the stored bytes
    (length prefix and JSON), ``file_size`` the file's size when it was read, ``identity`` the
    ``(st_dev, st_ino)`` of the file read: which file, not which path. (A plain class: a dataclass
    would import ``inspect`` on every open and count.)
    """

    def __init__(self, path: str, header: dict, raw: bytes, file_size: int, identity: tuple = ()):
        self.path, self.header, self.raw, self.file_size, self.identity = path, header, raw, file_size, identity

    def __repr__(self):
        return f"FileHeader({self.path!r}, rows={self.rows}, file_size={self.file_size})"

    @classmethod
    def read(cls, path):
        path = os.fspath(path)
        fd = open_regular(path)
        try:
            st = os.fstat(fd)
            prefix = os.pread(fd, HEADER_PREFIX, 0)
            text = os.pread(fd, header_length(prefix, path, st.st_size), HEADER_PREFIX)
        finally:
            os.close(fd)
        header = decode_header(text, path)
        if HEADER_PREFIX + len(text) > header["header_size"]:
            raise FormatError(f"{path}: header of {len(text)} bytes does not fit in its header_size "
                              f"{header['header_size']}")
        _check_own_name(path, header)
        return cls(path, header, prefix + text, st.st_size, (st.st_dev, st.st_ino))

    @property
    def pages(self):
        return self.header["page"]

    @functools.cached_property
    def rows(self):
        return blob_rows(self.pages)

    @functools.cached_property
    def siblings(self):
        """Paths of every data file of the dataset, shard 0 first, beside this file (a sibling that is
        a symlink leading out of the folder is a :class:`FormatError`)."""
        base = os.path.dirname(os.path.realpath(self.path))
        paths = [os.path.join(base, name) for name in self.header["shard_addresses"]]
        for p in paths:
            check_inside(p, f"{self.path}: header shard_addresses")
        return paths


def _check_own_name(path, header):
    """The renamed-copy rule: a data file carries a name its header gives (symlinks resolved)."""
    name = os.path.basename(os.path.realpath(path))
    addresses = header["shard_addresses"]
    if name not in addresses:
        shown = ", ".join(addresses[:4]) + (", ..." if len(addresses) > 4 else "")
        raise FormatError(f"{path}: a renamed copy is not opened: the file is named {name!r} but its header "
                          f"names the dataset's files [{shown}], so the file and its meta file can not match. "
                          f"Please do not rename the mindrecord file or meta file; the files its header names "
                          f"can not be found. Please check whether the mindrecord file exists and do not rename "
                          f"the mindrecord file. Give it (and its .db) its original name.")


def dataset_paths(path):
    """The data files of the dataset ``path`` names: any shard (its siblings from its header) or a
    list of data files (exactly those)."""
    if isinstance(path, (str, os.PathLike)):
        return FileHeader.read(path).siblings
    return [os.fspath(p) for p in path]
