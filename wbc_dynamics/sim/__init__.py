"""Closed-loop simulation of ``wbc_dynamics`` controllers with MuJoCo
(Zapolsky & Drumwright, Secs. 7-8).

Modules:

* :mod:`.mujoco_model` -- the MuJoCo plant built from the controller's URDF (exact dynamics).
* :mod:`.references` -- desired trajectories: quadruped stand / weight shift / trot (Sec. 7.6),
  arm sinusoid with a grasped box (Sec. 7.2.2); plus a ROS reference publisher.
* :mod:`.closed_loop` -- in-process plant + ``WholeBodyController`` loop (no DDS).
* :mod:`.demo` -- the README's main job; :mod:`.experiments` -- Sec. 8 tables and plots.
* :mod:`.sim_node` -- a ROS 2 node that behaves like a robot driven by ros2_control.

Importing this package imports nothing heavy; MuJoCo is needed only by the modules that use it.
"""
