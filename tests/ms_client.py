"""The test side of the MindSpore oracle: run ``ms_oracle.py`` jobs under MindSpore's Python."""

import pathlib
import pickle
import subprocess

ORACLE = pathlib.Path(__file__).resolve().parent / "ms_oracle.py"


def run_oracle(python, jobs, folder):
    """Run ``jobs`` in MindSpore subprocesses; returns one result per job.

    A job that kills MindSpore (a segfault) gets ``{"error": "crashed ..."}`` and a new
    subprocess goes on with the next job.
    """
    results = []
    while len(results) < len(jobs):
        done, answers = _run_once(python, jobs[len(results):], folder)
        results += answers
        if done.returncode != 0 and len(results) < len(jobs):
            tail = done.stderr.strip().splitlines()[-5:]
            results.append({"error": f"crashed MindSpore (rc {done.returncode}): {' | '.join(tail)}"})
    return results


def _run_once(python, jobs, folder):
    """One oracle process over ``jobs``: (the completed process, the results it flushed)."""
    request, response = folder / "request.pkl", folder / "response.pkl"
    with open(request, "wb") as f:
        pickle.dump({"jobs": jobs}, f, protocol=4)
    if response.exists():
        response.unlink()
    done = subprocess.run([python, str(ORACLE), str(request), str(response)],
                          capture_output=True, text=True, timeout=600)
    answers = []
    if response.exists():
        with open(response, "rb") as f:
            while True:
                try:
                    answers.append(pickle.load(f))
                except (EOFError, pickle.UnpicklingError):
                    break
    if not answers:
        raise AssertionError(f"MindSpore oracle died before its first job (rc {done.returncode}):\n"
                             f"{done.stderr[-4000:]}")
    return done, answers[1:]
