"""The builder's text, the model folder, and the CLI: checked by the real
compiler (`sluice validate`) where the binary has the arguments used."""

import subprocess
import sys

import pytest

from sluice_export import ExportError, Pipeline, export_timm, write_model
from sluice_export.__main__ import main
from helpers import REPO, sluice_bin, skip_unless_supported


def imagenet():
    p = Pipeline("t")
    p.decode(color="RGB", orient=False)
    p.resize(shorter=256, interp="linear")
    p.crop(size=224)
    p.normalize(scale=1 / 255, mean=[0.485, 0.456, 0.406], std=[0.229, 0.224, 0.225])
    return p


def test_text_validates(tmp_path):
    b = sluice_bin()
    p = imagenet()
    f = tmp_path / "p.pbtxt"
    f.write_text(p.text())
    r = subprocess.run([b, "validate", str(f)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "3, 224, 224" in r.stdout or "[3 224 224]" in r.stdout or "224" in r.stdout


def test_fast_upsampling_validates(tmp_path):
    p = Pipeline("t").decode(jpeg_fancy_upsampling=False).resize(shorter=256).crop(size=224).normalize(scale=1 / 255)
    assert 'arg { name: "jpeg_fancy_upsampling" bool: false }' in p.text()
    f = tmp_path / "p.pbtxt"
    f.write_text(p.text())
    r = subprocess.run([sluice_bin(), "validate", str(f)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def test_model_folder_matches_example_shape(tmp_path):
    p = imagenet()
    w = write_model(p, tmp_path / "preprocess_x", max_batch_size=8, ensemble_with="classifier",
                    model_outputs=[("SCORES", "FP32", [1000])])
    cfg = (tmp_path / "preprocess_x" / "config.pbtxt").read_text()
    assert 'backend: "sluice"' in cfg and "max_batch_size: 8" in cfg
    assert 'name: "PIXELS", data_type: TYPE_FP32, dims: [ 3, 224, 224 ]' in cfg
    assert 'data_type: TYPE_UINT8, dims: [ -1 ], allow_ragged_batch: true' in cfg
    ens = (tmp_path / "ensemble_x" / "config.pbtxt").read_text()
    assert 'platform: "ensemble"' in ens and 'model_name: "preprocess_x"' in ens and 'model_name: "classifier"' in ens
    assert (tmp_path / "ensemble_x" / "1").is_dir()
    assert 'name: "preprocess_x"' in (tmp_path / "preprocess_x" / "1" / "pipeline.pbtxt").read_text()
    assert len(w) == 3


def test_static_output_needed():
    p = Pipeline()
    p.decode()
    p.resize(shorter=256)
    p.normalize()
    with pytest.raises(ExportError, match="static"):
        p.outputs()


@pytest.mark.parametrize("call, match", [
    (lambda p: p.resize(shorter=256, size=(2, 2)), "exactly one of size, shorter"),
    (lambda p: p.resize(shorter=256, max_size=100), "max_size 100 must be larger"),
    (lambda p: p.resize(size=(224, 224), interp="lanczos"), "interp 'lanczos'"),
    (lambda p: p.resize(size=(224, 224), interp="opencv_linear", antialias=True), "antialias true"),
    (lambda p: p.crop(roi=[0, 0, 4, 4], rounding="floor"), "rounding applies only"),
    (lambda p: p.crop(size=4, rounding="up"), "rounding 'up'"),
    (lambda p: p.normalize(mean=[1, 2]), "mean has 2 values"),
    (lambda p: p.normalize(std=[0]), "std must be at least"),
    (lambda p: p.letterbox(size=0), "1..65536"),
])
def test_bad_arguments_named(call, match):
    p = Pipeline()
    p.decode()
    with pytest.raises(ExportError, match=match):
        call(p)


def test_background_needs_opaque_color():
    with pytest.raises(ExportError, match="background needs color"):
        Pipeline().decode(color="RGBA", background=[255, 255, 255])


def test_source_mode():
    """resize source_mode needs its own decode right before it, following Pillow; the text
    validates (where the binary knows the argument)."""
    p = imagenet()
    p.nodes[1].args["interp"] = ("str", "cubic")
    p.source_mode()
    assert 'arg { name: "source_mode" bool: true }' in p.text()
    for make, match in [
        (lambda: Pipeline().decode(background=[255, 255, 255]).resize(shorter=8, source_mode=True), "no background"),
        (lambda: Pipeline().decode(cmyk="opencv").resize(shorter=8, source_mode=True), "cmyk pillow"),
        (lambda: Pipeline().decode().resize(shorter=8, interp="opencv_linear", source_mode=True), "OpenCV's"),
        (lambda: Pipeline().decode().resize(shorter=8, interp="torch_cubic", source_mode=True), "torch's"),
        (lambda: Pipeline().decode().crop(size=8).resize(shorter=8, source_mode=True), "directly after decode"),
    ]:
        with pytest.raises(ExportError, match=match):
            make()


def test_cli_timm(tmp_path, capsys):
    cfg = tmp_path / "cfg.json"
    cfg.write_text('{"input_size": [3, 288, 288], "interpolation": "bicubic", "crop_pct": 0.95}')
    rc = main(["export", "--timm-config", str(cfg), "-o", str(tmp_path / "preprocess_t"), "--max-batch", "4"])
    assert rc == 0
    text = (tmp_path / "preprocess_t" / "1" / "pipeline.pbtxt").read_text()
    assert '"shorter" int: 303' in text  # floor(288 / 0.95)
    assert text == export_timm({"input_size": [3, 288, 288], "interpolation": "bicubic", "crop_pct": 0.95},
                               "preprocess_t").text()


def test_cli_refusal_exit_code(tmp_path, capsys):
    rc = main(["export", "--ultralytics", "imgsz=640,auto=true", "-o", str(tmp_path / "m")])
    assert rc == 2
    assert "auto=True" in capsys.readouterr().err
    assert not (tmp_path / "m").exists()


def test_cli_module_runs(tmp_path):
    r = subprocess.run([sys.executable, "-m", "sluice_export", "export", "--ultralytics", "imgsz=320x640",
                        "-o", str(tmp_path / "preprocess_y")], cwd=REPO / "python", capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    cfg = (tmp_path / "preprocess_y" / "config.pbtxt").read_text()
    assert "dims: [ 3, 320, 640 ]" in cfg and '"SCALE"' in cfg and '"OFFSET"' in cfg


def test_exported_folders_validate(tmp_path):
    """Every exporter's output compiles, where this build has its arguments."""
    from sluice_export import export_transformers, export_ultralytics
    b = sluice_bin()
    for p in (export_timm({}), export_transformers({"image_processor_type": "ViTImageProcessor"}, backend="pil"),
              export_transformers({"image_processor_type": "CLIPImageProcessor"}, backend="pil"),
              export_ultralytics("imgsz=640")):
        from sluice_export.capabilities import missing_features
        if missing_features(b, p.text()):
            continue
        f = tmp_path / "p.pbtxt"
        f.write_text(p.text())
        r = subprocess.run([b, "validate", str(f)], capture_output=True, text=True)
        assert r.returncode == 0, (p.text(), r.stderr)


def test_skip_detection_sees_missing_arguments():
    b = sluice_bin()
    p = Pipeline()
    p.decode(background=[255, 255, 255])
    p.crop(size=4, rounding="floor")
    p.normalize()
    from sluice_export.capabilities import missing_features, sluice_capabilities
    caps = sluice_capabilities(b)
    assert "linear" in caps["resize"]["interp"] and "size" in caps["crop"]
    miss = missing_features(b, p.text())
    assert ("decode.background" in miss) == ("background" not in caps["decode"])
    assert ("crop.rounding" in miss) == ("rounding" not in caps["crop"])


def test_run_names_outputs_when_stems_collide(tmp_path):
    """`sluice run` of x.png and x.bmp (one stem) writes x.png.PIXELS.npy and
    x.bmp.PIXELS.npy, and y.png's stays y.PIXELS.npy; run_exported reads each
    image's own (helpers.output_names)."""
    np = pytest.importorskip("numpy")
    Image = pytest.importorskip("PIL.Image")
    from helpers import output_names, run_exported

    rng = np.random.default_rng(50)
    files = [tmp_path / "x.png", tmp_path / "x.bmp", tmp_path / "y.png"]
    for i, f in enumerate(files):
        Image.fromarray(rng.integers(0, 256, (40 + i, 50, 3), dtype=np.uint8)).save(f)
    assert output_names(files) == ["x.png", "x.bmp", "y"]
    p = Pipeline("collide").decode(orient=False).resize(size=(8, 8))
    p.normalize(layout="HWC", dtype="UINT8")
    res = run_exported(sluice_bin(), p, files, tmp_path / "run")
    assert sorted(f.name for f in (tmp_path / "run" / "out").iterdir()) == [
        "x.bmp.PIXELS.npy", "x.png.PIXELS.npy", "y.PIXELS.npy"]
    for f in files:
        want = np.asarray(Image.open(f).convert("RGB").resize((8, 8), Image.BILINEAR))
        assert np.array_equal(res[f]["PIXELS"], want), f.name
