"""CEGIS inference (pmsolve.infer.cegis): correctness against simulated oracles, explanations,
unsat cores, options, resume, backends, CLI. Small instances only: the whole file runs in seconds."""

from __future__ import annotations

import json
import random
from fractions import Fraction

import pytest

from pmsolve.encodings import Space, find_other_mapping
from pmsolve.errors import ValidationError
from pmsolve.harness.simulated import SimulatedOracle
from pmsolve.infer.cegis import CegisOptions, infer
from pmsolve.infer.cegis.encode import observation_bounds
from pmsolve.infer.cegis.screen import Screen
from pmsolve.metrics import pearson
from pmsolve.model import Experiment, PortMapping
from pmsolve.symbolic import Not, Problem
from pmsolve.throughput import evaluate_many, inverse_throughput

P3 = ["p0", "p1", "p2"]


def run(oracle, ports, *, state=None, progress=None, **options):
    """CEGIS with ``ports`` and the other options as keywords."""
    return infer(oracle, CegisOptions(ports=ports, **options), state=state, progress=progress)


def truth_2l(n_ports: int, n_insns: int, seed: int) -> PortMapping:
    rng = random.Random(seed)
    ports = [f"p{k}" for k in range(n_ports)]
    return PortMapping.two_level(ports, {f"i{j}": rng.sample(ports, rng.randint(1, min(4, n_ports)))
                                         for j in range(n_insns)})


def random_exps(insns, n=1000, size=5, seed=0):
    rng = random.Random(seed)
    return [Experiment([rng.choice(list(insns)) for _ in range(size)]) for _ in range(n)]


def agrees(truth: PortMapping, found: PortMapping) -> tuple[float, float]:
    exps = random_exps(truth.instructions)
    a, b = evaluate_many(truth, exps), evaluate_many(found, exps)
    return float(pearson(b, a)), float(abs(a - b).max())


class ListOracle:
    """An oracle answering from a dict (for contradictory measurements)."""

    def __init__(self, values: dict[Experiment, float]):
        self.values = values

    instructions = property(lambda self: tuple(sorted({i for e in self.values for i in e})))
    has_uop_counter = False

    def measure(self, exps):
        return [self.values[e] for e in exps]

    def uop_counts(self, exps):
        raise ValidationError("no counter")

    def describe(self):
        return "list"


class InterruptingOracle(SimulatedOracle):
    def __init__(self, mapping, limit):
        super().__init__(mapping)
        self.limit = limit

    def measure(self, exps):
        if self.queries + len(exps) > self.limit:
            raise KeyboardInterrupt
        return super().measure(exps)


# --------------------------------------------------------------------------- correctness

@pytest.mark.parametrize("seed", [1, 2, 3])
def test_two_level_exact_is_indistinguishable(seed):
    truth = truth_2l(3, 5, seed)
    res = run(SimulatedOracle(truth), 3)
    assert res.status == "inferred"
    p, err = agrees(truth, res.mapping)
    assert err == 0 and p == pytest.approx(1.0)
    # solver proof: no mapping consistent with the measurements differs on experiments of ≤ 5
    space = Space(truth.instructions, tuple(res.mapping.ports))
    assert find_other_mapping(space, res.mapping, res.measurements, "z3", bound=5) is None


def test_noisy_oracle_within_epsilon():
    truth = truth_2l(4, 6, 7)
    eps = Fraction(2, 100)
    oracle = SimulatedOracle(truth, noise=0.004, seed=3)
    res = run(oracle, 4, noise_epsilon=eps)
    assert res.status == "inferred"
    exps = random_exps(truth.instructions)
    a, b = evaluate_many(truth, exps), evaluate_many(res.mapping, exps)
    assert float(abs(a - b).max()) / 5 <= 2 * float(eps)  # CPI within 2ε everywhere
    for e, t in res.measurements:  # explains every noisy measurement within ε
        assert abs(inverse_throughput(res.mapping, e) - t) < eps * e.size


def test_joint_strategy_of_the_dissertation():
    truth = truth_2l(3, 4, 11)
    res = run(SimulatedOracle(truth), 3, strategy="joint", max_bound=3, final_bound=4)
    assert res.status == "inferred" and agrees(truth, res.mapping)[1] == 0


