"""Parquet files and Arrow IPC (Feather v2) files, read piece by piece.

A *piece* is a Parquet row group or an IPC record batch: the unit a conversion task reads.
The format is told by the extension: ``.arrow``, ``.feather`` and ``.ipc`` are Arrow IPC
files, anything else is read as Parquet.
"""

import os

from recordio.extras import requires

with requires("Parquet/Arrow conversion", "arrow"):
    import pyarrow as pa
    import pyarrow.parquet as pq

__all__ = ["EXTENSIONS", "piece_name", "pieces", "read_piece", "read_schema"]

IPC_EXTENSIONS = (".arrow", ".feather", ".ipc")
EXTENSIONS = (".parquet", ".pq", *IPC_EXTENSIONS)


def _is_ipc(path):
    return os.path.splitext(path)[1].lower() in IPC_EXTENSIONS


def _ipc(path):
    return pa.ipc.open_file(pa.memory_map(path))


def piece_name(path):
    return "record batch" if _is_ipc(path) else "row group"


def read_schema(path):
    return _ipc(path).schema if _is_ipc(path) else pq.read_schema(path)


def pieces(path):
    """``[(piece index, rows)]`` of the file ``path``."""
    if _is_ipc(path):
        reader = _ipc(path)
        return [(i, reader.get_batch(i).num_rows) for i in range(reader.num_record_batches)]
    meta = pq.ParquetFile(path).metadata
    return [(g, meta.row_group(g).num_rows) for g in range(meta.num_row_groups)]


def read_piece(path, index, columns):
    """Piece ``index`` of ``path`` as a ``pyarrow.Table`` of ``columns``."""
    if _is_ipc(path):
        return pa.Table.from_batches([_ipc(path).get_batch(index)]).select(columns)
    return pq.ParquetFile(path).read_row_group(index, columns=columns)
