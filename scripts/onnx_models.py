#!/usr/bin/env python3
"""The ONNX networks behind model_repository's example ensembles, written
with onnx's helper API from weights drawn with a fixed seed. They are real
convolutional networks, run by ONNX Runtime in Triton's python backend, but
UNTRAINED: their answers are deterministic numbers, not meaningful classes
or objects. They are small (about 8 and 13 MFLOPs an image), so that the
CPU tests stay fast. Their filters are made zero-mean and the classifier's
last layer sparse, so that the answers vary from photo to photo, as a test
that tells a photo's answer from another's needs.

  classifier/1/model.onnx        PIXELS FP32 [N, 3, 224, 224] -> SCORES FP32 [N, 1000]
      four conv + batch norm + ReLU layers (8, 16, 32, 64 channels; a 4x4
      stride-4 stem, then 3x3 stride 2), global average pool, a 64 x 1000
      fully connected layer, softmax
  classifier_crops/1/model.onnx  CROPS FP32 [N, 8, 3, 224, 224] -> SCORES FP32 [N, 8, 1000]
      the same network, the same weights, over each crop; an all-zero crop
      (a row preprocess_crops left unused) scores zeros
  detector/1/model.onnx          PIXELS FP32 [N, 3, 640, 640], OFFSET FP32 [N, 2]
                                 -> BOXES FP32 [N, 8, 4], COUNT INT32 [N, 1]
      preprocess_letterbox's canvas and padding in; a 4x4 average pool and
      four conv + batch norm + ReLU layers (8, 16, 32, 32 channels, 3x3
      stride 2) to a 10x10 grid of 64-pixel cells, a 1x1 head giving each
      cell a box (centre offset in the cell, width and height up to 320
      pixels) and a score: how far the cell's logit stands above the mean of
      the photo's cells (a cell centred in the padding scores 0). The 8 best
      cells in score order are the boxes; those scoring over 0.5 are
      counted, the rest are NaN rows, as detectors pad. Boxes are x1, y1, x2, y2 relative to the photo: the
      canvas less its padding (OFFSET on each side) is the photo, and each
      box is clipped to it and kept at least 1/64 wide and high, so that
      preprocess_crops never gets an empty one.

  python3 scripts/onnx_models.py [--if-stale] [REPO]     (REPO: model_repository)

The weights come from NumPy's legacy RandomState (its streams are frozen)
through exact float operations, and the opset and IR version are fixed, so
the bytes do not depend on the NumPy or onnx version that writes them: the
container image writes its own copies, equal to a checkout's. Each file
records the SHA-256 of this script; --if-stale writes only the files that
are missing or come from another version of it (scripts/triton.sh runs it so
before installing or starting a server). Files are replaced atomically, so
a server loading them never reads half of one.
"""

import argparse
import hashlib
import math
import os
import pathlib
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17
IR_VERSION = 8  # ONNX Runtime 1.14 and later read it
CLASSES = 1000
MAX_BOXES = 8  # preprocess_crops' boxes input: FP32 [8, 4]
CANVAS = 640  # preprocess_letterbox's size
CELL = 64  # the detector's grid: 10x10 cells of the canvas
MAX_SIDE = 320  # largest box side, in canvas pixels
MIN_SIDE = 1 / 64  # smallest box side, relative to the photo
SCORE_THRESHOLD = 0.5
SCORE_GAIN = 16.0  # a cell's score: sigmoid(GAIN * (its logit - the photo's mean) + BIAS)
SCORE_BIAS = -3.5
CLASSIFIER_SEED = 0
DETECTOR_SEED = 1

HERE = pathlib.Path(__file__).resolve()
DEFAULT_REPO = HERE.parent.parent / "model_repository"
FILES = ("classifier/1/model.onnx", "classifier_crops/1/model.onnx", "detector/1/model.onnx")


def generator_sha256():
    return hashlib.sha256(HERE.read_bytes()).hexdigest()


# ------------------------------------------------------------------ weights


