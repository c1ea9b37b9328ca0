#!/usr/bin/env python3
"""nvImageCodec's decode on the JPEG engines alone (HW_GPU_ONLY, load hint 1)
with each of its chroma upsampling options: images/s at one batch size, and
how far each image is from Pillow's decode (libjpeg-turbo, fancy upsampling),
on the baseline colour JPEGs of bench.gpu's corpus split. It shows what
DALI's jpeg_fancy_upsampling (off by default) trades.

    PYTHONPATH=DALI_SITE python3 -m bench.upsampling --corpus .bench/gpu/corpus --batch 256

Needs nvidia-nvimgcodec, torch (to synchronise the device), NumPy and Pillow.
"""

import argparse
import pathlib

from bench import common

# nvImageCodec's decoder options: its default, then each value of the
# nvJPEG extension's fancy_upsampling.
OPTIONS = {"default": "", "fancy_upsampling=1": ":fancy_upsampling=1", "fancy_upsampling=0": ":fancy_upsampling=0"}


def distance(got, want):
    """(mean |diff|, max |diff|) of two uint8 arrays of one shape."""
    d = abs(got.astype("int16") - want.astype("int16"))
    return float(d.mean()), int(d.max())


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", default=str(common.CORPUS), help="the photo corpus (default: %(default)s)")
    ap.add_argument("--gpu", type=int, default=0)
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--seconds", type=float, default=2)
    args = ap.parse_args()

    import numpy as np
    import torch
    from nvidia import nvimgcodec
    from PIL import Image

    files = [p for p in common.mix_files(pathlib.Path(args.corpus)) if common.classify(p) == "baseline colour"]
    datas = [p.read_bytes() for p in files]
    pillow = [np.asarray(Image.open(p).convert("RGB")) for p in files]  # as stored: no EXIF rotation
    params = nvimgcodec.DecodeParams(apply_exif_orientation=False)
    print(f"{len(files)} baseline colour JPEGs, batch {args.batch}; {common.utc_now()}; {common.gpu_info()}; "
          f"nvImageCodec {getattr(nvimgcodec, '__version__', '?')}\n\nCommand: `{common.command_line()}`\n")
    print(common.md_row(["option", "img/s", "median mean |diff| from Pillow", "worst mean", "worst max", "not compared"]))
    print(common.md_rule(6), flush=True)
    for name, opt in OPTIONS.items():
        dec = nvimgcodec.Decoder(device_id=args.gpu, options=opt,
                                 backends=[nvimgcodec.Backend(nvimgcodec.BackendKind.HW_GPU_ONLY, load_hint=1.0)])
        dists, skipped = [], 0
        for im, want, p in zip(dec.decode(datas, params=params), pillow, files):
            got = None if im is None else np.asarray(im.cpu())
            if got is None or got.shape != want.shape:
                skipped += 1
                continue
            dists.append((*distance(got, want), p.name))

        def run(batch):
            dec.decode(batch, params=params)
            torch.cuda.synchronize(args.gpu)

        batches = common.batches_of(datas, args.batch)
        for _ in range(3):  # warm-up: the decoder sizes its buffers
            run(next(batches))
        rate = common.timed(run, batches, args.seconds)["images_per_sec"]
        cells = ["–", "–", "–"]
        if dists:
            dists.sort()
            cells = [f"{dists[len(dists) // 2][0]:.3f}", f"{dists[-1][0]:.3f} ({dists[-1][2]})",
                     str(max(d[1] for d in dists))]
        print(common.md_row([f"`{opt or name}`", f"{rate:,.0f}", *cells, str(skipped)]), flush=True)

if __name__ == "__main__":
    main()
