"""Fixtures of the accuracy tests: the sluice CLI, the photo corpus (both
from tests/helpers.py), and a runner of pipelines over images."""

import pytest

from tests.helpers import Sluice, corpus, sluice_bin  # noqa: F401 (fixtures)

# tests/triton needs a real tritonserver and its own venv (.venv-triton,
# numpy < 2): `make test-triton` runs it.
collect_ignore = ["triton"]


@pytest.fixture
def sluice(sluice_bin, tmp_path):
    return Sluice(sluice_bin, tmp_path)
