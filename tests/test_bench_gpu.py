"""bench.gpu's fast-upsampling pipeline (the shipped ImageNet pipeline with
decode's jpeg_fancy_upsampling false, which the compiler accepts) and
bench.upsampling's distance from Pillow; bench.gpu's rounds."""

import json
import subprocess
import sys

import pytest

from bench import common, gpu, timeline


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


def _cell(ips, p99=1.0, failed=0):
    return {"images_per_sec": ips, "p50_ms": p99 / 2, "p99_ms": p99, "failed": failed}


def test_median_round_is_the_middle_rate_or_the_first_error():
    runs = [_cell(300, 3), _cell(100, 1), _cell(200, 2)]
    assert gpu.median_round(runs)["p99_ms"] == 2
    assert gpu.median_round(runs[:2])["images_per_sec"] == 100  # even count: the lower middle
    err = {"error": "boom"}
    assert gpu.median_round([_cell(1), err, {"error": "later"}]) is err


def test_cell_md_shows_the_median_its_range_and_every_failure():
    ips, p50, p99 = gpu.cell_md([_cell(26701, 8.84), _cell(26473, 9.08, failed=1), _cell(26691, 8.26, failed=2)])
    assert ips == "26,691 (26,473–26,701) (3 failed samples)"
    assert (p50, p99) == ("4.13", "8.26")
    assert gpu.cell_md([_cell(1234.4)])[0] == "1,234"
    assert gpu.cell_md([])[0] == "–"


def test_ratio_md_takes_each_round_within_the_round():
    # Round 1: best Sluice 26,701 / best DALI 23,780; round 2: 27,579 / 27,448;
    # round 3: 26,694 / 29,834. A ratio of the medians (26,701 / 27,448)
    # would be 0.97x; the rounds' own ratios are 1.12, 1.00 and 0.89.
    runs = {
        "sluice": [_cell(20000), _cell(21000), _cell(22000)],
        "sluice-x2": [_cell(26701), _cell(27579), _cell(26694)],
        "dali-0.65": [_cell(23780), _cell(27448), _cell(29834)],
        "dali-0.9": [_cell(18972), {"error": "x"}, _cell(23851)],
    }
    assert gpu.ratio_md(runs, ["sluice", "sluice-x2"], ["dali-0.65", "dali-0.9"]) == "1.00x (0.89–1.12x) sluice-x2 / dali-0.65"
    assert gpu.ratio_md({k: v[:1] for k, v in runs.items()}, ["sluice-x2"], ["dali-0.65"]) == "1.12x sluice-x2 / dali-0.65"
    # Each round's best of each side, whichever count it was: round 1 is
    # 26,701 / 30,000 against DALI with two pipelines; the median round (3)
    # names its own pair.
    runs["dali-0.65-x2"] = [_cell(30000), _cell(20000), _cell(20000)]
    assert gpu.ratio_md(runs, ["sluice", "sluice-x2"], ["dali-0.65", "dali-0.65-x2"]) == "0.89x (0.89–1.00x) sluice-x2 / dali-0.65"
    assert gpu.ratio_md(runs, ["sluice"], []) == "n/a"
    assert gpu.ratio_md({"a": [{"error": "x"}], "b": [_cell(1)]}, ["a"], ["b"]) == "n/a"


def test_counts_name_each_configuration():
    """Sluice at 1-4 instances and DALI at 1-4 pipelines, every chroma rule
    and hw_decoder_load, and Sluice's SMs' route, each its own contender;
    the default run leaves out nvImageCodec's partial pipelines and the
    SMs' route, which Sluice does not ship on."""
    for base in ("sluice", "sluice-fast", "sluice-sm", "dali-0.65", "dali-0.9", "dali-fancy-0.65", "dali-fancy-0.9"):
        assert [n for n in gpu.CONTENDERS if n == base or n.startswith(base + "-x")] == [
            base, f"{base}-x2", f"{base}-x3", f"{base}-x4"]
    assert "nvimgcodec" in gpu.DEFAULT_ONLY and "nvimgcodec-hw" not in gpu.DEFAULT_ONLY
    assert "sluice-x2" in gpu.DEFAULT_ONLY and "sluice-sm-x2" not in gpu.DEFAULT_ONLY
    assert gpu.CONTENDERS["sluice-sm-x2"]("sluice-sm-x2", None).env == {"SLUICE_GPU_SLUICE_HUFFMAN": "1"}


def test_timed_together_counts_every_runner():
    """Two runners side by side: images/s counts both, latency every batch."""
    import threading

    seen = set()

    def run(_):
        seen.add(threading.get_ident())

    r = common.timed_together([(run, common.batches_of([1, 2, 3], 4)), (run, common.batches_of([1], 2))], 0.05)
    assert len(seen) == 2
    assert r["batches"] > 0 and r["images_per_sec"] > 0


def test_rounds_on_the_cpu_executor(sluice_bin, corpus, tmp_path):
    """bench.gpu --rounds on Sluice's CPU executor (no GPU needed): every
    cell measured once a round, the median round in the contender's key."""
    out = tmp_path / "r.json"
    r = subprocess.run(
        [sys.executable, "-m", "bench.gpu", "--sluice", sluice_bin, "--corpus", str(corpus.root), "--gpu", "-1",
         "--only", "sluice,sluice-fast", "--rounds", "3", "--seconds", "0.2", "--batches", "8",
         "--kinds", "grayscale", "--json-out", str(out)],
        cwd=common.ROOT, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert r.stderr.count("# grayscale batch 8 round ") == 3, r.stderr
    row = json.loads(out.read_text())["rows"][0]
    for c in ("sluice", "sluice-fast"):
        rates = [x["images_per_sec"] for x in row["rounds"][c]]
        assert len(rates) == 3 and min(rates) > 0, rates
        assert row[c]["images_per_sec"] == sorted(rates)[1]
    assert "3 rounds" in r.stdout and "| grayscale (10) | 8 |" in r.stdout, r.stdout


def test_timeline_busy_shares_and_strip():
    # Two lanes over a 1 s window: one busy for the first half in two
    # overlapping spans, one idle; a worker busy throughout.
    trace = {"seconds": 1.0, "spans": [
        {"actor": "engines", "index": 0, "step": "call", "n": 8, "start_us": 0, "end_us": 300_000},
        {"actor": "engines", "index": 0, "step": "call", "n": 8, "start_us": 200_000, "end_us": 500_000},
        {"actor": "engines", "index": 1, "step": "call", "n": 0, "start_us": 2_000_000, "end_us": 2_100_000},
        {"actor": "worker", "index": 3, "step": "image", "n": 1, "start_us": 0, "end_us": 1_000_000},
        {"actor": "worker", "index": 3, "step": "flush", "n": 4, "start_us": 900_000, "end_us": 1_000_000},
    ]}
    lines = timeline.summarise(trace, window=1.0, start=0.0, slices=10)
    rows = {line.split("|")[1].strip(): line for line in lines if line.startswith("| ") and "actor" not in line}
    assert "| 50% |" in rows["engines 0"] and "`#####.....`" in rows["engines 0"] and "| 16 |" in rows["engines 0"]
    assert "| 0% |" in rows["engines 1"]
    assert "| 100% |" in rows["worker 3"] and "flush 10%, image 100%" in rows["worker 3"]
    assert lines[-1] == "Mean busy share: engines 25% (2), worker 100% (1)"
