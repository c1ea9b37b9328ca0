"""The Python tests, as one package: tests/ (the accuracy tests, against
the sluice CLI) and tests/triton (against a real tritonserver, in its own
venv). Being a package, its conftests are imported as tests.conftest and
tests.triton.conftest with the repository root on sys.path (pytest's
default import mode), so both trees import tests.helpers, the one home of
what they share, and tests.metrics_text, the metrics text parser
(tests/gpu_triton too, on a machine without tritonclient.http)."""
