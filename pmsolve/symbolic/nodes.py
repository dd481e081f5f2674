"""The IR's node types: variables, linear terms with `ite` atoms, and formulas.

Terms are kept in a normal form (a sum of coefficient * atom plus a constant, atoms being
numeric variables or `ite` nodes) so that every backend -- SMT, MILP, text -- sees the same
linear structure, and so that equal terms print equally.

Every node class declares its ``kind`` (what visitors dispatch on, :mod:`.visit`), its
``children()``, a structural ``key`` (equal keys = the same node; hashing uses it) and, for
sugar, ``desugar()``: that is all a new node type needs to be walked by every visitor.

No silent traps (as in CVXPY): ``x == 3`` and ``x != y`` build equations, and ``a == b`` on
formulas builds ``a ↔ b``. No node has a Python truth value (only the constants TRUE and
FALSE): ``if x == 3:``, ``if x <= 3:`` and the chained ``2 <= x <= 4`` (which Python evaluates
as ``(2 <= x) and (x <= 4)``) raise instead of silently answering a question nobody asked.
Since ``==`` is an equation, nodes are not hashable either (a dict would compare keys with
``==``): ask whether two nodes are the same with :func:`same`, and key dicts and sets by
``node.ident`` (structural identity, hashable).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from fractions import Fraction
from numbers import Rational
from typing import Any, Iterable, Union, overload

from pmsolve.errors import ValidationError
from pmsolve.symbolic.printing import show

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


class Node:
    """Base of every IR node (see module doc)."""

    kind = ""

    def children(self) -> tuple["Node", ...]:
        return ()

    def desugar(self) -> "Node | None":
        """An equivalent node made of other kinds, for visitors without a rule for this one."""
        return None

    def _make_key(self) -> tuple[Any, ...]:
        raise NotImplementedError

    @property
    def key(self) -> tuple[Any, ...]:
        """Structural identity (computed once; nodes are immutable)."""
        return _once(self, "_key", self._make_key)

    @property
    def ident(self) -> "Ident":
        """The node's structural identity as a dict key or set member (see module doc)."""
        return _once(self, "_ident", lambda: Ident(self))

    def __hash__(self) -> int:
        raise TypeError(f"IR nodes are not hashable (`==` builds an equation): key dicts and sets "
                        f"by `node.ident`, compare nodes with `same(a, b)` ({brief(self)})")

    def __bool__(self) -> bool:
        raise ValidationError(
            f"`{brief(self)}` has no Python truth value: add it to a Problem, or evaluate it; "
            "to ask whether two nodes are the same use same(a, b); "
            "chained comparisons such as `2 <= x <= 4` must be written And(2 <= x, x <= 4)")

    def __str__(self) -> str:
        return show(self)


def brief(node: Node, width: int = 80) -> str:
    """The node's text, cut to `width` characters for error messages."""
    text = str(node)
    return text if len(text) <= width else text[:width - 1] + "…"


def _once(node: Node, name: str, compute: Any) -> Any:
    """A derived value of an immutable node, computed on first use and kept in its __dict__."""
    d = node.__dict__
    value = d.get(name)
    if value is None:
        value = d[name] = compute()
    return value


def same(a: Node, b: Node) -> bool:
    """Structural identity of two nodes (``a == b`` builds an equation instead)."""
    return a is b or (a.kind == b.kind and a.key == b.key)


def distinct(nodes: Iterable[Node]) -> list[Node]:
    """The nodes without structural repeats, each at its first place."""
    out: dict[Ident, Node] = {}
    for node in nodes:
        out.setdefault(node.ident, node)
    return list(out.values())


class Ident:
    """A node's structural identity, hashable: two `Ident`s are equal when their nodes are the
    same (:func:`same`). What dicts and sets of nodes are keyed by (`Node.ident`)."""

    __slots__ = ("node", "_hash")

    def __init__(self, node: Node) -> None:
        self.node = node
        self._hash = hash((node.kind, node.key))

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Ident) and self._hash == other._hash and same(self.node, other.node)

    def __repr__(self) -> str:
        return f"Ident({self.node})"