class Weights:
    """Weights drawn uniformly from a seeded legacy RandomState; uniform
    doubles scaled by exact operations, so every NumPy draws the same."""

    def __init__(self, seed):
        self.rs = np.random.RandomState(seed)

    def uniform(self, shape, low, high):
        u = self.rs.random_sample(shape)
        return (low + (high - low) * u).astype(np.float32)

    def conv(self, cout, cin, k):
        """He-uniform filters made zero-mean: they answer edges and texture,
        not plain brightness, so what the network computes varies with the
        image instead of with its overall level alone."""
        bound = math.sqrt(6.0 / (cin * k * k))
        w = self.uniform((cout, cin, k, k), -bound, bound).astype(np.float64)
        # math.fsum: a correctly rounded mean, the same under any NumPy.
        mean = np.array([math.fsum(f.ravel()) / f.size for f in w])
        return (w - mean[:, None, None, None]).astype(np.float32)

    def batch_norm(self, c):
        """scale, bias, running mean, running variance: as a trained layer
        would carry them, in plausible ranges."""
        return (
            self.uniform((c,), 0.8, 1.2),
            self.uniform((c,), -0.1, 0.3),
            self.uniform((c,), -0.1, 0.1),
            self.uniform((c,), 0.5, 1.5),
        )


def classifier_weights():
    w = Weights(CLASSIFIER_SEED)
    layers = []
    for cin, cout, k in ((3, 8, 4), (8, 16, 3), (16, 32, 3), (32, 64, 3)):
        layers.append((w.conv(cout, cin, k), w.batch_norm(cout)))
    # The last layer's biases are lowered so that only strong responses
    # pass its ReLU: the pooled features then tell photos apart, and the
    # fully connected layer's scale spreads the logits, so that the top
    # classes of a photo stand well apart.
    scale, bias, mean, var = layers[-1][1]
    layers[-1] = (layers[-1][0], (scale, bias - np.float32(1), mean, var))
    fc = w.uniform((64, CLASSES), -10, 10)
    fc_bias = w.uniform((CLASSES,), -0.5, 0.5)
    return layers, fc, fc_bias


def detector_weights():
    w = Weights(DETECTOR_SEED)
    layers = []
    for cin, cout in ((3, 8), (8, 16), (16, 32), (32, 32)):
        layers.append((w.conv(cout, cin, 3), w.batch_norm(cout)))
    head = w.conv(5, 32, 1)
    head_bias = w.uniform((5,), -0.5, 0.5)
    return layers, head, head_bias


# ------------------------------------------------------------------ graphs


class Graph:
    """Nodes and initializers of one ONNX graph, with generated names."""

    def __init__(self):
        self.nodes, self.inits, self.n = [], [], 0

    def name(self, hint):
        self.n += 1
        return f"{hint}_{self.n}"

    def const(self, array, hint="c"):
        name = self.name(hint)
        self.inits.append(numpy_helper.from_array(np.asarray(array), name))
        return name

    def op(self, op_type, *inputs, outputs=1, **attrs):
        names = [self.name(op_type.lower()) for _ in range(outputs)]
        self.nodes.append(helper.make_node(op_type, list(inputs), names, **attrs))
        return names[0] if outputs == 1 else names

    def f32(self, v):
        return self.const(np.array(v, np.float32))

    def i64(self, v):
        return self.const(np.array(v, np.int64))

    def conv_bn_relu(self, x, w, bn, stride, pad):
        y = self.op("Conv", x, self.const(w, "w"), kernel_shape=list(w.shape[2:]), strides=[stride, stride],
                    pads=[pad] * 4)  # fmt: skip
        y = self.op("BatchNormalization", y, *(self.const(p, "bn") for p in bn), epsilon=1e-5)
        return self.op("Relu", y)

    def model(self, name, doc, inputs, outputs):
        graph = helper.make_graph(self.nodes, name, inputs, outputs, self.inits)
        m = helper.make_model(
            graph,
            opset_imports=[helper.make_opsetid("", OPSET)],
            ir_version=IR_VERSION,
            producer_name="sluice scripts/onnx_models.py",
            doc_string=doc,
        )
        props = {"generator_sha256": generator_sha256(), "weights": "random, fixed seed; not trained"}
        helper.set_model_props(m, props)
        onnx.checker.check_model(m, full_check=True)
        return m


