"""Sluice's benchmarks and load tests, one module each, run from the repo root:

    python3 -m bench.cpu        Sluice's CPU pipeline vs OpenCV (make bench-cpu)
    python3 -m bench.gpu        Sluice's GPU pipeline vs DALI, torchvision, nvImageCodec, OpenCV (make bench-gpu)
    python3 -m bench.multigpu   one GPU against several of one host, beside nvImageCodec
    python3 -m bench.fairness   a normal request's wait while other clients send hostile images
    python3 -m bench.soak       a model in tritonserver under steady good and broken load, memory sampled
    bench/perf_triton.sh        perf_analyzer against a real Triton (make perf-triton)

What they share (paths, the corpus's file sets, the timing loop and its
percentiles, `sluice bench` as a subprocess, Markdown cells) is bench.common.
"""
