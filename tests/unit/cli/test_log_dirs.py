"""``mafka log-dirs``: Kafka's JSON output and argument errors (no cluster needed)."""

from __future__ import annotations

import json
from types import SimpleNamespace as NS

from mafka.cli.log_dirs import format_log_dirs_json
from mafka.cli.main import main


def _result(log_dir, error=0, topics=()):
    return NS(
        log_dir=log_dir,
        error_code=error,
        topics=[
            NS(
                name=t,
                partitions=[
                    NS(partition_index=i, partition_size=s, offset_lag=lag, is_future_key=f)
                    for i, s, lag, f in ps
                ],
            )
            for t, ps in topics
        ],
    )


def test_json_is_kafkas_compact_format_with_its_key_order():
    responses = {
        2: NS(results=[_result("/d/b", 56)]),
        1: NS(
            results=[_result("/d/a", 0, [("t", [(0, 120, 0, False)]), ("u", [(3, 7, 5, True)])])]
        ),
    }
    text = format_log_dirs_json(responses, set())
    assert text == (
        '{"version":1,"brokers":[{"broker":1,"logDirs":[{"logDir":"/d/a","error":null,"partitions":['
        '{"partition":"t-0","size":120,"offsetLag":0,"isFuture":false},'
        '{"partition":"u-3","size":7,"offsetLag":5,"isFuture":true}]}]},'
        '{"broker":2,"logDirs":[{"logDir":"/d/b","error":"org.apache.kafka.common.errors.KafkaStorageException",'
        '"partitions":[]}]}]}'
    )
    filtered = json.loads(format_log_dirs_json(responses, {"u"}))
    assert [p["partition"] for p in filtered["brokers"][0]["logDirs"][0]["partitions"]] == ["u-3"]


def test_describe_and_bootstrap_server_are_required(capsys):
    assert main(["log-dirs", "--bootstrap-server", "localhost:1"]) == 1
    assert 'Missing required argument "[describe]"' in capsys.readouterr().err
    assert (
        main(
            ["log-dirs", "--describe", "--bootstrap-server", "localhost:1", "--broker-list", "1,x"]
        )
        == 1
    )
    assert "Invalid broker list" in capsys.readouterr().err
