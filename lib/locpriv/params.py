"""Declared, validated mechanism parameters (one clear error per bad value)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Param:
    """A mechanism parameter: its kind, bounds and default.

    ``kind`` is "float", "int" or "choice"; ``special`` lists string values
    accepted as-is (e.g. "knn" for a bandwidth chosen from the data).
    ``omit_default``: an option added after runs existed; at its default it is left
    out of a run's parameters (``explicit_params``), so those runs keep their paths,
    seeds and tables; read it with ``value``.
    """

    name: str
    kind: str
    doc: str
    default: Any = None
    low: float | None = None          # exclusive lower bound
    high: float | None = None         # inclusive upper bound
    choices: tuple = ()
    special: tuple = ()
    omit_default: bool = False

    def value(self, params: dict):
        """This parameter in a run's parameters (absent means the default: ``omit_default``)."""
        return params.get(self.name, self.default)

    def allowed(self) -> str:
        if self.kind == "choice":
            return f"one of {list(self.choices)}"
        rng = f"{self.kind} > {self.low}" if self.low is not None else self.kind
        if self.high is not None:
            rng += f" and <= {self.high}"
        return rng + (f", or one of {list(self.special)}" if self.special else "")

    def validate(self, value, where: str):
        if value is None:
            if self.default is None:
                raise ValueError(f"'{where}.{self.name}': required ({self.doc}); allowed: {self.allowed()}")
            value = self.default
        if isinstance(value, str) and value in self.special:
            return value
        if self.kind == "choice":
            if value not in self.choices:
                raise ValueError(f"'{where}.{self.name}': {value!r} is not allowed; allowed: {self.allowed()}")
            return value
        caster = float if self.kind == "float" else int
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
        if ok and self.kind == "int" and float(value) != int(value):
            ok = False
        if ok:
            value = caster(value)
            ok = (self.low is None or value > self.low) and (self.high is None or value <= self.high)
        if not ok:
            raise ValueError(f"'{where}.{self.name}': {value!r} is not allowed; allowed: {self.allowed()}")
        return value


def validate_params(declared: dict[str, Param], given: dict, where: str) -> dict:
    unknown = sorted(set(given) - set(declared))
    if unknown:
        raise ValueError(f"'{where}': unknown parameter(s) {unknown}; allowed: {sorted(declared)}")
    return {name: p.validate(given.get(name), where) for name, p in declared.items()}


def explicit_params(declared: dict[str, Param], params: dict) -> dict:
    """Validated ``params`` without the ``omit_default`` parameters that are at their default."""
    return {k: v for k, v in params.items()
            if not (k in declared and declared[k].omit_default and v == declared[k].default)}
