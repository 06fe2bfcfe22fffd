"""Running a vision script under MindSpore 2.10's Python: the shared part of the vision oracle tests."""

import os
import subprocess

import cv2
import numpy as np
import pytest


def oracle_image(rng):
    """The 37 x 45 RGB test image: smooth noise (a cubic upscale) plus fine noise."""
    img = cv2.resize(rng.integers(0, 256, (5, 6, 3), dtype=np.uint8), (45, 37), interpolation=cv2.INTER_CUBIC)
    return cv2.add(img, rng.integers(0, 30, img.shape, dtype=np.uint8))


def run_script(folder, script, inputs):
    """Run ``script`` (it reads ``sys.argv[1]``, an ``.npz`` of ``inputs``, and writes ``sys.argv[2]``)
    with MindSpore's Python; its outputs as a dict. Skips without MindSpore or when the script fails."""
    python = os.environ.get("RECORDIO_MINDSPORE_PYTHON")
    if not python:
        pytest.skip("RECORDIO_MINDSPORE_PYTHON is not set (no MindSpore 2.10 virtualenv)")
    np.savez(folder / "in.npz", **inputs)
    (folder / "script.py").write_text(script)
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1", GLOG_v="3", PYTHONPATH="")
    done = subprocess.run([python, str(folder / "script.py"), str(folder / "in.npz"), str(folder / "out.npz")],
                          check=False, capture_output=True, text=True, timeout=300, env=env)
    if done.returncode != 0:
        pytest.skip(f"MindSpore could not run the vision ops: {done.stderr.strip().splitlines()[-1:]}")
    return dict(np.load(folder / "out.npz"))
