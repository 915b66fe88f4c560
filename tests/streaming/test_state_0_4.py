"""Reading what qmon 0.4 kept in its checkpoints, without Spark: its values (taken from
``tests/fixtures/checkpoint-0.4.0``, which qmon 0.4 wrote) as the lines ``qmon state export`` writes, and those
lines as what a job of this qmon is given by ``qmon state import``."""

from __future__ import annotations

import msgpack
import pytest

from qmon.core.queues import MonitorSettings
from qmon.streaming import state_0_4
from qmon.streaming.state_export import import_records

T0 = 1_700_000_000_000

#: a queue unit of QM1 (one shard: PAYROLL.IN altered and 3 deep, ORDERS defined and 2 deep, PERFMEV, interest)
QUEUE_UNIT = bytes.fromhex(
    "83a17601a673686172647381a3514d3181a131c5011c86a17604a7706572666d6576a7454e41424c4544a671756575657382"
    "aa504159524f4c4c2e494ec43f9e0103cf0000018bcfe56be8cf000001a2426a782198a448494748cd07d0cd13885014c2c2"
    "c2c2cf0000018bcfe56be8030300cf0000018bcfe56f0880c0c0a64f5244455253c43f9e0102cf0000018bcfe56fd0cf0000"
    "01a2426a782198a44e4f4e45ce3b9ac9ff044b14c3c2c2c3cf0000018bcfe56fd0020200cf0000018bcfe5703480c0c0a569"
    "6e64657882aa504159524f4c4c2e494e93cf0000018bcfe56f08cf000001a2426a7ff2c2a64f524445525393cf0000018bcf"
    "e57034c0c2a8696e74657265737481a45041592a91a34f5053a4736e617083a26174cf000001a2426a7821a5646972747990"
    "a4676f6e6590a364756581a3514d3181a131cf000001a2426a7ff2"
)
#: structure MSGQ1 (1KEEPME's two 512-byte messages)
STRUCTURE = bytes.fromhex(
    "de0012a17604a773697a655f6b620aa47573656402a86f76665f7573656400a671756575657381a7314b4545504d45c40b96"
    "030202c2c29193020200ad6d6f64655f616c6572745f6964c0ad66756c6c5f616c6572745f6964c0ad6e6561725f616c6572"
    "745f6964c0b16f76665f66756c6c5f616c6572745f6964c0a96e6578745f7363616ec0a76c6173745f7473cf0000018bcfe5"
    "70fcaa6c6173745f636c6f636bcf000001a2426a7821a6726563656e7480a872656a656374656400a7756e6b6e6f776ec2a5"
    "61626f7665c2a5636c65617280a4736e617082a26174cf000001a2426a7821a56469727479c2"
)


def test_a_queue_units_value_is_a_line_per_shard_and_per_queue():
    lines = list(state_0_4.unit_lines("Q", "", QUEUE_UNIT))
    [qmgr] = [x for x in lines if x["kind"] == "queue_manager"]
    assert (qmgr["name"], qmgr["perfmev"], qmgr["interest"]) == ("QM1", "ENABLED", {"PAY*": ["OPS"]})
    queues = {x["queue"]: x for x in lines if x["kind"] == "queue"}
    pay, orders = queues["PAYROLL.IN"], queues["ORDERS"]
    assert (pay["owner"], pay["depth"], pay["svc_timer_start"], pay["defined"]) == ("QM1", 3, T0 + 1_000, False)
    assert (pay["attrs"]["QSVCINT"], pay["attrs"]["QSVCIEV"]) == (2000, "HIGH")
    assert (orders["depth"], orders["defined"], orders["attrs"]["MAXDEPTH"], orders["attrs"]["QDPHIEV"]) == (
        2,
        True,
        4,
        True,
    )
    assert all("recent" not in x and "index" not in x and "snap" not in x for x in lines)  # (bookkeeping)


