"""Held-out misses shrunk to their smallest missing sub-experiments (pmsolve.jobs.misses).

The 'hardware' is a simulated machine whose truth differs from the mapping under test in known
ways, so the core each miss must shrink to, and its kind, are known."""

from __future__ import annotations

from fractions import Fraction

import pytest

from pmsolve.harness.simulated import SimulatedOracle
from pmsolve.jobs.misses import localise
from pmsolve.model import Experiment, PortMapping
from pmsolve.modelled import Mode, Shared
from pmsolve.throughput import evaluate_many

PORTS = ("0", "1", "2", "3", "h")
# the truth: a and b also need a resource h that the mapping does not know; e takes two µops on
# port 2 where the mapping has one; g needs port 0, which f uses, where the mapping has it take
# two µops on ports 0 and 2 (as fast alone, but together with f it leans on port 2)
TRUTH = PortMapping(PORTS, {"a": [({"0"}, 1), ({"h"}, 1)], "b": [({"1"}, 1), ({"h"}, 1)],
                            "c": [({"2"}, 1)], "d": [({"3"}, 1)], "e": [({"2"}, 2)],
                            "f": [({"0"}, 1)], "g": [({"0"}, 1)]})
MAPPING = PortMapping(PORTS[:4], {"a": [({"0"}, 1)], "b": [({"1"}, 1)], "c": [({"2"}, 1)], "d": [({"3"}, 1)],
                                  "e": [({"2"}, 1)], "f": [({"0"}, 1)], "g": [({"0", "2"}, 2)]})


def _run(held, measured=None, **kw):
    oracle = SimulatedOracle(TRUTH)
    measured = oracle.measure(held) if measured is None else measured
    return localise(oracle, MAPPING, None, held, measured, **kw)


def test_each_miss_shrinks_to_its_smallest_missing_sub_experiment_and_says_what_kind_it_is():
    held = [Experiment({"a": 1, "b": 1, "c": 1, "d": 1}),   # 2.0 (h), mapping 1.0
            Experiment({"c": 1, "d": 1, "e": 1}),           # 3.0 on port 2, mapping 2.0
            Experiment({"b": 1, "d": 1, "f": 1, "g": 1}),   # 2.0 on port 0, mapping 1.5
            Experiment({"a": 1, "c": 1, "d": 1})]           # no miss: the mapping is right here
    count, cores = _run(held)
    assert count == 3
    got = {c.experiment: (c.kind, c.measured, c.predicted, c.doubled, c.held_out) for c in cores}
    assert got == {Experiment({"a": 1, "b": 1}): ("no shared port", 2.0, 1.0, 2.0, (held[0],)),
                   Experiment({"e": 1}): ("scheme alone", 2.0, 1.0, 2.0, (held[1],)),
                   Experiment({"f": 1, "g": 1}): ("shared ports", 2.0, 1.5, 2.0, (held[2],))}


def test_misses_that_shrink_to_one_core_are_counted_together_and_only_the_worst_are_shrunk():
    held = [Experiment({"a": 1, "b": 1, "c": 1}), Experiment({"a": 1, "b": 1, "d": 1}),
            Experiment({"c": 1, "d": 1, "e": 2})]   # e×2: 5.0 against 3.0, the smallest relative miss
    count, cores = _run(held, limit=2)
    assert count == 3 and len(cores) == 1
    assert cores[0].experiment == Experiment({"a": 1, "b": 1}) and set(cores[0].held_out) == set(held[:2])


def test_a_miss_that_its_doubled_core_does_not_repeat_is_unstable():
    """A held-out value that was an outlier: no sub-experiment misses, and neither does the
    experiment measured again doubled, so the miss is the measurement's."""
    e = Experiment({"a": 1, "c": 1, "d": 1})
    count, cores = _run([e], measured=[1.6])
    assert count == 1 and [(c.experiment, c.kind, c.measured, c.doubled) for c in cores] == [(e, "unstable", 1.6, 1.0)]


def test_a_faster_miss_shrinks_only_through_faster_sub_experiments():
    """Running faster than predicted and slower are different stories: a sub-experiment that
    misses the other way does not continue the walk."""
    e = Experiment({"a": 1, "b": 1, "c": 1, "d": 1})
    assert float(evaluate_many(MAPPING, [e])[0]) == 1.0
    count, cores = _run([e], measured=[0.8])     # faster than the mapping; a,b alone run slower
    assert count == 1 and [c.experiment for c in cores] == [e]


class _NotPorts:
    """TRUTH's machine with two effects no port mapping has: ``a`` and ``c`` together cost two
    cycles more per copy than apart (as a 512-bit load holds both vector load ports of a Zen 4
    at once), and ``c`` with ``e`` alone take 1.5 cycles per copy, faster than ``e`` alone;
    ``f`` with ``g`` alone take 1.2, where the mapping predicts 1.5 and the truth 2.0."""

    def __init__(self):
        self.inner = SimulatedOracle(TRUTH)

    def measure(self, experiments):
        out = []
        for e, t in zip(experiments, self.inner.measure(experiments)):
            if set(e) == {"c", "e"} and e["c"] == e["e"]:
                t = 1.5 * e["c"]
            elif set(e) == {"f", "g"} and e["f"] == e["g"]:
                t = 1.2 * e["f"]
            elif "a" in e and "c" in e:
                t += 2 * min(e["a"], e["c"])
            out.append(t)
        return out


