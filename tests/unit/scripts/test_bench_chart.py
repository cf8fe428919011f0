"""``scripts/bench_chart.py`` and the benchmarks' ``--chart``: real PNGs from sample tables, matplotlib only when asked."""

from __future__ import annotations

import importlib
import struct
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

SCRIPTS = Path(__file__).resolve().parents[3] / "scripts"
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module", autouse=True)
def scripts_on_path() -> Any:
    """The benchmarks import their shared modules as ``scripts/`` siblings, as when they run."""
    sys.path.insert(0, str(SCRIPTS))
    yield
    sys.path.remove(str(SCRIPTS))


def script(name: str) -> Any:
    return importlib.import_module(name)


def png_size(path: Path) -> tuple[int, int]:
    """(width, height) from a PNG's IHDR chunk, after checking the signature."""
    data = path.read_bytes()
    assert data[:8] == PNG_SIGNATURE, "not a PNG"
    assert data[12:16] == b"IHDR"
    width, height = struct.unpack(">II", data[16:24])
    assert data[-8:-4] == b"IEND", "a PNG written to its end"
    return width, height


def test_side_by_side_bars_with_the_ratio_and_lines_make_a_real_png(tmp_path: Path) -> None:
    chart = script("bench_chart")
    labels = ["1 MiB (default)", "4 MiB", "16 MiB, queued.min.messages=1M"]
    out = chart.draw(tmp_path / "sub" / "consume.png", "kcat -C of 1,000,000 x 100 B", [
        chart.Panel("consume records/s", labels, {"Mafka": [2_531_551, 2_409_223, None],
                                                  "Tansu": [2_719_259, 2_546_718, 2_526_298]},
                    ratio=("Mafka", "Tansu")),
        chart.Panel("produce records/s", [1, 2, 4], {"Mafka RF 3": [1_244_833, 918_715, 1_022_092],
                                                    "Tansu": [2_010_752, 1_983_184, 1_608_234]},
                    kind="lines", xlabel="clients"),
        chart.Panel("µs per operation", ["header parse", "Produce v7 parse"], {"mafka": [2.1, 30.5],
                                                                             "kafka-python": [5.3, 400.0]},
                    kind="hbars", ratio=("mafka", "kafka-python"), log=True),
    ], note="Mafka ÷ Tansu above each pair")
    assert out == tmp_path / "sub" / "consume.png"
    width, height = png_size(out)
    assert width >= 600 and height >= 600, (width, height)
    assert out.stat().st_size > 20_000, "matplotlib drew three panels, not an empty canvas"


def test_the_ratio_text_is_a_over_b_and_skips_what_was_not_measured() -> None:
    chart = script("bench_chart")
    panel = chart.Panel("rec/s", ["x", "y", "z"], {"a": [3.0, None, 1.0], "b": [2.0, 1.0, 0.0]}, ratio=("a", "b"))
    assert [chart._ratio(panel, i) for i in range(3)] == ["1.50×", None, None]
    base = chart.Panel("rec/s", ["PLAINTEXT", "SSL"], {"rec/s": [200.0, 150.0]}, baseline=("rec/s", "PLAINTEXT"))
    assert [chart._ratio(base, i) for i in range(2)] == ["1.00×", "0.75×"]


@pytest.mark.parametrize(("panel", "message"), [
    (dict(title="t", labels=["a", "b"], series={"s": [1.0]}), "has 1 values for 2 labels"),
    (dict(title="t", labels=["a"], series={"s": [1.0]}, ratio=("s", "peer")), "names a series it does not have"),
    (dict(title="t", labels=["a"], series={"s": [1.0]}, kind="pie"), "kind 'pie' is none of"),
    (dict(title="t", labels=["a"], series={"s": [1.0]}, baseline=("s", "b")), "is not one of its bars"),
])
def test_a_panel_that_cannot_be_drawn_is_refused(panel: dict[str, Any], message: str, tmp_path: Path) -> None:
    chart = script("bench_chart")
    with pytest.raises(ValueError, match=message):
        chart.draw(tmp_path / "x.png", "t", [chart.Panel(**panel)])
    assert not (tmp_path / "x.png").exists()


