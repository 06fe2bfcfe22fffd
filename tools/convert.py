"""``recordio convert FORMAT SOURCE OUT``: ImageFolder, CIFAR-10/100, MNIST, Parquet, CSV, TFRecord, text,
Megatron-LM or WebDataset -> MindRecord."""

import argparse
import json
import os

from recordio.tools._common import human_bytes

HELP = ("convert imagefolder (ImageFolder), cifar10 / cifar100 (CIFAR-10/100), mnist (MNIST/Fashion-MNIST), "
        "parquet (Parquet/Arrow), csv, tfrecord, text, megatron (Megatron-LM) or webdataset (WebDataset) data to "
        "MindRecord (on a process pool, Ray or Spark; atomic; a rerun resumes after a crash); the output folder "
        "is made")
EXAMPLE = "recordio convert imagefolder photos/train out/train.mindrecord --shards 8 --skip-bad"

FORMATS = {
    "imagefolder": ("a folder per class of image files -> {image, label, file_name}",
                    "recordio convert imagefolder photos/train out/train.mindrecord --resize 256"),
    "cifar10": ("CIFAR-10 python or binary batches -> {image (PNG or --raw), label}",
                "recordio convert cifar10 cifar-10-batches-py out/cifar10.mindrecord --split test"),
    "cifar100": ("CIFAR-100 python or binary batches -> {image, label (fine), coarse_label}",
                 "recordio convert cifar100 cifar-100-python out/cifar100.mindrecord"),
    "mnist": ("MNIST / Fashion-MNIST idx files (.gz or not) -> {image (PNG or --raw), label}",
              "recordio convert mnist /usr/share/datasets/fashion-mnist out/fmnist.mindrecord"),
    "parquet": ("Parquet or Arrow IPC/Feather files, or a folder of them -> records (schema from the Arrow types)",
                "recordio convert parquet table.parquet out/table.mindrecord --index label"),
    "csv": ("a CSV file -> records (MindSpore's CsvToMR types: int64, float64, bool as int32, string)",
            "recordio convert csv sales.csv out/sales.mindrecord --columns Name,Sales --index Name"),
    "tfrecord": ("TFRecord files of tf.train.Example (CRCs checked) -> records (MindSpore's TFRecordToMR schema)",
                 "recordio convert tfrecord train.tfrecord out/train.mindrecord --bytes-fields image"),
    "megatron": ("a Megatron-LM indexed dataset (PREFIX.bin + PREFIX.idx) -> token rows, one per sequence "
                 "{input_ids, document} or packed with --seq-length",
                 "recordio convert megatron corpus_text_document out/tokens.mindrecord --seq-length 2048"),
    "text": ("text or JSON-lines files -> packed token rows {input_ids: int32 [-1]} (a tokenizers tokenizer.json)",
             "recordio convert text corpus.jsonl out/tokens.mindrecord --key text --tokenizer tokenizer.json "
             "--seq-length 2048"),
    "webdataset": ("WebDataset tar shards -> one row per sample (its files grouped by key, a field per extension)",
                   "recordio convert webdataset shards/ out/train.mindrecord --shards 8 --skip-bad"),
}


def _common(parser):
    parser.add_argument("--shards", type=int, default=None, metavar="N",
                        help="number of data files (default: one per worker)")
    parser.add_argument("--workers", type=int, default=None, metavar="N",
                        help="worker processes (default: the CPU count)")
    parser.add_argument("--engine", choices=("process", "ray", "spark"), default="process",
                        help="run shard tasks on a local process pool (default), on Ray Data or on Spark")
    parser.add_argument("--skip-bad", action="store_true",
                        help="skip unreadable source files and count them in the summary (default: fail)")
    parser.add_argument("--overwrite", action="store_true", help="replace an existing dataset")
    parser.add_argument("--quiet", "-q", action="store_true", help="no progress bar")
    parser.add_argument("--json", action="store_true", help="print the summary as JSON")


