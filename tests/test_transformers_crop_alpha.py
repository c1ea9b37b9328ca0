"""crop's rounding "floor" and decode's background, against the libraries
they copy: transformers' own Pillow image processors (CLIPImageProcessorPil,
ConvNextImageProcessorPil: resize, (H - h) // 2 centre crop, convert_to_rgb)
on corpus photos, and Pillow's Image.alpha_composite on RGBA images of every
format sluice decodes with alpha, from the corpus and made here with Pillow.

transformers is optional here (its Pillow processors need numpy and Pillow
only, no torch); without it the processor tests skip."""

import re

import numpy as np
import pytest
from PIL import Image, features

from tests import formats
from tests.helpers import ROOT, run_grouped

# Corpus photos for the processors: colour and grey JPEGs of many sizes,
# EXIF-tagged ones (transformers, like Pillow's open, ignores the tag), and
# the PNGs (palette, 16-bit, RGBA).
PHOTO_KINDS = ("jpeg/native", "jpeg/large", "jpeg/large-odd-size", "jpeg/exif-orientation", "png/native", "png/derived")

# Float rounding only: the bound is far below one 0-255 level, which is
# 1 / 255 / std, about 0.015 here.
FLOAT_BOUND = 1e-4


def not_16bit_grey(paths):
    """paths less 16-bit grey PNGs: Pillow opens them as mode I;16 and its
    convert("RGB") and convert("RGBA"), which transformers calls, clip
    values to 255, where sluice's decode keeps the high byte (the codec's
    rule for 16-bit samples): a decode difference, not this test's."""
    return [p for p in paths if Image.open(p).mode not in ("I", "I;16", "I;16B")]


def photos(corpus):
    return not_16bit_grey(sorted(corpus / p for p, k in corpus.entries if k in PHOTO_KINDS))


def processor_pipeline(shorter, crop, mean, std, rounding):
    return f"""
    version: 1
    input {{ name: "IMAGE" }}
    node {{ op: "decode" arg {{ name: "orient" bool: false }}
            arg {{ name: "background" ints {{ v: [255, 255, 255] }} }} }}
    node {{ op: "resize" arg {{ name: "shorter" int: {shorter} }} arg {{ name: "interp" str: "cubic" }} }}
    node {{ op: "crop" arg {{ name: "size" ints {{ v: [{crop}, {crop}] }} }}
            arg {{ name: "rounding" str: "{rounding}" }} }}
    node {{
      op: "normalize"
      arg {{ name: "scale" float: 0.00392156862745098 }}
      arg {{ name: "mean" floats {{ v: {mean} }} }}
      arg {{ name: "std" floats {{ v: {std} }} }}
    }}
    output {{ name: "PIXELS" dtype: "FP32" dims: [3, {crop}, {crop}] }}
    """


def docs_pipeline(name):
    """The pbtxt block of docs/pipelines.md whose pipeline is named name."""
    for block in re.findall(r"\n```pbtxt\n(.*?)\n```\n", (ROOT / "docs/pipelines.md").read_text(), re.S):
        if f'name: "{name}"' in block:
            return block
    raise AssertionError(f"docs/pipelines.md has no pipeline {name}")


def processors():
    tf = pytest.importorskip("transformers")
    if not hasattr(tf, "CLIPImageProcessorPil"):
        pytest.skip(f"transformers {tf.__version__} has no *Pil image processors (5.x names them so)")
    return {
        # Its defaults: shortest edge 224, bicubic, crop 224, convert_to_rgb.
        # The guide's own example for it.
        "clip": (tf.CLIPImageProcessorPil(), "clip_transformers"),
        # shortest_edge 224 with crop_pct 224/256: resize to 256, crop 224;
        # convert_to_rgb asked for, so that grey and RGBA files give RGB.
        "convnext": (
            tf.ConvNextImageProcessorPil(size={"shortest_edge": 224}, do_convert_rgb=True),
            dict(shorter=256, crop=224, mean=[0.5] * 3, std=[0.5] * 3),
        ),
    }


@pytest.mark.parametrize("name", ["clip", "convnext"])
def test_processor_centre_crop(sluice, corpus, name):
    proc, spec = processors()[name]
    paths = photos(corpus)
    want = {str(p): proc(Image.open(p), return_tensors="np")["pixel_values"][0] for p in paths}
    res = {}
    for rounding in ("floor", "half_even"):
        if isinstance(spec, str):
            text = docs_pipeline(spec).replace('str: "floor"', f'str: "{rounding}"')
        else:
            text = processor_pipeline(**spec, rounding=rounding)
        res[rounding], _ = sluice.run(text, paths)
    worst, shifted = 0.0, []
    for p in paths:
        w = want[str(p)]
        got = res["floor"][str(p)]["PIXELS"]
        assert got.shape == w.shape, p
        d = float(np.abs(got - w).max())
        worst = max(worst, d)
        assert d <= FLOAT_BOUND, f"{p.name}: max {d} from {name}'s processor with rounding floor"
        if np.abs(res["half_even"][str(p)]["PIXELS"] - w).max() > FLOAT_BOUND:
            shifted.append(p.name)
    print(f"{name}: {len(paths)} photos, max {worst:.2e} with floor; half_even off on {len(shifted)}: {shifted}")
    # The corpus has odd margins that round differently: without them
    # this test would not tell the rules apart.
    assert shifted, "no photo where torchvision's rounding differs from transformers'"


# --- background ----------------------------------------------------------


def pillow_flat(path, bg, mode="RGB"):
    """The reference: transformers' convert_to_rgb with any background."""
    im = Image.open(path).convert("RGBA")
    out = Image.alpha_composite(Image.new("RGBA", im.size, tuple(bg)), im).convert("RGB")
    return np.asarray(out.convert(mode) if mode != "RGB" else out)


