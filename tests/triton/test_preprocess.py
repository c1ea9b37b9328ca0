"""Sluice preprocess models served by a real Triton: outputs bit-exact with
`sluice run`, both input forms, dynamic batching, broken images."""

import itertools
import time

import numpy as np
import pytest

from tests.helpers import BROKEN_CAUSES
from tests.triton.helpers import (
    BYTES_MODEL,
    IMAGENET,
    GrpcBurst,
    InferenceServerException,
    batch_sizes,
    bytes_input,
    grpcclient,
    httpclient,
    infer,
    infer_one,
    read_bytes,
    truncated,
    uint8_input,
)


CAUSES = ("truncated", "corrupt data", "not an image", "unsupported", "too large")
# Not in the corpus: bytes that are no image at all, and a format Sluice
# does not decode.
SYNTHETIC = {
    "text.jpg": (b"hello, this is not an image\n" * 4, "not an image"),
    "tiny.gif": (b"GIF89a\x01\x00\x01\x00\x00\x00\x00;", "unsupported"),
}


def assert_same(got, want, what):
    assert got.dtype == want.dtype and got.shape == want.shape, (what, got.dtype, got.shape, want.dtype, want.shape)
    if not np.array_equal(got, want):
        d = np.abs(got.astype(np.float64) - want.astype(np.float64))
        pytest.fail(f"{what}: differs from sluice run in {np.count_nonzero(d)} values, max |diff| {d.max()}")


@pytest.mark.parametrize("proto", ["grpc", "http"])
def test_imagenet_bit_exact_with_cli(sluice_server, photos, reference, proto):
    """Every valid corpus image (tiny, large, EXIF, CMYK, arithmetic-coded,
    PNG of every kind), one request each ([1, N] UINT8): PIXELS equals `sluice
    run`'s output bit for bit."""
    client, mod = (sluice_server.grpc, grpcclient) if proto == "grpc" else (sluice_server.http, httpclient)
    images = photos.all_valid
    refs = reference(IMAGENET).outputs(images)
    missing = [str(p) for p in images if str(p) not in refs]
    assert not missing, f"sluice run rejected valid images: {missing}"
    for p in images:
        got = infer_one(client, mod, IMAGENET, p)["PIXELS"]
        assert got.shape == (1, 3, 224, 224)
        assert_same(got[0], refs[str(p)]["PIXELS"], f"{proto} {p.parent.name}/{p.name}")


def test_letterbox_matches_cli(sluice_server, photos, reference):
    """Three outputs per image (PIXELS, SCALE, OFFSET), as `sluice run`."""
    images = photos.jpeg()[:6] + photos.png()[:3] + [photos.large]
    refs = reference("preprocess_letterbox").outputs(images)
    for p in images:
        got = infer_one(sluice_server.grpc, grpcclient, "preprocess_letterbox", p, outputs=("PIXELS", "SCALE", "OFFSET"))
        assert got["PIXELS"].shape == (1, 3, 640, 640)
        for name in ("PIXELS", "SCALE", "OFFSET"):
            assert_same(got[name][0], refs[str(p)][name], f"{p.name} {name}")


def test_bytes_several_images_per_request(sluice_server, photos, reference):
    """TYPE_STRING [1] input: one request of k BYTES elements, images of any
    sizes, no padding; output [k, 3, 224, 224] in request order."""
    images = photos.jpeg()[:10] + photos.png()[:2]
    refs = reference(IMAGENET).outputs(images)
    groups = [images[0:1], images[1:5], images[5:12]]
    for client, mod in ((sluice_server.grpc, grpcclient), (sluice_server.http, httpclient)):
        for g in groups:
            got = infer(client, mod, BYTES_MODEL, [bytes_input(mod, [p.read_bytes() for p in g])])["PIXELS"]
            assert got.shape == (len(g), 3, 224, 224)
            for k, p in enumerate(g):
                assert_same(got[k], refs[str(p)]["PIXELS"], f"{mod.__name__} element {k} {p.name}")


def test_bytes_request_with_a_bad_element(sluice_server, photos):
    """One bad element fails its request, naming the element and the cause;
    the next request is served."""
    good = photos.jpeg()[:2]
    blobs = [good[0].read_bytes(), truncated(photos.png()[0]).tobytes(), good[1].read_bytes()]
    for client, mod in ((sluice_server.grpc, grpcclient), (sluice_server.http, httpclient)):
        with pytest.raises(InferenceServerException) as e:
            infer(client, mod, BYTES_MODEL, [bytes_input(mod, blobs)])
        msg = str(e.value)
        assert "element 1" in msg and "truncated" in msg, msg
        with pytest.raises(InferenceServerException) as e:
            infer(client, mod, BYTES_MODEL, [bytes_input(mod, [good[0].read_bytes(), b""])])
        assert "element 1" in str(e.value) and "not an image" in str(e.value), str(e.value)
        ok = infer(client, mod, BYTES_MODEL, [bytes_input(mod, blobs[:1])])["PIXELS"]
        assert ok.shape == (1, 3, 224, 224)


