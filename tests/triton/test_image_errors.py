"""image_errors "mark", against the real server over HTTP and gRPC: a
BYTES [3, 1] request with one broken image succeeds, the good images'
outputs equal their single-image answers, the broken one's are zeros, and
IMAGE_OK / IMAGE_ERROR say which failed and why. The default mode still
fails the whole request.
"""

import numpy as np
import pytest

from tests.triton.helpers import InferenceServerException, bytes_input, grpcclient, httpclient, infer, synthetic_jpeg

MARK = "image_errors_mark"
DEFAULT = "image_errors_default"


def bytes_config(name, params):
    # No outputs: auto-complete adds PIXELS, and with "mark" IMAGE_OK and
    # IMAGE_ERROR.
    lines = [
        f'name: "{name}"',
        'backend: "sluice"',
        "max_batch_size: 8",
        'input [ { name: "IMAGE", data_type: TYPE_STRING, dims: [ 1 ] } ]',
        "dynamic_batching { max_queue_delay_microseconds: 2000 }",
        "instance_group [ { kind: KIND_CPU, count: 1 } ]",
    ]
    lines += [f'parameters {{ key: "{k}" value {{ string_value: "{v}" }} }}' for k, v in params.items()]
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="module")
def models(sluice_models):
    s = sluice_models
    for name, params in ((MARK, {"image_errors": "mark"}), (DEFAULT, {})):
        s.add_model(name, bytes_config(name, params))
        s.http.load_model(name)
    yield s
    for name in (MARK, DEFAULT):
        s.http.unload_model(name)


def images():
    a, b = synthetic_jpeg(320, 240), synthetic_jpeg(97, 131)
    broken = bytes(a[: len(a) // 2])
    return [bytes(a), broken, bytes(b)]


@pytest.mark.parametrize("mod", [httpclient, grpcclient], ids=["http", "grpc"])
def test_mark_answers_good_images(models, mod):
    s = models
    client = s.http if mod is httpclient else s.grpc
    imgs = images()
    got = infer(client, mod, MARK, [bytes_input(mod, imgs)], ("PIXELS", "IMAGE_OK", "IMAGE_ERROR"))
    assert got["IMAGE_OK"].shape == (3, 1) and got["IMAGE_OK"].dtype == np.bool_
    assert got["IMAGE_OK"].ravel().tolist() == [True, False, True]
    errors = [e.decode() if isinstance(e, bytes) else e for e in got["IMAGE_ERROR"].ravel()]
    assert errors[0] == "" and errors[2] == ""
    assert errors[1].startswith("IMAGE element 1: truncated"), errors[1]
    pixels = got["PIXELS"]
    assert pixels.shape == (3, 3, 224, 224)
    for k in (0, 2):
        alone = infer(client, mod, MARK, [bytes_input(mod, [imgs[k]])])["PIXELS"]
        assert np.array_equal(pixels[k], alone[0]), f"image {k} differs from its single-image answer"
        assert np.any(alone[0] != 0)
    assert not np.any(pixels[1]), "the broken image's output is not zeros"

    # The default mode fails the request with the same cause text.
    with pytest.raises(InferenceServerException) as e:
        infer(client, mod, DEFAULT, [bytes_input(mod, imgs)])
    assert "IMAGE element 1: truncated" in str(e.value)


def test_mark_config_has_the_outputs(models):
    cfg = models.http.get_model_config(MARK)
    outs = {o["name"]: o for o in cfg["output"]}
    assert outs["IMAGE_OK"]["data_type"] == "TYPE_BOOL" and outs["IMAGE_OK"]["dims"] == [1]
    assert outs["IMAGE_ERROR"]["data_type"] == "TYPE_STRING"
    assert "IMAGE_OK" not in {o["name"] for o in models.http.get_model_config(DEFAULT)["output"]}
