"""The sink's status report: MindSpore's GetNext-timeout report, plus what each stage is doing.

A *push* is the feeder handing one batch to the device queue: it starts when the
feeder takes the batch from the host queue and ends when the batch (copied, tail
applied, ready-event recorded) sits in the device queue. The fields and the text
are those of MindSpore's data-channel report (see docs/sink.md for how to read it)::

    channel_name: 29475464-f51b-11ee-b72b-8feb6783b0c3
    have_sent: 3;
    host_queue: 1, 0, 1;
    device_queue: 1, 2, 3;
          push_first_start_time -> push_first_end_time
    2022-05-09-11:36:00.521.386 -> 2022-05-09-11:36:00.782.215
                push_start_time -> push_end_time
    2022-05-09-11:36:00.521.386 -> 2022-05-09-11:36:00.782.215

This module holds no torch and no threads: :class:`PushLog` is updated under the
caller's lock and :func:`diagnose` is a pure function of a :class:`SinkStatus`.
"""

import collections
import dataclasses
import datetime
import time

__all__ = ["PushLog", "SinkStatus", "diagnose", "format_time"]

HISTORY = 10   # pushes remembered, as in MindSpore's report


def format_time(t):
    """Wall-clock seconds as MindSpore prints them (``2022-05-09-11:36:00.521.386``); -1 if never."""
    if t is None:
        return "-1"
    stamp = datetime.datetime.fromtimestamp(t)
    micro = stamp.microsecond
    return f"{stamp:%Y-%m-%d-%H:%M:%S}.{micro // 1000:03d}.{micro % 1000:03d}"


@dataclasses.dataclass(frozen=True)
class SinkStatus:
    """A snapshot of a sink. ``str(status)`` is the MindSpore-shaped report."""

    channel_name: str
    have_sent: int
    host_queue: tuple            # host-queue size at the start of each of the last 10 pushes
    device_queue: tuple          # device-queue size at the end of each of the last 10 pushes
    push_first: tuple            # (start, end) of the first push; None = not yet
    pushes: tuple                # (start, end) of the last 10 pushes; end None = in progress
    produced: int = 0            # batches the host pipeline produced
    consumed: int = 0            # batches the training loop took
    stages: dict = dataclasses.field(default_factory=dict)   # stage -> what it is doing now
    since_consumed_s: float | None = None   # seconds since the consumer last got a batch (or started)
    wait_s: float = 0.0          # total time the consumer spent waiting for batches
    max_wait_s: float = 0.0
    last_error: str | None = None

    def report(self):
        """The report in MindSpore's layout."""
        lines = [f"channel_name: {self.channel_name}",
                 f"have_sent: {self.have_sent};",
                 f"host_queue: {', '.join(map(str, self.host_queue))};",
                 f"device_queue: {', '.join(map(str, self.device_queue))};",
                 "      push_first_start_time -> push_first_end_time"]
        start, end = self.push_first
        lines.append(f"{format_time(start):>27} -> {format_time(end)}")
        lines.append("            push_start_time -> push_end_time")
        lines += [f"{format_time(s):>27} -> {'' if e is None else format_time(e)}" for s, e in self.pushes]
        return "\n".join(lines)

    def details(self):
        """recordio's additions: stage states, consumer waits, the last error."""
        lines = [f"produced: {self.produced}; consumed: {self.consumed};"]
        lines += [f"{stage}: {state}" for stage, state in sorted(self.stages.items())]
        if self.since_consumed_s is not None:
            lines.append(f"since last batch taken: {self.since_consumed_s:.3f} s")
        lines.append(f"consumer wait: total {self.wait_s:.3f} s, longest {self.max_wait_s:.3f} s")
        if self.last_error:
            lines.append(f"last error: {self.last_error}")
        return "\n".join(lines)

    def __str__(self):
        return f"{self.report()}\n{self.details()}"


class PushLog:
    """Counters and the rolling windows behind :class:`SinkStatus` (not thread-safe by itself)."""

    def __init__(self):
        self.have_sent = 0
        self.produced = 0
        self.consumed = 0
        self.host_queue = collections.deque(maxlen=HISTORY)
        self.device_queue = collections.deque(maxlen=HISTORY)
        self.pushes = collections.deque(maxlen=HISTORY)
        self.first = [None, None]
        self.wait_s = 0.0
        self.max_wait_s = 0.0
        self.last_taken = None

    def push_started(self, host_queue_size):
        now = time.time()
        self.host_queue.append(host_queue_size)
        self.pushes.append([now, None])
        if self.first[0] is None:
            self.first[0] = now

    def push_ended(self, device_queue_size):
        now = time.time()
        self.have_sent += 1
        self.device_queue.append(device_queue_size)
        self.pushes[-1][1] = now
        if self.first[1] is None:
            self.first[1] = now

    def taken(self, waited_s):
        self.consumed += 1
        self.wait_s += waited_s
        self.max_wait_s = max(self.max_wait_s, waited_s)
        self.last_taken = time.monotonic()

    def snapshot(self, channel_name, stages, last_error, started):
        since = self.last_taken if self.last_taken is not None else started
        return SinkStatus(
            channel_name=channel_name, have_sent=self.have_sent,
            host_queue=tuple(self.host_queue), device_queue=tuple(self.device_queue),
            push_first=tuple(self.first), pushes=tuple(tuple(p) for p in self.pushes),
            produced=self.produced, consumed=self.consumed, stages=dict(stages),
            since_consumed_s=None if since is None else time.monotonic() - since,
            wait_s=self.wait_s, max_wait_s=self.max_wait_s, last_error=last_error)


def diagnose(status):
    """Which stage is slow, in the words of MindSpore's FAQ decision table."""
    if status.produced == 0 and status.have_sent == 0:
        return ("nothing sent at all: the data pipeline has not produced a single batch; "
                "iterate the dataset on its own (create_dict_iterator) to check it")
    if status.pushes and status.pushes[-1][1] is None:
        return (f"host->device copy is stalled: batch {status.have_sent} was produced but its copy "
                "(or the offloaded tail) has not finished; check the device")
    if status.produced > status.have_sent:
        return (f"host->device copy is behind: {status.produced} batches produced, "
                f"{status.have_sent} sent")
    return (f"data processing is slow: all {status.have_sent} batches produced were sent and the "
            "next one is still being processed; speed up the pipeline (more workers, cheaper maps) "
            "or raise the timeout")
