"""Declared, validated mechanism parameters (one clear error per bad value)."""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, field
from typing import Any, Literal


@dataclass(frozen=True)
class Param:
    """A mechanism parameter: its kind, bounds and default.

    ``kind`` is "float", "int" or "choice"; ``special`` lists string values
    accepted as-is (e.g. "knn" for a bandwidth chosen from the data).
    ``omit_default``: an option added after runs existed; at its default it is left
    out of a run's parameters (``explicit_params``), so those runs keep their paths,
    seeds and tables; read it with ``value``.
    ``workflow_only``: special values only the workflow can resolve, each mapped to the
    private data it resolves them from (e.g. h: knn, from every user's raw location); a
    configured mechanism object refuses them (``validate(..., workflow=False)``), and a run
    configured with one records its guarantee void (``Mechanism.run_guarantee``).
    """

    name: str
    kind: str
    doc: str
    default: Any = None
    low: float | None = None  # exclusive lower bound
    high: float | None = None  # inclusive upper bound
    choices: tuple = ()
    special: tuple = ()
    omit_default: bool = False
    workflow_only: dict = field(default_factory=dict)

    def value(self, params: dict):
        """This parameter in a run's parameters (absent means the default: ``omit_default``)."""
        return params.get(self.name, self.default)

    def annotation(self):
        """The type a configured object's signature shows: float, int, or the Literal of the choices (or
        of the special strings it accepts: not the ``workflow_only`` ones)."""
        if self.kind == "choice":
            return Literal[self.choices]
        number = float if self.kind == "float" else int
        special = tuple(v for v in self.special if v not in self.workflow_only)
        return number | Literal[special] if special else number

    def allowed(self) -> str:
        if self.kind == "choice":
            return f"one of {list(self.choices)}"
        return self._numbers() + (f", or one of {list(self.special)}" if self.special else "")

    def _numbers(self) -> str:
        rng = f"{self.kind} > {self.low}" if self.low is not None else self.kind
        return rng + (f" and <= {self.high}" if self.high is not None else "")

    def to_schema(self) -> dict:
        """The JSON schema of this parameter in an experiment's grid: one value or a non-empty list.

        The published config schema is generated from these (``python -m locpriv.schema --write``),
        so a plugin declares its parameters once, here.
        """
        if self.kind == "choice":
            one = {"enum": list(self.choices)}
        else:
            one = {"type": "number" if self.kind == "float" else "integer"}
            if self.low is not None:
                one["exclusiveMinimum"] = self.low
            if self.high is not None:
                one["maximum"] = self.high
            if self.special:
                one = {"anyOf": [one, {"enum": list(self.special)}]}
        node = {"description": self.doc}
        if self.default is not None:
            node["default"] = self.default
        return {**node, "anyOf": [one, {"type": "array", "items": one, "minItems": 1}]}

    def validate(self, value, where: str, workflow: bool = True):
        """``value`` checked and cast (the default where None); ``workflow``: admit ``workflow_only`` values."""
        if value is None:
            if self.default is None:
                raise ValueError(f"'{where}.{self.name}': required ({self.doc}); allowed: {self.allowed()}")
            value = self.default
        if isinstance(value, str) and value in self.workflow_only and not workflow:
            raise ValueError(
                f"'{where}.{self.name}': {value!r} is resolved by the workflow from private data "
                f"({self.workflow_only[value]}); give a value: {self._numbers()}"
            )
        if isinstance(value, str) and value in self.special:
            return value
        if self.kind == "choice":
            if value not in self.choices:
                raise ValueError(f"'{where}.{self.name}': {value!r} is not allowed; allowed: {self.allowed()}")
            return value
        caster = float if self.kind == "float" else int
        # numpy's scalars too (np.float32(1.0), an np.int64 from np.array([1, 2, 4])): numbers.Real holds
        # them, and neither Python's bool nor numpy's (not a Real) is a number here
        ok = is_number(value)
        if ok and not math.isfinite(value):
            raise ValueError(
                f"'{where}.{self.name}': {value!r} is not allowed; allowed: a finite number, {self.allowed()}"
            )
        if ok and self.kind == "int" and not float(value).is_integer():  # 2.5
            ok = False
        if ok:
            value = caster(value)
            ok = (self.low is None or value > self.low) and (self.high is None or value <= self.high)
        if not ok:
            raise ValueError(f"'{where}.{self.name}': {value!r} is not allowed; allowed: {self.allowed()}")
        return value


def is_number(value) -> bool:
    """A real number that is not a bool: Python's int and float, and numpy's integer and floating scalars."""
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


# every mechanism's grid takes n, the users of a run (the workflow samples them from the dataset)
USERS = Param(
    "n", "int", "users of a run, sampled from the dataset ('all': every user)", default="all", low=0, special=("all",)
)


def validate_params(declared: dict[str, Param], given: dict, where: str, workflow: bool = True) -> dict:
    """``given`` checked against ``declared``, defaults filled in, in declaration order.

    ``workflow``: admit the values only the workflow can resolve (``Param.workflow_only``).
    """
    unknown = sorted(set(given) - set(declared))
    if unknown:
        raise ValueError(f"'{where}': unknown parameter(s) {unknown}; allowed: {sorted(declared)}")
    return {name: p.validate(given.get(name), where, workflow) for name, p in declared.items()}


def explicit_params(declared: dict[str, Param], params: dict) -> dict:
    """Validated ``params`` without the ``omit_default`` parameters that are at their default."""
    return {
        k: v for k, v in params.items() if not (k in declared and declared[k].omit_default and v == declared[k].default)
    }