def test_uint8_ragged_one_image_per_request(sluice_server, photos, reference):
    """UINT8 [1, N], N differing per request, sent concurrently: Triton
    batches requests of different shapes (allow_ragged_batch; the model
    statistics show an execution of more than one request), and each gets
    its own image's output."""
    by_size = {p.stat().st_size: p for p in photos}
    images = [by_size[s] for s in sorted(by_size)][::4][:12]
    assert len(images) >= 8
    refs = reference(IMAGENET).outputs(images)
    inputs = [[uint8_input(grpcclient, read_bytes(p))] for p in images]
    before = settled_batch_sizes(sluice_server.http, IMAGENET)
    seen = {}
    for attempt in range(3):  # the batcher decides; a loaded host rarely needs a second round
        results = GrpcBurst(sluice_server.grpc).run(IMAGENET, inputs)
        for p, (res, err) in zip(images, results):
            assert err is None, f"{p.name}: {err}"
            assert_same(res.as_numpy("PIXELS")[0], refs[str(p)]["PIXELS"], p.name)
        after = settled_batch_sizes(sluice_server.http, IMAGENET, before, len(images))
        seen = {b: n - before.get(b, 0) for b, n in after.items() if n > before.get(b, 0)}
        before = after
        if max(seen, default=1) > 1:
            break
    print(f"batch sizes of the last ragged burst (size: executions): {dict(sorted(seen.items()))}")
    assert max(seen, default=1) > 1, f"no execution of several ragged requests in 3 bursts of {len(images)}: {seen}"


def test_uint8_zero_padded_client_batch(sluice_server, photos, reference):
    """UINT8 [B, N] with shorter images zero-padded at the end: the decoders
    ignore the trailing zeros."""
    images = photos.jpeg()[:3] + photos.png()[:1]
    refs = reference(IMAGENET).outputs(images)
    blobs = [read_bytes(p) for p in images]
    x = np.zeros((len(blobs), max(len(b) for b in blobs)), dtype=np.uint8)
    for k, b in enumerate(blobs):
        x[k, : len(b)] = b
    got = infer(sluice_server.grpc, grpcclient, IMAGENET, [uint8_input(grpcclient, x)])["PIXELS"]
    assert got.shape == (len(images), 3, 224, 224)
    for k, p in enumerate(images):
        assert_same(got[k], refs[str(p)]["PIXELS"], p.name)


def test_dynamic_batching(sluice_server, photos):
    """32 concurrent requests: Triton's dynamic batcher hands Sluice batches
    of more than one request (the model statistics' batch_stats say so), and
    every output equals the output of the same image sent alone."""
    images = photos[:32]
    assert len(images) == 32
    # Triton records an execution's statistics after sending its responses,
    # so a read right after the last response may miss it: the counts are
    # taken before the single requests (once the earlier tests' have
    # settled) and awaited until they add up.
    before = settled_batch_sizes(sluice_server.http, IMAGENET)
    single = {str(p): infer_one(sluice_server.grpc, grpcclient, IMAGENET, p)["PIXELS"] for p in images}
    known = {1: len(images)}  # the single requests' executions
    inputs = [[uint8_input(grpcclient, read_bytes(p))] for p in images]
    burst = GrpcBurst(sluice_server.grpc)
    seen = {}
    for attempt in range(3):  # the batcher decides; a loaded host rarely needs a second round
        results = burst.run(IMAGENET, inputs)
        want = len(images) + sum(b * n for b, n in known.items())
        after = settled_batch_sizes(sluice_server.http, IMAGENET, before, want)
        for p, (res, err) in zip(images, results):
            assert err is None, f"{p.name}: {err}"
            assert np.array_equal(res.as_numpy("PIXELS"), single[str(p)]), f"{p.name}: batched != single"
        seen = {b: after.get(b, 0) - before.get(b, 0) - known.get(b, 0) for b in after}
        seen = {b: n for b, n in seen.items() if n > 0}
        assert sum(b * n for b, n in seen.items()) == len(images), (before, after, known)
        before, known = after, {}
        if max(seen) > 1:
            break
    print(f"batch sizes of the last burst (size: executions): {dict(sorted(seen.items()))}")
    assert max(seen) > 1, f"no batch of more than one request formed in 3 bursts of 32: {seen}"


