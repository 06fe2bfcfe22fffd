"""The status report: MindSpore's layout, the rolling windows and the diagnosis."""

import datetime

from recordio.sink.status import PushLog, SinkStatus, diagnose, format_time


def test_times_are_printed_as_mindspore_does():
    t = datetime.datetime(2022, 5, 9, 11, 36, 0, 521386).timestamp()
    assert format_time(t) == "2022-05-09-11:36:00.521.386"
    assert format_time(None) == "-1"


def test_the_log_keeps_the_first_push_and_the_last_ten():
    log = PushLog()
    for n in range(13):
        log.push_started(host_queue_size=n % 3)
        log.push_ended(device_queue_size=n % 2 + 1)
    log.push_started(host_queue_size=1)
    status = log.snapshot("chan", {}, None, None)
    assert status.have_sent == 13
    assert status.host_queue == (1, 2, 0, 1, 2, 0, 1, 2, 0, 1)
    assert status.device_queue == (2, 1, 2, 1, 2, 1, 2, 1, 2, 1)
    assert len(status.pushes) == 10 and status.pushes[-1][1] is None
    assert status.push_first[0] <= status.push_first[1] <= status.pushes[0][0]
    lines = status.report().splitlines()
    assert lines[:4] == ["channel_name: chan", "have_sent: 13;", "host_queue: 1, 2, 0, 1, 2, 0, 1, 2, 0, 1;",
                         "device_queue: 2, 1, 2, 1, 2, 1, 2, 1, 2, 1;"]
    assert lines[4].strip() == "push_first_start_time -> push_first_end_time"
    assert lines[6].strip() == "push_start_time -> push_end_time"
    assert len(lines) == 7 + 10 and lines[-1].rstrip().endswith("->")


def status(**fields):
    base = dict(channel_name="c", have_sent=0, host_queue=(), device_queue=(), push_first=(None, None),
                pushes=(), produced=0)
    return SinkStatus(**{**base, **fields})


def test_the_diagnosis_follows_the_faq():
    assert diagnose(status()).startswith("nothing sent at all")
    assert diagnose(status(produced=1, pushes=((1.0, None),))).startswith("host->device copy is stalled")
    assert diagnose(status(produced=3, have_sent=2, pushes=((1.0, 2.0),))).startswith("host->device copy is behind")
    assert diagnose(status(produced=3, have_sent=3, pushes=((1.0, 2.0),))).startswith("data processing is slow")


def test_details_name_stages_waits_and_the_last_error():
    text = str(status(stages={"feeder": "copying batch 4"}, wait_s=1.5, max_wait_s=1.0,
                      last_error="data processing: KeyError: 'x'", since_consumed_s=2.0))
    assert "feeder: copying batch 4" in text
    assert "consumer wait: total 1.500 s, longest 1.000 s" in text
    assert "last error: data processing: KeyError: 'x'" in text
