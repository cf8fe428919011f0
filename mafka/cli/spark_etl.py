"""``mafka spark-etl``: the incremental Spark ETL job of :mod:`mafka.spark.etl` (needs the ``spark`` extra).

While the job runs, its Spark tasks finished so far show on stderr
(:mod:`mafka.cli.progress`): ``spark-etl: 14/20 Spark tasks done (70%)``.  The
read stage has one task per offset range (one per topic-partition), the later
stages (aggregation, Parquet, the output topic, the counts) add theirs, so the
total grows as Spark plans each job.  The figures come from Spark's status
tracker, read by a thread every half second, and replace Spark's own console
bar (``spark.ui.showConsoleProgress=false`` unless ``PYSPARK_SUBMIT_ARGS`` is
set); the job itself is :func:`mafka.spark.etl.run`, unchanged (its one JSON
line on stdout included).  ``--streaming`` runs :mod:`mafka.spark.etl_streaming`
without the bar: it prints a line per micro-batch.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from typing import Any

from mafka.cli.progress import Progress, progress

__all__ = ["add_parser", "SparkTasks"]

#: Seconds between two reads of Spark's status tracker.
POLL_S = 0.5


def add_parser(sub: Any) -> None:
    from mafka.spark.etl import add_arguments

    p = sub.add_parser("spark-etl", help="ETL of a topic of JSON events with Spark: incremental batches, or a streaming query (--streaming)")
    add_arguments(p)
    p.set_defaults(func=_run)


def _run(args: Any) -> int:
    from mafka.spark.etl import run

    if args.streaming:
        # A stream never finishes its tasks: each micro-batch prints its own line instead.
        return run(args)
    with progress("spark-etl", unit="Spark tasks done") as bar:
        if bar.mode != "off" and "PYSPARK_SUBMIT_ARGS" not in os.environ:
            # Spark's own console bar would draw on the same stderr; these figures replace it.
            os.environ["PYSPARK_SUBMIT_ARGS"] = "--conf spark.ui.showConsoleProgress=false pyspark-shell"
        with SparkTasks(bar):
            status = run(args)
        # The job succeeded, so every stage it ran finished all its tasks; the last read of
        # the tracker may be half a second older than that (and the context is gone now).
        if bar.total:
            bar.update(bar.total)
    return status


def _active_context() -> Any:
    """The running SparkContext, or None (before the job made it, after it stopped it)."""
    from pyspark import SparkContext

    return SparkContext._active_spark_context


class SparkTasks:
    """Feeds ``bar`` the tasks finished / planned of every stage that has run, from a thread.

    A stage counts once it is active or has finished a task: the stages Spark skips
    (their shuffle output is reused) never run a task and would otherwise hold the
    figure below its total for good.

    Args:
        bar: The progress to update (only this thread updates it while it runs).
        context: Returns the running SparkContext or None (tests pass a fake).
        poll_s: Seconds between two reads.
    """

    def __init__(self, bar: Progress, context: Callable[[], Any] = _active_context,
                 poll_s: float = POLL_S) -> None:
        self.bar = bar
        self.context = context
        self.poll_s = poll_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="spark-etl-progress", daemon=True)
        self._stages: dict[int, tuple[int, int]] = {}  # stage id → (finished tasks, tasks)

    def __enter__(self) -> SparkTasks:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _watch(self) -> None:
        while not self._stop.wait(self.poll_s):
            self.poll()

    def poll(self) -> None:
        """One read of the status tracker; nothing when no context runs or it is stopping meanwhile."""
        try:
            sc = self.context()
            if sc is None:
                return
            tracker = sc.statusTracker()
            active = set(tracker.getActiveStageIds())
            stage_ids = set(active)
            for job_id in tracker.getJobIdsForGroup():
                job = tracker.getJobInfo(job_id)
                if job is not None:
                    stage_ids.update(job.stageIds)
            for stage_id in stage_ids:
                info = tracker.getStageInfo(stage_id)
                if info is not None and (stage_id in active or info.numCompletedTasks > 0):
                    self._stages[stage_id] = (info.numCompletedTasks, info.numTasks)
        except Exception:  # noqa: BLE001 - the JVM going away as the job ends; the figures stay as they were
            return
        if not self._stages:  # nothing planned yet: "0/0" would read as all done
            return
        self.bar.update(sum(done for done, _ in self._stages.values()),
                        total=sum(tasks for _, tasks in self._stages.values()))
