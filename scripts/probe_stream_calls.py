"""Log what Spark calls on a Python streaming source under each trigger, for one PySpark.

    <venv>/bin/python scripts/probe_stream_calls.py OUT.jsonl

Runs queries of a probe source into the noop sink, on a local[2] session of the PySpark
installed in that venv: AvailableNow twice from one checkpoint, once, and a 1-second
processing-time trigger for 3 batches twice from one checkpoint. The source only knows the API
every supported PySpark has (``latestOffset`` takes whatever it is given; no admission
control). It holds a backlog of 10 rows that grows by 5 at every ``latestOffset`` call, up
to 40 (a restart: from 50 up to 80), and appends one JSON line per call (process id, method,
arguments, return value) to OUT.jsonl, and one when its process gets SIGTERM. The
summary printed per query is what docs/pyspark-versions.md records.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
import tempfile
import time
from collections.abc import Iterator
from typing import Any

from pyspark.sql import SparkSession
from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition

#: How many rows the backlog holds at the start, grows by per latestOffset call, and its cap.
FIRST, STEP, CAP = 10, 5, 40


def _log(path: str, record: dict[str, Any]) -> None:
    with open(path, "a") as f:
        f.write(json.dumps({"pid": os.getpid(), "t": round(time.time(), 3), **record}) + "\n")


class ProbeStream(DataSourceStreamReader):
    def __init__(self, path: str, query: str, first: int) -> None:
        self.path, self.query = path, query
        self.available = self.first = first
        self.hooked = False

    def _call(self, method: str, args: list[Any], result: Any = None) -> None:
        if not self.hooked:
            self.hooked = True
            previous = signal.getsignal(signal.SIGTERM)

            def on_sigterm(signum: int, frame: Any) -> None:
                _log(self.path, {"query": self.query, "call": "SIGTERM"})
                signal.signal(signal.SIGTERM, previous if callable(previous) else signal.SIG_DFL)
                os.kill(os.getpid(), signal.SIGTERM)

            with contextlib.suppress(ValueError):  # not the main thread
                signal.signal(signal.SIGTERM, on_sigterm)
        _log(self.path, {"query": self.query, "call": method, "args": args, "result": result})

    def initialOffset(self) -> dict[str, int]:
        self._call("initialOffset", [], {"n": 0})
        return {"n": 0}

    def latestOffset(self, *args: Any) -> dict[str, int]:
        end = {"n": self.available}
        self._call("latestOffset", [repr(a) for a in args], end)
        self.available = min(self.available + STEP, self.first + CAP - FIRST)
        return end

    def partitions(self, start: dict[str, int], end: dict[str, int]) -> list[InputPartition]:
        self._call("partitions", [start, end])
        return [InputPartition((start["n"], end["n"]))]

    def read(self, partition: InputPartition) -> Iterator[tuple[int]]:
        first, last = partition.value
        for n in range(first, last):
            yield (n,)

    def commit(self, end: dict[str, int]) -> None:
        self._call("commit", [end])

    def stop(self) -> None:
        self._call("stop", [])


class ProbeSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return "probe"

    def schema(self) -> str:
        return "n long"

    def streamReader(self, schema: Any) -> DataSourceStreamReader:
        options = self.options
        return ProbeStream(options["path"], options["query"], int(options["first"]))


def main(out: str) -> None:
    # Spark starts Python workers with python3 from PATH unless told: this venv's.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark = SparkSession.builder.master("local[2]").getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    spark.dataSource.register(ProbeSource)
    # (query, trigger, checkpoint): the second run of a checkpoint is a restart.
    runs: list[tuple[str, dict[str, Any], str]] = [
        ("availableNow", {"availableNow": True}, "a"),
        ("availableNow-restart", {"availableNow": True}, "a"),
        ("once", {"once": True}, "o"),
        ("processingTime", {"processingTime": "1 second"}, "p"),
        ("processingTime-restart", {"processingTime": "1 second"}, "p"),
    ]
    checkpoints: dict[str, str] = {}
    for query, trigger, key in runs:
        first = FIRST if key not in checkpoints else CAP + FIRST  # a restart has more
        checkpoint = checkpoints.setdefault(key, tempfile.mkdtemp(prefix=f"probe-{key}-"))
        reader = spark.readStream.format("probe").option("path", out).option("query", query)
        df = reader.option("first", first).load()
        q = df.writeStream.format("noop").option("checkpointLocation", checkpoint)
        running = q.trigger(**trigger).start()
        if "processingTime" in query:  # until 3 batches ran (or 90 s)
            deadline = time.monotonic() + 90
            while time.monotonic() < deadline and len(running.recentProgress) < 3:
                time.sleep(0.5)
            running.stop()
        else:
            running.awaitTermination(120)
        time.sleep(2)  # a SIGTERM to the runner is logged after the query ends
        rows = sum(p["numInputRows"] for p in running.recentProgress)
        commits = sorted(c for c in os.listdir(os.path.join(checkpoint, "commits")) if "." not in c)
        print(f"{query}: rows {rows}, commit log {commits}", flush=True)
    spark.stop()
    time.sleep(2)
    import pyspark

    print("pyspark", pyspark.__version__)
    with open(out) as f:
        records = [json.loads(line) for line in f]
    for record in records:
        print(
            record["query"], record["pid"], record["call"], record.get("args"), record.get("result")
        )


if __name__ == "__main__":
    main(sys.argv[1])
