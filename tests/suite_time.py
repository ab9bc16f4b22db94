"""Where the suite's time goes: a pytest plugin (registered by conftest.py) that prints, after
the run, worker-seconds by family and by kind of test, and the stalls: tests whose process and
its subprocesses used the CPU for under a quarter of their wall time.

A family is the test's folder under tests/ (tests/deeplab/...) or, for the suite-wide files
(tests/test_models.py, tests/test_family_defaults.py), the family of the variant, recipe or
family that its parameters name; everything else is `shared` (tests/core, tests/data, ...). A
kind is the test's first marker among KINDS, else `unit`. Time a test spends in
`models.data.builtin.prepare` (building a built-in dataset into the session's cache, or waiting
for another worker to) is the row BUILTIN_ROW's, not the test's: whichever test first needs a
dataset builds it for every later one. Under pytest-xdist each worker measures its own tests'
CPU and the controller adds the reports up."""

from __future__ import annotations

import os
import re
import resource
import time
from collections import defaultdict
from pathlib import Path

import pytest

KINDS = ("memorise", "slow")
SPINE = "resnet"  # ResNet's tests are also the spine's (resume, signals, clusters)
STALL_MIN_S = 20.0
STALL_CPU_SHARE = 0.25
BUILTIN_ROW = "built-in data"


def _cpu_seconds() -> float:
    """CPU seconds of this process and of its finished subprocesses (the CLI runs)."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


class SuiteTimes:
    """Collects every test phase's wall and CPU time; prints the tables at the end."""

    def __init__(self, families: set[str], family_of_name):
        self.families = families
        self.family_of_name = family_of_name
        self.wall: dict[str, float] = defaultdict(float)
        self.cpu: dict[str, float] = defaultdict(float)
        self.kind: dict[str, str] = {}
        self.building = [0.0, 0.0]  # this process's wall and CPU seconds in builtin.prepare
        self.built = [0.0, 0.0]  # the session's (the controller adds up the reports)
        self._watch_builtins()

    def _watch_builtins(self) -> None:
        from models.data import builtin

        prepare = builtin.prepare

        def timed(name: str) -> str:
            wall, cpu = time.monotonic(), _cpu_seconds()
            try:
                return prepare(name)
            finally:
                self.building[0] += time.monotonic() - wall
                self.building[1] += _cpu_seconds() - cpu

        builtin.prepare = timed

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_setup(self, item):
        yield from self._measured(item)

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_call(self, item):
        yield from self._measured(item)

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_teardown(self, item):
        yield from self._measured(item)

    def _measured(self, item):
        start, building = _cpu_seconds(), list(self.building)
        yield
        item.user_properties.append(("cpu_s", _cpu_seconds() - start))
        item.user_properties.append(("builtin_wall_s", self.building[0] - building[0]))
        item.user_properties.append(("builtin_cpu_s", self.building[1] - building[1]))

    def pytest_runtest_logreport(self, report) -> None:
        def total(name: str) -> float:
            return sum(v for k, v in report.user_properties if k == name)

        built = total("builtin_wall_s"), total("builtin_cpu_s")
        self.wall[report.nodeid] += report.duration - built[0]
        self.cpu[report.nodeid] += total("cpu_s") - built[1]
        self.built = [self.built[0] + built[0], self.built[1] + built[1]]
        keywords = report.keywords
        self.kind.setdefault(report.nodeid, next((k for k in KINDS if k in keywords), "unit"))

    def family(self, nodeid: str) -> str:
        """The family a test belongs to (see the module docstring)."""
        path, _, name = nodeid.partition("::")
        parts = Path(path).parts
        if len(parts) > 2 and parts[1] in self.families:
            return parts[1]
        for token in re.split(r"[\[\]\-/,]", name):
            token = token.removesuffix(".gin")
            if token in self.families:
                return token
            found = self.family_of_name(token)
            if found:
                return found
        return "shared"

    def pytest_terminal_summary(self, terminalreporter) -> None:
        if not self.wall or os.environ.get("PYTEST_XDIST_WORKER"):
            return
        table: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
        for nodeid, seconds in self.wall.items():
            table[self.family(nodeid)][self.kind[nodeid]] += seconds
        write = terminalreporter.write_line
        write("")
        write("worker-seconds by family and kind (tests/suite_time.py)")
        columns = ("unit", *KINDS)
        write(f"{'family':<18}" + "".join(f"{c:>10}" for c in columns) + f"{'total':>10}")
        rows = sorted(table.items(), key=lambda row: -sum(row[1].values()))
        for family, kinds in rows:
            cells = "".join(f"{kinds.get(c, 0.0):>10.1f}" for c in columns)
            note = "  (spine)" if family == SPINE else ""
            write(f"{family:<18}{cells}{sum(kinds.values()):>10.1f}{note}")
        write(f"{BUILTIN_ROW:<18}" + " " * 10 * len(columns) + f"{self.built[0]:>10.1f}")
        total = sum(self.wall.values()) + self.built[0]
        write(f"{'all':<18}" + " " * 10 * len(columns) + f"{total:>10.1f}")
        stalls = [
            (nodeid, wall, self.cpu[nodeid])
            for nodeid, wall in self.wall.items()
            if wall >= STALL_MIN_S and self.cpu[nodeid] < STALL_CPU_SHARE * wall
        ]
        if stalls:
            write(f"stalls (>= {STALL_MIN_S:.0f} s, CPU under {STALL_CPU_SHARE:.0%} of wall):")
        for nodeid, wall, cpu in sorted(stalls, key=lambda s: -s[1]):
            write(f"  {wall:7.1f} s wall, {cpu:6.1f} s CPU  {nodeid}")
