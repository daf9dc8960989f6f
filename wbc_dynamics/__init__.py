"""wbc_dynamics: whole-body control with contact-aware inverse dynamics.

The dynamics core (``RobotModel``) needs only numpy and numba; the ROS 2 node lives in
``wbc_dynamics.node`` and is imported only when used.
"""

from .description import CollisionGeometry, URDFWarning
from .mimic import MimicModel
from .model import RobotModel
from .urdf_loader import CollisionBox, CollisionSphere, URDFError

__all__ = [
    "CollisionBox",
    "CollisionGeometry",
    "CollisionSphere",
    "MimicModel",
    "RobotModel",
    "URDFError",
    "URDFWarning",
]
__version__ = "0.1.0"
