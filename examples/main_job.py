"""The main job: real photos -> ImageFolder -> sharded MindRecord -> a small CNN trained through DataSink.

Runs offline on a fresh machine (the photos ship inside scikit-image), on the GPU when there is
one, else on the CPU, in about a minute on two CPU cores:

1. crops of six scikit-image photos, one class per photo, as an ImageFolder (train/ and val/);
2. ``recordio convert imagefolder`` of each split into sharded records;
3. ``recordio info``, ``count``, ``verify`` and ``head`` on the training set, and a contact sheet
   of its images (``sheet.png``);
4. training: ``MindDataset -> map(vision ops, offload=True) -> batch -> DataSink``, printing the
   loss of every sink epoch, samples/s and the share of time spent waiting for data;
5. the accuracy on the held-out split.

Usage: python examples/main_job.py [--out DIR] [--per-class N] [--epochs N] [--device cpu|cuda]
       [--checkpoint FILE]   (stop it at any time; the same command resumes after the last sink epoch)
"""

import argparse
import os
import shutil
import sys
import time

import photos

import recordio as rio
from recordio import MindDataset, vision
from recordio.tools.__main__ import main as recordio_cli

MEAN, STD = [123.675, 116.28, 103.53], [58.395, 57.12, 57.375]   # ImageNet's, in pixel units


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="out/main-job", help="working folder (default out/main-job)")
    parser.add_argument("--per-class", type=int, default=500, help="training images per class (default 500)")
    parser.add_argument("--val-per-class", type=int, default=100, help="held-out images per class (default 100)")
    parser.add_argument("--size", type=int, default=64, help="side of the stored images (default 64)")
    parser.add_argument("--crop", type=int, default=32, help="side of the images the model sees (default 32)")
    parser.add_argument("--epochs", type=int, default=5, help="sink epochs, one data epoch each (default 5)")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--shards", type=int, default=4, help="data files per split (default 4)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--device", default=None, help="torch device (default: cuda when available, else cpu)")
    parser.add_argument("--checkpoint", default=None,
                        help="save model, optimizer and the sink's position here after every sink epoch, and "
                             "resume from it when it exists (stop the job at any time and run it again)")
    return parser.parse_args(argv)


def cli(*command):
    """Run one ``recordio`` command line in this process, echoing it; raise if it fails."""
    print(f"\n$ recordio {' '.join(command)}", flush=True)
    code = recordio_cli(list(command))
    if code != 0:
        raise SystemExit(f"main job: `recordio {' '.join(command)}` exited with {code}")


def convert(folder, out, shards):
    shutil.rmtree(os.path.dirname(out), ignore_errors=True)
    os.makedirs(os.path.dirname(out))
    # one worker process: the photos are small, and a single writer keeps the job predictable
    cli("convert", "imagefolder", folder, out, "--shards", str(shards), "--workers", "1", "--quiet")
    return out + "0"


def prepare_data(args):
    """Steps 1-3: the ImageFolder, its conversion, and a look at the training records."""
    print(f"building an ImageFolder of scikit-image photos under {args.out}/photos ...", flush=True)
    shutil.rmtree(os.path.join(args.out, "photos"), ignore_errors=True)
    splits = photos.build_image_folder(os.path.join(args.out, "photos"), args.per_class,
                                       args.val_per_class, args.size)
    classes = len(photos.CLASSES)
    print(f"  {classes * args.per_class} training and {classes * args.val_per_class} held-out JPEGs of "
          f"{args.size}x{args.size} pixels, {classes} classes: {', '.join(photos.CLASSES)}")
    train = convert(splits["train"], os.path.join(args.out, "records", "train", "photos.mindrecord"), args.shards)
    val = convert(splits["val"], os.path.join(args.out, "records", "val", "photos.mindrecord"), args.shards)
    cli("info", train)
    cli("count", train)
    cli("verify", train)
    cli("head", train, "-n", "3", "--columns", "label,file_name")
    contact_sheet(train, os.path.join(args.out, "sheet.png"))
    return train, val


