"""``mafka spark-etl``'s progress: Spark tasks finished / planned, read from a (fake) status tracker."""

from __future__ import annotations

import time
from types import SimpleNamespace
from typing import Any

from mafka.cli.progress import progress
from mafka.cli.spark_etl import SparkTasks


class Tracker:
    """pyspark's ``StatusTracker`` surface the watcher reads: jobs, their stages, each stage's tasks."""

    def __init__(self) -> None:
        self.jobs: dict[int, list[int]] = {}
        self.stages: dict[int, tuple[int, int]] = {}  # id → (completed tasks, tasks)
        self.active: list[int] = []

    def getActiveStageIds(self) -> list[int]:  # noqa: N802 - pyspark's names
        return list(self.active)

    def getJobIdsForGroup(self, group: str | None = None) -> list[int]:  # noqa: N802
        return sorted(self.jobs)

    def getJobInfo(self, job_id: int) -> Any:  # noqa: N802
        return SimpleNamespace(jobId=job_id, stageIds=self.jobs[job_id], status="RUNNING")

    def getStageInfo(self, stage_id: int) -> Any:  # noqa: N802
        if stage_id not in self.stages:
            return None
        done, tasks = self.stages[stage_id]
        return SimpleNamespace(stageId=stage_id, numTasks=tasks, numCompletedTasks=done)


def test_tasks_of_the_stages_that_ran_skipped_stages_left_out() -> None:
    tracker = Tracker()
    contexts: list[Any] = [None]
    with progress("spark-etl", unit="Spark tasks done", mode="off") as bar:
        watcher = SparkTasks(bar, context=lambda: contexts[0])
        watcher.poll()
        assert (bar.completed, bar.total) == (0, None), "no SparkContext yet: nothing to say"
        contexts[0] = SimpleNamespace(statusTracker=lambda: tracker)
        watcher.poll()
        assert bar.total is None, "a context but no stage planned: not 0/0"

        tracker.jobs[0] = [0]  # the read: one task per offset range
        tracker.stages[0] = (2, 6)
        tracker.active = [0]
        watcher.poll()
        assert (bar.completed, bar.total) == (2, 6)

        # the read finished; the aggregation job reuses a shuffle: stage 1 is skipped, stage 2 runs
        tracker.stages[0] = (6, 6)
        tracker.jobs[1] = [1, 2]
        tracker.stages[1] = (0, 6)
        tracker.stages[2] = (3, 200)
        tracker.active = [2]
        watcher.poll()
        assert (bar.completed, bar.total) == (9, 206)

        tracker.stages[2] = (200, 200)
        tracker.active = []
        watcher.poll()
        assert (bar.completed, bar.total) == (206, 206), "the skipped stage never holds the figure back"

        def gone() -> Any:
            raise RuntimeError("py4j: the JVM is gone")

        contexts[0] = SimpleNamespace(statusTracker=gone)
        watcher.poll()
        assert (bar.completed, bar.total) == (206, 206), "a context going away leaves the figures"


def test_the_watcher_thread_feeds_the_bar_until_stopped() -> None:
    tracker = Tracker()
    tracker.jobs[0] = [0]
    tracker.stages[0] = (4, 8)
    tracker.active = [0]
    context = SimpleNamespace(statusTracker=lambda: tracker)
    with progress("spark-etl", unit="Spark tasks done", mode="off") as bar:
        with SparkTasks(bar, context=lambda: context, poll_s=0.01) as watcher:
            deadline = time.monotonic() + 10.0  # a bounded wait for the thread's first read
            while bar.total is None and time.monotonic() < deadline:
                time.sleep(0.01)
        assert (bar.completed, bar.total) == (4, 8)
        assert not watcher._thread.is_alive(), "stopped and joined on leaving"
