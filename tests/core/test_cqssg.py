"""Structure definitions read from a CQSSGxxx member and a CFRM policy."""

from __future__ import annotations

import pytest

from qmon.core.config import ConfigError, load_config
from qmon.core.cqssg import DefinitionError, merge, parse_cfrm, parse_cqssg
from tests.conftest import ROOT

IMS = ROOT / "config" / "ims"


def test_the_sample_members_parse_and_merge():
    cqssg = parse_cqssg((IMS / "CQSSG000").read_text())
    cfrm = parse_cfrm((IMS / "CFRMPOL").read_text())
    assert [(s["strname"], s.get("ovflwstr"), s.get("ovflwmax")) for s in cqssg] == [
        ("MSGQ1", "OVFQ1", 70),
        ("MSGQ2", None, None),
    ]
    assert cfrm["MSGQ1"] == {"size": 384, "initsize": 256, "fullthreshold": 85, "line": 2}
    assert cfrm["MSGQ2"]["size"] == 96
    assert merge(cqssg, cfrm) == [
        {
            "strname": "MSGQ1",
            "size": 384,
            "initsize": 256,
            "fullthreshold": 85,
            "ovflwmax": 70,
            "ovflwstr": "OVFQ1",
            "ovflwsize": 512,
        },
        {"strname": "MSGQ2", "size": 96},
    ]


def test_cfrm_sizes_take_unit_suffixes():
    assert parse_cfrm("STRUCTURE NAME(A) SIZE(2M) INITSIZE(512K)")["A"] == {"size": 2048, "initsize": 512, "line": 1}


@pytest.mark.parametrize(
    "text,fragment",
    [
        ("STRUCTURE (OVFLWSTR=X)", "needs STRNAME"),
        ("STRUCTURE (STRNAME=A,OVFLWMAX=lots)", "OVFLWMAX=LOTS"),
        ("STRUCTURE STRNAME=A", "expected STRUCTURE (STRNAME"),
    ],
)
def test_cqssg_errors_name_the_line(text, fragment):
    with pytest.raises(DefinitionError) as err:
        parse_cqssg("* header\n" + text)
    assert err.value.line == 2 and fragment in str(err.value)


def test_a_structure_missing_from_the_cfrm_policy_is_an_error():
    with pytest.raises(DefinitionError, match="no STRUCTURE NAME\\(B\\) in the CFRM policy"):
        merge(parse_cqssg("STRUCTURE (STRNAME=B)"), parse_cfrm("STRUCTURE NAME(A) SIZE(10)"))


def test_configuration_reads_structures_from_the_members(tmp_path):
    cfg = tmp_path / "qmon.yaml"
    cfg.write_text(f"structures_from:\n  cqssg: {IMS / 'CQSSG000'}\n  cfrm: {IMS / 'CFRMPOL'}\n")
    config = load_config(cfg)
    assert [s.strname for s in config.structures] == ["MSGQ1", "MSGQ2"]
    assert config.structure_settings().get("MSGQ1").ovflwsize == 512


def test_a_bad_member_stops_start_up_with_file_and_line(tmp_path):
    (tmp_path / "CQSSG").write_text("STRUCTURE (STRNAME=A,OVFLWMAX=x)\n")
    (tmp_path / "CFRM").write_text("STRUCTURE NAME(A) SIZE(10)\n")
    cfg = tmp_path / "qmon.yaml"
    cfg.write_text("structures_from:\n  cqssg: CQSSG\n  cfrm: CFRM\n")
    with pytest.raises(ConfigError) as err:
        load_config(cfg)
    assert "CQSSG: line 1: OVFLWMAX=X" in str(err.value)