def classifier_body(g, x, weights):
    """PIXELS [M, 3, 224, 224] -> softmax scores [M, 1000]."""
    layers, fc, fc_bias = weights
    for i, (w, bn) in enumerate(layers):
        x = g.conv_bn_relu(x, w, bn, stride=4 if i == 0 else 2, pad=0 if i == 0 else 1)
    x = g.op("Flatten", g.op("GlobalAveragePool", x), axis=1)
    logits = g.op("Gemm", x, g.const(fc, "fc"), g.const(fc_bias, "fc_bias"))
    return g.op("Softmax", logits, axis=1)


def tensor(name, dtype, dims):
    return helper.make_tensor_value_info(name, dtype, dims)


def classifier():
    g = Graph()
    scores = classifier_body(g, "PIXELS", classifier_weights())
    g.nodes.append(helper.make_node("Identity", [scores], ["SCORES"]))
    return g.model(
        "classifier",
        "Untrained convolutional classifier (random weights, fixed seed): ImageNet-normalized PIXELS "
        "to softmax SCORES.",
        [tensor("PIXELS", TensorProto.FLOAT, ["N", 3, 224, 224])],
        [tensor("SCORES", TensorProto.FLOAT, ["N", CLASSES])],
    )


def classifier_crops():
    g = Graph()
    flat = g.op("Reshape", "CROPS", g.i64([-1, 3, 224, 224]))
    scores = g.op("Reshape", classifier_body(g, flat, classifier_weights()), g.i64([-1, MAX_BOXES, CLASSES]))
    # An unused row of preprocess_crops is all zeros: it scores zeros.
    used = g.op("Greater", g.op("ReduceMax", g.op("Abs", "CROPS"), axes=[2, 3, 4], keepdims=0), g.f32(0))
    g.nodes.append(helper.make_node("Where", [g.op("Unsqueeze", used, g.i64([2])), scores, g.f32(0)], ["SCORES"]))
    return g.model(
        "classifier_crops",
        "The classifier's network and weights over each of a photo's crops; all-zero crops score zeros.",
        [tensor("CROPS", TensorProto.FLOAT, ["N", MAX_BOXES, 3, 224, 224])],
        [tensor("SCORES", TensorProto.FLOAT, ["N", MAX_BOXES, CLASSES])],
    )


