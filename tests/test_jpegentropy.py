"""bench/jpegentropy's own progressive decoder (progressive.c) against
libjpeg-turbo: `jpegentropy ours` refuses to time any file whose DCT
coefficients differ from jpeg_read_coefficients', so a run over Pillow's
progressive JPEGs (colour 4:2:0 and 4:4:4, greyscale, sizes that leave
partial blocks and MCUs) passing says they are identical, and a baseline
JPEG, which the decoder does not take, must fail the run."""

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
    src = sorted(str(p) for p in (ROOT / "bench" / "jpegentropy").glob("*.c"))
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


def test_a_file_it_does_not_take_fails_the_run(jpegentropy, tmp_path):
    good = write(tmp_path / "progressive.jpg", photo(64, 48, "RGB"), quality=85, progressive=True)
    baseline = write(tmp_path / "baseline.jpg", photo(64, 48, "RGB"), quality=85)
    r = subprocess.run([str(jpegentropy), "ours", "1", "0.1", str(good), str(baseline)], capture_output=True, text=True)
    assert r.returncode == 1
    assert "baseline.jpg: progressive.c's coefficients are not libjpeg-turbo's" in r.stderr
