"""The parameter schema (wbc_dynamics/parameters.py) is the one source: ControllerConfig's
fields and defaults, the runtime set, the shipped parameter files, the generated reference
docs/parameters.md and the nodes' declarations agree with it; its checks name the parameter."""

from __future__ import annotations

import dataclasses
import math
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from wbc_dynamics import controller, parameters
from wbc_dynamics.controller import ControllerConfig
from wbc_dynamics.parameters import (
    CONTROLLER,
    PARAMETERS,
    RUNTIME_PARAMETERS,
    SPECS,
    check,
    per_joint,
)

ROOT = Path(__file__).resolve().parent.parent
#: groups of a robot configuration that the node ignores (wbc_dynamics.robot_config)
_SETUP_GROUPS = ("standing", "trot", "grasp", "sinusoid")
_PY_TYPES = {"bool": "bool", "int": "int", "float": "float", "string": "str"}


def _node_parameter_files() -> list[Path]:
    """Every shipped node parameter file (config/**/*.yaml with a ``/**`` section; the
    ros2_control files are the controller manager's)."""
    files = [p for p in sorted((ROOT / "config").rglob("*.yaml"))
             if "/**" in (yaml.safe_load(p.read_text()) or {})]
    assert len(files) >= 15, files
    return files


def _has_type(spec: parameters.ParameterSpec, value: object) -> bool:
    """``value`` (parsed YAML) has the parameter's type, as rcl needs it (no int for a float)."""
    kind = {"bool": bool, "int": int, "float": float, "string": str}[spec.type.rstrip("[]")]
    if spec.is_array:
        return isinstance(value, list) and all(type(v) is kind for v in value)
    return type(value) is kind


def test_controller_config_fields_are_the_schema_controller_parameters_with_its_defaults():
    fields = {f.name: f for f in dataclasses.fields(ControllerConfig)}
    schema = [s.name for s in SPECS if s.scope == CONTROLLER]
    assert sorted(fields) == sorted(schema)
    for name, f in fields.items():
        spec = PARAMETERS[name]
        default = f.default if f.default is not dataclasses.MISSING else f.default_factory()
        expected = spec.default_value()
        expected = [] if expected is None else expected
        assert default == expected and type(default) is type(expected), name
        if isinstance(default, list):
            assert [type(v) for v in default] == [type(v) for v in expected], name
        kind = _PY_TYPES[spec.type.rstrip("[]")]
        assert f.type == (f"list[{kind}]" if spec.is_array else kind), name
    # a list default is a fresh list per instance
    assert ControllerConfig().kp is not ControllerConfig().kp


def test_runtime_parameters_and_method_lists_are_the_schemas():
    assert controller.RUNTIME_PARAMETERS is RUNTIME_PARAMETERS
    assert controller.METHODS is parameters.METHODS
    assert PARAMETERS["method"].choices == controller.METHODS
    assert PARAMETERS["safe_mode"].choices == controller.SAFE_MODES
    assert set(RUNTIME_PARAMETERS) == {
        "kp", "kd", "ki", "integral_limit", "friction", "method", "safe_mode", "safe_damping",
        "effort_limits",
        "state_timeout", "reference_timeout", "task_kp", "task_kd", "task_weights",
        "task_active"}
    assert not set(RUNTIME_PARAMETERS) & set(parameters.STRUCTURAL_PARAMETERS)
    assert all(PARAMETERS[n].scope == CONTROLLER for n in RUNTIME_PARAMETERS)


@pytest.mark.parametrize("path", _node_parameter_files(), ids=lambda p: p.name)
def test_shipped_parameter_file_uses_schema_parameters_with_valid_values(path):
    params = yaml.safe_load(path.read_text())["/**"]["ros__parameters"]
    unknown = sorted(set(params) - set(PARAMETERS) - set(_SETUP_GROUPS))
    assert not unknown, f"{path.name}: not schema parameters: {unknown}"
    for name, value in params.items():
        if name in _SETUP_GROUPS:
            continue
        spec = PARAMETERS[name]
        assert _has_type(spec, value), f"{path.name}: {name}: {value!r} is not {spec.type}"
        if spec.is_array and spec.numeric:
            assert all(spec.accepts(float(v)) for v in value), f"{path.name}: {name}"
        else:
            check(name, value)


def test_full_parameter_files_list_every_parameter_and_mark_the_runtime_ones():
    """config/<robot>.yaml of the bundled robots list every parameter; a line's ``[runtime]``
    comment marks exactly the schema's runtime parameters."""
    for robot in ("quadruped", "arm", "branched", "humanoid"):
        path = ROOT / "config" / f"{robot}.yaml"
        text = path.read_text()
        assert "Parameters marked [runtime]" in text
        assert set(yaml.safe_load(text)["/**"]["ros__parameters"]) == set(PARAMETERS), robot
        for line in text.splitlines():
            m = re.match(r" {4}(\w+):[^#]*(#.*)?$", line)
            if m and m.group(1) in PARAMETERS:
                marked = "[runtime]" in (m.group(2) or "")
                assert marked == (m.group(1) in RUNTIME_PARAMETERS), (robot, m.group(1))


