"""The executor the package's nodes spin in (rclpy only; imported by the node modules).

rclpy's ``EventsExecutor`` (``rclpy.experimental``) dispatches each message, timer and service
event from a C++ queue in arrival order; the ``SingleThreadedExecutor`` rebuilds a wait set in
Python for every callback. The controller node spins the events executor where this rclpy has
it (its ``executor`` parameter). The simulator and reference nodes stay on the single-threaded
executor: under the events executor of this rclpy (Kilted) the lockstep simulation never
started (its first state did not reach the controller) and neither node exited on SIGINT.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

__all__ = ["EXECUTORS", "make_executor", "spin_until_shutdown"]

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


def spin_until_shutdown(program: str, make_node: Callable[[], Any]) -> int:
    """Build a node with ``make_node`` (after the caller's ``rclpy.init``) and spin it on the
    single-threaded executor until Ctrl-C or a shutdown from outside.

    Returns the process exit code: 0 after Ctrl-C / SIGTERM (rclpy's signal handler) or an
    external shutdown, 2 after a ``ValueError`` from building or running the node (a bad
    parameter: printed as ``<program>: <message>`` on stderr). An exception raised while the
    context shuts down (a timer firing into a destroyed publisher) is not an error; any other
    is raised. The node is destroyed and rclpy shut down in every case."""
    import rclpy
    from rclpy.executors import ExternalShutdownException

    node = None
    try:
        node = make_node()
        rclpy.spin(node)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    except ValueError as exc:
        print(f"{program}: {exc}", file=sys.stderr)
        return 2
    except Exception:  # noqa: BLE001 - a timer firing while the context shuts down
        if rclpy.ok():
            raise
    finally:
        if node is not None:
            node.destroy_node()
        if rclpy.ok():
            rclpy.shutdown()
    return 0
