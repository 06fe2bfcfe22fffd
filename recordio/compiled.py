"""The compiled parts (C extensions) and their slower stand-ins: a slow path is never silent.

Each compiled part has a pure-Python (numpy/OpenCV) stand-in that gives the same values, slower. A
module that uses a part loads it with :func:`load` in place of ``try: import ... except ImportError``;
when the part is missing (a source checkout not built, an install without a C compiler), the first
load warns once per process with a :class:`RuntimeWarning` that names the part, what it costs and how
to get it. A part that disables itself after a self-check (the JPEG region decoder, when the libjpeg
it links decodes unlike OpenCV's) warns the same way through :func:`checked`.

:func:`slow_path` gives the same once-per-run warning for a slow path that is not a missing part (an
offloaded tail running on the CPU, where no device was given for it).

``RECORDIO_ALLOW_SLOW=1`` in the environment silences these warnings (for those who mean it).
A warning is given once per run, not once per process: worker processes started with spawn or
forkserver import the parts afresh and would otherwise warn again, one each. The process that warns
writes ``RECORDIO_SLOW_WARNED=<run>:<pid>:<parts>`` into its environment, which the processes it starts
inherit; *run* is a digest of multiprocessing's authentication key, which multiprocessing hands to every
process it starts for the program (the pipeline's workers, a DataLoader's, fork, spawn or forkserver
ones, and theirs) and a program started anew (``subprocess``: a second training script, a test runner's
child) does not have. So a worker of the run stays quiet, and another program warns for itself. A fork
server has a key of its own; while it imports its parent's main module before it serves (Python 3.13.8
and later), it is of the run when that parent is *pid*, the process that warned.
``recordio --version`` and ``recordio doctor`` list which parts are active (:func:`report`).

This module imports nothing of recordio and nothing heavy: it sits at the top of the layering.
"""

from __future__ import annotations

import functools
import importlib
import os
import threading
import warnings

__all__ = ["ALLOW_SLOW", "PARTS", "Part", "WARNED", "checked", "load", "once", "report", "slow_path"]

#: the environment variable that silences the slow-path warnings (``RECORDIO_ALLOW_SLOW=1``)
ALLOW_SLOW = "RECORDIO_ALLOW_SLOW"
#: the environment variable naming the run and the parts already warned about in it (``<run>:<pid>:<parts>``,
#: the parts comma-separated)
WARNED = "RECORDIO_SLOW_WARNED"

_BUILD = ("and reinstall (pip install --force-reinstall --no-cache-dir mindrecordio), or in a source checkout "
          "build in place: python setup.py build_ext --inplace")


class Part:
    """One compiled part: its module, what it does, what its absence costs, what building it needs, and
    what to do when its self-check fails."""

    def __init__(self, module, what, cost, needs="a C compiler",
                 mismatch="rebuild it against the libjpeg(-turbo) that OpenCV decodes with"):
        self.module, self.what, self.cost, self.needs, self.mismatch = module, what, cost, needs, mismatch

    def advice(self):
        return f"install {self.needs} {_BUILD}"


PARTS = {part.module: part for part in (
    Part("recordio.mindrecord._codec", "the integer-array codec",
         "integer array fields are compressed and decompressed, and keyed shuffles permuted, in numpy: many "
         "times slower (token rows: about 30x fewer tokens/s in tools/bench_tokens.py, RECORDIO_CODEC=numpy "
         "against the compiled codec)"),
    Part("recordio._keys", "the key folds",
         "random ops draw their per-row parameters with Python-int SplitMix64 folds (RandomColorAdjust's 8 draws "
         "of a row about 8x slower, the train chain's draws of a row about 2x: tools/bench_keys.py)"),
    Part("recordio.vision._kernels", "the vision colour kernels",
         "RandomColorAdjust and Normalize+HWC2CHW run as several numpy/OpenCV passes per image instead of one"),
    Part("recordio.vision._jpeg", "the JPEG region decoder",
         "RandomCropDecodeResize decodes whole JPEGs before cropping (slower for small crops of large images)",
         needs="a C compiler and libjpeg-turbo's headers (e.g. Debian's libjpeg62-turbo-dev)"),
    Part("recordio.vision._chain", "the train chain in one C call",
         "the train chain (RandomCropDecodeResize -> flip -> RandomColorAdjust -> Rescale/Normalize/HWC2CHW) runs op by "
         "op: a region decode, a resize and a colour call per image with Python between them (paired runs of the "
         "train chain: 1-10% more time per image)",
         needs="a C compiler and libjpeg-turbo's headers (e.g. Debian's libjpeg62-turbo-dev)"),
    Part("recordio.vision._pilfast", "the PIL eval chain in C",
         "Decode(to_pil=True) -> Resize -> CenterCrop runs in Pillow: the whole image decoded and resized "
         "(about 2x the time of the compiled chain, which decodes and resamples only what the crop keeps)",
         needs="a C compiler and libjpeg-turbo's headers (e.g. Debian's libjpeg62-turbo-dev)",
         mismatch="use the Pillow version it was checked with (13.0) or report the difference"),
)}

_state: dict[str, str] = {}          # module -> "active" | "missing: <why>" | "disabled: <why>"
_checks: dict[str, object] = {}      # module -> its self-check (a cached function), once registered
_warned: set[str] = set()


