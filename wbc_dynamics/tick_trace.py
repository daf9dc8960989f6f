"""Time stamps of the controller node's event-mode ticks, for latency breakdowns.

Set ``WBC_NODE_TRACE=<file.npy>`` in the environment of a ``wbc_controller`` process: for each
tick that publishes a record (``~/joint_commands``) the node then keeps one row of
:data:`COLUMNS` and writes the rows to that file (``numpy.save``, int64) when it is destroyed.
Times are ``time.monotonic_ns()`` (Linux ``CLOCK_MONOTONIC``, the same clock in every process
of the machine, so another process's send and receive times line up with them); ``stamp_ns``
is the joint_states header stamp (sec * 1e9 + nanosec) the tick was computed from, the key a
client matches its own rows with. ``benchmarks/bench_node.py`` reads it to split the round trip.

Unset (the default) the node keeps no trace and pays one ``is None`` test per callback.
"""

from __future__ import annotations

import os
import time

import numpy as np

__all__ = ["COLUMNS", "ENV_VAR", "TickTrace"]

#: the environment variable naming the trace file
ENV_VAR = "WBC_NODE_TRACE"
#: the columns of a row: the state's stamp [ns], then monotonic times [ns] at which the
#: joint_states callback was entered, the tick started and ended, and the record was published
COLUMNS = ("stamp_ns", "take_ns", "tick_start_ns", "tick_end_ns", "published_ns")


class TickTrace:
    """The latest ``capacity`` rows of :data:`COLUMNS` (a ring: older rows are overwritten;
    the default holds 10 minutes at 1 kHz), preallocated; :meth:`save` writes them oldest
    first."""

    def __init__(self, path: str, capacity: int = 600_000) -> None:
        if capacity < 1:
            raise ValueError(f"capacity must be >= 1, got {capacity}")
        self.path = path
        # written through at once (np.full, not np.zeros): the pages are resident from the
        # start, so a run's memory growth is the node's, not the trace filling up (24 MB)
        self._rows = np.full((capacity, len(COLUMNS)), 0, dtype=np.int64)
        self._count = 0
        self._take = 0
        self._start = 0
        self._end = 0

    @classmethod
    def from_env(cls) -> TickTrace | None:
        """A trace writing to ``$WBC_NODE_TRACE``, or None when it is unset or empty."""
        path = os.environ.get(ENV_VAR, "")
        return cls(path) if path else None

    def take(self) -> None:
        """A joint_states message was handed to the node."""
        self._take = time.monotonic_ns()

    def tick_start(self) -> None:
        """The tick's computation starts."""
        self._start = time.monotonic_ns()

    def tick_end(self) -> None:
        """The tick's computation ended (its command is about to be published)."""
        self._end = time.monotonic_ns()

    def published(self, stamp: tuple[int, int]) -> None:
        """The record of the tick, stamped ``stamp`` (sec, nanosec), was published: one row."""
        t = time.monotonic_ns()
        row = self._rows[self._count % self._rows.shape[0]]
        row[0] = stamp[0] * 1_000_000_000 + stamp[1]
        row[1] = self._take
        row[2] = self._start
        row[3] = self._end
        row[4] = t
        self._count += 1

    def rows(self) -> np.ndarray:
        """The kept rows, oldest first (a copy)."""
        cap = self._rows.shape[0]
        if self._count <= cap:
            return self._rows[: self._count].copy()
        k = self._count % cap
        return np.concatenate([self._rows[k:], self._rows[:k]])

    def save(self) -> None:
        """Write :meth:`rows` to the file ``path`` given at construction (``numpy.save``)."""
        with open(self.path, "wb") as f:
            np.save(f, self.rows())
