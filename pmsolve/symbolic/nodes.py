"""The IR's node types: variables, linear terms with `ite` atoms, and formulas.

Terms are kept in a normal form (a sum of coefficient * atom plus a constant, atoms being
numeric variables or `ite` nodes) so that every backend -- SMT, MILP, text -- sees the same
linear structure, and so that equal terms print equally.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from fractions import Fraction
from numbers import Rational
from typing import Iterable, Union, overload

from pmsolve.errors import ValidationError

Number = Union[int, Fraction]


class Sort(enum.Enum):
    """The three sorts the IR knows; Int and Real mix freely in linear terms."""

    BOOL = "Bool"
    INT = "Int"
    REAL = "Real"


def to_fraction(value: object, where: str = "constant") -> Fraction:
    """Exact conversion of a Python number; floats are refused so that no rounding sneaks in."""
    if isinstance(value, bool):
        raise ValidationError(f"{where}: expected a number, got the boolean {value!r}")
    if isinstance(value, (int, Fraction)):
        return Fraction(value)
    if isinstance(value, Rational):
        return Fraction(int(value.numerator), int(value.denominator))
    raise ValidationError(
        f"{where}: expected an int or Fraction, got {type(value).__name__} {value!r} "
        "(floats are refused to keep the IR exact; use Fraction('0.1'))"
    )


# --------------------------------------------------------------------------- terms


class _Arith:
    """Arithmetic operators shared by variables, `ite` atoms and linear terms."""

    def lin(self) -> "Lin":
        raise NotImplementedError

    def __add__(self, other: object) -> "Lin":
        return self.lin().plus(as_term(other))

    __radd__ = __add__

    def __sub__(self, other: object) -> "Lin":
        return self.lin().plus(as_term(other).scaled(-1))

    def __rsub__(self, other: object) -> "Lin":
        return as_term(other).plus(self.lin().scaled(-1))

    def __neg__(self) -> "Lin":
        return self.lin().scaled(-1)

    def __mul__(self, other: object) -> "Lin":
        if isinstance(other, _Arith):
            raise ValidationError(
                f"cannot multiply {self} by {other}: the IR is linear (use ite for boolean factors)"
            )
        return self.lin().scaled(to_fraction(other, "coefficient"))

    __rmul__ = __mul__

    def __truediv__(self, other: object) -> "Lin":
        c = to_fraction(other, "divisor")
        if c == 0:
            raise ValidationError(f"division of {self} by zero")
        return self.lin().scaled(1 / c)

    # comparisons build formulas; == and != stay structural (dataclass equality, hashing)
    def __le__(self, other: object) -> "Compare":
        return compare("<=", self, other)

    def __lt__(self, other: object) -> "Compare":
        return compare("<", self, other)

    def __ge__(self, other: object) -> "Compare":
        return compare(">=", self, other)

    def __gt__(self, other: object) -> "Compare":
        return compare(">", self, other)

    def eq(self, other: object) -> "Compare":
        """The formula `self = other` (``==`` stays structural equality of IR nodes)."""
        return compare("=", self, other)

    def ne(self, other: object) -> "Compare":
        """The formula `self ≠ other`."""
        return compare("!=", self, other)


@dataclass(frozen=True, eq=True, order=False)
class NumVar(_Arith):
    """An Int or Real variable; `lo`/`hi` are inclusive bounds, used by the MILP linearisation."""

    name: str
    sort: Sort
    lo: Fraction | None = None
    hi: Fraction | None = None

    def __post_init__(self) -> None:
        if not self.name:
            raise ValidationError("variable name must not be empty")
        if self.sort is Sort.BOOL:
            raise ValidationError(f"{self.name}: use BoolVar for boolean variables")
        for label in ("lo", "hi"):
            v = getattr(self, label)
            if v is not None:
                v = to_fraction(v, f"bound {label} of {self.name}")
                if self.sort is Sort.INT and v.denominator != 1:
                    raise ValidationError(f"{self.name}: integer variable with bound {label}={v}")
                object.__setattr__(self, label, v)
        if self.lo is not None and self.hi is not None and self.lo > self.hi:
            raise ValidationError(f"{self.name}: empty bounds [{self.lo}, {self.hi}]")

    def lin(self) -> "Lin":
        return Lin(((self, Fraction(1)),), Fraction(0))

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True, eq=True, order=False)
class Ite(_Arith):
    """`ite(cond, then, other)` as a numeric atom; the encodings use it for bool * number."""

    cond: "Formula"
    then: "Lin"
    other: "Lin"

    def lin(self) -> "Lin":
        return Lin(((self, Fraction(1)),), Fraction(0))

    def __str__(self) -> str:
        return f"ite({self.cond}, {self.then}, {self.other})"


Atom = Union[NumVar, Ite]


def _atom_key(atom: Atom) -> tuple[int, str]:
    return (0, atom.name) if isinstance(atom, NumVar) else (1, str(atom))


@dataclass(frozen=True, eq=True, order=False)
class Lin(_Arith):
    """A linear term: sum of `coef * atom` plus `const`; canonical (sorted, no zero coefficients)."""

    terms: tuple[tuple[Atom, Fraction], ...]
    const: Fraction = Fraction(0)

    def lin(self) -> "Lin":
        return self

    @staticmethod
    def build(pairs: Iterable[tuple[Atom, Fraction]], const: Fraction) -> "Lin":
        acc: dict[Atom, Fraction] = {}
        names: dict[str, NumVar] = {}
        for atom, c in pairs:
            if isinstance(atom, NumVar):
                seen = names.setdefault(atom.name, atom)
                if seen != atom:
                    raise ValidationError(
                        f"two different variables are both named {atom.name!r} "
                        f"({seen.sort.value} [{seen.lo}, {seen.hi}] vs "
                        f"{atom.sort.value} [{atom.lo}, {atom.hi}])"
                    )
            acc[atom] = acc.get(atom, Fraction(0)) + c
        items = sorted(((a, c) for a, c in acc.items() if c != 0), key=lambda p: _atom_key(p[0]))
        return Lin(tuple(items), const)

    def plus(self, other: "Lin") -> "Lin":
        return Lin.build(self.terms + other.terms, self.const + other.const)

    def scaled(self, c: Number) -> "Lin":
        c = Fraction(c)
        return Lin.build(((a, k * c) for a, k in self.terms), self.const * c)

    @property
    def is_constant(self) -> bool:
        return not self.terms

    @property
    def sort(self) -> Sort:
        """Int if every atom is integer-valued and every coefficient is integral, else Real."""
        if self.const.denominator != 1 or any(c.denominator != 1 for _, c in self.terms):
            return Sort.REAL
        for atom, _ in self.terms:
            if isinstance(atom, NumVar):
                if atom.sort is not Sort.INT:
                    return Sort.REAL
            elif atom.then.sort is not Sort.INT or atom.other.sort is not Sort.INT:
                return Sort.REAL
        return Sort.INT

    def __str__(self) -> str:
        from pmsolve.symbolic.printing import term_str

        return term_str(self)


def as_term(value: object) -> Lin:
    """Lift a variable, `ite`, term or exact number into a `Lin`."""
    if isinstance(value, _Arith):
        return value.lin()
    if isinstance(value, (Formula, BoolVar)):
        raise ValidationError(f"expected a numeric term, got the formula {value}")
    return Lin((), to_fraction(value))


def Int(name: str, lo: Number | None = None, hi: Number | None = None) -> NumVar:
    """An integer variable with optional inclusive bounds."""
    return NumVar(name, Sort.INT, lo, hi)  # type: ignore[arg-type]


def Real(name: str, lo: Number | None = None, hi: Number | None = None) -> NumVar:
    """A real variable with optional inclusive bounds."""
    return NumVar(name, Sort.REAL, lo, hi)  # type: ignore[arg-type]


def Sum(items: Iterable[object]) -> Lin:
    """Sum of terms and numbers (an empty sum is 0)."""
    out = Lin((), Fraction(0))
    for item in items:
        out = out.plus(as_term(item))
    return out


@overload
def ite(cond: object, then: "Formula | bool",  # type: ignore[overload-overlap]
        other: "Formula | bool") -> "Formula": ...


@overload
def ite(cond: object, then: object, other: object) -> "Lin": ...


def ite(cond: object, then: object, other: object) -> "Lin | Formula":
    """If-then-else: numeric when the branches are terms, a formula when they are formulas."""
    cond = as_formula(cond)
    if isinstance(then, (Formula, bool)) and isinstance(other, (Formula, bool)):
        t, o = as_formula(then), as_formula(other)
        return And(Implies(cond, t), Implies(Not(cond), o))
    if isinstance(cond, BoolConst):
        return as_term(then) if cond.value else as_term(other)
    a, b = as_term(then), as_term(other)
    if a == b:
        return a
    return Ite(cond, a, b).lin()


# --------------------------------------------------------------------------- formulas


class Formula:
    """Base of boolean-valued nodes; `&`, `|`, `~` build And/Or/Not."""

    def __and__(self, other: object) -> "Formula":
        return And(self, other)

    def __rand__(self, other: object) -> "Formula":
        return And(other, self)

    def __or__(self, other: object) -> "Formula":
        return Or(self, other)

    def __ror__(self, other: object) -> "Formula":
        return Or(other, self)

    def __invert__(self) -> "Formula":
        return Not(self)

    def __str__(self) -> str:
        from pmsolve.symbolic.printing import formula_str

        return formula_str(self)


@dataclass(frozen=True)
class BoolVar(Formula):
    """A boolean variable."""

    name: str

    def __post_init__(self) -> None:
        if not self.name:
            raise ValidationError("variable name must not be empty")

    def __str__(self) -> str:
        return self.name


def Bool(name: str) -> BoolVar:
    """A boolean variable."""
    return BoolVar(name)


@dataclass(frozen=True)
class BoolConst(Formula):
    value: bool

    def __str__(self) -> str:
        return "true" if self.value else "false"


TRUE = BoolConst(True)
FALSE = BoolConst(False)


@dataclass(frozen=True)
class NotF(Formula):
    arg: Formula


@dataclass(frozen=True)
class AndF(Formula):
    args: tuple[Formula, ...]


@dataclass(frozen=True)
class OrF(Formula):
    args: tuple[Formula, ...]


@dataclass(frozen=True)
class ImpliesF(Formula):
    lhs: Formula
    rhs: Formula


@dataclass(frozen=True)
class IffF(Formula):
    lhs: Formula
    rhs: Formula


COMPARE_OPS = ("=", "!=", "<=", "<", ">=", ">")


@dataclass(frozen=True)
class Compare(Formula):
    """`lhs op rhs` with op one of = != <= < >= >."""

    op: str
    lhs: Lin
    rhs: Lin

    def __post_init__(self) -> None:
        if self.op not in COMPARE_OPS:
            raise ValidationError(f"unknown comparison {self.op!r}; expected one of {COMPARE_OPS}")

    def difference(self) -> Lin:
        """lhs - rhs: the comparison is `difference op 0`."""
        return self.lhs.plus(self.rhs.scaled(-1))


def as_formula(value: object) -> Formula:
    if isinstance(value, Formula):
        return value
    if isinstance(value, bool):
        return TRUE if value else FALSE
    raise ValidationError(f"expected a formula, got {type(value).__name__} {value!r}")


def compare(op: str, lhs: object, rhs: object) -> Compare:
    """Build a comparison between two terms or numbers."""
    return Compare(op, as_term(lhs), as_term(rhs))


def Eq(lhs: object, rhs: object) -> Compare:
    return compare("=", lhs, rhs)


def Ne(lhs: object, rhs: object) -> Compare:
    return compare("!=", lhs, rhs)


def Not(arg: object) -> Formula:
    arg = as_formula(arg)
    if isinstance(arg, BoolConst):
        return FALSE if arg.value else TRUE
    if isinstance(arg, NotF):
        return arg.arg
    return NotF(arg)


def And(*args: object) -> Formula:
    """Conjunction; accepts formulas or iterables of formulas; And() is true."""
    flat: list[Formula] = []
    for a in _flatten(args):
        if isinstance(a, BoolConst):
            if not a.value:
                return FALSE
            continue
        flat.extend(a.args if isinstance(a, AndF) else (a,))
    if not flat:
        return TRUE
    return flat[0] if len(flat) == 1 else AndF(tuple(flat))


def Or(*args: object) -> Formula:
    """Disjunction; accepts formulas or iterables of formulas; Or() is false."""
    flat: list[Formula] = []
    for a in _flatten(args):
        if isinstance(a, BoolConst):
            if a.value:
                return TRUE
            continue
        flat.extend(a.args if isinstance(a, OrF) else (a,))
    if not flat:
        return FALSE
    return flat[0] if len(flat) == 1 else OrF(tuple(flat))


def Implies(lhs: object, rhs: object) -> Formula:
    return ImpliesF(as_formula(lhs), as_formula(rhs))


def Iff(lhs: object, rhs: object) -> Formula:
    return IffF(as_formula(lhs), as_formula(rhs))


def _flatten(args: tuple[object, ...]) -> Iterable[Formula]:
    for a in args:
        if isinstance(a, (Formula, bool)):
            yield as_formula(a)
        elif isinstance(a, Iterable) and not isinstance(a, (str, bytes)):
            yield from _flatten(tuple(a))
        else:
            yield as_formula(a)