def test_matplotlib_is_imported_only_to_draw() -> None:
    code = ("import sys; sys.path.insert(0, sys.argv[1]); import bench_chart, bench_consume, bench_rebalance; "
            "assert 'matplotlib' not in sys.modules, 'imported at start-up'; "
            "import argparse; p = argparse.ArgumentParser(); bench_chart.add_chart_argument(p); "
            "print(p.parse_args(['--chart', 'x.png']).chart)")
    done = subprocess.run([sys.executable, "-c", code, str(SCRIPTS)], capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stdout) == (0, "x.png\n"), done.stderr


# Each benchmark's chart() from a table like the one it prints (its figures made up): the code that
# runs only after a long benchmark is exercised here in a second.
SAMPLES: list[tuple[str, Any]] = [
    ("bench_consume", lambda p: (p, "t", [("1 MiB (default)", 2.5e6, 2.7e6, 0.07, 0.19), ("16 MiB", None, None, None,
                                                                                         None)])),
    ("bench_scale", lambda p: (p, "t", [1, 2], {("mafka RF3 acks=all", "produce", 1): (1.2e6, 0.88),
                                                ("mafka RF3 acks=all", "consume", 2): (8.4e5, 0.16),
                                                ("tansu RF1 acks=1", "produce", 2): (1.9e6, 0.34)})),
    ("bench_client", lambda p: (p, "t", {("RF1 acks=1", "mafka", "produce"): (229_622, 4.43),
                                         ("RF1 acks=1", "mafka", "consume"): (426_205, 2.27),
                                         ("RF3 acks=all", "kafka-python", "produce"): (50_370, 19.1),
                                         ("RF3 acks=all", "kafka-python", "consume"): (157_864, 5.86)})),
    ("bench_spark", lambda p: (p, "t", {"df": 1.76, "rdd": 2.78, "pandas": 15.2}, 2_000_000)),
    ("bench_security", lambda p: (p, "t", {"PLAINTEXT": (1.27e6, 2.15e6, 0.47), "SSL": (1.2e6, 1.47e6, 0.76)})),
    ("bench_slow_node", lambda p: (p, "t", [("(a) idle", 0.6, 1.3), ("(b) on", 0.6, 1.8), ("(c) off", 30.8, 66.7)])),
    ("bench_rebalance", lambda p: (p, "t", 3.3, 3.6)),
    ("bench_txn", lambda p: (p, "t", {"plain": 1.0e5, "transactional": 9.1e4}, {"plain": 2.1, "transactional": 2.4})),
    ("bench_wire", lambda p: (p, "t", [("request header v1 parse", 2.1, 5.3), ("Produce v7 parse", 30.5, 400.0)])),
    ("bench_log", lambda p: (p, "t", (900.0, 1100.0), (2500.0, 2600.0))),
    ("bench_groups", lambda p: (p, "t", {("mafka", "join-to-first-message"): 3.2, ("peer", "join-to-first-message"): 3.1,
                                         ("mafka", "rebalance-after-kill"): 6.5, ("peer", "rebalance-after-kill"): 9.0})),
    ("bench_partitions", lambda p: (p, "t", {"create_acked": 12.5, "create_ready": 20.1, "cs_moved": None,
                                             "idle": {1: {"cpu": 3.4, "rss": 410.0, "fds": 10_300},
                                                      "zookeeper": {"cpu": 1.1, "rss": 120.0, "fds": None}}})),
]


@pytest.mark.parametrize(("name", "sample"), SAMPLES, ids=[name for name, _ in SAMPLES])
def test_every_benchmark_draws_its_table(name: str, sample: Any, tmp_path: Path) -> None:
    path = script(name).chart(*sample(tmp_path / f"{name}.png"))
    width, height = png_size(Path(path))
    assert width > 300 and height > 200 and Path(path).stat().st_size > 5_000