def test_relate_encoding_and_no_symmetry_agree():
    truth = truth_2l(3, 5, 4)
    for kw in ({"encoding": "relate"}, {"symmetry": False}, {"initial": "pairs"}, {"committee": 1}):
        res = run(SimulatedOracle(truth), 3, **kw)
        assert res.status == "inferred" and agrees(truth, res.mapping)[1] == 0, kw


def test_three_level_fixed_counts():
    truth = PortMapping(P3, {"a": [(["p0"], 1), (["p1", "p2"], 1)], "b": [(["p0", "p1"], 1)],
                             "c": [(["p2"], 1), (["p0", "p1", "p2"], 1)]})
    res = run(SimulatedOracle(truth), 3, kind="fixed-counts", uops_per_insn={"a": 2, "b": 1, "c": 2})
    assert res.status == "inferred" and agrees(truth, res.mapping)[1] == 0
    assert all(sum(u.count for u in res.mapping.uops_of(i)) == n for i, n in {"a": 2, "b": 1, "c": 2}.items())


def test_power_set_small():
    truth = PortMapping(["p0", "p1"], {"a": [(["p0"], 2)], "b": [(["p0", "p1"], 1), (["p1"], 1)]})
    res = run(SimulatedOracle(truth), 2, kind="power-set", max_count=2)
    assert res.status == "inferred" and agrees(truth, res.mapping)[1] == 0


def test_r_max():
    truth = truth_2l(4, 5, 5)
    res = run(SimulatedOracle(truth, r_max=2), 4, r_max=2)
    assert res.status == "inferred"
    exps = random_exps(truth.instructions, 300)
    assert all(inverse_throughput(truth, e, r_max=2) == inverse_throughput(res.mapping, e, r_max=2) for e in exps)


# --------------------------------------------------------------------------- explanations

def test_witnesses_name_the_ruled_out_candidate():
    truth = truth_2l(3, 5, 2)
    res = run(SimulatedOracle(truth), 3)
    assert res.added_experiments == [w.experiment for w in res.witnesses] != []
    assert res.added_experiments == [e for e, _ in res.measurements[res.initial:]]
    for w in res.witnesses:
        assert w.ruled_out
        for m, predicted in w.ruled_out:
            assert inverse_throughput(m, w.experiment) == predicted != w.measured
        assert "rules out" in w.describe()


def test_contradiction_core_names_experiments_and_instructions():
    ab, ac, bc = Experiment({"a": 1, "b": 1}), Experiment({"a": 1, "c": 1}), Experiment({"b": 1, "c": 1})
    values = {Experiment({"a": 1}): 1.0, Experiment({"b": 1}): 1.0, Experiment({"c": 1}): 1.0,
              Experiment({"d": 1}): 0.5, Experiment({"a": 1, "d": 1}): 1.0,
              ab: 2.0, ac: 2.0, bc: 1.0}  # a shares b's port and c's port, but b and c do not share
    res = run(ListOracle(values), 2, extra_initial=[x for x in values if x.size == 2])
    assert res.status == "inconsistent" and res.mapping is None and res.unseen is None
    assert {x for x, _ in res.conflict.experiments} == {ab, ac, bc}  # minimised: d is not involved
    assert res.conflict.instructions == ("a", "b", "c")
    assert "no port mapping explains" in res.conflict.describe()
    assert "noise" not in res.conflict.hint and "`ports`" in res.conflict.hint  # exact values: not noise


def test_noisy_measurements_without_a_tolerance_hint_at_it():
    """Issue 18 item 6: a noisy oracle and the default (exact) CEGIS find no mapping; the
    conflict says the values look noisy and names the option that allows for noise."""
    truth = truth_2l(3, 4, 1)
    res = run(SimulatedOracle(truth, noise=0.02, seed=3), 3)
    assert res.status == "inconsistent"
    assert "look noisy" in res.conflict.hint and "`noise_epsilon`" in res.conflict.hint
    assert "`--epsilon`" in res.conflict.describe({"noise_epsilon": "--epsilon"})
    tight = run(SimulatedOracle(truth, noise=0.02, seed=3), 3, noise_epsilon=Fraction(1, 1000))
    assert tight.status == "inconsistent" and "noisier than the tolerance" in tight.conflict.hint


