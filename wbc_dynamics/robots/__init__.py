"""Bundled robot models (URDF) of ``wbc_dynamics`` and their nominal poses.

Robots (see the comment at the top of every URDF for the modelling choices):

``quadruped``
    4.8 kg, 16 cm tall 12-DoF quadruped with sphere feet (Zapolsky & Drumwright, Sec. 7 / Fig. 8).
    Floating base; legs LF, LH, RF, RH with joints ``*_haa``, ``*_hfe``, ``*_kfe``;
    contact spheres (r = 1.25 cm) centred at the origins of ``*_foot``.
``arm``
    Fixed-base 7-DoF LBR-like arm with a hand of four 1-DoF fingers (11 DoF, after Zapolsky &
    Drumwright, Fig. 9); contact spheres (r = 1 cm) centred at the origins of
    ``F1_tip`` .. ``F4_tip``.
``box``
    The grasped object: a single 10 cm, 0.5 kg cube, to be loaded with a free-flyer root.
``small_box``
    A 4 cm, 0.1 kg cube for parallel grippers (``config/robots/panda_grasp.yaml``), likewise.
``branched``
    Floating-base branched test system with revolute and prismatic joints (Saccon et al., Fig. 4;
    helical joints modelled as revolute).
``humanoid``
    31-DoF, 50 kg humanoid; sole boxes, four sole-corner spheres per foot and a hand sphere.

Pose convention (the core's ``q``): floating base ``q = [x, y, z, qx, qy, qz, qw, joints...]``
(position in m in the world frame, unit quaternion of the base orientation, joint positions in
rad or m); fixed base ``q = joints``. Joint order = URDF movable-joint order, which is also the
depth-first order (and is listed in ``robot_info(name)["joint_names"]``).

Importing this module needs no numpy; the metadata is a plain dict of lists and floats.
"""

from __future__ import annotations

import copy
import json
import os

__all__ = ["ROBOT_NAMES", "ROBOTS_DIR", "robot_info", "robot_path"]

#: Directory of the bundled URDF files (in the installed package).
#:
#: :meta hide-value:
ROBOTS_DIR: str = os.path.dirname(os.path.abspath(__file__))
# the metadata ``_generate.py`` writes with the URDFs
with open(os.path.join(ROBOTS_DIR, "robot_data.json"), encoding="utf-8") as _fh:
    ROBOT_DATA: dict = json.load(_fh)
#: Names of the bundled robots: the valid ``name`` of :func:`robot_path` and :func:`robot_info`.
ROBOT_NAMES: tuple[str, ...] = ("quadruped", "arm", "box", "small_box", "branched", "humanoid")


def _check_name(name: str) -> str:
    if not isinstance(name, str) or name not in ROBOT_NAMES:
        raise ValueError(
            f"unknown robot name {name!r}; valid names: {', '.join(ROBOT_NAMES)}")
    return name


def robot_path(name: str) -> str:
    """Absolute path of the bundled URDF file of robot ``name``.

    Raises ``ValueError`` (listing the valid names) for an unknown name.
    """
    return os.path.join(ROBOTS_DIR, f"{_check_name(name)}.urdf")


def robot_info(name: str) -> dict:
    """Metadata of robot ``name`` (a fresh deep copy; safe to modify).

    Keys present for every robot:

    - ``floating_base`` (bool): whether the model is meant to be loaded with a free-flyer root.
    - ``base_link`` (str): root body of the dynamics model.
    - ``contact_links`` (list[str]): links carrying the contact (collision) spheres.
    - ``standing_q`` (list[float]): nominal configuration in the core's ``q`` convention; for
      the quadruped and humanoid the lowest points of the foot spheres are exactly at z = 0 m.
    - ``joint_names`` (list[str]): movable joints in ``q``/``v`` order; ``n_joints``.
    - ``total_mass`` (float, kg); ``description`` (str).

    Robot-specific keys: ``arm`` has ``grasp_q`` (arm + finger joints, rad), ``box_pose``
    (``[x, y, z, qx, qy, qz, qw]`` of the ``box`` robot's link frame in world, m) at which the
    four fingertip spheres touch the box faces, ``box_size`` (m), ``box_mass`` (kg),
    ``hand_link``, ``fingertip_links``, ``finger_joints``, ``contact_radius`` (m);
    ``quadruped`` has ``foot_links``, ``contact_radius``, ``standing_height``;
    ``humanoid`` has ``foot_contact_links``, ``hand_contact_links``, ``foot_links``,
    ``sole_links``, ``sole_size``, ``standing_height``; ``branched`` has ``perturbed_q``
    (all joints at 0.3, Saccon et al., Fig. 4b), ``prismatic_joints``, ``revolute_joints``.
    """
    return copy.deepcopy(ROBOT_DATA[_check_name(name)])
