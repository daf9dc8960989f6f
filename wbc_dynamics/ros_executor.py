"""The executor the package's nodes spin in (rclpy only; imported by the node modules).

rclpy's ``EventsExecutor`` (``rclpy.experimental``) dispatches each message, timer and service
event from a C++ queue in arrival order; the ``SingleThreadedExecutor`` rebuilds a wait set in
Python for every callback. The controller node spins the events executor where this rclpy has
it (its ``executor`` parameter). The simulator and reference nodes stay on the single-threaded
executor: under the events executor of this rclpy (Kilted) the lockstep simulation never
started (its first state did not reach the controller) and neither node exited on SIGINT.
"""

from __future__ import annotations

from typing import Any

__all__ = ["EXECUTORS", "make_executor"]

#: the executor kinds a node's ``executor`` parameter accepts
EXECUTORS = ("events", "single_threaded")


def make_executor(kind: str = "events", logger: Any = None) -> Any:
    """An rclpy executor: ``events`` (EventsExecutor; the single-threaded executor where this
    rclpy lacks it) or ``single_threaded``. ``logger``: an rclpy logger told about a fallback
    or an unknown kind (which also falls back to ``single_threaded``)."""
    from rclpy.executors import SingleThreadedExecutor

    if kind == "events":
        try:
            from rclpy.experimental import EventsExecutor

            return EventsExecutor()
        except ImportError:
            if logger is not None:
                logger.warning("executor: EventsExecutor unavailable, single_threaded")
    elif kind != "single_threaded" and logger is not None:
        logger.warning(f"executor: unknown {kind!r}, using single_threaded")
    return SingleThreadedExecutor()
