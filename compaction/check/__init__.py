"""Measuring what a compaction kept, and what it cost, on a user's own logs.

The instruments behind the benchmarks, and behind ``compaction check`` and ``compaction tune``:
a user replays their agent's recorded runs through a [`Compactor`][compaction.trigger.Compactor]
and reads, call by call, what each request held and cost.

- [`requests`][compaction.check.requests]: where the agent called the model
  ([call_points][compaction.check.requests.call_points]), and a
  [RequestMeter][compaction.check.requests.RequestMeter] that measures a stream of requests
  from any framework (tokens sent, the share a prompt cache can reuse, over the window,
  the task kept, priced with the cache);
- [`task`][compaction.check.task]: the original task and whether a request still holds it
  (verbatim, or cut with head and tail kept);
- [`logs`][compaction.check.logs], [`edits`][compaction.check.edits],
  [`facts`][compaction.check.facts]: facts of a run (task identifiers, files edited, the last
  failing test, error and command) read from the raw log by a reader of its own, independent of
  ``compaction.formats``, so a check of the library is not graded by the code it checks;
- [`probe`][compaction.check.probe]: which of those facts a request lets the model recover;
- [`identifiers`][compaction.check.identifiers]: the codes, numbers, dates, paths, names,
  URLs and addresses a person wrote, found by rules of its own;
- [`run`][compaction.check.run]: one log replayed through a config's trigger and ladder and
  measured ([check_log][compaction.check.run.check_log]); [`gate`][compaction.check.gate]:
  the floors and the verdict over many logs ([check_logs][compaction.check.gate.check_logs],
  and [assert_check][compaction.check.gate.assert_check] for a project's own tests);
- [`tune`][compaction.check.tune]: the cheapest settings that keep what the default keeps
  (optuna, an optional extra; imported only when tuning).

It reads results and never changes them. It may import the core, ``memory``, ``pricing``,
``config``, ``formats``, ``replay`` and ``trigger``; nothing in the library imports it but the
command line.
"""

from __future__ import annotations

from .facts import FACT_KINDS, Fact, facts
from .gate import CheckReport, Thresholds, assert_check, check_logs
from .identifiers import identifiers
from .logs import Log, UnreadableLog, read_log
from .probe import LogFacts, log_facts, recovered, run_text, visible_text
from .requests import RequestMeter, RequestTotals, Sent, call_points
from .run import Kept, LogCheck, check_log
from .task import HEAD_TAIL_CHARS, original_task, task_kept

__all__ = [
    "FACT_KINDS",
    "CheckReport",
    "Kept",
    "LogCheck",
    "Thresholds",
    "assert_check",
    "check_log",
    "check_logs",
    "identifiers",
    "HEAD_TAIL_CHARS",
    "Fact",
    "Log",
    "LogFacts",
    "RequestMeter",
    "RequestTotals",
    "Sent",
    "UnreadableLog",
    "call_points",
    "facts",
    "log_facts",
    "original_task",
    "read_log",
    "recovered",
    "run_text",
    "task_kept",
    "visible_text",
]