def detector():
    g = Graph()
    layers, head, head_bias = detector_weights()
    x = g.op("AveragePool", "PIXELS", kernel_shape=[4, 4], strides=[4, 4])
    for w, bn in layers:
        x = g.conv_bn_relu(x, w, bn, stride=2, pad=1)
    x = g.op("Conv", x, g.const(head, "head"), g.const(head_bias, "head_bias"), kernel_shape=[1, 1])
    cells = (CANVAS // CELL) ** 2
    x = g.op("Transpose", g.op("Reshape", x, g.i64([0, 5, cells])), perm=[0, 2, 1])  # [N, cells, 5]
    tx, ty, tw, th, ts = g.op("Split", x, g.i64([1] * 5), axis=2, outputs=5)  # each [N, cells, 1]

    # Box corners in canvas pixels.
    col, row = np.meshgrid(np.arange(CANVAS // CELL), np.arange(CANVAS // CELL))
    cx = g.op("Mul", g.op("Add", g.op("Sigmoid", tx), g.f32(col.reshape(1, cells, 1))), g.f32(CELL))
    cy = g.op("Mul", g.op("Add", g.op("Sigmoid", ty), g.f32(row.reshape(1, cells, 1))), g.f32(CELL))
    half_w = g.op("Mul", g.op("Sigmoid", tw), g.f32(MAX_SIDE / 2))
    half_h = g.op("Mul", g.op("Sigmoid", th), g.f32(MAX_SIDE / 2))

    # Relative to the photo: the canvas less OFFSET's padding on each side.
    off_x, off_y = g.op("Split", "OFFSET", g.i64([1, 1]), axis=1, outputs=2)  # each [N, 1]
    ox, oy = (g.op("Unsqueeze", o, g.i64([2])) for o in (off_x, off_y))

    def relative(v, off):
        side = g.op("Sub", g.f32(CANVAS), g.op("Mul", off, g.f32(2)))
        return g.op("Div", g.op("Sub", v, off), side)

    def clipped(lo, hi):
        lo = g.op("Clip", lo, g.f32(0), g.f32(1 - MIN_SIDE))
        return lo, g.op("Min", g.op("Max", hi, g.op("Add", lo, g.f32(MIN_SIDE))), g.f32(1))

    x1, x2 = clipped(relative(g.op("Sub", cx, half_w), ox), relative(g.op("Add", cx, half_w), ox))
    y1, y2 = clipped(relative(g.op("Sub", cy, half_h), oy), relative(g.op("Add", cy, half_h), oy))
    boxes = g.op("Concat", x1, y1, x2, y2, axis=2)  # [N, cells, 4]

    # A cell's score is how far its logit stands above the mean of the
    # photo's cells: what stands out of a photo is found, whatever its
    # overall level. A cell whose centre lies in the padding scores 0.
    ts = g.op("Squeeze", ts, g.i64([2]))  # [N, cells]
    ts = g.op("Sub", ts, g.op("ReduceMean", ts, axes=[1], keepdims=1))
    score = g.op("Sigmoid", g.op("Add", g.op("Mul", ts, g.f32(SCORE_GAIN)), g.f32(SCORE_BIAS)))

    def inside(centre, off):
        far = g.op("Sub", g.f32(CANVAS), off)
        return g.op("And", g.op("Greater", centre, off), g.op("Less", centre, far))

    centre_x = g.f32(((col + 0.5) * CELL).reshape(1, cells))
    centre_y = g.f32(((row + 0.5) * CELL).reshape(1, cells))
    score = g.op("Where", g.op("And", inside(centre_x, off_x), inside(centre_y, off_y)), score, g.f32(0))
    best, index = g.op("TopK", score, g.i64([MAX_BOXES]), axis=1, largest=1, sorted=1, outputs=2)
    index = g.op("Tile", g.op("Unsqueeze", index, g.i64([2])), g.i64([1, 1, 4]))
    picked = g.op("GatherElements", boxes, index, axis=1)  # [N, 8, 4]
    kept = g.op("Greater", best, g.f32(SCORE_THRESHOLD))
    count = g.op("ReduceSum", g.op("Cast", kept, to=TensorProto.INT32), g.i64([1]), keepdims=1)
    g.nodes.append(helper.make_node("Identity", [count], ["COUNT"]))
    g.nodes.append(
        helper.make_node("Where", [g.op("Unsqueeze", kept, g.i64([2])), picked, g.f32(np.nan)], ["BOXES"])
    )
    return g.model(
        "detector",
        "Untrained convolutional detector (random weights, fixed seed): a letterboxed canvas to up to 8 boxes "
        "relative to the photo (x1, y1, x2, y2; NaN rows unused) and their count.",
        [tensor("PIXELS", TensorProto.FLOAT, ["N", 3, CANVAS, CANVAS]), tensor("OFFSET", TensorProto.FLOAT, ["N", 2])],
        [tensor("BOXES", TensorProto.FLOAT, ["N", MAX_BOXES, 4]), tensor("COUNT", TensorProto.INT32, ["N", 1])],
    )


BUILDERS = dict(zip(FILES, (classifier, classifier_crops, detector)))


# ------------------------------------------------------------------ files


def stale(path, sha):
    try:
        return sha.encode() not in path.read_bytes()
    except FileNotFoundError:
        return True


def write_atomically(path, data):
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".model.onnx.")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("repo", nargs="?", type=pathlib.Path, default=DEFAULT_REPO, help="model repository")
    ap.add_argument("--if-stale", action="store_true", help="write only missing files and those of another version")
    args = ap.parse_args(argv)
    sha = generator_sha256()
    todo = [f for f in FILES if not args.if_stale or stale(args.repo / f, sha)]
    for f in todo:
        write_atomically(args.repo / f, BUILDERS[f]().SerializeToString())
    if todo:
        print(f"onnx_models.py: wrote {', '.join(todo)} in {args.repo}", file=sys.stderr)


if __name__ == "__main__":
    main()
