"""ensemble_imagenet end to end: Sluice preprocessing, then the stand-in
classifier (Python backend), in one request."""

import numpy as np

from tests.triton.helpers import grpcclient, httpclient, infer, infer_one, truncated


def test_ensemble_equals_its_steps(sluice_server, photos):
    images = photos.jpeg()[:4] + photos.png()[:2]
    for client, mod in ((sluice_server.grpc, grpcclient), (sluice_server.http, httpclient)):
        for p in images:
            scores = infer_one(client, mod, "ensemble_imagenet", p, outputs=("SCORES",))["SCORES"]
            assert scores.shape == (1, 1000) and scores.dtype == np.float32, scores.shape
            np.testing.assert_allclose(scores.sum(), 1.0, rtol=1e-5)
            assert (scores >= 0).all()
            # The same two steps called one by one.
            pixels = infer_one(client, mod, "preprocess_imagenet", p)["PIXELS"]
            t = mod.InferInput("PIXELS", list(pixels.shape), "FP32")
            t.set_data_from_numpy(pixels)
            want = infer(client, mod, "classifier", [t], outputs=("SCORES",))["SCORES"]
            # Same numbers; the classifier may see other batch sizes, so
            # allow float32 rounding.
            np.testing.assert_allclose(scores, want, rtol=1e-5, atol=1e-9, err_msg=p.name)


def test_ensemble_passes_errors_through(sluice_server, photos):
    """A broken image fails its ensemble request with Sluice's message."""
    bad = truncated(photos.jpeg()[0])
    for client, mod in ((sluice_server.grpc, grpcclient), (sluice_server.http, httpclient)):
        try:
            infer_one(client, mod, "ensemble_imagenet", bad, outputs=("SCORES",))
        except Exception as e:  # noqa: BLE001 (InferenceServerException)
            assert "truncated" in str(e), str(e)
        else:
            raise AssertionError("a truncated image went through the ensemble")
    assert sluice_server.http.is_model_ready("ensemble_imagenet")
