"""MindSpore's ``CsvToMR``: one CSV file -> MindRecord, every column indexed.

As MindSpore: the schema from :mod:`recordio.converters.csv` (pandas' type of each column),
description ``csv_schema``, every converted column indexed, header size 16 MiB, page size
64 MiB, ``partition_number`` files, rows in batches of 256. Values are stored as their
column's type (MindSpore passes pandas' row-wise values, which turns the integers of an
all-numeric file into floats before the writer stores them as int64).
"""

import os

import recordio
from recordio.converters.csv import check_columns, csv_rows, csv_schema, read_csv
from recordio.converters.tomr.common import ToMR, check_filename, check_partition, import_optional

__all__ = ["CsvToMR"]


class CsvToMR(ToMR):
    """A CSV file -> MindRecord (MindSpore's class)."""

    sizes = (1 << 24, 1 << 26)

    def __init__(self, source, destination, columns_list=None, partition_number=1):
        self.pd = import_optional("pandas", "csv")
        if not isinstance(source, str):
            raise ValueError("The parameter source must be str.")
        check_filename(source)
        self.source = source
        _check_names(columns_list, "columns_list")
        self.columns_list = columns_list
        if not isinstance(destination, str):
            raise ValueError("The parameter destination must be str.")
        check_filename(destination)
        self.destination = destination
        self.partition_number = check_partition(partition_number)
        self.writer = recordio.FileWriter(self.destination, self.partition_number)

    def _convert(self):
        if not os.path.exists(self.source):
            raise OSError(f"Csv file {self.source} do not exist.")
        df = read_csv(self.source)
        self.columns_list = columns = check_columns(df, self.columns_list, self.source, RuntimeError)
        rows = (row for start in range(0, len(df), 256)
                for row in csv_rows(df, columns, start, start + 256, self.source))
        self.write(self.writer, csv_schema(df, columns), "csv_schema", rows, list(columns))


def _check_names(columns, name):
    if not columns:
        return
    if not isinstance(columns, list) or not all(isinstance(c, str) for c in columns):
        raise ValueError(f"The parameter {name} must be list of str.")
