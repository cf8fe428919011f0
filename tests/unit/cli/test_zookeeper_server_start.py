"""``mafka zookeeper-server-start``: zoo.cfg from defaults, a properties file and cp-zookeeper's variables."""

from __future__ import annotations

import os

import pytest

from mafka.cli.main import main
from mafka.cli.zookeeper_server_start import ZooKeeperConfigError, render, zookeeper_config

ENSEMBLE = {
    "ZOOKEEPER_SERVER_ID": "2",
    "ZOOKEEPER_CLIENT_PORT": "2181",
    "ZOOKEEPER_SERVERS": "zk1:2888:3888;zk2:2888:3888;zk3:2888:3888",
    "ZOOKEEPER_TICK_TIME": "500",
    "PATH": "/usr/bin",  # not ours: ignored
}


def test_an_ensemble_member_from_cp_zookeepers_variables():
    config, server_id = zookeeper_config(ENSEMBLE)
    assert server_id == 2
    assert render(config) == (
        "4lw.commands.whitelist=*\n"
        "admin.enableServer=false\n"
        "clientPort=2181\n"
        "dataDir=/var/lib/zookeeper/data\n"
        "initLimit=10\n"
        "quorumListenOnAllIPs=true\n"
        "syncLimit=5\n"
        "tickTime=500\n"
        "server.1=zk1:2888:3888\n"
        "server.2=zk2:2888:3888\n"
        "server.3=zk3:2888:3888\n"
    )


def test_a_properties_file_is_overridden_by_the_environment_and_server_lines_are_replaced():
    text = "# Kafka's config/zookeeper.properties\ndataDir=/tmp/zookeeper\nclientPort=2182\nmaxClientCnxns=0\n" \
           "server.1=old:1:2\n"
    config, server_id = zookeeper_config({"ZOOKEEPER_CLIENT_PORT": "2190", "ZOOKEEPER_SERVERS": "a:1:2,b:3:4"}, text)
    assert server_id is None
    assert (config["dataDir"], config["clientPort"], config["maxClientCnxns"]) == ("/tmp/zookeeper", "2190", "0")
    assert (config["server.1"], config["server.2"]) == ("a:1:2", "b:3:4")
    standalone, _ = zookeeper_config({}, "dataDir=/d\n")
    assert not [k for k in standalone if k.startswith("server.")]


@pytest.mark.parametrize(("env", "message"), [
    ({"ZOOKEEPER_CLIENTPORT": "2181"}, "unknown environment variable ZOOKEEPER_CLIENTPORT"),
    ({"ZOOKEEPER_TICK_TIME": "fast"}, "tickTime must be a positive integer, not 'fast'"),
    ({"ZOOKEEPER_CLIENT_PORT": "0"}, "clientPort must be a positive integer"),
    ({"ZOOKEEPER_SERVERS": "zk1:2888"}, "ZOOKEEPER_SERVERS entry 1 is 'zk1:2888'"),
    ({"ZOOKEEPER_SERVERS": "zk1:2888:3888;zk2:2888:3888", "ZOOKEEPER_SERVER_ID": "3"},
     "ZOOKEEPER_SERVER_ID 3 is not one of the servers [1, 2]"),
    ({"ZOOKEEPER_SERVER_ID": "one"}, "ZOOKEEPER_SERVER_ID must be a number"),
])
def test_bad_settings_are_named(env, message):
    with pytest.raises(ZooKeeperConfigError, match=message.replace("[", r"\[").replace("]", r"\]")):
        zookeeper_config(env)


def test_a_malformed_properties_line_is_named():
    with pytest.raises(ZooKeeperConfigError, match="line 2: expected key=value"):
        zookeeper_config({}, "tickTime=2000\nnonsense\n")


def test_print_config_and_a_member_without_an_id(tmp_path, monkeypatch, capsys):
    for k in [k for k in os.environ if k.startswith("ZOOKEEPER_")]:
        monkeypatch.delenv(k)
    monkeypatch.setenv("ZOOKEEPER_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("ZOOKEEPER_SERVERS", "zk1:2888:3888;zk2:2888:3888;zk3:2888:3888")
    assert main(["zookeeper-server-start", "--print-config"]) == 0
    assert f"dataDir={tmp_path / 'data'}\n" in capsys.readouterr().out
    assert main(["zookeeper-server-start"]) == 2
    assert "needs ZOOKEEPER_SERVER_ID" in capsys.readouterr().err
    monkeypatch.setenv("ZOOKEEPER_TICK_TIME", "-5")
    assert main(["zookeeper-server-start"]) == 2
    assert "tickTime must be a positive integer" in capsys.readouterr().err
