"""``mafka cluster up`` stops its brokers one after another, the controller last."""

from mafka.cli.cluster import stop_order

BROKERS = [{"id": 1}, {"id": 2}, {"id": 3}]


def test_the_controller_stops_last():
    assert stop_order(BROKERS, 1) == [1, 2, 0]
    assert stop_order(BROKERS, 3) == [0, 1, 2]


def test_without_a_known_controller_every_broker_still_stops_in_id_order():
    assert stop_order(BROKERS, None) == [0, 1, 2]
    assert stop_order(BROKERS, 7) == [0, 1, 2]
