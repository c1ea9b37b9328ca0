"""The ResNet-50 ensemble against torchvision (scripts/gpu_triton.sh run with
GT_RESNET=1 writes the models; without them this skips):

  ensemble_resnet50_<k>_bytes = preprocess_<k>_bytes (Sluice, the shipped ImageNet
  pipeline) -> resnet50_<k> (Python backend: torchvision's ResNet-50, random
  weights from resnet50.SEED, FP16 and CUDA graphs on a GPU)

For every corpus file Pillow opens as an 8-bit image (readable), sent in
requests of CHUNK (so that batches run padded to a larger CUDA graph, and
unpadded):

  - LOGITS equal the FP32 network (the same weights, rebuilt here from the seed
    the config names, its digest checked against the config's) over torchvision's
    own preprocessing of the file (resnet50.reference_transform: PIL, resize of
    the shorter side, bilinear with antialias, centre crop, normalize; the sizes
    read off the pipeline) within resnet50.LOGIT_TOL of the reference's spread;
    and the same against the FP32 network over Sluice's own PIXELS (the network's
    error alone)
  - top-5: the served top-5 holds every reference top-5 class that leads the
    reference's 6th by more than twice the tolerance, and no class that trails
    the reference's 5th by more than that (where the margins exceed the
    tolerance the sets are equal)
  - on a GPU: every request's PIXELS reached the network in GPU memory (its
    ON_GPU output, from the input tensor's is_cpu()), Sluice counted no
    cross-device copy of them (sluice_gpu_cross_device_copies_total unchanged),
    and its decoded-images counter grew

Results, per file, in --out as resnet.json; a summary line per kind.
"""
import json
import os
import time

import numpy as np
import pytest

from . import resnet50 as rn
from . import triton_client as tc

CHUNK = 12  # images per request: a graph of 16 runs it with 4 rows of padding
DECODED, COPIES = "sluice_gpu_decoded_images_total", "sluice_gpu_cross_device_copies_total"
PIPELINE = os.path.join(os.path.dirname(__file__), "..", "..", "model_repository", "preprocess_imagenet", "1",
                        "pipeline.pbtxt")
LEVELS = np.array([0.229, 0.224, 0.225], np.float32).reshape(3, 1, 1) * 255  # PIXELS units to levels of 255


def top5_agrees(ref, got, tol):
    """Whether got's top-5 set agrees with ref's where the margins exceed tol
    (absolute); and whether the two sets are equal."""
    order = np.argsort(-ref)
    v5, v6 = ref[order[4]], ref[order[5]]
    must = {int(c) for c in order[:5] if ref[c] - v6 > 2 * tol}
    may = {int(c) for c in np.nonzero(ref >= v5 - 2 * tol)[0]}
    top = {int(c) for c in np.argsort(-got)[:5]}
    return must <= top <= may, top == {int(c) for c in order[:5]}


def readable(files):
    """The files Pillow opens (torchvision's reader) as 8-bit images, and the
    others, each with why. A 16-bit grey image is left out: Pillow's
    convert("RGB") clips its samples to 255 where Sluice keeps the high byte
    (docs/deploy.md; docs/pipelines.md's parity leaves them out too)."""
    from PIL import Image

    ok, other = [], []
    for f in files:
        try:
            with Image.open(f) as im:
                im.load()
                mode = im.mode
        except Exception as e:
            other.append(f"{os.path.basename(f)}: {type(e).__name__}")
            continue
        if mode.startswith(("I", "F")):
            other.append(f"{os.path.basename(f)}: mode {mode}")
        else:
            ok.append(f)
    return ok, other