def flat_pipeline(h, w, bg, color="RGB"):
    return f"""
    version: 1
    input {{ name: "IMAGE" }}
    node {{ op: "decode" arg {{ name: "color" str: "{color}" }} arg {{ name: "orient" bool: false }}
            arg {{ name: "background" ints {{ v: [{bg[0]}, {bg[1]}, {bg[2]}] }} }} }}
    node {{ op: "crop" arg {{ name: "roi" ints {{ v: [0, 0, {h}, {w}] }} }} }}
    output {{ name: "PIXELS" }}
    """


def alpha_files(corpus, folder):
    """{name: path}: semi-transparent images in every format and PNG layout
    with alpha that sluice decodes, written by Pillow (BMP partly by the
    writers of tests/formats.py)."""
    rgba = formats.alpha_photo(corpus)  # alpha 0..255 across the width
    files = {}

    def save(name, im, ext, **kw):
        p = folder / f"{name}.{ext}"
        im.save(p, **kw)
        files[name] = p

    save("png_rgba", rgba, "png")
    save("png_la", rgba.convert("LA"), "png")
    save("png_p_alpha", rgba.quantize(64), "png")  # palette with a tRNS alpha per entry
    rgb = rgba.convert("RGB")
    save("png_rgb_trns", rgb, "png", transparency=rgb.getpixel((5, 5)))
    gray = rgba.convert("L")
    save("png_l_trns", gray, "png", transparency=gray.getpixel((5, 5)))
    save("webp_lossless", rgba, "webp", lossless=True)
    save("webp_lossy", rgba, "webp", quality=80)
    save("tiff_rgba", rgba, "tiff")
    save("tiff_rgba_deflate", rgba, "tiff", compression="tiff_adobe_deflate")
    if features.check("avif"):
        save("avif_rgba", rgba, "avif", quality=90)
    bmps = formats.bmp_variants(corpus, folder)
    for name in ("pil_rgba32", "bgra32_v4", "bgra32_v5_topdown", "rgba32_v5"):
        files["bmp_" + name] = bmps[name]
    return files


def image_size(p):
    im = Image.open(p)
    return (im.height, im.width)


@pytest.mark.parametrize("bg", [(255, 255, 255), (114, 7, 200)])
def test_background_vs_pillow(sluice, corpus, tmp_path, bg):
    files = alpha_files(corpus, tmp_path)
    paths = list(files.values()) + not_16bit_grey(sorted((corpus / "png").glob("*.png")))
    res = run_grouped(sluice, paths, lambda h, w: flat_pipeline(h, w, bg), image_size)
    for p in paths:
        want = pillow_flat(p, bg)
        got = res[str(p)]["PIXELS"]
        d = np.abs(got.astype(int) - want.astype(int))
        print(f"{p.name} on {bg}: max {d.max()}")
        np.testing.assert_array_equal(got, want, err_msg=f"{p.name} on {bg}")
    # The synthetic files really are semi-transparent: flattening changed them.
    opaque = Image.open(files["png_rgba"]).convert("RGB")
    assert (np.asarray(opaque) != pillow_flat(files["png_rgba"], bg)).any()


def test_background_gray_bgr(sluice, corpus, tmp_path):
    """The flattened image in the other colours: BGR, and GRAY as Pillow's
    convert("L") of the flattened RGB."""
    p = alpha_files(corpus, tmp_path)["png_rgba"]
    h, w = image_size(p)
    bg = (30, 160, 250)
    for color, want in [("BGR", pillow_flat(p, bg)[:, :, ::-1]), ("GRAY", pillow_flat(p, bg, "L")[:, :, None])]:
        res, _ = sluice.run(flat_pipeline(h, w, bg, color), [p])
        np.testing.assert_array_equal(res[str(p)]["PIXELS"], want, err_msg=color)


def test_background_is_convert_to_rgb(sluice, corpus, tmp_path):
    """With white, decode's background is transformers' own convert_to_rgb."""
    tf_transforms = pytest.importorskip("transformers.image_transforms")
    files = alpha_files(corpus, tmp_path)
    paths = [files[n] for n in ("png_rgba", "png_la", "png_p_alpha", "png_rgb_trns", "webp_lossless")]
    res = run_grouped(sluice, paths, lambda h, w: flat_pipeline(h, w, (255, 255, 255)), image_size)
    for p in paths:
        want = tf_transforms.convert_to_rgb(Image.open(p), return_numpy=True)
        np.testing.assert_array_equal(res[str(p)]["PIXELS"], want, err_msg=p.name)


@pytest.mark.parametrize(
    "args, words",
    [
        ('arg { name: "color" str: "RGBA" } arg { name: "background" ints { v: [255, 255, 255] } }', "color RGBA"),
        ('arg { name: "color" str: "BGRA" } arg { name: "background" ints { v: [255, 255, 255] } }', "color BGRA"),
        ('arg { name: "background" ints { v: [256, 0, 0] } }', "out of range"),
        ('arg { name: "background" ints { v: [255, 255] } }', "background"),
    ],
)
def test_background_refused(sluice, corpus, args, words):
    text = f"""
    version: 1
    input {{ name: "IMAGE" }}
    node {{ op: "decode" {args} }}
    node {{ op: "crop" arg {{ name: "roi" ints {{ v: [0, 0, 4, 4] }} }} }}
    output {{ name: "PIXELS" }}
    """
    _, proc = sluice.run(text, [corpus / "png/skimage_coins.png"], expect_ok=False)
    assert proc.returncode != 0
    assert "background" in proc.stderr and words in proc.stderr, proc.stderr