def add_arguments(parser):
    sub = parser.add_subparsers(dest="format", metavar="FORMAT", required=True)
    for name, (text, example) in FORMATS.items():
        cmd = sub.add_parser(name, help=text, description=text, allow_abbrev=False,
                             epilog=f"example:\n  {example}", formatter_class=argparse.RawDescriptionHelpFormatter)
        if name == "parquet":
            cmd.add_argument("source", nargs="+", help="Parquet (.parquet) or Arrow IPC (.arrow, .feather) files, "
                                                       "or folders of them")
        elif name == "tfrecord":
            cmd.add_argument("source", nargs="+", help="TFRecord files, or folders of them (every file taken)")
        elif name == "webdataset":
            cmd.add_argument("source", nargs="+", help="tar files (.tar, .tar.gz, .tgz), or folders of them")
        elif name == "csv":
            cmd.add_argument("source", help="the CSV file (its first line names the columns)")
        elif name == "megatron":
            cmd.add_argument("source", help="the dataset's prefix (PREFIX.bin and PREFIX.idx)")
        elif name == "text":
            cmd.add_argument("source", nargs="+", help="text files (a document a line) or JSON-lines files (--key)")
        else:
            cmd.add_argument("source", help="the source folder")
        cmd.add_argument("out", help="the dataset to write (shards get 0, 1, ... appended)")
        _ARGUMENTS[name](cmd)
        _common(cmd)


def _imagefolder_arguments(cmd):
    cmd.add_argument("--resize", type=int, default=None, metavar="PIXELS",
                     help="re-encode with the shorter side resized to PIXELS (default: keep the files)")
    cmd.add_argument("--encode", choices=("jpeg", "png"), default=None, help="re-encode as JPEG or PNG")
    cmd.add_argument("--quality", type=int, default=95, help="JPEG quality when re-encoding (default 95)")
    cmd.add_argument("--check", choices=("header", "decode", "none"), default="header",
                     help="how to detect bad images: header and end marker (default), full decode, or none")


def _split_arguments(cmd):
    cmd.add_argument("--split", choices=("train", "test"), default="train", help="which split (default train)")
    cmd.add_argument("--raw", action="store_true", help="store raw HWC uint8 pixels instead of PNG")


def _parquet_arguments(cmd):
    cmd.add_argument("--columns", default=None, metavar="A,B", help="columns to convert (default: all)")
    cmd.add_argument("--index", default=None, metavar="A,B", help="scalar columns to index in the .db")


def _csv_arguments(cmd):
    cmd.add_argument("--columns", default=None, metavar="A,B", help="columns to convert (default: all)")
    cmd.add_argument("--index", default=None, metavar="A,B",
                     help="columns to index in the .db (default: every column, as MindSpore's CsvToMR)")


def _tfrecord_arguments(cmd):
    cmd.add_argument("--features", default=None, metavar="NAME:TYPE[:N],...",
                     help="the features to convert, TYPE string, int64 or float32, N the values of an array "
                          "feature (default: every feature of the first record, typed by it)")
    cmd.add_argument("--bytes-fields", default=None, metavar="A,B",
                     help="string features to keep as bytes (default with inferred features: those whose "
                          "first value is not UTF-8)")


def _megatron_arguments(cmd):
    cmd.add_argument("--seq-length", type=int, default=None, metavar="N",
                     help="pack the sequences into rows of N + 1 ids (default: one row per sequence, with its "
                          "document number)")
    cmd.add_argument("--keep-tail", action="store_true", help="with --seq-length, keep each unit's last, shorter row")


def _text_arguments(cmd):
    cmd.add_argument("--tokenizer", required=True, help="a Hugging Face tokenizers tokenizer.json")
    cmd.add_argument("--seq-length", type=int, required=True, metavar="N", help="rows hold N + 1 token ids")
    cmd.add_argument("--key", default=None, help="JSON-lines input: the field holding each document's text")
    cmd.add_argument("--eod-id", type=int, default=None, help="the end-of-document id (default: the tokenizer's "
                                                              "<|endoftext|>, </s>, <eos>, ...)")
    cmd.add_argument("--eod-token", default=None, help="the end-of-document token, by name")
    cmd.add_argument("--labels", action="store_true", help="also a labels column (a copy of input_ids)")
    cmd.add_argument("--attention-mask", action="store_true", help="also an attention_mask column (all ones)")
    cmd.add_argument("--keep-tail", action="store_true",
                     help="keep each input piece's last, shorter row (default: dropped, as MindSpore's scripts do)")