def load(module):
    """The compiled module ``module`` (one of :data:`PARTS`), or ``None`` after a one-time
    :class:`RuntimeWarning` (unless ``RECORDIO_ALLOW_SLOW=1``) when it cannot be imported."""
    try:
        found = importlib.import_module(module)
    except ImportError as exc:
        _state[module] = f"missing: {exc}"
        _warn(module, f"{PARTS[module].what} ({module}) is not built: {exc}")
        return None
    _state.setdefault(module, "active")
    return found


def once(fn):
    """``functools.cache`` for a self-check whose first call runs once: a thread that calls it meanwhile
    waits for that result (workers that start together would each run the check, and a failing one could
    warn twice). Later calls take no lock. ``cache_clear()`` forgets the results (tests)."""
    done: dict = {}
    lock = threading.RLock()

    @functools.wraps(fn)
    def call(*args):
        try:
            return done[args]
        except KeyError:
            pass
        with lock:
            if args not in done:
                done[args] = fn(*args)
            return done[args]

    call.cache_clear = done.clear
    return call


def checked(module):
    """Decorate the self-check of ``module`` (a cached function returning whether the part may be used;
    its arguments, if any, name what is checked, e.g. a decoding scale): a failed check disables the
    part (for what it checked), with a one-time :class:`RuntimeWarning`."""
    def wrap(check):
        @functools.wraps(check)
        def run(*args):
            ok = check(*args)
            state = _state.get(module, "")
            if not ok and state == "active":
                _state[module] = "disabled: its self-check failed"
                _warn(module, f"{PARTS[module].what} ({module}) is built but disabled itself: its self-check "
                              f"gave results that differ from the reference path", PARTS[module].mismatch)
            elif ok and state.startswith("disabled"):       # checked again (its cache cleared) and passed
                _state[module] = "active"
            return ok
        run.cache_clear = getattr(check, "cache_clear", lambda: None)      # tests clear the check
        _checks[module] = run
        return run
    return wrap


def _warn(module, said, advice=None):
    part = PARTS[module]
    slow_path(module, said, part.cost, f"To get it, {advice or part.advice()}", stacklevel=4)


def slow_path(key, said, cost, fix, stacklevel=3):
    """Warn once per run (see the module docstring) that recordio runs a slower path: what (``said``), what it
    costs (``cost``) and the way out (``fix``, a sentence); ``key`` names the path in ``RECORDIO_SLOW_WARNED``
    (a compiled part's module, or another slow path, e.g. ``"offload-on-cpu"``: no ``,`` or ``:`` in it).
    Silenced by ``RECORDIO_ALLOW_SLOW=1``."""
    if key in _warned or os.environ.get(ALLOW_SLOW, "") not in ("", "0"):
        return
    _warned.add(key)
    run, pid, listed = _listed()
    if key in listed and _of_run(run, pid):             # a process of this run warned
        return
    mine = _run()
    os.environ[WARNED] = f"{mine}:{os.getpid()}:{','.join([m for m in listed if run == mine] + [key])}"
    warnings.warn(f"recordio runs a slower path: {said}. Cost: {cost}. {fix}. Set {ALLOW_SLOW}=1 to silence this "
                  f"warning.", RuntimeWarning, stacklevel=stacklevel)


def _listed():
    """``RECORDIO_SLOW_WARNED`` as (run, pid, parts); ("", 0, []) when unset or not of that form."""
    run, pid, parts = (os.environ.get(WARNED, "").split(":", 2) + ["", ""])[:3]
    return (run, int(pid), [p for p in parts.split(",") if p]) if pid.isdigit() else ("", 0, [])


def _run():
    """This run: a digest of multiprocessing's authentication key (the key itself stays unsaid). Every process
    multiprocessing starts gets the key of the process that starts it; a program started anew draws its own."""
    import hashlib
    from multiprocessing import process

    return hashlib.sha256(bytes(process.current_process().authkey)).hexdigest()[:16]


def _of_run(run, pid):
    """Whether this process belongs to the run ``run`` whose warning process was ``pid``: it has the run's
    key, or it is a fork server that ``pid`` started, importing ``pid``'s main module (it has a key of its
    own: multiprocessing gives a fork server none)."""
    from multiprocessing import process

    if run == _run():
        return True
    return pid == os.getppid() and getattr(process.current_process(), "_inheriting", False)


def report(run_checks=False):
    """``{module: state}`` for every part: ``"active"``, ``"missing: ..."``, ``"disabled: ..."`` or
    ``"unused: ..."`` (built, but the package that uses it needs an extra that is not installed).
    Imports each part (a compiled module, nothing heavy); ``run_checks`` also runs the self-checks of
    the parts whose users were imported (they may need OpenCV)."""
    states = {}
    for module in PARTS:
        if module not in _state:
            try:
                importlib.import_module(module)
                states[module] = "active"
            except ImportError as exc:
                state = "unused" if _unused(module) else "missing"
                states[module] = f"{state}: {exc}"
        else:
            states[module] = _state[module]
        if run_checks and states[module] == "active" and module in _checks:
            _checks[module]()
            states[module] = _state.get(module, "active")
    return states


def _unused(module):
    """Whether ``module`` is built but cannot load because the package holding it cannot be imported
    (it needs an extra, e.g. OpenCV for ``recordio.vision``): found on disk, its package not imported."""
    import _imp
    import sys

    package, name = module.rsplit(".", 1)
    try:
        importlib.import_module(package)
        return False                              # the package imports: the part itself is missing
    except ImportError:
        pass
    top, *folders = package.split(".")
    paths = getattr(sys.modules.get(top), "__path__", ())
    return any(os.path.exists(os.path.join(base, *folders, name + suffix))
               for base in paths for suffix in _imp.extension_suffixes())