# --------------------------------------------------------------------------- terms


class _Arith(Node):
    """Arithmetic and comparison operators shared by variables, `ite` atoms and linear terms."""

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

    def __le__(self, other: object) -> "Compare":
        return compare("<=", self, other)

    def __lt__(self, other: object) -> "Compare":
        return compare("<", self, other)

    def __ge__(self, other: object) -> "Compare":
        return compare(">=", self, other)

    def __gt__(self, other: object) -> "Compare":
        return compare(">", self, other)

    def __eq__(self, other: object) -> "Compare":  # type: ignore[override]
        if not _is_term_like(other):
            return NotImplemented
        return compare("=", self, other)

    def __ne__(self, other: object) -> "Compare":  # type: ignore[override]
        if not _is_term_like(other):
            return NotImplemented
        return compare("!=", self, other)

    __hash__ = Node.__hash__  # defining __eq__ would otherwise drop it

    def eq(self, other: object) -> "Compare":
        """The equation `self = other`, the same as ``self == other``."""
        return compare("=", self, other)

    def ne(self, other: object) -> "Compare":
        """The formula `self ≠ other`, the same as ``self != other``."""
        return compare("!=", self, other)


def _is_term_like(value: object) -> bool:
    return isinstance(value, (_Arith, int, Rational, float))  # floats reach to_fraction's refusal


@dataclass(frozen=True, eq=False)
class NumVar(_Arith):
    """An Int or Real variable; `lo`/`hi` are inclusive bounds, used by the MILP linearisation."""

    name: str
    sort: Sort
    lo: Fraction | None = None
    hi: Fraction | None = None

    kind = "num_var"

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

    def _make_key(self) -> tuple[Any, ...]:
        return ("v", self.name, self.sort.value, self.lo, self.hi)

    def lin(self) -> "Lin":
        return Lin(((self, Fraction(1)),), Fraction(0))

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True, eq=False)
class Ite(_Arith):
    """`ite(cond, then, other)` as a numeric atom; the encodings use it for bool * number."""

    cond: "Formula"
    then: "Lin"
    other: "Lin"

    kind = "ite"

    def children(self) -> tuple[Node, ...]:
        return (self.cond, self.then, self.other)

    def _make_key(self) -> tuple[Any, ...]:
        return ("ite", self.cond.key, self.then.key, self.other.key)

    def lin(self) -> "Lin":
        return Lin(((self, Fraction(1)),), Fraction(0))


Atom = Union[NumVar, Ite]


def _order(atom: Atom) -> tuple[int, str]:
    """Where an atom sits in a canonical term: variables by name, then `ite` atoms by text."""
    return _once(atom, "_order", lambda: (0, atom.name) if isinstance(atom, NumVar) else (1, str(atom)))


