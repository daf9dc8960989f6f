"""The one parsed robot description (URDF -> links, joints, inertias, collision geometry).

Both the dynamics model (:mod:`wbc_dynamics.urdf_loader`) and the MuJoCo plant
(:mod:`wbc_dynamics.sim.mujoco_model`) are built from a :class:`RobotDescription`.
"""

from .geometry import (
    GEOMETRY_KINDS,
    CollisionBox,
    CollisionGeometry,
    CollisionSphere,
    boxes_of,
    spheres_of,
)
from .resources import package_roots, resolve_resource
from .urdf import (
    MAX_INERTIA,
    MAX_LENGTH,
    MAX_MASS,
    Inertial,
    JointDescription,
    LinkDescription,
    Mimic,
    RobotDescription,
    URDFError,
    URDFWarning,
    inertia_issue,
    parse_urdf,
    rpy_matrix,
)

__all__ = [
    "GEOMETRY_KINDS",
    "MAX_INERTIA",
    "MAX_LENGTH",
    "MAX_MASS",
    "CollisionBox",
    "CollisionGeometry",
    "CollisionSphere",
    "Inertial",
    "JointDescription",
    "LinkDescription",
    "Mimic",
    "RobotDescription",
    "URDFError",
    "URDFWarning",
    "boxes_of",
    "inertia_issue",
    "package_roots",
    "parse_urdf",
    "resolve_resource",
    "rpy_matrix",
    "spheres_of",
]
