"""The server's own JPEG entropy decoder (codec/jpegcoef.c) against
libjpeg-turbo, through bench/jpegentropy: `jpegentropy ours` refuses to
time any file whose DCT coefficients or quantisation tables differ from
jpeg_read_coefficients', so a run over Pillow's
progressive JPEGs (colour 4:2:0 and 4:4:4, greyscale, sizes that leave
partial blocks and MCUs) and baseline ones passing says they are
identical, and a file it refuses must fail the run."""

import io
import shutil
import subprocess

import pytest
from PIL import Image

from tests.helpers import ROOT

PIC = ROOT / "build" / "pic"

if not shutil.which("cc") or not (PIC / "lib" / "libturbojpeg.a").exists():
    pytest.skip("needs a C compiler and build/pic (make pic-libs)", allow_module_level=True)


@pytest.fixture(scope="module")
def jpegentropy(tmp_path_factory):
    out = tmp_path_factory.mktemp("jpegentropy") / "jpegentropy"
    src = [str(ROOT / "bench" / "jpegentropy" / "main.c"), *sorted(str(p) for p in (ROOT / "codec").glob("jpegcoef*.c"))]
    subprocess.run(["cc", "-O2", "-Wall", "-Werror", "-I", str(PIC / "include"), "-o", str(out), *src,
                    str(PIC / "lib" / "libturbojpeg.a"), "-lpthread"], check=True)
    return out


def photo(w, h, mode):
    """A w x h image with edges and noise, so every scan has work."""
    img = Image.effect_noise((w, h), 40).convert("L")
    grad = Image.linear_gradient("L").resize((w, h))
    bands = [Image.blend(img, grad, a) for a in (0.3, 0.6, 0.8)]
    rgb = Image.merge("RGB", bands)
    return rgb if mode == "RGB" else rgb.convert("L")


def write(path, img, **opts):
    buf = io.BytesIO()
    img.save(buf, "JPEG", **opts)
    path.write_bytes(buf.getvalue())
    return path


def test_progressive_coefficients_match_libjpeg(jpegentropy, tmp_path):
    files = []
    for w, h in [(333, 250), (17, 9), (640, 480), (250, 333)]:
        files.append(write(tmp_path / f"c420_{w}x{h}.jpg", photo(w, h, "RGB"), quality=85, progressive=True, subsampling=2))
        files.append(write(tmp_path / f"c444_{w}x{h}.jpg", photo(w, h, "RGB"), quality=95, progressive=True, subsampling=0))
        files.append(write(tmp_path / f"grey_{w}x{h}.jpg", photo(w, h, "L"), quality=80, progressive=True))
    r = subprocess.run([str(jpegentropy), "ours", "1", "0.2", *map(str, files)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert f"ours: {len(files)} files" in r.stdout


def test_baseline_coefficients_match_libjpeg(jpegentropy, tmp_path):
    files = [write(tmp_path / f"b{sub}_{w}x{h}.jpg", photo(w, h, "RGB"), quality=90, subsampling=sub)
             for w, h in [(333, 250), (17, 9)] for sub in (0, 1, 2)]
    files.append(write(tmp_path / "grey.jpg", photo(101, 77, "L"), quality=80))
    r = subprocess.run([str(jpegentropy), "ours", "1", "0.2", *map(str, files)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def test_a_file_it_does_not_take_fails_the_run(jpegentropy, tmp_path):
    """A cut file: libjpeg reads its coefficients (zeros where the data
    ends, with a warning), codec/jpegcoef.c refuses it."""
    good = write(tmp_path / "progressive.jpg", photo(64, 48, "RGB"), quality=85, progressive=True)
    data = good.read_bytes()
    cut = tmp_path / "cut.jpg"
    cut.write_bytes(data[: len(data) * 2 // 3])
    r = subprocess.run([str(jpegentropy), "ours", "1", "0.1", str(good), str(cut)], capture_output=True, text=True)
    assert r.returncode == 1
    assert "cut.jpg: codec/jpegcoef.c's coefficients are not libjpeg-turbo's" in r.stderr
