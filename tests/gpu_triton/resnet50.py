"""The ResNet-50 of the GPU ensemble checks, in one place: the network (torchvision's
architecture, random weights from a fixed seed), its weights file and digest, and
the reference preprocessing (torchvision's, read off the Sluice pipeline it must
equal). Imported by the model writer and the checks here (resnet_e2e.py,
test_resnet.py, resnet_onnx.py), and copied beside the Python backend's model.py,
which imports it from there: its functions import torch, torchvision and PIL
when called.

The weights are random, from torchvision's own initialisation after
torch.manual_seed(SEED): no trained weights can be fetched on the GPU machine.
Such a network is a poor classifier (a few classes lead for most photos) but a
fair test of the serving path: its logits differ from photo to photo by about a
quarter of their spread within one photo, so a wrong row, channel order or
normalisation moves them far past FP16's error, and its activations (at most a
few hundred) are well inside FP16's range.
"""
import hashlib
import re

SEED = 51
WEIGHTS = f"resnet50_seed{SEED}.pt"

# Served logits against the FP32 network over torchvision's preprocessing, per
# photo: max |difference| over the 1000 logits divided by their standard
# deviation in the reference. Measured on 8 corpus photos with this network (CPU):
# FP16 alone 0.002; one level of 255 added at random to every pixel 0.010; both
# 0.012. 0.03 leaves room for the GPU's JPEG decoding (IDCT rounding: mean 0.25,
# max 4 levels against the CPU, test_checks.py's (a)) and stays far below what a
# wrong weight, row, channel order or normalisation does (a quarter of the
# spread and more).
LOGIT_TOL = 0.03


def network(seed=SEED):
    """torchvision's resnet50(weights=None) in eval mode, its weights from seed
    (the caller's random state is left as it was)."""
    import torch
    import torchvision

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        net = torchvision.models.resnet50(weights=None)
    return net.eval()


def digest(state):
    """sha256 over every tensor of a state dict, in key order: the same network
    whatever the file's pickling."""
    import torch

    h = hashlib.sha256()
    for k in sorted(state):
        t = state[k].detach().to("cpu").contiguous()
        h.update(k.encode())
        h.update(str(tuple(t.shape)).encode())
        h.update(str(t.dtype).encode())
        if t.numel():
            h.update(t.reshape(-1).view(torch.uint8).numpy().tobytes())
    return h.hexdigest()


def save(path, seed=SEED):
    """Writes network(seed)'s weights to path; their digest."""
    import torch

    state = network(seed).state_dict()
    torch.save(state, path)
    return digest(state)


def load(path, want_digest):
    """torchvision's resnet50 with the weights of path, in eval mode, after
    checking their digest."""
    import torch
    import torchvision

    state = torch.load(path, map_location="cpu", weights_only=True)
    got = digest(state)
    if got != want_digest:
        raise ValueError(f"{path}: weights digest {got}, want {want_digest}")
    net = torchvision.models.resnet50(weights=None)
    net.load_state_dict(state)
    return net.eval()


def pipeline_sizes(pbtxt):
    """(shorter side, crop [h, w], mean, std) of a Sluice ImageNet pipeline, and
    checks that it is the shape torchvision's ImageClassification preset has:
    decode RGB without EXIF rotation, resize the shorter side (bilinear,
    antialiased), centre crop, normalize to CHW FP32."""
    text = open(pbtxt).read()
    body = re.sub(r"#[^\n]*", "", text)
    ops = re.findall(r'op:\s*"(\w+)"', body)
    if ops != ["decode", "resize", "crop", "normalize"]:
        raise ValueError(f"{pbtxt}: ops {ops}, not decode, resize, crop, normalize")

    def arg(name, kind):
        m = re.search(r'name:\s*"%s"\s*%s:\s*(\S+)' % (name, kind), body)
        return m.group(1) if m else None

    def floats(name):
        m = re.search(r'name:\s*"%s"\s*floats\s*\{\s*v:\s*\[([^\]]*)\]' % name, body)
        return [float(v) for v in m.group(1).split(",")]

    want = {("color", "str"): '"RGB"', ("orient", "bool"): "false", ("interp", "str"): '"linear"',
            ("antialias", "bool"): "true", ("layout", "str"): '"CHW"', ("dtype", "str"): '"FP32"'}
    for (name, kind), v in want.items():
        if arg(name, kind) != v:
            raise ValueError(f"{pbtxt}: {name} is {arg(name, kind)}, the reference assumes {v}")
    if abs(float(arg("scale", "float")) - 1 / 255) > 1e-9:
        raise ValueError(f"{pbtxt}: scale is not 1/255")
    crop = re.search(r'name:\s*"size"\s*ints\s*\{\s*v:\s*\[(\d+),\s*(\d+)\]', body)
    return int(arg("shorter", "int")), [int(crop.group(1)), int(crop.group(2))], floats("mean"), floats("std")


def reference_transform(pbtxt):
    """torchvision's ImageClassification preset (what ResNet50_Weights'
    transforms() returns: IMAGENET1K_V2's resizes to 232, IMAGENET1K_V1's to 256)
    with the pipeline's sizes, mean and std: PIL image in, FP32 [3, H, W] out."""
    from torchvision.transforms import InterpolationMode
    from torchvision.transforms._presets import ImageClassification

    shorter, crop, mean, std = pipeline_sizes(pbtxt)
    if crop[0] != crop[1]:
        raise ValueError(f"{pbtxt}: crop {crop} is not square")
    return ImageClassification(crop_size=crop[0], resize_size=shorter, mean=mean, std=std,
                               interpolation=InterpolationMode.BILINEAR, antialias=True)


def open_rgb(path):
    """The image as torchvision's default loader reads it (PIL, no EXIF
    rotation, converted to RGB)."""
    from PIL import Image

    with open(path, "rb") as f:
        return Image.open(f).convert("RGB")
