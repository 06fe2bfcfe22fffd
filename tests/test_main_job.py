"""The README's main job (examples/main_job.py), end to end in a reduced size, in its own process."""

import json
import re
import subprocess
import sys

import cv2
import pytest

import recordio
from conftest import ROOT

SMALL = ["--per-class", "80", "--val-per-class", "20", "--epochs", "4", "--shards", "2"]


def run_job(out, device, *extra):
    done = subprocess.run([sys.executable, "examples/main_job.py", "--out", str(out), *SMALL, "--device", device,
                           *extra], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done.stdout


def accuracy_of(stdout):
    return float(re.search(r"held-out accuracy: ([\d.]+)% on 120 images \(6 classes", stdout).group(1))


@pytest.fixture(scope="module")
def job(tmp_path_factory):
    out = tmp_path_factory.mktemp("main-job")
    return out, run_job(out, "cpu")


@pytest.mark.slow
def test_records_are_converted_and_checked(job):
    out, stdout = job
    train = out / "records" / "train" / "photos.mindrecord0"
    assert "$ recordio convert imagefolder" in stdout and "rows: 480 in 2 shard(s)" in stdout
    assert re.search(r"^\$ recordio count .*\n480$", stdout, re.M)
    assert re.search(r"photos.mindrecord0: 2 shard\(s\), 480 rows, \d+ checksummed regions checked\nOK", stdout)
    assert recordio.count_rows(str(train)) == 6 * 80
    assert recordio.count_rows(str(out / "records" / "val" / "photos.mindrecord0")) == 6 * 20
    label_map = json.loads(recordio.describe(str(train))["desc"])["label_map"]
    assert sorted(label_map.values()) == list(range(6)) and "chelsea" in label_map


def test_contact_sheet_is_written(job):
    out, _ = job
    sheet = cv2.imread(str(out / "sheet.png"))
    assert sheet is not None and sheet.shape[0] > 100 and sheet.shape[1] > 300 and sheet.std() > 20


def test_training_reports_every_sink_epoch_and_learns(job):
    _, stdout = job
    epochs = re.findall(r"sink epoch (\d)/4: loss ([\d.]+), ([\d,]+) samples/s, data wait ([\d.]+)%", stdout)
    assert [int(e[0]) for e in epochs] == [1, 2, 3, 4]
    losses = [float(e[1]) for e in epochs]
    assert losses[-1] < losses[0] / 2
    assert all(0 <= float(e[3]) <= 100 for e in epochs)
    assert "offloaded ops" in stdout and "RandomHorizontalFlip, RandomColorAdjust, Normalize, HWC2CHW" in stdout
    rate = re.search(r"host chain \(Decode, RandomResizedCrop\(\d+\); the part before the offloaded tail\): "
                     r"([\d,]+) images/s per core \((\d+) images", stdout)
    assert rate and int(rate.group(1).replace(",", "")) > 0 and int(rate.group(2)) > 0
    assert accuracy_of(stdout) >= 50.0                               # chance is 16.7%


@pytest.mark.gpu
def test_main_job_on_cuda(tmp_path):
    stdout = run_job(tmp_path, "cuda")
    assert "training on cuda" in stdout and len(re.findall(r"^sink epoch \d/4", stdout, re.M)) == 4
    assert accuracy_of(stdout) >= 50.0


def test_photos_split_uses_disjoint_parts_of_each_photo(tmp_path):
    sys.path.insert(0, str(ROOT / "examples"))
    try:
        import photos
    finally:
        sys.path.remove(str(ROOT / "examples"))
    splits = photos.build_image_folder(str(tmp_path), 3, 2, size=32, classes=("coffee", "rocket"))
    for split, count in (("train", 3), ("val", 2)):
        for name in ("coffee", "rocket"):
            files = sorted((tmp_path / split / name).iterdir())
            assert len(files) == count and all(cv2.imread(str(f)).shape == (32, 32, 3) for f in files)
    assert splits == {"train": str(tmp_path / "train"), "val": str(tmp_path / "val")}


@pytest.mark.slow
def test_a_stopped_job_resumes_from_its_checkpoint(job, tmp_path):
    """Stopped after two sink epochs, the same command finishes the run as if it had not stopped."""
    _, uninterrupted = job
    checkpoint = tmp_path / "job.pt"
    first = run_job(tmp_path / "a", "cpu", "--checkpoint", str(checkpoint), "--epochs", "2")
    second = run_job(tmp_path / "b", "cpu", "--checkpoint", str(checkpoint))
    assert "resumed from" in second and "after sink epoch 2" in second
    line = r"sink epoch (\d)/\d: loss ([\d.]+)"
    assert [e for e in re.findall(line, first)] == re.findall(line, uninterrupted)[:2]
    assert [e for e in re.findall(line, second)] == re.findall(line, uninterrupted)[2:]
    assert accuracy_of(second) == accuracy_of(uninterrupted)


ACCURACY = r"held-out accuracy: ([\d.]+)% on (\d+) images"
README = (ROOT / "README.md").read_text()


def test_the_docs_quote_the_same_main_job_figures():
    """README.md and docs/README.md quote one accuracy, and the README the job's own line."""
    accuracy, images = re.search(ACCURACY, README).groups()
    index = (ROOT / "docs" / "README.md").read_text()
    assert f"{accuracy}% on {images} images" in " ".join(index.split())
    assert re.search(r"main job done in \d+ s", README)


@pytest.mark.slow
def test_the_readme_quotes_what_the_main_job_prints(tmp_path):
    """The README's command 1, at its default size on the CPU: the accuracy it quotes (within a point and a
    half: the same seed gives the same figure on one machine; another BLAS may round differently) and its
    time (within 3x: machines and load differ)."""
    done = subprocess.run([sys.executable, "examples/main_job.py", "--out", str(tmp_path), "--device", "cpu"],
                          cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    quoted, images = re.search(ACCURACY, README).groups()
    printed, seen = re.search(ACCURACY, done.stdout).groups()
    assert seen == images and abs(float(printed) - float(quoted)) <= 1.5, (printed, quoted)
    quoted_s = int(re.search(r"main job done in (\d+) s", README).group(1))
    printed_s = int(re.search(r"main job done in (\d+) s", done.stdout).group(1))
    assert printed_s <= 3 * quoted_s, (printed_s, quoted_s)
