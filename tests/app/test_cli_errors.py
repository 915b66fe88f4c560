"""What ``qmon`` prints and returns when it cannot start: the reason on one line, exit status 2."""

from __future__ import annotations

import pytest

from qmon.app import cli
from qmon.app.commands.mqsc import commands_read
from qmon.streaming import job
from qmon.streaming.units import CheckpointError


def test_a_checkpoint_qmon_cannot_carry_on_from_stops_run_with_the_reason(monkeypatch, capsys):
    def refuse(*args, **kwargs):
        raise CheckpointError("/data/ckpt: this checkpoint holds qmon state of version 4 ...")

    monkeypatch.setattr(job, "run", refuse)
    assert cli.main(["run", "--bootstrap", "localhost:1"]) == 2
    assert capsys.readouterr().err.strip() == (
        "qmon: checkpoint error: /data/ckpt: this checkpoint holds qmon state of version 4 ..."
    )


def test_other_failures_are_not_taken_for_checkpoint_errors(monkeypatch):
    monkeypatch.setattr(job, "run", lambda *a, **k: (_ for _ in ()).throw(RuntimeError("boom")))
    with pytest.raises(RuntimeError, match="boom"):
        cli.main(["run", "--bootstrap", "localhost:1"])


@pytest.mark.parametrize(
    "n,failed,text",
    [
        (1, 0, "One MQSC command read.\nAll valid MQSC commands were processed."),
        (3, 0, "3 MQSC commands read.\nAll valid MQSC commands were processed."),
        (1, 1, "One MQSC command read.\nOne command has a syntax error or failed."),
        (4, 2, "4 MQSC commands read.\n2 commands have a syntax error or failed."),
    ],
)
def test_qmon_mqsc_sums_up_as_runmqsc_does(n, failed, text):
    assert commands_read(n, failed) == text