# --------------------------------------------------------------------------- options

def test_known_port_set_sizes_and_user_constraints():
    truth = truth_2l(3, 4, 8)
    sizes = {i: len(truth.uops_of(i)[0].ports) for i in truth.instructions}
    pin = truth.uops_of("i0")[0].ports

    def user(v):  # the user knows i0's ports exactly
        return [v.port("i0", p) if p in pin else Not(v.port("i0", p)) for p in truth.ports]

    res = run(SimulatedOracle(truth), truth.ports, port_set_sizes=sizes, constraints=user)
    assert res.status == "inferred" and agrees(truth, res.mapping)[1] == 0
    assert res.mapping.uops_of("i0")[0].ports == pin  # the user's pin survives (no symmetry breaking)


def test_shared_uops_constraint():
    truth = PortMapping(P3, {"st": [(["p2"], 1), (["p0", "p1"], 1)], "ld": [(["p0", "p1"], 1)],
                             "add": [(["p0", "p1", "p2"], 1)]})
    res = run(SimulatedOracle(truth), 3, kind="fixed-counts", uops_per_insn={"st": 2, "ld": 1, "add": 1},
                shared_uops=[(("st", 2), ("ld", 1))])
    assert res.status == "inferred" and agrees(truth, res.mapping)[1] == 0
    assert res.mapping.uops_of("ld")[0].ports in {u.ports for u in res.mapping.uops_of("st")}


def test_bad_options_are_refused():
    truth = truth_2l(3, 3, 1)
    with pytest.raises(ValidationError):
        run(SimulatedOracle(truth), 3, strategy="magic")
    with pytest.raises(ValidationError):
        run(SimulatedOracle(truth), 3, port_set_sizes={"i0": 7})
    for bad in (0, [], ["p0", "p0"]):
        with pytest.raises(ValidationError, match="ports"):
            run(SimulatedOracle(truth), bad)
    with pytest.raises(ValidationError, match="noise_epsilon"):
        CegisOptions(ports=3, noise_epsilon=float("nan"))


def test_ports_keep_the_given_names():
    truth = truth_2l(3, 4, 5)
    named = run(SimulatedOracle(truth), ["alu0", "alu1", "st"])
    assert named.mapping.ports == ("alu0", "alu1", "st") and agrees(truth, named.mapping)[1] == 0
    assert run(SimulatedOracle(truth), 3).mapping.ports == ("0", "1", "2")


def test_progress_events():
    events = []
    res = run(SimulatedOracle(truth_2l(3, 4, 2)), 3, progress=events.append)
    assert {e.algorithm for e in events} == {"cegis"} and events[0].stage == "start"
    counter = [e for e in events if e.stage == "counterexample"]
    assert [e.done for e in counter] == list(range(1, len(res.witnesses) + 1))
    assert events[-1].stage == "check" and str(events[-1]).startswith("cegis: checked on 8")


def test_too_few_ports_is_caught_on_unseen_experiments():
    """Issue 18 item 6: with fewer ports than the machine, CEGIS proves a mapping unique among
    the wrong candidates; the check on unseen experiments says it is wrong, and why."""
    truth = PortMapping.two_level(["0", "1", "2", "3"], {"a": ["0", "1"], "b": ["2", "3"], "c": ["0", "2"], "d": ["1"]})
    res = run(SimulatedOracle(truth), 2)
    assert res.status == "inferred" and not res.unseen.ok
    for m in res.unseen.mismatches:
        assert m.measured == float(inverse_throughput(truth, m.experiment)) != m.predicted
        assert m.experiment not in {e for e, _ in res.measurements}
    assert "too few ports" in res.unseen.cause and "WARNING" in res.unseen.describe()
    right = run(SimulatedOracle(truth), 4)
    assert right.unseen.ok and len(right.unseen.experiments) == 8
    noisy = run(SimulatedOracle(truth, noise=0.004, seed=1), 4, noise_epsilon=Fraction(1, 50))
    assert noisy.status == "inferred" and noisy.unseen.ok  # noise within ε is no mismatch


