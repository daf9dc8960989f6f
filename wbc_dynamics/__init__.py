"""wbc_dynamics: whole-body control with contact-aware inverse dynamics.

The dynamics core (``RobotModel``) needs only numpy and numba; the ROS 2 node lives in
``wbc_dynamics.node`` and is imported only when used.
"""

from .kernel_cache import install_cache_locator

# before any kernel module is imported (numba picks a kernel's cache locator when it is
# decorated): the package's kernels are cached content-keyed, in a directory the build step
# fills and installation keeps (kernel_cache's docstring)
install_cache_locator()

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