@dataclass(frozen=True, eq=False)
class Lin(_Arith):
    """A linear term: sum of `coef * atom` plus `const`; canonical (sorted, no zero coefficients)."""

    terms: tuple[tuple[Atom, Fraction], ...]
    const: Fraction = Fraction(0)

    kind = "lin"

    def children(self) -> tuple[Node, ...]:
        return tuple(a for a, _ in self.terms)

    def _make_key(self) -> tuple[Any, ...]:
        return ("lin", tuple((a.key, c) for a, c in self.terms), self.const)

    def lin(self) -> "Lin":
        return self

    @staticmethod
    def build(pairs: Iterable[tuple[Atom, Fraction]], const: Fraction) -> "Lin":
        """The canonical term Σ c·atom + const; one pass and one sort, so sums are O(n log n)."""
        acc: dict[Ident, list[Any]] = {}  # atom -> [atom, coefficient], by structural identity
        for atom, c in pairs:
            hit = acc.get(atom.ident)
            if hit is None:
                acc[atom.ident] = [atom, c]
            else:
                hit[1] += c
        if len(acc) > 1:
            _refuse_name_clashes(a for a, _ in acc.values())
        items = sorted(((a, c if type(c) is Fraction else Fraction(c)) for a, c in acc.values() if c != 0),
                       key=lambda p: _order(p[0]))
        return Lin(tuple(items), const if type(const) is Fraction else Fraction(const))

    def plus(self, other: "Lin") -> "Lin":
        if not other.terms:
            return self if other.const == 0 else Lin(self.terms, self.const + other.const)
        if not self.terms:
            return other if self.const == 0 else Lin(other.terms, self.const + other.const)
        return Lin.build(self.terms + other.terms, self.const + other.const)

    def scaled(self, c: Number) -> "Lin":
        c = Fraction(c)
        if c == 1:
            return self
        return Lin.build(((a, k * c) for a, k in self.terms), self.const * c)

    @property
    def is_constant(self) -> bool:
        return not self.terms

    @property
    def sort(self) -> Sort:
        """Int if every atom is integer-valued and every coefficient is integral, else Real."""
        return _once(self, "_sort", self._sort)

    def _sort(self) -> Sort:
        if self.const.denominator != 1 or any(c.denominator != 1 for _, c in self.terms):
            return Sort.REAL
        for atom, _ in self.terms:
            if isinstance(atom, NumVar):
                if atom.sort is not Sort.INT:
                    return Sort.REAL
            elif atom.then.sort is not Sort.INT or atom.other.sort is not Sort.INT:
                return Sort.REAL
        return Sort.INT


def _refuse_name_clashes(atoms: Iterable[Atom]) -> None:
    names: dict[str, NumVar] = {}
    for atom in atoms:
        if isinstance(atom, NumVar):
            seen = names.setdefault(atom.name, atom)
            if seen is not atom and seen.key != atom.key:
                raise ValidationError(
                    f"two different variables are both named {atom.name!r} "
                    f"({seen.sort.value} [{seen.lo}, {seen.hi}] vs "
                    f"{atom.sort.value} [{atom.lo}, {atom.hi}])"
                )


def as_term(value: object) -> Lin:
    """Lift a variable, `ite`, term or exact number into a `Lin`."""
    if isinstance(value, _Arith):
        return value.lin()
    if isinstance(value, Formula):
        raise ValidationError(f"expected a numeric term, got the formula {value}")
    return Lin((), to_fraction(value))


def Int(name: str, lo: Number | None = None, hi: Number | None = None) -> NumVar:
    """An integer variable with optional inclusive bounds."""
    return NumVar(name, Sort.INT, lo, hi)  # type: ignore[arg-type]


def Real(name: str, lo: Number | None = None, hi: Number | None = None) -> NumVar:
    """A real variable with optional inclusive bounds."""
    return NumVar(name, Sort.REAL, lo, hi)  # type: ignore[arg-type]


def Sum(items: Iterable[object]) -> Lin:
    """Sum of terms and numbers (an empty sum is 0), in one pass: linear in the number of atoms
    (up to the final sort), where chaining ``+`` re-normalises the growing term every time."""
    pairs: list[tuple[Atom, Fraction]] = []
    const = Fraction(0)
    one = Fraction(1)
    for item in items:
        if isinstance(item, NumVar):
            pairs.append((item, one))
            continue
        t = as_term(item)
        pairs.extend(t.terms)
        const += t.const
    return Lin.build(pairs, const)


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
    if same(a, b):
        return a
    return Ite(cond, a, b).lin()


# --------------------------------------------------------------------------- formulas