def _webdataset_arguments(cmd):
    cmd.add_argument("--key-field", default="__key__", metavar="NAME",
                     help="the field that keeps each sample's key (default __key__)")
    cmd.add_argument("--no-key", action="store_true", help="do not keep the keys")
    cmd.add_argument("--index", default=None, metavar="A,B", help="scalar fields to index in the .db")


_ARGUMENTS = {"imagefolder": _imagefolder_arguments, "cifar10": _split_arguments, "cifar100": _split_arguments,
              "mnist": _split_arguments, "parquet": _parquet_arguments, "csv": _csv_arguments,
              "tfrecord": _tfrecord_arguments, "text": _text_arguments, "megatron": _megatron_arguments,
              "webdataset": _webdataset_arguments}


def _names(text):
    return [n.strip() for n in text.split(",") if n.strip()] if text else None


def _features(text):
    """``{name: FixedLenFeature}`` of ``name:type[:n],...``."""
    from recordio.converters.tfrecord import FixedLenFeature

    if not text:
        return None
    features = {}
    for item in _names(text):
        parts = item.split(":")
        if len(parts) not in (2, 3) or (len(parts) == 3 and not parts[2].isdigit()):
            raise ValueError(f"--features: expected NAME:TYPE or NAME:TYPE:N, found {item!r}")
        features[parts[0]] = FixedLenFeature([int(parts[2])] if len(parts) == 3 else [], parts[1])
    return features


def _convert(args, options):
    from recordio import converters

    if args.format == "tfrecord":
        return converters.convert_tfrecord(args.source, args.out, feature_dict=_features(args.features),
                                           bytes_fields=_names(args.bytes_fields), **options)
    if args.format == "webdataset":
        return converters.convert_webdataset(args.source, args.out, key_field=None if args.no_key else args.key_field,
                                             index_fields=_names(args.index), **options)
    if args.format == "csv":
        return converters.convert_csv(args.source, args.out, columns=_names(args.columns),
                                      index_fields=_names(args.index), **options)
    if args.format == "imagefolder":
        return converters.convert_imagefolder(args.source, args.out, resize=args.resize, encode=args.encode,
                                              quality=args.quality, check=args.check, **options)
    if args.format == "parquet":
        return converters.convert_parquet(args.source, args.out, columns=_names(args.columns),
                                          index_fields=_names(args.index), **options)
    if args.format == "megatron":
        return converters.convert_megatron(args.source, args.out, seq_length=args.seq_length,
                                           tail="keep" if args.keep_tail else "drop", **options)
    if args.format == "text":
        return converters.convert_text(args.source, args.out, tokenizer=args.tokenizer, seq_length=args.seq_length,
                                       key=args.key, eod_id=args.eod_id, eod_token=args.eod_token, labels=args.labels,
                                       attention_mask=args.attention_mask, tail="keep" if args.keep_tail else "drop",
                                       **options)
    convert = {"cifar10": converters.convert_cifar10, "cifar100": converters.convert_cifar100,
               "mnist": converters.convert_mnist}[args.format]
    return convert(args.source, args.out, split=args.split, raw=args.raw, **options)


def run(args):
    if "://" not in args.out:              # the output folder is made, as `mkdir -p` would
        os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    options = {"shard_num": args.shards, "workers": args.workers, "engine": args.engine,
               "skip_bad": args.skip_bad, "overwrite": args.overwrite, "quiet": args.quiet or args.json}
    summary = _convert(args, options)
    if args.json:
        print(json.dumps(summary.to_dict(), indent=2))
    else:
        _print_summary(summary)
    return 0


def _print_summary(s):
    print(f"wrote {s.rows} rows in {s.shards} shard(s) to {s.destination} ({human_bytes(s.bytes)}, "
          f"{s.seconds:.2f} s, {s.rows_per_second:,.0f} rows/s)")
    for name in s.files:
        print(f"  {name}")
    if s.resumed_shards:
        print(f"resumed: {s.resumed_shards} shard(s) were already complete")
    desc = json.loads(s.desc)
    if "label_map" in desc:
        print("labels: " + ", ".join(f"{label} {name}" for name, label in desc["label_map"].items()))
    if s.skipped:
        print(f"skipped {len(s.skipped)} unreadable source(s):")
        for where, reason in s.skipped:
            print(f"  {where}: {reason}")
