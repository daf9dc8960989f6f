"""The executor the package's nodes spin in (rclpy only; imported by the node modules).

rclpy's ``EventsExecutor`` (``rclpy.experimental``) dispatches each message, timer and service
event from a C++ queue in arrival order; the ``SingleThreadedExecutor`` rebuilds a wait set in
Python for every callback. The controller, simulator and reference nodes spin the events
executor where this rclpy has it, one ``spin_once`` at a time: its ``spin()`` (rclpy Kilted)
dispatched the first timer event and then neither another callback nor Python's signal
handlers (the lockstep simulation never started, and the node did not exit on SIGINT), while a
loop of ``spin_once`` calls with a timeout serves both.
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


def spin_until_shutdown(program: str, make_node: Callable[[], Any],
                        executor: str = "events") -> int:
    """Build a node with ``make_node`` (after the caller's ``rclpy.init``) and spin it on
    :func:`make_executor`'s ``executor`` until Ctrl-C or a shutdown from outside.

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
        ex = make_executor(executor, node.get_logger())
        ex.add_node(node)
        while rclpy.ok():  # (one spin_once at a time: see the module docstring)
            ex.spin_once(timeout_sec=0.1)
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
