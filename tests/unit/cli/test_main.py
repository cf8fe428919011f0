"""``mafka``'s entry point: each command found by name, and only its module imported."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

from mafka.cli.kafka_scripts import SCRIPTS
from mafka.cli.main import COMMAND_MODULES, command_name, main


def test_every_command_module_defines_the_command_named_after_it() -> None:
    import argparse

    for module in COMMAND_MODULES:
        parser = argparse.ArgumentParser()
        sub = parser.add_subparsers(dest="command")
        importlib.import_module(f"mafka.cli.{module}").add_parser(sub)
        assert list(sub.choices) == [command_name(module)], module


def test_every_kafka_script_names_a_command() -> None:
    names = {command_name(module) for module in COMMAND_MODULES}
    assert set(SCRIPTS.values()) <= names


def test_a_command_imports_its_module_only() -> None:
    code = ("import sys; from mafka.cli.main import main\n"
            "try:\n    main(['topics', '--help'])\nexcept SystemExit:\n    pass\n"
            "print(sorted(m for m in sys.modules if m.startswith('mafka.cli.')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True).stdout
    loaded = out.strip().splitlines()[-1]
    assert "'mafka.cli.topics'" in loaded
    assert "'mafka.cli.configs'" not in loaded and "'mafka.cli.console_consumer'" not in loaded, loaded


def test_help_and_unknown_commands_list_every_command(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_help:
        main(["--help"])
    assert exit_help.value.code == 0
    usage = capsys.readouterr().out
    for module in COMMAND_MODULES:
        assert command_name(module) in usage
    with pytest.raises(SystemExit) as unknown:
        main(["no-such-command"])
    assert unknown.value.code == 2
    assert "invalid choice: 'no-such-command'" in capsys.readouterr().err