def settled_batch_sizes(client, model, before=None, want=0, timeout=10):
    """batch_sizes once the requests counted since `before` reach `want`;
    without `before`, once two reads 0.2 s apart agree. After timeout
    seconds, as they are."""
    deadline = time.monotonic() + timeout
    last = batch_sizes(client, model)
    while time.monotonic() < deadline:
        time.sleep(0.02 if before is not None else 0.2)
        now = batch_sizes(client, model)
        if before is not None:
            if sum(b * (n - before.get(b, 0)) for b, n in last.items()) >= want:
                return last
        elif now == last:
            return now
        last = now
    return last


def test_broken_images_fail_alone(sluice_server, photos, reference):
    """Good images and every file of corpus/broken (plus truncated copies of
    good ones and bytes that are no image) sent concurrently, so that dynamic
    batches mix them: the broken ones get error responses naming the cause,
    the good ones their correct outputs; the server stays healthy."""
    good = photos.jpeg()[:8] + photos.png()[:2]
    broken = photos.corpus.broken() if photos.corpus else []
    refs = reference(IMAGENET).outputs(good + broken)
    cases = []  # (label, bytes, expected cause or None, reference or None)
    for p in good:
        cases.append((p.name, read_bytes(p), None, refs[str(p)]["PIXELS"]))
    for p in broken:
        if p.name in BROKEN_CAUSES:
            cause = BROKEN_CAUSES[p.name]
        else:  # a file added to the corpus since: the CLI's verdict
            cause = None if str(p) in refs else "?"
        want = refs.get(str(p), {}).get("PIXELS")
        if cause is None:
            assert want is not None, f"sluice run rejects {p.name}, which is a valid image"
        cases.append((p.name, read_bytes(p), cause, want))
    for name, (data, cause) in SYNTHETIC.items():
        cases.append((name, np.frombuffer(data, dtype=np.uint8), cause, None))
    for p in (photos.jpeg()[-1], photos.png()[-1]):
        cases.append((f"{p.name} cut at 60%", truncated(p), "truncated", None))
    # Interleave good and bad so that batches mix them.
    order = [c for pair in itertools.zip_longest(cases[: len(good)], cases[len(good) :]) for c in pair if c]
    assert len(order) == len(cases)

    def check(name, cause, want, res, err, problems):
        if err is not None:
            msg = str(err)
            if cause is None:
                problems.append(f"{name}: valid image failed: {msg}")
            elif cause == "?":
                if not any(c in msg for c in CAUSES):
                    problems.append(f"{name}: error names no known cause: {msg}")
            elif cause not in msg or "IMAGE" not in msg:
                problems.append(f"{name}: error should name IMAGE and {cause!r}: {msg}")
        elif cause is not None:
            problems.append(f"{name}: broken image succeeded (expected {cause!r})")
        elif not np.array_equal(res.as_numpy("PIXELS")[0], want):
            problems.append(f"{name}: output differs from sluice run")

    # Concurrently over gRPC, until the batcher has mixed them (a loaded
    # host rarely needs a second round).
    inputs = [[uint8_input(grpcclient, data)] for _, data, _, _ in order]
    burst = GrpcBurst(sluice_server.grpc)
    for attempt in range(3):
        before = batch_sizes(sluice_server.http, IMAGENET)
        results = burst.run(IMAGENET, inputs)
        after = batch_sizes(sluice_server.http, IMAGENET)
        problems = []
        for (name, _, cause, want), (res, err) in zip(order, results):
            check(name, cause, want, res, err, problems)
        assert not problems, "\n".join(problems)
        seen = {b: after[b] - before.get(b, 0) for b in after if after[b] > before.get(b, 0)}
        if max(seen) > 1:
            break
    print(f"batch sizes (size: executions): {dict(sorted(seen.items()))}")
    assert max(seen) > 1, f"no batch of more than one request formed in 3 bursts: {seen}"

    # The same messages over HTTP, one request at a time.
    problems = []
    for name, data, cause, want in order:
        res = err = None
        try:
            res = sluice_server.http.infer(
                IMAGENET, [uint8_input(httpclient, data)], outputs=[httpclient.InferRequestedOutput("PIXELS")]
            )
        except InferenceServerException as e:
            err = e
        check(name, cause, want, res, err, problems)
    assert not problems, "\n".join(problems)

    assert sluice_server.alive()
    assert sluice_server.http.is_server_live() and sluice_server.http.is_model_ready(IMAGENET)
    # And it still serves.
    p = good[0]
    assert np.array_equal(infer_one(sluice_server.grpc, grpcclient, IMAGENET, p)["PIXELS"][0], refs[str(p)]["PIXELS"])
    # Errors count as failures in the statistics, not as crashes.
    st = sluice_server.http.get_inference_statistics(IMAGENET)["model_stats"][0]["inference_stats"]
    assert int(st["fail"]["count"]) >= sum(1 for c in cases if c[2] is not None)
