"""The image chains of ``bench_vision_chains`` as each contender writes them: one script per contender,
run in that contender's own python (a fresh process per measurement).

Every script takes ``DATA CHAIN WORKERS BATCH IMAGES`` and prints one JSON line: ``images_per_s``
(wall) and ``cpu_images_per_s`` (images per second of the process's CPU time, all its threads), timed
from the first batch to the last (the pipeline already built). ``DATA`` is the MindRecord file for
recordio and MindSpore and the JPEG blob (``.blob`` + ``.offsets.npy``, the same JPEGs) for the others. Chains: ``train`` (RandomCropDecodeResize
(224, scale=(0.08, 1)), flip, RandomColorAdjust(0.4, 0.4, 0.4), Rescale, Normalize, HWC2CHW), ``eval``
(Decode, Resize(256), CenterCrop(224), Normalize, HWC2CHW), ``eval_pil`` (MindSpore's PIL form:
Decode(to_pil=True), Resize, CenterCrop, ToTensor, Normalize(is_hwc=False)); ``train_host`` and ``eval_host``
(what the train and eval chains leave on the host when their tail is offloaded: RandomCropDecodeResize alone;
Decode, Resize, CenterCrop), uint8 out, for recordio and MindSpore (the decode limit of their chains' boxes
is the train and eval chains').
"""

TIMER = r"""
import json, sys, time
data_path, chain, workers, batch, images = sys.argv[1], sys.argv[2], *map(int, sys.argv[3:])

def timed(batches):
    # from the first batch on: a pipeline's prefetching would hide the work of any batches left out
    seen, start, cpu = 0, time.perf_counter(), time.process_time()
    for size in batches:
        seen += size
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu
    print(json.dumps({"images_per_s": seen / wall, "cpu_images_per_s": seen / cpu}))
"""

MINDDATASET_CHAINS = r"""
UNIT_MEAN, UNIT_STD = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]
MEAN, STD = [123.675, 116.28, 103.53], [58.395, 57.12, 57.375]
CHAINS = {
    "train": lambda: [vision.RandomCropDecodeResize(224, scale=(0.08, 1.0)), vision.RandomHorizontalFlip(),
                      vision.RandomColorAdjust(0.4, 0.4, 0.4), vision.Rescale(1.0 / 255, 0.0),
                      vision.Normalize(UNIT_MEAN, UNIT_STD), vision.HWC2CHW()],
    "eval": lambda: [vision.Decode(), vision.Resize(256), vision.CenterCrop(224), vision.Normalize(MEAN, STD),
                     vision.HWC2CHW()],
    "eval_pil": lambda: [vision.Decode(to_pil=True), vision.Resize(256), vision.CenterCrop(224), vision.ToTensor(),
                         vision.Normalize(UNIT_MEAN, UNIT_STD, is_hwc=False)],
    # what stays on the host when the tail is offloaded (map(..., offload=True)): uint8 <224,224,3> batches
    "train_host": lambda: [vision.RandomCropDecodeResize(224, scale=(0.08, 1.0))],
    "eval_host": lambda: [vision.Decode(), vision.Resize(256), vision.CenterCrop(224)],
}
data = ds.MindDataset(data_path, columns_list=["image", "label"], shuffle=False, num_parallel_workers=workers)
data = data.map(CHAINS[chain](), input_columns="image", num_parallel_workers=workers)
data = data.batch(batch, drop_remainder=True)
timed(len(row["image"]) for row in data.create_dict_iterator(num_epochs=1, output_numpy=True))
"""

RECORDIO = TIMER + "import recordio as ds\nfrom recordio import vision\n" + MINDDATASET_CHAINS
MINDSPORE = TIMER + "import mindspore.dataset as ds\nimport mindspore.dataset.vision as vision\n" + MINDDATASET_CHAINS

BLOB = r"""
import numpy as np
offsets = np.load(data_path + ".offsets.npy")
blob = open(data_path + ".blob", "rb").read()
jpegs = [blob[offsets[i]:offsets[i + 1]] for i in range(len(offsets) - 1)]
"""

TORCHVISION = TIMER + BLOB + r"""
import torch
from torchvision.io import decode_jpeg
from torchvision.transforms import v2
torch.set_num_threads(workers)
UNIT_MEAN, UNIT_STD = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]
tail = [v2.ToDtype(torch.float32, scale=True), v2.Normalize(UNIT_MEAN, UNIT_STD)]
chains = {"train": [v2.RandomResizedCrop(224, scale=(0.08, 1.0), antialias=True), v2.RandomHorizontalFlip(),
                    v2.ColorJitter(0.4, 0.4, 0.4)] + tail,
          "eval": [v2.Resize(256, antialias=True), v2.CenterCrop(224)] + tail}
ops = v2.Compose(chains[chain])
tensors = [torch.frombuffer(bytearray(j), dtype=torch.uint8) for j in jpegs]

def batches():
    for start in range(0, images - batch + 1, batch):
        out = torch.stack([ops(decode_jpeg(tensors[i % len(tensors)])) for i in range(start, start + batch)])
        yield len(out)

timed(batches())
"""

