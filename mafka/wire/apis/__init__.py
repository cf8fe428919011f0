"""One module per Kafka API, each defining ``SPEC`` (an :class:`~mafka.wire.api.ApiSpec`).

:mod:`mafka.wire.registry` discovers the modules here; adding an API means
adding a module, nothing else.
"""
