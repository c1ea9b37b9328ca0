"""bench.engines' parsing and arithmetic, on the shapes nvidia-smi and
/proc/stat print (the samples below are from an H200's dmon)."""

import time

from bench import engines

DMON = """# gpu     sm    mem    enc    dec    jpg    ofa
# Idx      %      %      %      %      %      %
    0      0      0      0      0      0      0
    0     59      3      0      0     92      -
    0     52      3      0      0     91      0
"""


def test_parse_dmon_names_columns_from_the_header():
    s = list(engines.parse_dmon(DMON.splitlines()))
    assert [x["jpg"] for x in s] == [0, 92, 91]
    assert [x["sm"] for x in s] == [0, 59, 52]
    assert s[1]["ofa"] == 0  # "-": not supported


def test_parse_dmon_without_a_header_yields_nothing():
    assert list(engines.parse_dmon(["    0     59      3      0      0     92      0"])) == []


def test_cpu_times_and_busy_cores():
    before = engines.cpu_times("cpu  100 0 100 700 100 0 0 0 0 0\ncpu0 1 2 3 4 5\n")
    after = engines.cpu_times("cpu  300 0 300 900 100 0 0 0 0 0\n")
    assert before == (1000, 800)
    # 600 jiffies passed, 200 of them idle: two thirds of 16 cores busy.
    assert abs(engines.busy_cores(before, after, 16) - 16 * 400 / 600) < 1e-9
    assert engines.busy_cores(after, after, 16) == 0


def test_summarise_takes_the_seconds_the_engines_were_busy():
    idle = {"jpg": 0, "sm": 0, "cores": 1}
    busy = [{"jpg": j, "sm": sm, "cores": c} for j, sm, c in [(92, 59, 3.0), (91, 52, 3.2), (83, 60, 2.6)]]
    assert engines.summarise([idle, *busy, idle]) == (91, 59, 3.0, 3)
    assert engines.summarise([idle, idle]) is None


def test_sampler_samples_or_says_why_not():
    s = engines.Sampler(0)
    if s.error is None:
        time.sleep(2.5)  # dmon prints a sample a second
    samples = s.stop()
    assert samples or s.error