def test_qdpmaxev_disabled_as_0_4_defaulted_it_is_left_to_the_configuration():
    lines = list(state_0_4.unit_lines("Q", "", QUEUE_UNIT))
    assert all("QDPMAXEV" not in x["attrs"] for x in lines if x["kind"] == "queue")
    commands, activity = import_records(lines, MonitorSettings(), T0 + 60_000)
    assert [c["text"] for c in commands] == [
        "ALTER QMGR PERFMEV(ENABLED)",
        "REGISTER INTEREST QUEUE(PAY*) CLIENT(OPS)",
        "DEFINE QLOCAL('ORDERS') REPLACE QSVCIEV(NONE) QSVCINT(999999999) MAXDEPTH(4) QDEPTHHI(75) QDEPTHLO(20) "
        "QDPHIEV(ENABLED) QDPLOEV(DISABLED) QDPMAXEV(ENABLED)",
        "DEFINE QLOCAL('PAYROLL.IN') REPLACE QSVCIEV(HIGH) QSVCINT(2000) MAXDEPTH(5000) QDEPTHHI(80) QDEPTHLO(20) "
        "QDPHIEV(DISABLED) QDPLOEV(DISABLED) QDPMAXEV(ENABLED)",
    ]
    assert [(a["queue"], a["depth_after"]) for a in activity] == [("ORDERS", 2), ("PAYROLL.IN", 3)]


def test_a_structures_value_is_one_line_with_its_queues():
    [line] = state_0_4.unit_lines("S", "MSGQ1", STRUCTURE)
    assert (line["kind"], line["structure"], line["used"], line["size_kb"]) == ("structure", "MSGQ1", 2, 10)
    assert line["queues"]["1KEEPME"]["messages"] == 2


def test_state_of_another_version_is_refused_naming_it():
    group = msgpack.unpackb(QUEUE_UNIT, raw=False)
    shard = msgpack.unpackb(group["shards"]["QM1"]["1"], raw=False)
    group["shards"]["QM1"]["1"] = msgpack.packb({**shard, "v": 6}, use_bin_type=True)
    with pytest.raises(state_0_4.Release04Error, match="QM1's shard 1: state of version 6"):
        list(state_0_4.unit_lines("Q", "", msgpack.packb(group, use_bin_type=True)))


def test_a_0_4_value_is_migrated_to_this_qmons_state():
    from qmon.core.state_version import STATE_VERSION
    from qmon.streaming import state as stored

    assert state_0_4.is_0_4(msgpack.unpackb(QUEUE_UNIT, raw=False))
    settings = MonitorSettings()
    group = stored.load_queue_unit(
        state_0_4.upgrade(msgpack.unpackb(QUEUE_UNIT, raw=False), lambda q: settings.attrs_for(q)["QDPMAXEV"])
    )
    shard = stored.loads(group["shards"]["QM1"]["1"])
    assert (shard["v"], shard["perfmev"], shard["interest"]) == (STATE_VERSION, "ENABLED", {"PAY*": ["OPS"]})
    pay = stored.load_queue(shard["queues"]["PAYROLL.IN"])
    assert (pay["depth"], pay["svc_timer_start"], pay["attrs"]["QSVCINT"]) == (3, T0 + 1_000, 2000)
    assert (pay["unseen"], pay["puts"], pay["last_put"], pay["forecast"]) == (
        3,
        [],
        None,
        None,
    )  # (0.4 kept no put times)
    assert pay["attrs"]["QDPMAXEV"] is True  # (0.4's default DISABLED: the configuration's now)
    assert list(pay) == list(stored.LAYOUTS[1])  # (stored by position, as this qmon stores a queue)

    structure = stored.loads(state_0_4.upgrade(msgpack.unpackb(STRUCTURE, raw=False), lambda q: True))
    assert (structure["v"], structure["used"], structure["forecast"]) == (STATE_VERSION, 2, None)
    assert stored.load_queue(structure["queues"]["1KEEPME"]) == {
        "messages": 2,
        "elements": 2,
        "in_overflow": False,
        "put_rejected": False,
        "fifo": [[2, 2, 0]],
    }
    assert not state_0_4.is_0_4({"unit": b"", "order": {}})
