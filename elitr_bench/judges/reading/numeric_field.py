"""One numeric field a judge is asked for, with the scale its prompt states."""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class Field:
    """One value a judge is asked for, with the scale its prompt states."""

    name: str
    low: float
    high: float
    integer: bool = False

    def problem(self, value: float) -> str:
        """Why ``value`` is not on this field's scale ("" when it is)."""
        if not math.isfinite(value):
            return f"{self.name}={value} is not a number"
        if not self.low <= value <= self.high:
            return f"{self.name}={value:g} outside {self.low:g}-{self.high:g}"
        if self.integer and not float(value).is_integer():
            return f"{self.name}={value:g} is not an integer on {self.low:g}-{self.high:g}"
        fraction = self.high >= 5 and 0 < value < 1  # 0.85 on 0-10: a 0-1 value
        return (
            f"{self.name}={value:g} looks like a 0-1 value, not on this scale" if fraction else ""
        )
