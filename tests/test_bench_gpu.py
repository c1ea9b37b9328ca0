"""bench.gpu's fast-upsampling pipeline (the shipped ImageNet pipeline with
decode's jpeg_fancy_upsampling false, which the compiler accepts) and
bench.upsampling's distance from Pillow."""

import subprocess

import pytest

from bench import common


def test_fast_upsampling_pipeline_sets_the_argument_once(tmp_path):
    out = common.fast_upsampling_pipeline(common.ROOT / common.IMAGENET_PIPELINE, tmp_path)
    code = "\n".join(line.split("#")[0] for line in out.read_text().splitlines())
    assert code.count('arg { name: "jpeg_fancy_upsampling" bool: false }') == 1
    assert out.parent == tmp_path
    if not common.SLUICE.exists():
        pytest.skip(f"no sluice binary at {common.SLUICE}")
    r = subprocess.run([str(common.SLUICE), "validate", str(out)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def test_fast_upsampling_pipeline_wants_one_decode(tmp_path):
    p = tmp_path / "two.pbtxt"
    p.write_text('version: 1 node { op: "decode" } node { op: "decode" }')
    with pytest.raises(ValueError, match="2 decode nodes"):
        common.fast_upsampling_pipeline(p, tmp_path)


def test_upsampling_distance():
    np = pytest.importorskip("numpy")
    from bench import upsampling

    a = np.array([[0, 10], [255, 7]], np.uint8)
    b = np.array([[3, 10], [0, 7]], np.uint8)
    assert upsampling.distance(a, b) == ((3 + 255) / 4, 255)
    assert upsampling.distance(a, a) == (0.0, 0)
