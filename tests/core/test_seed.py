"""qmon seed-depth: runmqsc DISPLAY output -> START records that set each queue's depth."""

from qmon.core.queues import MonitorSettings, QueueMonitor
from qmon.core.records import Activity
from qmon.core.seed import depths_from_display, start_records

DISPLAY = """
     1 : DISPLAY QLOCAL(PAY*) CURDEPTH
AMQ8409I: Display Queue details.
   QUEUE(PAY.IN)                           TYPE(QLOCAL)
   CURDEPTH(12)
AMQ8409I: Display Queue details.
   QUEUE(PAY.OUT)                          TYPE(QLOCAL)
   CURDEPTH(0)
AMQ8409I: Display Queue details.
   QUEUE( PAY.ODD )   TYPE(QLOCAL)   CURDEPTH( 3 )
"""


def test_depths_from_display_output():
    assert depths_from_display(DISPLAY) == [("PAY.IN", 12), ("PAY.OUT", 0), ("PAY.ODD", 3)]
    assert depths_from_display("QUEUE(X) TYPE(QALIAS)\nQUEUE(Y) CURDEPTH(4)") == [("Y", 4)]


def test_start_records_set_the_depth_and_start_the_service_timer():
    recs = start_records("QM1", [("PAY.IN", 12)], 1_000)
    mon = QueueMonitor("QM1", MonitorSettings(perfmev="ENABLED"))
    r = recs[0]
    mon.on_activity(Activity(r["event_id"], "QM1", r["queue"], "START", r["ts"], r["depth_after"]))
    q = mon.queues["PAY.IN"]
    assert (q["depth"], q["svc_timer_start"]) == (12, 1_000)
    assert start_records("QM1", [("PAY.IN", 12)], 1_000)[0]["event_id"] == r["event_id"]