@pytest.mark.parametrize("kind", ["gpu", "cpu"])
def test_resnet_matches_torchvision(opts, conn, files, kind, say):
    ens, pre, net_name = f"ensemble_resnet50_{kind}_bytes", f"preprocess_{kind}_bytes", f"resnet50_{kind}"
    index = {e["name"]: e for e in tc.repository_index(opts.http)}
    if ens not in index:
        pytest.skip(f"no {ens} in the repository (scripts/gpu_triton.sh run writes it with GT_RESNET=1)")
    if os.environ.get("GT_FAST_UPSAMPLING") == "1":
        pytest.skip("GT_FAST_UPSAMPLING serves a pipeline that replicates JPEG chroma: not torchvision's preprocessing")
    down = [f"{m}: {index.get(m, {}).get('state')} {index.get(m, {}).get('reason', '')}"
            for m in (ens, pre, net_name) if not tc.ready(opts.http, m)]
    assert not down, f"not ready: {down}"

    import torch

    params = {k: v["string_value"] for k, v in tc.model_config(opts.http, net_name)["parameters"].items()}
    net = rn.network(int(params["seed"]))
    assert rn.digest(net.state_dict()) == params["weights_digest"], \
        f"the network rebuilt from seed {params['seed']} is not the served one (digest)"
    dev = torch.device("cuda" if kind == "gpu" and torch.cuda.is_available() else "cpu")
    # The reference in true FP32: no TF32 in cuDNN's convolutions or cuBLAS.
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    net32 = net.to(dev)
    net16 = rn.network(int(params["seed"])).to(dev, torch.float16) if dev.type == "cuda" else None
    transform = rn.reference_transform(PIPELINE)

    use, skipped = readable(files)
    assert use, f"no file in {opts.corpus} that Pillow opens"
    cp0 = sum(tc.series(opts.metrics, COPIES, pre).values())
    dec0 = sum(tc.series(opts.metrics, DECODED, pre).values())
    rows, flags = [], []
    with torch.inference_mode():
        for i in range(0, len(use), CHUNK):
            part = use[i:i + CHUNK]
            blobs = [open(f, "rb").read() for f in part]
            got = tc.http_infer(conn, ens, None, ["LOGITS", "ON_GPU"], tc.bytes_body(blobs, ["LOGITS", "ON_GPU"]))
            pix = tc.http_infer(conn, pre, None, ["PIXELS"], tc.bytes_body(blobs, ["PIXELS"]))["PIXELS"]
            flags += [int(v) for v in got["ON_GPU"].reshape(-1)]
            tv = torch.stack([transform(rn.open_rgb(f)) for f in part])
            ref = net32(tv.to(dev)).float().cpu().numpy()
            ref_sl = net32(torch.from_numpy(np.array(pix)).to(dev)).float().cpu().numpy()
            ref16 = net16(tv.to(dev, torch.float16)).float().cpu().numpy() if net16 is not None else None
            for j, f in enumerate(part):
                s = float(ref[j].std())
                e = got["LOGITS"][j].astype(np.float32)
                dpix = np.abs(pix[j] - tv[j].numpy()) * LEVELS
                agree, equal = top5_agrees(ref[j], e, rn.LOGIT_TOL * s)
                rows.append({
                    "file": os.path.basename(f), "logit_std": s,
                    "err": float(np.abs(e - ref[j]).max() / s),
                    "err_network": float(np.abs(e - ref_sl[j]).max() / s),
                    "err_fp16_eager": None if ref16 is None else float(np.abs(ref16[j] - ref[j]).max() / s),
                    "pixels_mean_levels": float(dpix.mean()), "pixels_max_levels": float(dpix.max()),
                    "top5_agrees": agree, "top5_equal": equal,
                    "top5": [int(c) for c in np.argsort(-e)[:5]], "top5_ref": [int(c) for c in np.argsort(-ref[j])[:5]],
                })
    time.sleep(1)  # Sluice records its metrics after the responses
    cp1 = sum(tc.series(opts.metrics, COPIES, pre).values())
    dec1 = sum(tc.series(opts.metrics, DECODED, pre).values())

    worst = {k: max(r[k] for r in rows) for k in ("err", "err_network", "pixels_mean_levels", "pixels_max_levels")}
    fp16 = [r["err_fp16_eager"] for r in rows if r["err_fp16_eager"] is not None]
    summary = {
        "kind": kind, "files": len(rows), "left_out": skipped, "tolerance": rn.LOGIT_TOL,
        "worst": worst, "worst_fp16_eager": max(fp16) if fp16 else None,
        "top5_equal": sum(r["top5_equal"] for r in rows), "on_gpu_flags": sorted(set(flags)),
        "cross_device_copies": cp1 - cp0, "decoded_on_gpu": dec1 - dec0, "seed": params["seed"],
        "graphs": params.get("cuda_graph_batch_sizes"),
    }
    if opts.out:
        os.makedirs(opts.out, exist_ok=True)
        with open(os.path.join(opts.out, f"resnet_{kind}.json"), "w") as fh:
            json.dump({"summary": summary, "files": rows}, fh, indent=1)
    say(f"RESULT resnet {kind}: {len(rows)} files (requests of {CHUNK}); logits vs FP32 over torchvision's "
        f"preprocessing worst {worst['err']:.4f} of the spread, vs FP32 over Sluice's PIXELS "
        f"{worst['err_network']:.4f}, FP16 eager vs FP32 {summary['worst_fp16_eager']} (tolerance {rn.LOGIT_TOL}); "
        f"PIXELS vs torchvision worst mean {worst['pixels_mean_levels']:.3f}, max {worst['pixels_max_levels']:.1f} "
        f"levels; top-5 sets equal for {summary['top5_equal']}/{len(rows)}; ON_GPU {summary['on_gpu_flags']}; "
        f"cross-device copies +{cp1 - cp0:g}, GPU-decoded +{dec1 - dec0:g}"
        + (f"; left out {len(skipped)}: {skipped[:6]}" if skipped else ""))

    bad = [r["file"] for r in rows if r["err"] > rn.LOGIT_TOL or r["err_network"] > rn.LOGIT_TOL]
    assert not bad, f"logits off by more than {rn.LOGIT_TOL} of the spread: {bad[:8]}"
    off = [(r["file"], r["top5"], r["top5_ref"]) for r in rows if not r["top5_agrees"]]
    assert not off, f"top-5 disagrees past the margins: {off[:4]}"
    if fp16:
        assert max(fp16) <= rn.LOGIT_TOL, f"the FP16 network alone is off by {max(fp16):.4f}: the tolerance is wrong"
    if kind == "gpu":
        assert summary["on_gpu_flags"] == [1], f"PIXELS reached resnet50_gpu in host memory: ON_GPU {flags}"
        assert cp1 == cp0, f"{COPIES} of {pre} grew by {cp1 - cp0}"
        assert dec1 > dec0, f"{DECODED} of {pre} did not grow: the GPU did not decode"
