"""wbc_dynamics: whole-body control with contact-aware inverse dynamics.

The dynamics core (``RobotModel``) needs only numpy and numba; the ROS 2 node lives in
``wbc_dynamics.node`` and is imported only when used.
"""

from .kernel_cache import drop_stale_kernel_caches

# before any kernel is loaded from numba's cache: a kernel whose callee in another module changed
# must not run the callee's old code (kernel_cache's docstring)
drop_stale_kernel_caches()

from .description import CollisionGeometry, URDFWarning  # noqa: E402
from .mimic import MimicModel  # noqa: E402
from .model import RobotModel  # noqa: E402
from .urdf_loader import CollisionBox, CollisionSphere, URDFError  # noqa: E402

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
