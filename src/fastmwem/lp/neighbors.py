"""The neighbouring relations of the private LP solvers, as small public objects.

:func:`~fastmwem.lp.private_linprog` takes ``neighbors=ScalarNeighbors(...)`` or
``neighbors=ConstraintNeighbors(...)``: each object holds exactly the public parameters its
relation needs, checked when it is built. The strings ``"scalar"`` and ``"constraint"`` with the
loose keywords (``sensitivity=``, ``density=``, ...) stay accepted; :func:`as_neighbors` is the one
place that turns them into an object, and the solvers branch on the object's type.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import ClassVar

from fastmwem._validation import check_int, check_positive
from fastmwem.lp._checks import check_choice

__all__ = ["ScalarNeighbors", "ConstraintNeighbors", "Neighbors", "as_neighbors"]


@dataclass(frozen=True)
class ScalarNeighbors:
    """Scalar neighbours (Fast-MWEM, arXiv:2602.03732, s.4.1): ``b`` changes by at most
    ``sensitivity`` in the inf-norm; ``A`` and ``c`` are public.

    Args:
        sensitivity: the public bound on ``|b - b'|_inf`` between neighbouring datasets (> 0).

    >>> ScalarNeighbors(0.01).describe()
    'scalar neighbours: b changes by at most 0.01 in the inf-norm; A and c are public'
    """

    sensitivity: float
    #: The string form of this relation (``neighbors="scalar"``), recorded in a solve's setup.
    name: ClassVar[str] = "scalar"

    def __post_init__(self) -> None:
        if self.sensitivity is None:
            raise ValueError("sensitivity is required for neighbors='scalar': the public bound "
                             "on |b - b'|_inf between neighbouring datasets")
        object.__setattr__(self, "sensitivity", check_positive(self.sensitivity, "sensitivity"))

    def describe(self) -> str:
        """The relation in one line."""
        return (f"scalar neighbours: b changes by at most {self.sensitivity:g} in the inf-norm; "
                "A and c are public")

    def parameters(self) -> dict[str, object]:
        """The public parameters, as a solve's setup records them."""
        return {"sensitivity": self.sensitivity}


@dataclass(frozen=True)
class ConstraintNeighbors:
    """Constraint neighbours (Fast-MWEM, arXiv:2602.03732, s.4.2): one constraint row
    ``(A_i, b_i)`` is added or removed; the LP is a packing LP.

    The checks against the data (``density`` at most the number of rows, ``max_constraints`` at
    least it, every entry in ``[0, entry_bound]``) run in the solver, before any budget is spent.

    Args:
        density: ``s >= 1``: how many constraints the answer may violate by more than alpha.
        entry_bound: the public bound on the entries of ``A_ub`` (> 0).
        max_constraints: the public bound ``M >= 1`` on the number of rows, which the learning
            rate uses (the row count itself differs between neighbours).
    """

    density: float
    entry_bound: float
    max_constraints: int
    #: The string form of this relation (``neighbors="constraint"``).
    name: ClassVar[str] = "constraint"

    def __post_init__(self) -> None:
        for field in fields(self):
            if getattr(self, field.name) is None:
                raise ValueError(f"{field.name} is required for neighbors='constraint' (a public "
                                 "parameter)")
        bound = check_positive(self.entry_bound, "entry_bound")
        big_m = check_int(self.max_constraints, "max_constraints", minimum=1)
        s = check_positive(self.density, "density")
        if s < 1.0:  # the upper end, the number of rows, is private: the solver checks it
            raise ValueError(f"density must lie in [1, m] (m = the number of constraints), "
                             f"got {s}")
        object.__setattr__(self, "density", s)
        object.__setattr__(self, "entry_bound", bound)
        object.__setattr__(self, "max_constraints", big_m)

    def describe(self) -> str:
        """The relation in one line."""
        return (f"constraint neighbours: one row of (A_ub, b_ub) added or removed; entries in "
                f"[0, {self.entry_bound:g}], at most {self.max_constraints} rows, density "
                f"{self.density:g}")

    def parameters(self) -> dict[str, object]:
        """The public parameters, as a solve's setup records them."""
        return {"density": self.density, "entry_bound": self.entry_bound,
                "max_constraints": self.max_constraints}


#: A neighbouring relation of the LP solvers.
Neighbors = ScalarNeighbors | ConstraintNeighbors

_RELATIONS: dict[str, type[ScalarNeighbors] | type[ConstraintNeighbors]] = {
    cls.name: cls for cls in (ScalarNeighbors, ConstraintNeighbors)}


def _refuse(relation: str, given: dict[str, object], keep: tuple[str, ...]) -> None:
    for key, value in given.items():
        if key not in keep and value is not None:
            raise ValueError(f"{key} does not apply to neighbors={relation!r}")


def as_neighbors(neighbors: object, *, sensitivity: object = None, density: object = None,
                 entry_bound: object = None, max_constraints: object = None) -> Neighbors:
    """``neighbors=`` of :func:`~fastmwem.lp.private_linprog` as an object, checked.

    A :class:`ScalarNeighbors` or :class:`ConstraintNeighbors` is taken as it is, and then none
    of the loose keywords may be given. A string (``"scalar"``, ``"constraint"``) is built into
    its object from the loose keywords, which must be those of that relation.
    """
    given = {"sensitivity": sensitivity, "density": density, "entry_bound": entry_bound,
             "max_constraints": max_constraints}
    if isinstance(neighbors, (ScalarNeighbors, ConstraintNeighbors)):
        own = tuple(field.name for field in fields(neighbors))
        for key, value in given.items():
            if key in own and value is not None:
                raise ValueError(f"{key}= is given twice: neighbors={type(neighbors).__name__}"
                                 f"(...) holds it; give it in the object only")
        _refuse(neighbors.name, given, ())
        return neighbors
    if not isinstance(neighbors, str):
        raise ValueError("neighbors must be one of 'scalar', 'constraint', or a ScalarNeighbors "
                         f"or ConstraintNeighbors object; got {neighbors!r}")
    relation = check_choice(neighbors, "neighbors", tuple(_RELATIONS))
    cls = _RELATIONS[relation]
    own = tuple(field.name for field in fields(cls))
    _refuse(relation, given, own)
    # The loose keywords are untyped here; the object's __post_init__ checks each of them.
    return cls(**{key: given[key] for key in own})  # type: ignore[arg-type]