# --------------------------------------------------------------------------- resume

def _rows(measurements) -> list[tuple[dict, Fraction]]:
    return [(dict(e.items()), Fraction(t)) for e, t in measurements]


def _why(result) -> list[tuple]:
    """Each counterexample's witness: what it measured and which candidates it ruled out."""
    return [(w.experiment, w.measured, w.ruled_out) for w in result.witnesses]


def test_interrupted_run_resumes_without_remeasuring(tmp_path):
    """Interrupted before each measurement batch after the first: the state holds exactly what
    was measured (in order), and the resumed run measures exactly the rest, once, and reports
    the same mapping, measurements and witnesses as an uninterrupted run."""
    truth = truth_2l(3, 5, 3)
    full = run(SimulatedOracle(truth), 3)
    n = len(full.measurements)
    assert n > len(truth.instructions) + 1                # singletons, then ≥ 2 counterexamples
    checked = len(full.unseen.experiments)
    for limit in range(len(truth.instructions), n):
        state = tmp_path / f"run{limit}.state.json"
        stopped = InterruptingOracle(truth, limit=limit)
        with pytest.raises(KeyboardInterrupt):
            run(stopped, 3, state=str(state))
        assert stopped.queries == limit                   # one batch of singletons, then one at a time
        saved = [(row["experiment"], Fraction(row["cycles"]).limit_denominator(10**6))
                 for row in json.loads(state.read_text())["data"]["measurements"]]
        assert saved == _rows(full.measurements[:limit])  # everything measured, nothing else
        oracle = SimulatedOracle(truth)
        res = run(oracle, 3, state=str(state))
        assert res.status == "inferred" and res.mapping == full.mapping
        assert _rows(res.measurements) == _rows(full.measurements) and _why(res) == _why(full)
        assert oracle.queries == n - limit + checked      # stored ones were not re-measured
    again = SimulatedOracle(truth)
    assert run(again, 3, state=str(state)).status == "inferred" and again.queries == 0
    before = state.read_bytes()
    with pytest.raises(ValidationError, match=r"another run \(ports"):
        run(SimulatedOracle(truth), 4, state=str(state))  # another run's state is refused
    with pytest.raises(ValidationError, match=r"another run \(oracle\.noise"):
        run(SimulatedOracle(truth, noise=0.01), 3, state=str(state))
    assert state.read_bytes() == before                   # and left as it was


# --------------------------------------------------------------------------- building blocks

def test_bounds_encoding_matches_exact_formula():
    from pmsolve.backends import solve
    from pmsolve.encodings.mappings import fixed_mapping

    rng = random.Random(5)
    for _ in range(15):
        m = truth_2l(3, 3, rng.randrange(1000))
        e = Experiment({i: rng.randint(0, 2) for i in m.instructions} | {"i0": 1})
        t = inverse_throughput(m, e)
        enc = fixed_mapping(m)
        for measured, eps, ok in ((t, None, True), (t + Fraction(1, 7), None, False),
                                  (t + Fraction(1, 100), Fraction(1, 50), True),
                                  (t + Fraction(1, 10) * e.size, Fraction(1, 50), False)):
            p = Problem().add(observation_bounds(enc, e, measured, "o.", epsilon=eps))
            assert solve(p, "z3").feasible == ok, (m, e, measured, eps)


def test_screen_matches_exact_formula():
    m = truth_2l(4, 4, 9)
    s = Screen(m.instructions, m.ports, 3, r_max=3.0)
    pred = s.predict(m)
    for row in range(len(s)):
        assert pred[row] == pytest.approx(float(inverse_throughput(m, s.experiment(row), r_max=3)))


def test_session_partial_check_reads_only_given_variables():
    from pmsolve.backends import open_session
    from pmsolve.symbolic import Bool, Int

    x, b = Int("x", 0, 5), Bool("b")
    with open_session("z3") as s:
        s.add(x >= 3)
        s.add(b)
        r = s.check(values=[x])
        assert r.feasible and set(r.model) == {"x"} and r.model["x"] >= 3