def test_generated_reference_is_up_to_date(tmp_path):
    """docs/parameters.md is what the schema generates (regenerate it with
    ``python -m wbc_dynamics.parameters --markdown docs/parameters.md``)."""
    committed = (ROOT / "docs" / "parameters.md").read_text(encoding="utf-8")
    assert committed == parameters.markdown(), (
        "docs/parameters.md is stale: python -m wbc_dynamics.parameters --markdown "
        "docs/parameters.md")
    out = tmp_path / "parameters.md"
    assert parameters.main(["--markdown", str(out)]) == 0
    assert out.read_text(encoding="utf-8") == committed
    rows = re.findall(r"^\| `(\w+)` \|", committed, re.M)
    assert rows == [s.name for s in SPECS]


def _invalid_values(spec: parameters.ParameterSpec) -> list[object]:
    if spec.choices:
        return ["no-such-choice"]
    values: list[object] = []
    if spec.numeric:
        values.append("not a number")
        if spec.type.startswith("float") and spec.finite:
            values += [math.nan, math.inf]
        if spec.minimum is not None:
            values.append(spec.minimum if spec.exclusive_minimum else spec.minimum - 1)
        if spec.maximum is not None:
            values.append(spec.maximum + 1)
        if spec.even:
            values.append(spec.minimum + 1)
    return values


@pytest.mark.parametrize("spec", [s for s in SPECS if s.constraint and not s.is_array],
                         ids=lambda s: s.name)
def test_scalar_checks_reject_invalid_values_naming_the_parameter(spec):
    check(spec.name, spec.default)
    for value in _invalid_values(spec):
        with pytest.raises(ValueError, match=rf"^{spec.name}: "):
            check(spec.name, value)


def test_array_checks_name_the_parameter_and_element():
    joints = ["a", "b"]
    assert per_joint("kp", [3.0], joints).tolist() == [3.0, 3.0]
    assert per_joint("effort_limits", [math.inf, 1.0], joints).tolist() == [math.inf, 1.0]
    with pytest.raises(ValueError, match=r"^kd: value -1.0 for joint 'b' must be >= 0"):
        per_joint("kd", [1.0, -1.0], joints)
    with pytest.raises(ValueError, match=r"^kp: expected 1 or 2 values \(one per configured"):
        per_joint("kp", [1.0, 2.0, 3.0], joints)
    with pytest.raises(ValueError, match=r"^safe_damping: value inf for joint 'a' is not finite"):
        per_joint("safe_damping", [math.inf, 1.0], joints)
    with pytest.raises(ValueError, match=r"^effort_limits: value nan for joint 'a' is not"):
        per_joint("effort_limits", [math.nan, 1.0], joints)
    with pytest.raises(ValueError, match=r"^warm_methods: 'magic' is not one of"):
        check("warm_methods", ["lcp_noslip", "magic"])
    assert PARAMETERS["task_weights"].accepts(0.5) and not PARAMETERS["task_weights"].accepts(0.0)


def test_schema_imports_without_ros():
    code = ("import sys; sys.modules['rclpy'] = None; "
            "from wbc_dynamics import parameters, controller; "
            "assert controller.RUNTIME_PARAMETERS is parameters.RUNTIME_PARAMETERS")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT, timeout=300)


def test_node_declares_every_schema_parameter_with_its_type_default_and_description(ros_env):
    rclpy = pytest.importorskip("rclpy", reason="rclpy (ros-rclpy wheels) not installed")
    from rclpy.node import Node
    from rclpy.parameter import Parameter

    from wbc_dynamics import estimator_node, node

    assert node.PARAMETERS is PARAMETERS
    assert estimator_node.ESTIMATOR_PARAMETERS is parameters.ESTIMATOR_PARAMETERS
    ctx = rclpy.Context()
    rclpy.init(context=ctx, args=[])
    try:
        n = Node("schema_declarations", context=ctx)
        node.declare_parameters(n, tuple(PARAMETERS))
        for spec in SPECS:
            d = n.describe_parameter(spec.name)
            assert d.type == node._ROS_TYPES[spec.type].value, spec.name
            value = n.get_parameter_or(spec.name, Parameter(spec.name, value=None)).value
            value = list(value) if spec.is_array and value is not None else value
            assert value == spec.default_value(), spec.name
            assert d.description == spec.summary and not d.read_only, spec.name
            assert spec.constraint in d.additional_constraints, spec.name
        assert "[runtime]" in n.describe_parameter("kp").description
        assert "[1/s^2]" in n.describe_parameter("kp").description
        n.destroy_node()
    finally:
        rclpy.shutdown(context=ctx)
