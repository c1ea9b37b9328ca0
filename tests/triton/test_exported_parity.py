"""Models exported by python/sluice_export from transformers' own Pillow image
processors, served by the real tritonserver: over HTTP and gRPC, every photo of
jpeg/derived and of png/ answers with what the processor itself computes
(pixel_values), to float rounding.

  exported_clip  CLIPImageProcessorPil's defaults through the Python API
                 (export_transformers + write_model): shortest edge 224 bicubic,
                 crop 224 at (H - h) // 2 (crop rounding "floor"), convert_rgb
                 onto white (decode background), OpenAI CLIP mean/std
  exported_vit   ViTImageProcessorPil's preprocessor_config.json, as
                 save_pretrained writes it, through the CLI (python -m
                 sluice_export export --transformers ...): 224x224 bilinear,
                 mean/std 0.5

Each request carries the input the exported config.pbtxt declares, read back
from the server's config. A burst of concurrent gRPC requests also goes through
the dynamic batcher, so batched executions answer the same.

Needs transformers (tests/triton/requirements.txt) and sluice_export (`make
triton` installs ./python) in the venv that runs these tests; no torch.
"""

import subprocess
import sys

import numpy as np
import pytest
from PIL import Image

try:
    import transformers
    from sluice_export import export_transformers, write_model
except ImportError as e:  # a clear failure, not a skip: make test-triton installs both
    raise ImportError(
        f"{e}: `make triton` installs transformers (tests/triton/requirements.txt) and "
        "sluice_export (pip install ./python) into .venv-triton"
    ) from e

from tests.triton.helpers import PROTOCOLS, GrpcBurst, bytes_input, client_of, grpcclient, infer, read_bytes, uint8_input

# Normalized units; one 0-255 level is 1 / 255 / std, at least 0.0078 here:
# this is float rounding, far below a level.
ATOL = 2e-5
CLIP, VIT = "exported_clip", "exported_vit"


def photos_of(corpus):
    """jpeg/derived (colour and grey, every chroma layout, progressive,
    restart markers) and png/ (palette, interlaced, RGBA, 16-bit RGB), less
    16-bit grey PNGs: Pillow opens them as I;16 and its convert("RGB"), which
    transformers calls, clips every sample to 255, where sluice's decode keeps
    the high byte (python/tests/helpers.not_16bit_grey)."""
    keep = []
    for p in sorted(corpus.files("jpeg/derived/")) + sorted(corpus.files("png/")):
        with Image.open(p) as im:
            if im.mode not in ("I", "I;16", "I;16B", "I;16L"):
                keep.append(p)
    return keep


@pytest.fixture(scope="module")
def exported(sluice_models, corpus, tmp_path_factory):
    """The two exported models loaded; {model: (processor, photos it accepts)}."""
    s = sluice_models
    clip = transformers.CLIPImageProcessorPil()
    text = export_transformers(clip.to_dict(), backend="pil").text()
    assert 'name: "rounding" str: "floor"' in text and 'name: "background"' in text, text
    write_model(export_transformers(clip.to_dict(), backend="pil"), s.repo / CLIP)

    vit = transformers.ViTImageProcessorPil()
    cfg_dir = tmp_path_factory.mktemp("vit-config")
    vit.save_pretrained(cfg_dir)
    proc = subprocess.run(
        [sys.executable, "-m", "sluice_export", "export", "--transformers", str(cfg_dir / "preprocessor_config.json"),
         "--transformers-backend", "pil", "-o", str(s.repo / VIT)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr

    models = {}
    photos = photos_of(corpus)
    for name, p in ((CLIP, clip), (VIT, vit)):
        s.http.load_model(name)
        accepted = photos
        if not p.do_convert_rgb:
            # Without convert_rgb transformers keeps a grey, palette or RGBA
            # photo's channels and normalize's three means refuse it: no
            # reference for those (sluice, decoding to RGB, answers them).
            others = [f for f in photos if Image.open(f).mode != "RGB"]
            for f in others:
                with Image.open(f) as im, pytest.raises(ValueError):
                    p(im, return_tensors="np")
            accepted = [f for f in photos if f not in others]
        models[name] = (p, accepted)
    yield s, models
    for name in models:
        s.http.unload_model(name)


def reference(proc, path):
    with Image.open(path) as im:
        return np.asarray(proc(im, return_tensors="np")["pixel_values"][0], dtype=np.float64)


def io_of(server, model):
    """(make_input(mod, path), output name) from the model's config as the
    server reports it: path's bytes as the input that config declares (the
    exporter writes UINT8 [-1]; a BYTES input would take them as one element)."""
    cfg = server.http.get_model_config(model)
    (inp,) = cfg["input"]
    (out,) = cfg["output"]
    assert inp["data_type"] in ("TYPE_UINT8", "TYPE_STRING"), inp

    def make_input(mod, path):
        data = read_bytes(path)
        if inp["data_type"] == "TYPE_UINT8":
            return uint8_input(mod, data, inp["name"])
        return bytes_input(mod, [data.tobytes()], inp["name"])

    return make_input, out["name"]


def check(model, proc, path, got, worst):
    want = reference(proc, path)
    assert got.shape == (1, *want.shape), (path.name, got.shape, want.shape)
    d = float(np.abs(got[0].astype(np.float64) - want).max())
    assert d <= ATOL, f"{model} {path.name}: max diff {d} > {ATOL}"
    return max(worst, d)


@pytest.mark.parametrize("model", [CLIP, VIT])
@pytest.mark.parametrize("proto", [p for p, _ in PROTOCOLS])
def test_exported_equals_transformers(exported, model, proto, capsys):
    s, models = exported
    proc, photos = models[model]
    client, mod = client_of(s, proto)
    make_input, out = io_of(s, model)
    worst = 0.0
    for p in photos:
        got = infer(client, mod, model, [make_input(mod, p)], (out,))[out]
        worst = check(model, proc, p, got, worst)
    with capsys.disabled():
        print(f"\n{model} over {proto}: {len(photos)} photos, max abs diff {worst:.3g}")
    assert len(photos) >= 50


def test_exported_batched_equals_transformers(exported, capsys):
    """All photos at once over gRPC: the dynamic batcher puts several
    (ragged) images in one execution; each answer is still the processor's."""
    s, models = exported
    proc, photos = models[CLIP]
    make_input, out = io_of(s, CLIP)

    def counts():
        st = s.grpc.get_inference_statistics(CLIP, as_json=True)["model_stats"][0]
        return int(st.get("execution_count", 0)), int(st.get("inference_count", 0))

    before = counts()
    results = GrpcBurst(s.grpc).run(CLIP, [[make_input(grpcclient, p)] for p in photos], outputs=(out,))
    worst = 0.0
    for p, (res, err) in zip(photos, results):
        assert err is None, f"{p.name}: {err}"
        worst = check(CLIP, proc, p, res.as_numpy(out), worst)
    after = counts()
    execs, infers = after[0] - before[0], after[1] - before[1]
    assert infers == len(photos)
    with capsys.disabled():
        # How many executions the batcher made of them depends on timing: not asserted.
        print(f"\n{CLIP} burst over grpc: {len(photos)} photos in {execs} executions, max abs diff {worst:.3g}")