def test_a_core_slower_than_the_sum_of_two_parts_or_faster_than_one_fits_no_port_mapping():
    """tp⁻¹ of every port mapping is subadditive and monotone, so a core that runs slower than
    the sum of the measured parts it splits into, or faster than the slower of them, is evidence
    against any mapping, not just this one. Both measurements of the core must say so: ``{a,
    b}`` once measured 2.5, but 2.0 doubled, the sum of its parts, fits a mapping with a port
    the mapping under test lacks; ``{f, g}`` once 0.5, but 1.2 doubled, not below either part."""
    held = [Experiment({"a": 1, "c": 1, "d": 1}),     # 3.0 against 1.0: {a, c} is the core
            Experiment({"c": 1, "e": 1}),             # 1.5 against 2.0, where e alone takes 2.0
            Experiment({"a": 1, "b": 1}),             # 2.5 (an outlier; 2.0 doubled) against 1.0
            Experiment({"f": 1, "g": 1})]             # 0.5 (an outlier; 1.2 doubled) against 1.5
    oracle = _NotPorts()
    count, cores = localise(oracle, MAPPING, None, held, oracle.measure(held[:2]) + [2.5, 0.5])
    assert count == 4
    got = {c.experiment: (c.kind, c.measured, c.doubled, c.parts) for c in cores}
    one = {n: Experiment({n: 1}) for n in "ace"}
    assert got == {Experiment({"a": 1, "c": 1}): ("no port mapping", 3.0, 3.0, ((one["c"], 1.0), (one["a"], 1.0))),
                   held[1]: ("no port mapping", 1.5, 1.5, ((one["e"], 2.0), (one["c"], 1.0))),
                   held[2]: ("no shared port", 2.5, 2.0, ()),
                   held[3]: ("shared ports", 0.5, 1.2, ())}
    ac = next(c for c in cores if c.experiment == Experiment({"a": 1, "c": 1}))
    assert ac.to_json()["parts"] == [{"experiment": {"c": 1}, "measured": 1.0},
                                     {"experiment": {"a": 1}, "measured": 1.0}]


def test_with_a_mode_the_mapping_predicts_in_it_and_mixes_the_mode_explains_are_no_misses():
    """Beside a trigger ``z`` port 1 serves no µop of ``v`` (Intel's AVX-512 mode): the job's
    model says so, and the misses must be judged by it, not by the plain port mapping."""
    plain = PortMapping(("0", "1"), {"v": [({"0", "1"}, 1)], "z": [({"0"}, 1)]})
    narrowed = PortMapping(("0", "1"), {"v": [({"0"}, 1)], "z": [({"0"}, 1)]})

    class InMode(SimulatedOracle):
        def measure(self, experiments):
            return [SimulatedOracle(narrowed if "z" in e else plain).measure([e])[0] for e in experiments]

    mode = Mode("1", frozenset({frozenset({"0", "1"})}), frozenset({"z"}), frozenset({"v"}))
    held = [Experiment({"v": 2, "z": 1}), Experiment({"v": 4})]
    oracle = InMode(plain)
    assert localise(oracle, plain, None, held, oracle.measure(held), mode=mode) == (0, [])
    count, cores = localise(oracle, plain, None, held, oracle.measure(held))
    assert count == 1 and cores[0].measured == 3.0 and cores[0].predicted == 1.5


def test_mixes_a_shared_resource_explains_are_no_misses_and_unmapped_holders_are_cut():
    """Beside a zmm load ``z`` a ymm load ``y`` holds 0.6 cycles of the load path (Ice Lake-SP):
    the job's shared resources judge the mapped schemes' mixes; a holder the mapping lacks
    (``w``, a cost of its own) is cut from the resource, not an error."""
    plain = PortMapping(("2", "3"), {"y": [({"2", "3"}, 1)], "z": [({"2", "3"}, 1)]})
    path = Shared("S1", {"z": Fraction(9, 10), "w": Fraction(1)}, {"y": Fraction(3, 5)}, frozenset({"z", "w"}))

    class WithPath(SimulatedOracle):
        def measure(self, experiments):
            return [max(t, float(path.time(e))) for t, e in zip(super().measure(experiments), experiments)]

    held = [Experiment({"y": 2, "z": 1}), Experiment({"y": 4})]
    oracle = WithPath(plain)
    assert localise(oracle, plain, None, held, oracle.measure(held), shared=(path,)) == (0, [])
    count, cores = localise(oracle, plain, None, held, oracle.measure(held))
    assert count == 1 and cores[0].measured == pytest.approx(0.9)    # shrinks to z alone: 0.9 for 0.5
