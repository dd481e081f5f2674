"""Shared IR -> SMT-term compilation and the incremental SMT engine built on it.

Each SMT backend supplies a small `Prims` object (how to make a variable, a constant, a sum, an
and, ...); the traversal, Int/Real coercion, bound assertions and unsat-core tracking are shared,
so every SMT route sees the identical formula.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any, Callable

from pmsolve.backends import result as R
from pmsolve.backends.base import Engine, RawResult
from pmsolve.errors import SolverError
from pmsolve.symbolic import nodes as n
from pmsolve.symbolic.problem import Constraint, Problem
from pmsolve.symbolic.visit import MemoVisitor, handles
from pmsolve.symbolic.walk import iter_vars


class Prims:
    """Solver-specific constructors; `sort` arguments are n.Sort.INT or n.Sort.REAL."""

    def bool_var(self, name: str) -> Any: ...
    def num_var(self, name: str, sort: n.Sort) -> Any: ...
    def const(self, value: Fraction, sort: n.Sort) -> Any: ...
    def bool_const(self, value: bool) -> Any: ...
    def to_real(self, term: Any) -> Any: ...
    def add(self, terms: list[Any]) -> Any: ...
    def mul(self, c: Any, term: Any) -> Any: ...
    def ite(self, c: Any, a: Any, b: Any) -> Any: ...
    def and_(self, args: list[Any]) -> Any: ...
    def or_(self, args: list[Any]) -> Any: ...
    def not_(self, a: Any) -> Any: ...
    def implies(self, a: Any, b: Any) -> Any: ...
    def iff(self, a: Any, b: Any) -> Any: ...
    def cmp(self, op: str, a: Any, b: Any) -> Any: ...


class Compiler(MemoVisitor):
    """Translate IR nodes to solver terms, each shared subterm once (per context sort).

    Terms are visited with the sort of their context: an Int term inside a Real comparison is
    compiled with Real constants and `to_real` around its Int variables.
    """

    def __init__(self, prims: Prims) -> None:
        super().__init__()
        self.prims = prims
        self.vars: dict[str, Any] = {}
        self._sorts: dict[str, Any] = {}

    def var(self, v: Any) -> Any:
        key = (type(v).__name__, getattr(v, "sort", None))
        old = self._sorts.setdefault(v.name, key)
        if old != key:
            raise SolverError(f"variable {v.name!r} is used with two different sorts")
        if v.name not in self.vars:
            if isinstance(v, n.BoolVar):
                self.vars[v.name] = self.prims.bool_var(v.name)
            else:
                self.vars[v.name] = self.prims.num_var(v.name, v.sort)
        return self.vars[v.name]

    def bounds(self, v: n.NumVar) -> list[Any]:
        out = []
        x = self.var(v)
        if v.lo is not None:
            out.append(self.prims.cmp(">=", x, self.prims.const(v.lo, v.sort)))
        if v.hi is not None:
            out.append(self.prims.cmp("<=", x, self.prims.const(v.hi, v.sort)))
        return out

    def term(self, t: n.Lin, sort: n.Sort | None = None) -> Any:
        """Compile a linear term; `sort` forces Real when the context is Real."""
        return self.visit(t, sort or t.sort)

    def formula(self, f: n.Formula) -> Any:
        return self.visit(f)

    @handles("lin")
    def _lin(self, t: n.Lin, sort: n.Sort) -> Any:
        parts = []
        for atom, c in t.terms:
            a = self.visit(atom, sort)
            if c != 1:
                a = self.prims.mul(self.prims.const(c, sort), a)
            parts.append(a)
        if t.const != 0 or not parts:
            parts.append(self.prims.const(t.const, sort))
        return parts[0] if len(parts) == 1 else self.prims.add(parts)

    @handles("num_var")
    def _num_var(self, v: n.NumVar, sort: n.Sort) -> Any:
        x = self.var(v)
        return self.prims.to_real(x) if (sort is n.Sort.REAL and v.sort is n.Sort.INT) else x

    @handles("ite")
    def _ite(self, atom: n.Ite, sort: n.Sort) -> Any:
        inner = sort if sort is n.Sort.REAL else n.Sort.INT
        if atom.then.sort is n.Sort.REAL or atom.other.sort is n.Sort.REAL:
            inner = n.Sort.REAL
        return self.prims.ite(self.visit(atom.cond), self.visit(atom.then, inner),
                          self.visit(atom.other, inner))

    @handles("bool_var")
    def _bool_var(self, f: n.BoolVar) -> Any:
        return self.var(f)

    @handles("bool_const")
    def _bool_const(self, f: n.BoolConst) -> Any:
        return self.prims.bool_const(f.value)

    @handles("not")
    def _not(self, f: n.NotF) -> Any:
        return self.prims.not_(self.visit(f.arg))

    @handles("and")
    def _and(self, f: n.AndF) -> Any:
        return self.prims.and_([self.visit(a) for a in f.args])

    @handles("or")
    def _or(self, f: n.OrF) -> Any:
        return self.prims.or_([self.visit(a) for a in f.args])

    @handles("implies")
    def _implies(self, f: n.ImpliesF) -> Any:
        return self.prims.implies(self.visit(f.lhs), self.visit(f.rhs))

    @handles("iff")
    def _iff(self, f: n.IffF) -> Any:
        return self.prims.iff(self.visit(f.lhs), self.visit(f.rhs))

    @handles("compare")
    def _compare(self, f: n.Compare) -> Any:
        sort = n.Sort.INT if (f.lhs.sort is n.Sort.INT and f.rhs.sort is n.Sort.INT) else n.Sort.REAL
        return self.prims.cmp(f.op, self.visit(f.lhs, sort), self.visit(f.rhs, sort))


class SmtEngine(Engine):
    """Incremental SMT engine; subclasses provide the solver object and its calls.

    Named constraints are asserted as `track -> formula` with a fresh boolean `track` passed as an
    assumption on every check, so unsat cores come out as constraint names.
    """

    def __init__(self, prims: Prims) -> None:
        self.compiler = Compiler(prims)
        self._tracks: list[list[tuple[str, Any]]] = [[]]
        self._bounded: list[set[str]] = [set()]  # variables whose bounds each level asserted
        self._all_bounded: set[str] = set()

    # solver-specific
    def _assert(self, term: Any) -> None: ...
    def _push(self) -> None: ...
    def _pop(self) -> None: ...
    def _check(self, assumptions: list[Any]) -> str:  # "sat" / "unsat" / "unknown"
        raise NotImplementedError

    def _value(self, v: Any) -> Any: ...

    def _core(self) -> list[Any]:
        return []

    def _reason(self) -> str:
        return ""

    def _bound_vars(self, roots: list[object]) -> None:
        done = self._all_bounded
        for root in roots:
            for v in iter_vars(root):
                if v.name in done:
                    continue
                done.add(v.name)
                self._bounded[-1].add(v.name)
                self.compiler.var(v)
                if isinstance(v, n.NumVar):
                    for b in self.compiler.bounds(v):
                        self._assert(b)

    def add(self, constraint: Constraint) -> None:
        self._bound_vars([constraint.formula])
        term = self.compiler.formula(constraint.formula)
        if constraint.name is None:
            self._assert(term)
        else:
            lit = self.compiler.prims.bool_var(f"__track[{constraint.name}]")
            self._assert(self.compiler.prims.implies(lit, term))
            self._tracks[-1].append((constraint.name, lit))

    def push(self) -> None:
        self._push()
        self._tracks.append([])
        self._bounded.append(set())

    def pop(self) -> None:
        self._pop()
        self._tracks.pop()
        self._all_bounded -= self._bounded.pop()

    def check(self, problem: Problem, core: bool) -> RawResult:
        if problem.objective is not None:
            return self.optimize(problem)
        self._bound_vars(problem.roots())
        return self._check_tracked(core, lambda: {v.name: self._value(self.compiler.vars[v.name])
                                                       for v in problem.variables()})

    def check_values(self, variables: list[Any], core: bool) -> RawResult:
        """A check that reads back only `variables` (see Session.check(values=...)); every
        asserted constraint already bounded its variables when it was added."""
        return self._check_tracked(core, lambda: {v.name: self._value(self.compiler.var(v)) for v in variables})

    def _check_tracked(self, core: bool, read_model: Callable[[], dict[str, Any]]) -> RawResult:
        """Check under the tracked assertions; on sat read the model, on unsat name the core."""
        tracks = [t for fr in self._tracks for t in fr]
        status = self._check([lit for _, lit in tracks])
        if status == R.SAT:
            return RawResult(R.SAT, read_model())
        if status == R.UNSAT:
            named: tuple[str, ...] = ()
            if core:
                core_ids = {str(x) for x in self._core()}
                named = tuple(name for name, lit in tracks if str(lit) in core_ids)
            return RawResult(R.UNSAT, core=named)
        return RawResult(R.UNKNOWN, reason=self._reason())

    def optimize(self, problem: Problem) -> RawResult:
        raise SolverError("this backend cannot optimise an objective")