@pytest.mark.parametrize("backend", ["cvc5", "highs"])
def test_other_backends(backend):
    from pmsolve.backends import get
    if not get(backend).installed:
        pytest.skip(f"{backend} not installed")
    truth = truth_2l(3, 4, 6)
    res = run(SimulatedOracle(truth), 3, backend=backend)
    assert res.status == "inferred" and agrees(truth, res.mapping)[1] == 0


# --------------------------------------------------------------------------- CLI

def test_cli_infer_cegis(tmp_path, capsys):
    from pmsolve.cli import main
    from pmsolve.formats import load_mapping, save_mapping

    truth = truth_2l(3, 4, 12)
    save_mapping(truth, tmp_path / "truth.json")
    out = tmp_path / "out.json"
    args = ["infer", "cegis", "--oracle", f"simulated:{tmp_path / 'truth.json'}", "--ports", "3", "-o", str(out)]
    assert main(args) == 0
    assert agrees(truth, load_mapping(out))[1] == 0
    state = json.loads((tmp_path / "out.json.cegis-state.json").read_text())
    assert len(state["data"]["measurements"]) >= 4
    capsys.readouterr()
    assert main(args + ["--json", "--quiet"]) == 0  # resumes from the state file
    data = json.loads(capsys.readouterr().out)
    assert data["status"] == "inferred" and len(data["witnesses"]) == len(data["measurements"]) - data["initial"]
    assert data["unseen"]["ok"] and len(data["unseen"]["experiments"]) == 8


def test_cli_refuses_the_state_of_another_oracle(tmp_path, capsys):
    """Issue 18 item 3: `-o out.json` with truth A, then with truth B, must not print A's
    mapping nor mix the state: one line naming what differs, exit 2, the state untouched."""
    from pmsolve.cli import main
    from pmsolve.formats import save_mapping

    save_mapping(truth_2l(3, 4, 12), tmp_path / "A.json")
    save_mapping(truth_2l(3, 4, 13), tmp_path / "B.json")
    out = tmp_path / "out.json"
    args = ["infer", "cegis", "--ports", "3", "-o", str(out), "--oracle"]
    assert main(args + [f"simulated:{tmp_path / 'A.json'}"]) == 0
    state, mapping = (tmp_path / "out.json.cegis-state.json").read_bytes(), out.read_bytes()
    capsys.readouterr()
    assert main(args + [f"simulated:{tmp_path / 'B.json'}"]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.count("\n") == 1
    assert captured.err.startswith("pmsolve: error:") and "another run (oracle.mapping:" in captured.err
    assert "delete it" in captured.err
    assert (tmp_path / "out.json.cegis-state.json").read_bytes() == state and out.read_bytes() == mapping


def test_cli_warns_about_too_few_ports(tmp_path, capsys):
    from pmsolve.cli import main
    from pmsolve.formats import save_mapping

    truth = PortMapping.two_level(["0", "1", "2", "3"], {"a": ["0", "1"], "b": ["2", "3"], "c": ["0", "2"], "d": ["1"]})
    save_mapping(truth, tmp_path / "t.json")
    argv = ["infer", "cegis", "--oracle", f"simulated:{tmp_path / 't.json'}", "--ports", "2", "--quiet"]
    # a mapping the tool itself found wrong is written, but the exit status says so (EXIT_NO)
    assert main(argv + ["-o", str(tmp_path / "m.json")]) == 1
    out = capsys.readouterr().out
    assert "WARNING: the mapping is wrong on" in out and "too few ports (give more `--ports`)" in out
    assert (tmp_path / "m.json").exists()
    assert main(argv + ["--json"]) == 1 and json.loads(capsys.readouterr().out)["unseen"]["ok"] is False


def test_cli_bad_input_exits_2(capsys):
    from pmsolve.cli import main
    assert main(["infer", "cegis", "--oracle", "nonsense", "--ports", "3"]) == 2
    assert capsys.readouterr().err.count("\n") == 1