class Formula(Node):
    """Base of boolean-valued nodes; `&`, `|`, `~` build And/Or/Not, `==` builds ↔."""

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

    def __eq__(self, other: object) -> "Formula":  # type: ignore[override]
        if not isinstance(other, (Formula, bool)):
            return NotImplemented
        return IffF(self, as_formula(other))

    def __ne__(self, other: object) -> "Formula":  # type: ignore[override]
        if not isinstance(other, (Formula, bool)):
            return NotImplemented
        return NotF(IffF(self, as_formula(other)))

    __hash__ = Node.__hash__  # defining __eq__ would otherwise drop it


@dataclass(frozen=True, eq=False)
class BoolVar(Formula):
    """A boolean variable."""

    name: str

    kind = "bool_var"

    def __post_init__(self) -> None:
        if not self.name:
            raise ValidationError("variable name must not be empty")

    def _make_key(self) -> tuple[Any, ...]:
        return ("b", self.name)

    def __str__(self) -> str:
        return self.name


def Bool(name: str) -> BoolVar:
    """A boolean variable."""
    return BoolVar(name)


@dataclass(frozen=True, eq=False)
class BoolConst(Formula):
    value: bool

    kind = "bool_const"

    def _make_key(self) -> tuple[Any, ...]:
        return ("c", self.value)

    def __bool__(self) -> bool:
        return self.value


TRUE = BoolConst(True)
FALSE = BoolConst(False)


@dataclass(frozen=True, eq=False)
class NotF(Formula):
    arg: Formula

    kind = "not"

    def children(self) -> tuple[Node, ...]:
        return (self.arg,)

    def _make_key(self) -> tuple[Any, ...]:
        return ("not", self.arg.key)


@dataclass(frozen=True, eq=False)
class _Junction(Formula):
    """A conjunction or disjunction of its arguments (flattened by And / Or)."""

    args: tuple[Formula, ...]

    def children(self) -> tuple[Node, ...]:
        return self.args

    def _make_key(self) -> tuple[Any, ...]:
        return (self.kind, tuple(a.key for a in self.args))


class AndF(_Junction):
    kind = "and"


class OrF(_Junction):
    kind = "or"


@dataclass(frozen=True, eq=False)
class _Binary(Formula):
    lhs: Formula
    rhs: Formula

    def children(self) -> tuple[Node, ...]:
        return (self.lhs, self.rhs)

    def _make_key(self) -> tuple[Any, ...]:
        return (self.kind, self.lhs.key, self.rhs.key)


class ImpliesF(_Binary):
    kind = "implies"

    def desugar(self) -> Formula:
        return OrF((Not(self.lhs), self.rhs))


class IffF(_Binary):
    kind = "iff"

    def desugar(self) -> Formula:
        return AndF((ImpliesF(self.lhs, self.rhs), ImpliesF(self.rhs, self.lhs)))


COMPARE_OPS = ("=", "!=", "<=", "<", ">=", ">")


@dataclass(frozen=True, eq=False)
class Compare(Formula):
    """`lhs op rhs` with op one of = != <= < >= >."""

    op: str
    lhs: Lin
    rhs: Lin

    kind = "compare"

    def __post_init__(self) -> None:
        if self.op not in COMPARE_OPS:
            raise ValidationError(f"unknown comparison {self.op!r}; expected one of {COMPARE_OPS}")

    def children(self) -> tuple[Node, ...]:
        return (self.lhs, self.rhs)

    def _make_key(self) -> tuple[Any, ...]:
        return ("cmp", self.op, self.lhs.key, self.rhs.key)

    def difference(self) -> Lin:
        """lhs - rhs: the comparison is `difference op 0`."""
        return self.lhs.plus(self.rhs.scaled(-1))


#: every node kind and its class (what the visitor-coverage test walks)
NODE_KINDS: dict[str, type[Node]] = {
    c.kind: c for c in (NumVar, Ite, Lin, BoolVar, BoolConst, NotF, AndF, OrF, ImpliesF, IffF, Compare)
}
TERM_KINDS = ("num_var", "ite", "lin")
FORMULA_KINDS = tuple(k for k in NODE_KINDS if k not in TERM_KINDS)


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
