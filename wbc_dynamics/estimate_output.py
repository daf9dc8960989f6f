"""The base estimate on ROS: ``~/odom`` (nav_msgs/Odometry) and the odom -> base transform on
``/tf``, shared by the controller node (``base_state: imu``) and ``wbc_estimator``.

Frames and covariances of the published estimate (see docs/node.md, "Running without
odometry"):

* ``header.frame_id`` = ``odom_frame`` (default ``odom``): the estimator's world frame, z up,
  its origin under the base where the estimate started, at ``ground_height``; horizontal position
  and yaw drift with the feet's slip and the gyro's bias, as every odometry does.
* ``child_frame_id`` = ``base_frame`` (default: the URDF's root link), the frame of the IMU.
* ``pose.pose``: base position [m] and orientation (world-from-base quaternion) in the odom frame.
* ``pose.covariance`` (6x6 row-major over x, y, z, rotation about x, y, z): the position block is
  the filter's position covariance [m^2]; the rotation block [rad^2] is the IMU message's own
  ``orientation_covariance`` when the orientation is the IMU's output and the message gives a
  usable one, else ``orientation_variance`` on the diagonal (the node's
  ``sensing_base_orientation_noise`` squared); position / rotation cross terms are zero.
* ``twist.twist``: linear [m/s] and angular [rad/s] velocity of the base in the **child (base)
  frame**, as nav_msgs/Odometry prescribes; ``twist.covariance``: the filter's velocity
  covariance rotated into the base frame, ``R^T P_v R`` [m^2/s^2], and the gyro's variance
  ``imu_gyro_noise^2`` on the angular diagonal [rad^2/s^2] (the angular velocity is the gyro's
  reading).

``/tf`` carries one geometry_msgs/TransformStamped per publication (odom_frame -> base_frame,
the same pose) as a tf2_msgs/TFMessage -- when the ``tf2_msgs`` Python package is installed (it
comes with every ROS 2 install; the pip wheels this package otherwise uses have none): without
it the transform is not published and :attr:`EstimateOutput.tf_state` says so (the node logs it
once and reports it in /diagnostics).

Everything is built once; a publication fills the messages in place (about 25 us: 15 us to
fill, 8 us to publish; at ``estimate_rate``, default 100 Hz).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from geometry_msgs.msg import TransformStamped
from nav_msgs.msg import Odometry

__all__ = ["EstimateOutput", "fill_estimate"]


def _rotation(quat: np.ndarray, out: np.ndarray) -> np.ndarray:
    """World-from-base rotation matrix of the unit quaternion ``quat`` (xyzw) into ``out``."""
    x, y, z, w = (float(c) for c in quat)
    out[0] = (1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w))
    out[1] = (2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w))
    out[2] = (2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y))
    return out


def fill_estimate(msg: Odometry, transform: TransformStamped | None, estimator: Any,
                  stamp: tuple[int, int], orientation_covariance: np.ndarray,
                  gyro_variance: float, scratch: np.ndarray | None = None) -> None:
    """Write ``estimator``'s estimate (a :class:`~wbc_dynamics.estimator.BaseEstimator`) into
    ``msg`` (and ``transform``) in place: see the module docstring for frames and covariances.

    Args:
        stamp: header.stamp (sec, nanosec) of both.
        orientation_covariance: (3, 3) [rad^2] the pose covariance's rotation block.
        gyro_variance: [rad^2/s^2] the twist covariance's angular diagonal.
        scratch: (3, 3) work array for the rotation (allocated if None).
    """
    e = estimator.data
    R = _rotation(e.quat, np.empty((3, 3)) if scratch is None else scratch)
    p, vw = e.x[0:3], e.x[3:6]
    vb = R.T @ vw
    msg.header.stamp.sec, msg.header.stamp.nanosec = stamp
    pp, qq = msg.pose.pose.position, msg.pose.pose.orientation
    pp.x, pp.y, pp.z = float(p[0]), float(p[1]), float(p[2])
    qq.x, qq.y, qq.z, qq.w = (float(c) for c in e.quat)
    tl, ta = msg.twist.twist.linear, msg.twist.twist.angular
    tl.x, tl.y, tl.z = float(vb[0]), float(vb[1]), float(vb[2])
    ta.x, ta.y, ta.z = (float(c) for c in e.omega)
    pc = msg.pose.covariance.reshape(6, 6)
    pc[0:3, 0:3] = e.P[0:3, 0:3]
    pc[3:6, 3:6] = orientation_covariance
    tc = msg.twist.covariance.reshape(6, 6)
    tc[0:3, 0:3] = R.T @ e.P[3:6, 3:6] @ R
    tc[3, 3] = tc[4, 4] = tc[5, 5] = gyro_variance
    if transform is not None:
        transform.header.stamp.sec, transform.header.stamp.nanosec = stamp
        tr, rot = transform.transform.translation, transform.transform.rotation
        tr.x, tr.y, tr.z = pp.x, pp.y, pp.z
        rot.x, rot.y, rot.z, rot.w = qq.x, qq.y, qq.z, qq.w


class EstimateOutput:
    """Publishers and preallocated messages of the estimate (module docstring) on ``node``.

    Args:
        node: the rclpy node (``~/odom`` is relative to it).
        odom_frame, base_frame: frame ids of the pose's frame and the child (base) frame.
        rate: [Hz] largest publication rate (``estimate_rate``, > 0).
        publish_tf: also publish the transform on ``/tf`` (if tf2_msgs is installed).
        gyro_noise: [rad/s] the gyro's noise std (``imu_gyro_noise``).
        orientation_noise: [rad] orientation std used when the IMU gives no usable covariance.
    """

    def __init__(self, node: Any, odom_frame: str, base_frame: str, rate: float,
                 publish_tf: bool, gyro_noise: float, orientation_noise: float) -> None:
        if not (math.isfinite(rate) and rate > 0.0):
            raise ValueError(f"estimate_rate: must be finite and > 0, got {rate!r}")
        for name, x in (("imu_gyro_noise", gyro_noise),
                        ("sensing_base_orientation_noise", orientation_noise)):
            if not (math.isfinite(x) and x >= 0.0):
                raise ValueError(f"{name}: must be finite and >= 0, got {x!r}")
        self.period = 1.0 / float(rate)
        self.gyro_variance = float(gyro_noise) ** 2
        #: (3, 3) [rad^2] the rotation block used when the IMU gives no usable covariance
        self.default_orientation_covariance = np.eye(3) * float(orientation_noise) ** 2
        self.msg = Odometry()
        self.msg.header.frame_id = str(odom_frame)
        self.msg.child_frame_id = str(base_frame)
        self.pub_odom = node.create_publisher(Odometry, "~/odom", 10)
        self.entities: list[Any] = [self.pub_odom]
        self.transform: TransformStamped | None = None
        self._tf_msg = None
        self.pub_tf = None
        #: "published", "off" (publish_tf false) or why it is not published
        self.tf_state = "off"
        if publish_tf:
            try:
                from tf2_msgs.msg import TFMessage
            except ImportError:
                self.tf_state = "unavailable (tf2_msgs not installed)"
            else:
                self.transform = TransformStamped()
                self.transform.header.frame_id = str(odom_frame)
                self.transform.child_frame_id = str(base_frame)
                self._tf_msg = TFMessage(transforms=[self.transform])
                # (the list holds a copy: fill the message's own element in place)
                self.transform = self._tf_msg.transforms[0]
                self.pub_tf = node.create_publisher(TFMessage, "/tf", 100)
                self.entities.append(self.pub_tf)
                self.tf_state = "published"
        self._scratch = np.zeros((3, 3))
        self._last = -math.inf
        #: publications so far
        self.count = 0

    def due(self, now: float) -> bool:
        """A publication is due at ``now`` [s] (``rate`` not exceeded)."""
        return now - self._last >= self.period - 1e-9

    def publish(self, estimator: Any, now: float, stamp: tuple[int, int],
                orientation_covariance: np.ndarray | None = None) -> None:
        """Publish ``estimator``'s estimate stamped ``stamp`` (sec, nanosec) at ``now`` [s];
        ``orientation_covariance`` (3, 3) [rad^2] or None (the default one)."""
        self._last = now
        cov = (self.default_orientation_covariance if orientation_covariance is None
               else orientation_covariance)
        fill_estimate(self.msg, self.transform, estimator, stamp, cov, self.gyro_variance,
                      self._scratch)
        self.pub_odom.publish(self.msg)
        if self.pub_tf is not None:
            self.pub_tf.publish(self._tf_msg)
        self.count += 1
