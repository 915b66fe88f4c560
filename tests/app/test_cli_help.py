"""Every option and argument of the command line says what it is for: `qmon ... --help` and the generated
command-line reference show each one's help text."""

from __future__ import annotations

import argparse
from collections.abc import Iterator

from qmon.app.cli import parser


def _parsers(p: argparse.ArgumentParser, prog: str = "qmon") -> Iterator[tuple[str, argparse.ArgumentParser]]:
    """``p`` and every parser below it (subcommands, and theirs), each with its command line."""
    yield prog, p
    for action in p._actions:  # (argparse keeps its subcommands here: no public accessor)
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _parsers(sub, f"{prog} {name}")


def test_the_walk_reaches_every_subcommand():
    commands = {prog for prog, _p in _parsers(parser())}
    assert {"qmon", "qmon run", "qmon kafka start", "qmon registry start", "qmon tail", "qmon demo"} <= commands


def test_every_option_and_argument_has_a_help_text():
    missing = []
    for prog, p in _parsers(parser()):
        for action in p._actions:
            if isinstance(action, argparse._HelpAction):  # -h, --help
                continue
            if isinstance(action, argparse._SubParsersAction):  # the command itself: each has its own help
                missing += [f"{prog} {c.dest}" for c in action._choices_actions if not (c.help or "").strip()]
                continue
            if action.help == argparse.SUPPRESS or not (action.help or "").strip():
                missing.append(f"{prog} {'/'.join(action.option_strings) or action.dest}")
    assert not missing, f"no help text: {missing}"
