"""Settings for the short-lived Spark JVMs of the tests (driver, executors, standalone daemons).

A test's JVM lives seconds: the C2 compiler's work never pays back, and on a 2-core
machine its compiler threads compete with the brokers.  C1 only and the serial GC
halved the time to start a ``local[2]`` session and run a few jobs (27-40 s against
58-72 s, measured side by side on a loaded 2-core machine).  Tests only: a real job
runs long enough for C2 to pay.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from typing import Any

#: ``-XX`` options for every Spark JVM a test starts
TEST_JVM_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"

#: SparkSession builder settings that pass :data:`TEST_JVM_OPTIONS` to the driver and executors
TEST_SESSION_CONF: dict[str, str] = {
    "spark.driver.extraJavaOptions": TEST_JVM_OPTIONS,
    "spark.executor.extraJavaOptions": TEST_JVM_OPTIONS,
}


def local_session(app_name: str) -> Iterator[Any]:
    """A ``local[2]`` SparkSession for one test module (the body of a module fixture): loopback only,
    the venv's Python for the workers, UTC, two shuffle partitions, :data:`TEST_SESSION_CONF`; stops
    any streaming query left running, then the session."""
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    from pyspark.sql import SparkSession

    session = (SparkSession.builder.master("local[2]").appName(app_name)
               .config("spark.ui.enabled", "false").config("spark.sql.session.timeZone", "UTC")
               .config("spark.sql.shuffle.partitions", "2").config("spark.ui.showConsoleProgress", "false")
               .config(map=TEST_SESSION_CONF).getOrCreate())
    yield session
    for query in session.streams.active:
        query.stop()
    session.stop()
