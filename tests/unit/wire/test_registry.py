"""The registry compiles structs lazily; ``compile_all`` compiles every one (a broker's start-up)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

from mafka.wire import registry


def test_importing_the_registry_compiles_nothing_and_compile_all_compiles_every_decode_version() -> None:
    # A fresh interpreter: this one's structs were compiled by earlier tests.
    script = textwrap.dedent(
        """
        from mafka.wire import registry
        specs = registry.API_SPECS.values()
        before = sum(len(s.request._structs) + len(s.response._structs) for s in specs)
        registry.compile_all()
        after = sum(len(s.request._structs) + len(s.response._structs) for s in specs)
        expected = sum(2 * (s.decode[1] - s.decode[0] + 1) for s in specs)
        print(before, after, expected)
        """
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout
    before, after, expected = map(int, out.split())
    assert before == 0
    assert after == expected > 300


def test_a_struct_compiled_on_first_use_is_the_one_compile_all_keeps() -> None:
    spec = registry.spec_for(3, 9)  # Metadata v9 (flexible)
    first = spec.request.struct(9)
    spec.compile()
    assert spec.request.struct(9) is first
    body = {"topics": None, "allow_auto_topic_creation": True,
            "include_cluster_authorized_operations": False, "include_topic_authorized_operations": False}
    assert first.parse(first.build(body))["allow_auto_topic_creation"] is True
