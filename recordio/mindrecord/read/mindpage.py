"""MindPage: browse a dataset's rows by the values of an indexed field (MindSpore's ``MindPage``).

A *category field* is one of the dataset's index fields; its *categories* are the distinct
values, as text, sorted by that text, numbered from 0 (``read_category_info`` lists them with
their row counts, as MindSpore does). ``read_at_page_by_id`` / ``read_at_page_by_name`` return
page ``page`` of ``num_row`` rows of a category, rows in dataset order. The ``.db`` index
answers which rows belong to a category (:mod:`recordio.mindrecord.read.query`); the rows themselves
are read from the data files by a :class:`~recordio.mindrecord.read.reader.FileReader`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence

from recordio.errors import CategoryError, MRMDefineCategoryError, ParamTypeError, ParamValueError
from recordio.mindrecord.read import query
from recordio.mindrecord.params import SUCCESS, MSRStatus, check_num_consumer
from recordio.mindrecord.read.reader import FileReader

__all__ = ["MindPage"]


class MindPage:
    """Read a MindRecord dataset in pages of rows grouped by an indexed field.

    Args:
        file_name: any data file of the dataset, or a list of data files (exactly those).
        num_consumer: accepted for MindSpore compatibility (an int of at least 1).
    """

    def __init__(self, file_name: str | os.PathLike | Sequence[str | os.PathLike], num_consumer: int = 4) -> None:
        check_num_consumer(num_consumer)
        self._reader = FileReader(file_name, num_consumer)
        self._category_field: str | None = None
        self._categories: query.Categories | None = None

    @property
    def candidate_fields(self) -> list[str]:
        """The fields rows can be grouped by: the dataset's index fields."""
        return self._reader.index_fields

    def get_category_fields(self) -> list[str]:
        """:attr:`candidate_fields` (MindSpore's older method name)."""
        return self.candidate_fields

    @property
    def category_field(self) -> str | None:
        """The field rows are grouped by (set it before reading pages)."""
        return self._category_field

    @category_field.setter
    def category_field(self, field: str) -> None:
        self.set_category_field(field)

    def set_category_field(self, field: str) -> MSRStatus:
        """Group rows by ``field`` (one of :attr:`candidate_fields`); returns ``SUCCESS``."""
        if not field or not isinstance(field, str):
            raise ParamTypeError("category_fields", "str")
        if field not in self.candidate_fields:
            raise MRMDefineCategoryError(f"Field '{field}' is not a candidate category field "
                                         f"(candidates: {', '.join(self.candidate_fields) or 'none'}).")
        self._categories = query.Categories(self._reader, field)
        self._category_field = field
        return SUCCESS

    def read_category_info(self) -> str:
        """The categories as MindSpore's JSON text:
        ``{"categories":[{"count":n,"id":i,"name":"..."},...],"key":"<field>_0"}``."""
        field, groups = self._require_field(), self._groups()
        categories = [{"count": n, "id": i, "name": name} for i, (name, n) in enumerate(zip(groups.names, groups.counts))]
        return json.dumps({"categories": categories, "key": f"{field}_0"}, separators=(",", ":"), sort_keys=True)

    def read_at_page_by_id(self, category_id: int, page: int, num_row: int) -> list[dict]:
        """Rows ``[page * num_row, (page + 1) * num_row)`` of category number ``category_id``."""
        if isinstance(category_id, bool) or not isinstance(category_id, int) or category_id < 0:
            raise ParamValueError("Category id should be int and greater than or equal to 0.")
        _check_page(page, num_row)
        names = self._groups().names
        if category_id >= len(names):
            raise CategoryError(f"Invalid data, category_id: {category_id} must be in the range "
                                f"[0, {len(names)}].")
        return self._read_page(category_id, page, num_row)

    def read_at_page_by_name(self, category_name: str, page: int, num_row: int) -> list[dict]:
        """Rows ``[page * num_row, (page + 1) * num_row)`` of the category named ``category_name``."""
        if not isinstance(category_name, str):
            raise ParamValueError("Category name should be str.")
        _check_page(page, num_row)
        names = self._groups().names
        found = [i for i, name in enumerate(names) if name == category_name] or self._numeric_match(category_name)
        if not found:
            raise CategoryError(f"category_name: {category_name} could not found.")
        return self._read_page(found[0], page, num_row)

    def _read_page(self, category, page, num_row):
        groups = self._groups()
        name, count = groups.names[category], groups.counts[category]
        first = page * num_row
        if first >= count:
            raise CategoryError(f"Invalid data, page no: {page} or page size: {num_row} is invalid: category "
                                f"{name!r} of field {self._category_field!r} has {count} rows.")
        ids = groups.rows(category)[first:first + num_row]
        rows = self._reader.__getitems__(ids)
        return query.check_rows(self._reader, ids, rows, self._category_field, name)

    def _numeric_match(self, name):
        """Categories of a float field whose value equals the number ``name`` (``"7"`` finds ``"7.0"``)."""
        if self._reader.schema[self._category_field]["type"] not in ("float32", "float64"):
            return []
        try:
            value = float(name)
        except ValueError:
            return []
        return [i for i, text in enumerate(self._groups().names) if text != "nan" and float(text) == value]

    def _require_field(self) -> str:
        if self._category_field is None:
            raise CategoryError("Invalid data, field: is invalid. Set category_field first.")
        return self._category_field

    def _groups(self) -> query.Categories:
        self._require_field()
        assert self._categories is not None        # set with the field
        return self._categories

    def close(self) -> None:
        """Release the dataset's files."""
        self._reader.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _check_page(page, num_row):
    if isinstance(page, bool) or not isinstance(page, int) or page < 0:
        raise ParamValueError("Page should be int and greater than or equal to 0.")
    if isinstance(num_row, bool) or not isinstance(num_row, int) or num_row <= 0:
        raise ParamValueError("num_row should be int and greater than 0.")