DALI = TIMER + BLOB + r"""
from nvidia.dali import fn, pipeline_def, types
arrays = [np.frombuffer(j, np.uint8) for j in jpegs]
MEAN, STD = [123.675, 116.28, 103.53], [58.395, 57.12, 57.375]
counter = [0]

def source():
    start = counter[0]
    counter[0] += batch
    return [arrays[i % len(arrays)] for i in range(start, start + batch)]

@pipeline_def(batch_size=batch, num_threads=workers, device_id=None, prefetch_queue_depth=2)
def pipe():
    raw = fn.external_source(source=source, batch=True, dtype=types.UINT8)
    if chain == "train":
        img = fn.decoders.image_random_crop(raw, device="cpu", output_type=types.RGB, random_area=[0.08, 1.0])
        img = fn.resize(img, resize_x=224, resize_y=224)
        img = fn.color_twist(img, brightness=fn.random.uniform(range=[0.6, 1.4]),
                             contrast=fn.random.uniform(range=[0.6, 1.4]),
                             saturation=fn.random.uniform(range=[0.6, 1.4]))
        return fn.crop_mirror_normalize(img, dtype=types.FLOAT, output_layout="CHW", mean=MEAN, std=STD,
                                        mirror=fn.random.coin_flip())
    img = fn.decoders.image(raw, device="cpu", output_type=types.RGB)
    img = fn.resize(img, resize_shorter=256)
    return fn.crop_mirror_normalize(img, dtype=types.FLOAT, output_layout="CHW", crop=(224, 224), mean=MEAN,
                                    std=STD)

p = pipe()
p.build()
timed(len(p.run()[0]) for _ in range(images // batch))
"""

FFCV = TIMER + BLOB + r"""
# FFCV reads its own .beton file of the same photos (its writer re-encodes them as JPEG at quality 90);
# its image pipelines have no colour jitter: the train chain is its RandomResizedCrop decoder, flip, normalise.
# A first pass over the file compiles the loader (numba) and is not timed.
import os
import cv2
import torch
from ffcv.fields import IntField, RGBImageField
from ffcv.fields.decoders import CenterCropRGBImageDecoder, IntDecoder, RandomResizedCropRGBImageDecoder
from ffcv.loader import Loader, OrderOption
from ffcv.transforms import NormalizeImage, RandomHorizontalFlip, ToTensor, ToTorchImage
from ffcv.writer import DatasetWriter
beton = data_path + ".beton"
if not os.path.exists(beton):
    class Photos:
        def __len__(self):
            return len(jpegs)
        def __getitem__(self, i):
            return cv2.imdecode(np.frombuffer(jpegs[i], np.uint8), cv2.IMREAD_COLOR_RGB), i % 1000
    DatasetWriter(beton, {"image": RGBImageField(write_mode="jpg", jpeg_quality=90), "label": IntField()},
                  num_workers=1).from_indexed_dataset(Photos())
MEAN, STD = np.array([123.675, 116.28, 103.53]), np.array([58.395, 57.12, 57.375])
if chain == "train":
    decoder = [RandomResizedCropRGBImageDecoder((224, 224), scale=(0.08, 1.0)), RandomHorizontalFlip()]
else:
    decoder = [CenterCropRGBImageDecoder((224, 224), ratio=224 / 256)]
image = decoder + [NormalizeImage(MEAN, STD, np.float32), ToTensor(), ToTorchImage()]
loader = Loader(beton, batch_size=batch, num_workers=workers, order=OrderOption.SEQUENTIAL, drop_last=True,
                pipelines={"image": image, "label": [IntDecoder(), ToTensor()]})
for _ in loader:                    # a first pass compiles the pipeline (numba): not timed
    pass
timed(len(images_) for images_, _ in loader)
"""

DECODE_LIMIT = TIMER + r"""
# libjpeg-turbo decoding only each image's crop box (the chain's own boxes), at the fastest scale M/8 that
# keeps the box at least the output's size (libjpeg-turbo's SIMD IDCT is 1/1, 1/2, 1/4, 1/8; its other
# scales are slower here than 8/8), and nothing else: no resampling, no augmentation, no pipeline.
import numpy as np
from recordio import MindDataset
from recordio.keys import op_scope, row_scope
from recordio.vision import RandomCropDecodeResize, _jpeg
from recordio.vision.decode import image_size
rows = MindDataset(data_path, columns_list=["image"], shuffle=False)
jpegs = [np.ascontiguousarray(row["image"]).tobytes() for row in rows.create_dict_iterator(output_numpy=True)]
crop = RandomCropDecodeResize(224, scale=(0.08, 1.0))

def box(i, data):
    h, w = image_size(np.frombuffer(data, np.uint8))
    if chain == "train":
        with row_scope(0, 0, i), op_scope(1):
            return crop.region(h, w)[0]
    side = int(224 * min(h, w) / 256)
    return (h - side) // 2, (w - side) // 2, side, side

def eighths(bh, bw):
    return [m for m in (8, 4, 2, 1) if bh * m >= 224 * 8 and bw * m >= 224 * 8] or [8]

calls = []
for i in range(images):
    data = jpegs[i % len(jpegs)]
    y, x, bh, bw = box(i, data)
    m = min(eighths(bh, bw))
    calls.append((data, y * m // 8, x * m // 8, max(1, bh * m // 8), max(1, bw * m // 8), m))

def batches():
    for start in range(0, images - batch + 1, batch):
        for i in range(start, start + batch):
            assert _jpeg.decode_box(*calls[i]) is not None
        yield batch

timed(batches())
"""

SCRIPTS = {"recordio": RECORDIO, "mindspore": MINDSPORE, "torchvision": TORCHVISION, "dali": DALI, "ffcv": FFCV,
           "decode limit": DECODE_LIMIT}
