"""The ONNX file of docs/tensorrt.md's route, made and checked: the ResNet-50 of
the GPU ensemble checks (resnet50.network(SEED): torchvision's architecture, the
same random weights) exported with torch.onnx.export, then run by ONNX Runtime
on the CPU against PyTorch's FP32 output.

  python3 tests/gpu_triton/resnet_onnx.py [-o resnet50.onnx] [--corpus DIR]
      [--input PIXELS] [--output SCORES] [--opset 18] [--max-batch 256]

Needs torch, torchvision, onnx, onnxscript and onnxruntime (all on the GPU
machine's image; on a CPU: pip install torch torchvision onnx onnxscript
onnxruntime pillow). The input is float32 [N, 3, 224, 224] (--input, PIXELS: the
name Sluice's ImageNet pipeline gives its output), the output float32 [N, 1000]
(--output, SCORES: the name ensemble_imagenet maps), N dynamic from 1 to
--max-batch. The check runs batches of 1 and 3: random tensors, and with
--corpus the first photos of DIR through torchvision's preprocessing (the
pipeline's sizes). It fails when ONNX Runtime's logits are off PyTorch's by more
than ONNX_TOL of the reference's spread (max |difference| over the 1000 logits /
their standard deviation, per image; both FP32, so only the order of the sums
differs). Prints the file's size, sha256, opset and the trtexec line for it.
"""
import argparse
import glob
import hashlib
import os
import sys
import time

try:
    from . import resnet50
except ImportError:  # run by path
    import resnet50

ONNX_TOL = 1e-4
PIPELINE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "model_repository",
                        "preprocess_imagenet", "1", "pipeline.pbtxt")


def export(net, path, inp, out, opset, max_batch):
    import torch

    x = torch.zeros((2, 3, 224, 224))
    batch = torch.export.Dim("N", min=1, max=max_batch)
    torch.onnx.export(net, (x,), path, input_names=[inp], output_names=[out], opset_version=opset,
                      dynamic_shapes=({0: batch},), dynamo=True, external_data=False)


def inputs(corpus):
    """[(name, FP32 [N, 3, 224, 224] numpy)]: random batches of 1 and 3, and photos."""
    import numpy as np
    import torch

    g = torch.Generator().manual_seed(resnet50.SEED)
    out = [("random x1", torch.randn((1, 3, 224, 224), generator=g).numpy()),
           ("random x3", torch.randn((3, 3, 224, 224), generator=g).numpy())]
    if corpus:
        files = sorted(f for f in glob.glob(os.path.join(corpus, "*.jp*g")))[:3]
        if files:
            tf = resnet50.reference_transform(PIPELINE)
            out.append((f"{len(files)} photos of {corpus}",
                        np.stack([tf(resnet50.open_rgb(f)).numpy() for f in files])))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-o", "--out", default="resnet50.onnx")
    ap.add_argument("--corpus", help="a folder of JPEGs: its first three go through the check too")
    ap.add_argument("--input", default="PIXELS")
    ap.add_argument("--output", default="SCORES")
    ap.add_argument("--opset", type=int, default=18)
    ap.add_argument("--max-batch", type=int, default=256)
    a = ap.parse_args()

    import numpy as np
    import onnx
    import onnxruntime as ort
    import torch

    t0 = time.time()
    net = resnet50.network()
    export(net, a.out, a.input, a.output, a.opset, a.max_batch)
    model = onnx.load(a.out)
    onnx.checker.check_model(model)
    dims = lambda v: [d.dim_param or d.dim_value for d in v.type.tensor_type.shape.dim]  # noqa: E731
    ins = {i.name: dims(i) for i in model.graph.input}
    outs = {o.name: dims(o) for o in model.graph.output}
    opset = max(o.version for o in model.opset_import if o.domain in ("", "ai.onnx"))
    data = open(a.out, "rb").read()
    print(f"{a.out}: {len(data) / 2**20:.1f} MiB, sha256 {hashlib.sha256(data).hexdigest()}, opset {opset}, "
          f"inputs {ins}, outputs {outs}, torch {torch.__version__}, onnx {onnx.__version__}, "
          f"exported in {time.time() - t0:.0f} s")
    if list(ins) != [a.input] or list(outs) != [a.output] or ins[a.input][1:] != [3, 224, 224] \
            or outs[a.output][1:] != [1000] or isinstance(ins[a.input][0], int):
        print("FAIL: not the inputs and outputs asked for (a dynamic first dimension)")
        return 1

    sess = ort.InferenceSession(a.out, providers=["CPUExecutionProvider"])
    worst, ok = 0.0, True
    with torch.inference_mode():
        for name, x in inputs(a.corpus):
            ref = net(torch.from_numpy(x)).numpy()
            got = sess.run([a.output], {a.input: x})[0]
            err = float((np.abs(got - ref).max(axis=1) / ref.std(axis=1)).max())
            same = bool((np.argsort(-got, 1)[:, :5] == np.argsort(-ref, 1)[:, :5]).all())
            worst = max(worst, err)
            ok &= err <= ONNX_TOL and got.shape == ref.shape
            print(f"  {name}: shape {list(got.shape)}, max |ORT - torch| {err:.2e} of the spread, top-5 same: {same}")
    print(f"{'PASS' if ok else 'FAIL'} ONNX Runtime {ort.__version__} (CPU) against PyTorch FP32: worst {worst:.2e} "
          f"of the spread (limit {ONNX_TOL:g})")
    print(f"trtexec --onnx={a.out} --saveEngine=model.plan --fp16 --minShapes={a.input}:1x3x224x224 "
          f"--optShapes={a.input}:64x3x224x224 --maxShapes={a.input}:{a.max_batch}x3x224x224")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