def contact_sheet(path, png, count=24):
    """A contact sheet of ``count`` rows spread over the dataset (``recordio head --grid`` draws the first ones)."""
    from recordio.tools.grid import class_names, draw_sheet

    with rio.FileReader(path) as reader:
        rows = [reader[k * len(reader) // count] for k in range(count)]
    draw_sheet(rows, png, names=class_names(path, "label"))
    print(f"wrote a contact sheet of {count} training images to {png}")


def host_ops(crop):
    """The training chain's host part: what runs before the offloaded tail (see the offload plan)."""
    return [vision.Decode(), vision.RandomResizedCrop(crop, scale=(0.35, 1.0))]


def train_pipeline(path, crop, batch_size):
    """Decode and crop on the host; flip, colour jitter, normalise and transpose offloaded."""
    ds = MindDataset(path, columns_list=["image", "label"], shuffle=True)
    tail = [vision.RandomHorizontalFlip(), vision.RandomColorAdjust(brightness=0.2, contrast=0.2),
            vision.Normalize(MEAN, STD), vision.HWC2CHW()]
    ds = ds.map(host_ops(crop) + tail,
                input_columns="image", offload=True)
    return ds.batch(batch_size, drop_remainder=True)


def host_chain_rate(path, crop, rows=256):
    """Images/s per core of the host part of the training chain: one worker, images per second of this
    process's CPU time (all its threads), over the first ``rows`` rows, uint8 images batched as the
    offloaded pipeline batches them."""
    ds = MindDataset(path, columns_list=["image"], shuffle=False, num_samples=rows, num_parallel_workers=1)
    ds = ds.map(host_ops(crop), input_columns="image", num_parallel_workers=1).batch(32)
    seen, cpu = 0, time.process_time()
    for batch in ds.create_dict_iterator(num_epochs=1, output_numpy=True):
        seen += len(batch["image"])
    return seen / max(time.process_time() - cpu, 1e-9), seen


def eval_pipeline(path, crop):
    ds = MindDataset(path, columns_list=["image", "label"], shuffle=False)
    ds = ds.map([vision.Decode(), vision.Resize((crop, crop)), vision.Normalize(MEAN, STD), vision.HWC2CHW()],
                input_columns="image", offload=True)
    return ds.batch(256)


def small_cnn(classes):
    from torch import nn

    def block(cin, cout):
        return [nn.Conv2d(cin, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(inplace=True)]

    return nn.Sequential(*block(3, 24), nn.MaxPool2d(2), *block(24, 48), nn.MaxPool2d(2),
                         *block(48, 96), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(96, classes))


def sink_epoch(model, optimizer, sink):
    """One pass over the sink; returns (mean loss, samples, seconds, seconds waiting for batches)."""
    import torch.nn.functional as F

    started, waited, samples, total = time.perf_counter(), 0.0, 0, 0.0
    batches = iter(sink)
    while True:
        t0 = time.perf_counter()
        batch = next(batches, None)
        waited += time.perf_counter() - t0
        if batch is None:
            break
        loss = F.cross_entropy(model(batch["image"]), batch["label"].long())
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        total, samples = total + loss.detach() * len(batch["label"]), samples + len(batch["label"])
    return float(total) / max(samples, 1), samples, time.perf_counter() - started, waited


def fit(args, path, device, classes):
    """Step 4: train through DataSink, one line per sink epoch."""
    import torch

    torch.manual_seed(args.seed)
    model = small_cnn(classes).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=1e-4)
    ds = train_pipeline(path, args.crop, args.batch_size)
    print(f"\ntraining on {device}: {ds.get_dataset_size()} batches of {args.batch_size} per epoch")
    print(ds.offload_plan(), flush=True)
    rate, seen = host_chain_rate(path, args.crop)
    print(f"host chain (Decode, RandomResizedCrop({args.crop}); the part before the offloaded tail): "
          f"{rate:,.0f} images/s per core ({seen} images, one worker, CPU time)", flush=True)
    model.train()
    with rio.DataSink(ds, device=device, sink_size=-1, prefetch_depth=2) as sink:
        first = resume(args.checkpoint, model, optimizer, sink)
        for epoch in range(first, args.epochs + 1):
            loss, samples, seconds, waited = sink_epoch(model, optimizer, sink)
            print(f"sink epoch {epoch}/{args.epochs}: loss {loss:.4f}, {samples / seconds:,.0f} samples/s, "
                  f"data wait {waited / seconds:.1%}", flush=True)
            save(args.checkpoint, model, optimizer, sink, epoch)
    return model


def resume(path, model, optimizer, sink):
    """The first sink epoch to run: 1, or the one after a saved checkpoint (which is loaded)."""
    import torch

    if path is None or not os.path.exists(path):
        return 1
    saved = torch.load(path, map_location="cpu", weights_only=False)
    model.load_state_dict(saved["model"])
    optimizer.load_state_dict(saved["optimizer"])
    sink.load_state_dict(saved["data"])                  # after the last batch the loop received
    print(f"resumed from {path} after sink epoch {saved['epoch']}", flush=True)
    return saved["epoch"] + 1


def save(path, model, optimizer, sink, epoch):
    """Write the checkpoint atomically: a crash while saving keeps the previous one."""
    import torch

    if path is not None:
        torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                    "data": sink.state_dict(), "epoch": epoch}, f"{path}.tmp")
        os.replace(f"{path}.tmp", path)


def evaluate(model, path, crop, device):
    """Step 5: accuracy on the held-out split (offloaded tail applied on ``device``)."""
    import torch

    model.eval()
    correct = seen = 0
    with torch.no_grad():
        for batch in eval_pipeline(path, crop).create_dict_iterator(num_epochs=1, device=device):
            predicted = model(batch["image"]).argmax(1).cpu()
            correct += int((predicted == batch["label"].cpu().long()).sum())
            seen += len(predicted)
    return correct / max(seen, 1), seen


def pick_device(name):
    import torch

    if name is None:
        name = "cuda" if torch.cuda.is_available() else "cpu"
    if name == "cpu":
        torch.set_num_threads(max(1, (os.cpu_count() or 2) // 2))   # leave cores to the data pipeline
    return torch.device(name)


def main(argv=None):
    args = parse_args(argv)
    started = time.perf_counter()
    rio.config.set_seed(args.seed)
    train, val = prepare_data(args)
    device = pick_device(args.device)
    classes = len(photos.CLASSES)
    model = fit(args, train, device, classes)
    accuracy, seen = evaluate(model, val, args.crop, device)
    print(f"\nheld-out accuracy: {accuracy:.1%} on {seen} images ({classes} classes, chance {1 / classes:.1%})")
    print(f"main job done in {time.perf_counter() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
