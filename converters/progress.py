"""The conversion progress bar: tqdm with rows/s on a terminal, silent otherwise."""

import sys

__all__ = ["Progress"]


class Progress:
    """Counts rows; draws a tqdm bar on stderr when it is a TTY and ``quiet`` is off."""

    def __init__(self, total, initial=0, quiet=False, desc="converting"):
        self.rows = initial
        self._bar = None
        if not quiet and sys.stderr.isatty():
            try:
                from tqdm import tqdm
            except ImportError:
                return
            self._bar = tqdm(total=total, initial=initial, desc=desc, unit=" rows", unit_scale=True,
                             dynamic_ncols=True, file=sys.stderr)

    def update(self, rows):
        self.rows += rows
        if self._bar is not None:
            self._bar.update(rows)

    def close(self):
        if self._bar is not None:
            self._bar.close()
            self._bar = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False
