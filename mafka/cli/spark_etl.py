"""``mafka spark-etl``: the incremental Spark ETL job of :mod:`mafka.spark.etl` (needs the ``spark`` extra)."""

from __future__ import annotations

from typing import Any

__all__ = ["add_parser"]


def add_parser(sub: Any) -> None:
    from mafka.spark.etl import add_arguments

    p = sub.add_parser("spark-etl", help="incremental batch ETL of a topic of JSON events with Spark")
    add_arguments(p)
    p.set_defaults(func=_run)


def _run(args: Any) -> int:
    from mafka.spark.etl import run

    return run(args)
