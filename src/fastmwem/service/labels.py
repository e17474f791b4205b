"""Queries in the data's labels: a public schema maps each attribute's labels to its codes.

With ``fastmwem serve --schema``, a query may name attribute values by label wherever it names
a code (``{"cell": {"sex": "F", "smoker": "yes"}}``, ``{"range": {"age": ["20", "59"]}}``):
a JSON **string** is a label, a JSON **integer** is a code, as without a schema. Labels are
public (declared in the schema, never read off the data), so messages may quote them.

* a categorical column's labels are its categories' texts (``"1"`` for a category declared as
  the number 1);
* an integer column's labels are its values (``"1990"``; code ``value - lower``);
* a numeric column's labels are its bins, ``"[20, 30)"`` (the last one closed, ``"[90, 100]"``);
  a number such as ``"35"`` names the bin holding it.

Answers and logs show the query in labels (``query``) and in codes (``query_codes``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from fastmwem.data.schema import Categorical, Integer, Numeric

if TYPE_CHECKING:
    from fastmwem.data.domain import Domain
    from fastmwem.data.schema import ColumnSpec, Schema

__all__ = ["Labels"]

_SHOWN = 20  # labels quoted in a refusal at most


def _number(x: float) -> str:
    """A bin edge as the schema file would write it (``20``, not ``20.0``)."""
    return str(int(x)) if x.is_integer() and abs(x) < 2**53 else repr(x)


class _Column:
    """One column's labels and codes."""

    def __init__(self, spec: ColumnSpec) -> None:
        self.spec = spec
        if isinstance(spec, Categorical):
            self.texts = [str(label) for label in spec.labels]
        elif isinstance(spec, Numeric):
            edges = spec.edges
            self.texts = [f"[{_number(lo)}, {_number(hi)}" + ("]" if i == spec.size - 1 else ")")
                          for i, (lo, hi) in enumerate(zip(edges, edges[1:]))]
        else:
            self.texts = []  # an integer column's labels are its values, parsed
        self._codes = {text: code for code, text in enumerate(self.texts)}

    def label(self, code: int) -> str:
        if isinstance(self.spec, Integer):
            return str(self.spec.lower + code)
        return self.texts[code]

    def code(self, text: str, where: str) -> int:
        found = self._codes.get(text)
        if found is not None:
            return found
        spec = self.spec
        if isinstance(spec, Integer):
            value = _parse(text)
            if value is not None and value.is_integer() and spec.lower <= value <= spec.upper:
                return int(value) - spec.lower
            raise ValueError(f"{where}: no label {text!r}; the labels of {spec.name!r} are the "
                             f"integers {spec.lower}..{spec.upper}")
        if isinstance(spec, Numeric):
            value = _parse(text)
            if value is not None and spec.lower <= value <= spec.upper:
                return min(sum(edge <= value for edge in spec.edges) - 1, spec.size - 1)
            raise ValueError(f"{where}: no label {text!r}; the labels of {spec.name!r} are its "
                             f"bins such as {self.texts[0]!r}, or a number within "
                             f"[{_number(spec.lower)}, {_number(spec.upper)}] naming its bin")
        shown = self.texts[:_SHOWN] + (["..."] if len(self.texts) > _SHOWN else [])
        raise ValueError(f"{where}: no label {text!r}; the labels of {spec.name!r} are {shown}")


def _parse(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


class Labels:
    """The labels of a :class:`~fastmwem.data.schema.Schema`, for queries over its domain."""

    def __init__(self, schema: Schema) -> None:
        self.schema = schema
        self.domain: Domain = schema.domain
        self._columns = {spec.name: _Column(spec) for spec in schema.columns}

    def describe(self) -> dict[str, object]:
        """The public labels of every attribute, in code order (an integer column by bounds)."""
        out = []
        for name, column in self._columns.items():
            spec = column.spec
            if isinstance(spec, Integer):
                out.append({"name": name, "type": "integer", "lower": spec.lower,
                            "upper": spec.upper})
            else:
                kind = "categorical" if isinstance(spec, Categorical) else "numeric"
                out.append({"name": name, "type": kind, "labels": list(column.texts)})
        return {"columns": out}

    def to_codes(self, query: dict[str, Any]) -> dict[str, Any]:
        """``query`` with every label replaced by its code (anything else is left for the
        query's own checks to refuse)."""
        return self._map(query, self._to_code)

    def to_labels(self, query: dict[str, Any]) -> dict[str, Any]:
        """``query`` (in codes, checked) with every code replaced by its label."""
        return self._map(query, self._to_label)

    def _to_code(self, form: str, attr: str, value: object) -> object:
        if isinstance(value, str) and attr in self._columns:
            return self._columns[attr].code(value, f"{form} of {attr!r}")
        return value

    def _to_label(self, form: str, attr: str, value: object) -> object:
        column = self._columns.get(attr)
        if column is None or isinstance(value, (bool, str)) or not isinstance(value, int):
            return value
        return column.label(value) if 0 <= value < column.spec.size else value

    @staticmethod
    def _map(query: dict[str, Any],
             convert: Callable[[str, str, object], object]) -> dict[str, Any]:
        if len(query) != 1:
            return query
        form, body = next(iter(query.items()))
        if form not in ("cell", "range") or not isinstance(body, dict):
            return query
        out: dict[str, object] = {}
        for attr, value in body.items():
            if form == "range" and isinstance(value, list):
                out[attr] = [convert(form, attr, v) for v in value]
            else:
                out[attr] = convert(form, attr, value)
        return {form: out}
