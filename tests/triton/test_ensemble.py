"""ensemble_imagenet end to end: Sluice preprocessing, then the classifier
(model_repository/classifier: an untrained convolutional network, random
weights with a fixed seed, run by ONNX Runtime in the python backend), in
one request. Its scores must be ONNX Runtime's, run here on the classifier's
own model.onnx, over the reference preprocessing of the photo (Pillow's
resize and crop, tests/formats.py, normalized in NumPy): within float32
rounding, the same top 5. And the example networks' files must be what
scripts/onnx_models.py writes, byte for byte."""

import subprocess
import sys

import numpy as np

from tests import formats
from tests.helpers import ROOT, pil_rgb
from tests.triton.helpers import (
    PROTOCOLS,
    GrpcBurst,
    client_of,
    grpcclient,
    infer,
    infer_one,
    onnx_session,
    read_bytes,
    truncated,
    uint8_input,
)

ENSEMBLE = "ensemble_imagenet"
# The served network and the one run here see the same pixels but may run
# other batch sizes, and Sluice's normalize rounds apart from NumPy's by up
# to 2 ulp (tests/test_accuracy.py): float32 rounding, nothing more.
RTOL, ATOL = 1e-4, 1e-7
NETWORK_FOLDERS = ("classifier", "classifier_crops", "detector")


def reference_pixels(path):
    """preprocess_imagenet's PIXELS as the references make them: torchvision's
    Resize(256) + CenterCrop(224) in Pillow (no EXIF rotation, as
    PIL.Image.open), ToTensor and Normalize in float32 NumPy."""
    crop = formats.imagenet_crop(pil_rgb(path, orient=False))
    return ((crop.astype(np.float32) / 255 - formats.MEAN) / formats.STD).transpose(2, 0, 1)


def top5(scores):
    return list(np.argsort(-scores, kind="stable")[:5])


def check_scores(got, want, where):
    np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL, err_msg=where)
    assert top5(got) == top5(want), f"{where}: top 5 {top5(got)}, ONNX Runtime's {top5(want)}"
    return float(np.abs(got - want).max())


def test_ensemble_equals_onnx_runtime_on_reference(sluice_server, photos):
    """Each photo alone, over both protocols: the ensemble's SCORES are the
    classifier network's own on the reference preprocessing. The photos'
    scores differ from each other by far more than the served ones from
    those, so a request answered with another photo's scores would fail."""
    session = onnx_session(sluice_server.repo, "classifier")
    images = photos.jpeg()[:6] + photos.png()[:3]
    wants, worst = [], 0.0
    for p in images:
        want = session.run(["SCORES"], {"PIXELS": reference_pixels(p)[None]})[0][0]
        wants.append(want)
        for proto, _ in PROTOCOLS:
            client, mod = client_of(sluice_server, proto)
            got = infer_one(client, mod, ENSEMBLE, p, outputs=("SCORES",))["SCORES"]
            assert got.shape == (1, 1000) and got.dtype == np.float32, got.shape
            np.testing.assert_allclose(got.sum(), 1.0, rtol=1e-5)  # softmax
            worst = max(worst, check_scores(got[0], want, f"{p.name} over {proto}"))
    apart = min(np.abs(a - b).max() for i, a in enumerate(wants) for b in wants[:i])
    assert apart > 100 * max(worst, ATOL), f"two photos score alike: {apart}, served vs ONNX Runtime {worst}"
    print(f"\n{len(images)} photos: max |served - ONNX Runtime| {worst:.2e}; photos apart by >= {apart:.2e}")


def test_ensemble_batches(sluice_server, photos):
    """Several photos in one request (UINT8 [n, N], zero-padded), and
    concurrent requests that the classifier's dynamic batcher may run as one
    batch: each row is its own photo's scores."""
    session = onnx_session(sluice_server.repo, "classifier")
    images = photos.jpeg()[:5]
    want = session.run(["SCORES"], {"PIXELS": np.stack([reference_pixels(p) for p in images])})[0]
    data = [read_bytes(p) for p in images]
    padded = np.zeros((len(data), max(len(d) for d in data)), np.uint8)
    for i, d in enumerate(data):
        padded[i, : len(d)] = d
    for proto, mod in PROTOCOLS:
        client, _ = client_of(sluice_server, proto)
        got = infer(client, mod, ENSEMBLE, [uint8_input(mod, padded)], outputs=("SCORES",))["SCORES"]
        for i, p in enumerate(images):
            check_scores(got[i], want[i], f"{p.name}, row {i} of a request over {proto}")
    burst = GrpcBurst(sluice_server.grpc)
    results = burst.run(ENSEMBLE, [[uint8_input(grpcclient, d)] for d in data * 2], outputs=("SCORES",))
    for i, (result, error) in enumerate(results):
        assert error is None, error
        check_scores(result.as_numpy("SCORES")[0], want[i % len(images)], f"concurrent request {i}")


def test_ensemble_passes_errors_through(sluice_server, photos):
    """A broken image fails its ensemble request with Sluice's message."""
    bad = truncated(photos.jpeg()[0])
    for proto, mod in PROTOCOLS:
        client, _ = client_of(sluice_server, proto)
        try:
            infer_one(client, mod, ENSEMBLE, bad, outputs=("SCORES",))
        except Exception as e:  # noqa: BLE001 (InferenceServerException)
            assert "truncated" in str(e), str(e)
        else:
            raise AssertionError("a truncated image went through the ensemble")
    assert sluice_server.http.is_model_ready(ENSEMBLE)


def test_networks_are_what_the_generator_writes(tmp_path):
    """model_repository's model.onnx files, written by an earlier run of
    scripts/onnx_models.py (make triton rewrites stale ones), are what a
    run writes now, byte for byte."""
    subprocess.run([sys.executable, str(ROOT / "scripts" / "onnx_models.py"), str(tmp_path)], check=True, timeout=300)
    for m in NETWORK_FOLDERS:
        f = f"{m}/1/model.onnx"
        assert (ROOT / "model_repository" / f).read_bytes() == (tmp_path / f).read_bytes(), (
            f"model_repository/{f} differs from what scripts/onnx_models.py writes: make triton"
        )


def test_runner_copies_are_equal():
    """The network models carry the same 1/model.py (a folder must stand
    alone), and it stays one program."""
    texts = {m: (ROOT / "model_repository" / m / "1" / "model.py").read_text() for m in NETWORK_FOLDERS}
    assert len(set(texts.values())) == 1, f"the model.py copies differ: {sorted(texts)}"
