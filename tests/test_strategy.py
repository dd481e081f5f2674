"""Strategy sufficiency: SMT verdicts agree with enumeration, witnesses are exact, the CLI works."""

import json
from fractions import Fraction

import pytest

from pmsolve.cli import main
from pmsolve.encodings.sufficiency import build_sufficiency
from pmsolve.errors import PmsolveError, SolverError
from pmsolve.model import Experiment, PortMapping
from pmsolve.strategy import K_RULES, check_strategy, from_experiments, parse_strategy
from pmsolve.strategy.checker import _validate
from pmsolve.strategy.exhaustive import check_strategy_exhaustive, experiments_up_to
from pmsolve.throughput import inverse_throughput

# (strategy, insns, ports, levels, max µops, max experiment length) — small enough to enumerate
TINY = [("pairs", 2, 2, 2, 1, 3), ("pairs", 2, 3, 2, 1, 3), ("ratio-pairs", 2, 3, 2, 1, 4),
        ("pairs", 2, 2, 3, 2, 3), ("ratio-pairs", 2, 2, 3, 2, 3), ("uopsinfo:k=paper", 1, 2, 3, 2, 4),
        ("uopsinfo:k=1", 1, 2, 3, 2, 3)]


@pytest.mark.parametrize("case", TINY, ids=["-".join(map(str, c)) for c in TINY])
def test_smt_agrees_with_enumeration(case):
    s, n, k, lv, u, L = case
    enum = check_strategy_exhaustive(s, n, k, levels=lv, max_uops=u, max_exp_len=L)
    smt = check_strategy(s, n, k, levels=lv, max_uops=u, max_exp_len=L, shortest=False)
    assert smt.status == enum.status
    if smt.counterexample:
        cx = smt.counterexample
        assert inverse_throughput(cx.m1, cx.experiment) == cx.tp1 != cx.tp2


@pytest.mark.parametrize("encoding", ["threshold", "max", "relate"])
@pytest.mark.parametrize("symmetry", [True, False])
def test_encodings_and_symmetry_breaking_agree(encoding, symmetry):
    from pmsolve.backends import solve

    cases = [("pairs", 2, 3, 2, 1, 3, "sat"), ("ratio-pairs", 2, 3, 2, 1, 3, "unsat"),
             ("ratio-pairs", 2, 2, 3, 2, 2, "unsat"), ("pairs", 2, 2, 3, 2, 3, "sat")]
    for s, n, k, lv, u, L, expected in cases:
        st = parse_strategy(s)
        cls = st.mapping_class(n, k, lv, u)
        enc = build_sufficiency(cls, st, L, symmetry_breaking=symmetry, encoding=encoding)
        res = solve(enc.problem, "z3")
        assert res.status == expected
        if res.feasible:
            _validate(st, cls, *enc.decode(res))


def test_relate_encoding_refuses_blocking_instructions():
    with pytest.raises(PmsolveError):
        check_strategy("uopsinfo:k=paper", 1, 2, levels=3, encoding="relate")


def test_timeout_gives_unknown():
    """A strategy that lists every experiment of ≤ 3 instructions is sufficient for |e*| ≤ 3 by
    construction, so no counterexample exists; proving it for 5 instructions on 4 ports takes z3
    about 45 s, so a 0.2 s limit (200 times shorter) must end UNKNOWN."""
    insns = tuple(f"i{j}" for j in range(1, 6))
    every = from_experiments(experiments_up_to(insns, 3), "every experiment of ≤ 3 instructions")
    v = check_strategy(every, 5, 4, max_exp_len=3, timeout=0.2, backend="z3")
    assert v.status == "unknown" and v.sufficient is None and v.counterexample is None
    assert "UNKNOWN" in v.render() and v.to_json()["verdict"] == "unknown"


def test_pairs_counterexample_is_shortest_and_readable():
    v = check_strategy("pairs", 2, 3, max_exp_len=4)
    assert v.status == "counterexample"
    cx = v.counterexample
    assert cx.experiment.size == 3  # no experiment of ≤ 2 instructions separates such mappings
    text = v.render()
    assert "NOT SUFFICIENT" in text and str(cx.experiment) in text
    data = json.loads(json.dumps(v.to_json()))
    assert data["verdict"] == "counterexample"
    assert {e["tp"] for e in data["counterexample"]["strategy_experiments"]} <= {"1", "1/2", "1/3", "2/3", "3/2"}


def test_validation_rejects_a_wrong_witness():
    st = parse_strategy("pairs")
    cls = st.mapping_class(2, 2)
    m1 = PortMapping.two_level(cls.ports, {"i1": ["0"], "i2": ["1"]})
    m2 = PortMapping.two_level(cls.ports, {"i1": ["0"], "i2": ["0"]})
    with pytest.raises(SolverError):  # they differ on a strategy experiment
        _validate(st, cls, m1, m2, Experiment({"i1": 1, "i2": 1}))
    with pytest.raises(SolverError):  # the experiment does not separate them
        _validate(st, cls, m1, m1, Experiment({"i1": 1}))


def test_k_rules():
    t, u = Fraction(2), 6  # App. E.1's instruction I: tp⁻¹ 2, 6 µops, on 3 ports
    assert K_RULES["paper"](2, 3, t, u) == 6
    assert K_RULES["uops"](2, 3, t, u) == 12
    assert K_RULES["impl"](2, 3, t, u) == 12
    assert K_RULES["impl"](1, 3, Fraction(1, 3), 1) == 10
    with pytest.raises(PmsolveError):
        parse_strategy("uopsinfo:k=banana")


def test_ratio_pairs_adapt_to_singletons():
    st = parse_strategy("ratio-pairs")
    cls = st.mapping_class(2, 3)
    m = PortMapping.two_level(cls.ports, {"i1": ["0"], "i2": ["0", "1", "2"]})
    assert Experiment({"i1": 1, "i2": 3}) in st.experiments(m, cls)


def test_file_strategy(tmp_path):
    path = tmp_path / "s.txt"
    path.write_text("# singletons and the triple\na:1\nb:1\nc:1\na:1,b:1,c:1\n")
    v = check_strategy(str(path), None, 2, max_exp_len=2)
    assert v.cls.instructions == ("a", "b", "c")
    assert v.status == "counterexample"  # pairs are missing
    enum = check_strategy_exhaustive(from_experiments([Experiment({"a": 1})]), None, 2, max_exp_len=2)
    assert enum.status == "sufficient"  # one instruction: tp⁻¹ scales with the count


def test_experiments_up_to():
    exps = experiments_up_to(("a", "b"), 2)
    assert [str(e) for e in exps] == ["a:1", "b:1", "a:1,b:1", "a:2", "b:2"]


def test_cli_check_strategy(capsys, tmp_path):
    code = main(["check-strategy", "--strategy", "pairs", "--insns", "2", "--ports", "3", "--max-exp-len", "3"])
    out = capsys.readouterr().out
    assert code == 0 and "NOT SUFFICIENT" in out and "mapping M2" in out
    code = main(["check-strategy", "--strategy", "ratio-pairs", "--insns", "2", "--ports", "3", "--json",
                 "--method", "enumerate"])
    assert code == 0 and json.loads(capsys.readouterr().out)["verdict"] == "sufficient"
    code = main(["check-strategy", "--shortcut", "facile", "--insns", "3", "--ports", "4", "--max-exp-len", "3"])
    assert code == 0 and "DIFFERS" in capsys.readouterr().out


def test_a_long_check_shows_its_steps_on_stderr(capsys):
    """`check-strategy --insns 50 --ports 50` was silent for minutes: each step (encoding,
    solving, shortening a counterexample) is a line on stderr; --quiet keeps them back."""
    argv = ["check-strategy", "--strategy", "pairs", "--insns", "2", "--ports", "3", "--max-exp-len", "3"]
    assert main(argv) == 0
    err = capsys.readouterr().err.splitlines()
    assert [line.split(" ")[1] for line in err[:3]] == ["encoding", "encoded", "counterexample"], err
    assert err[1].endswith("; solving")
    assert main(argv + ["--quiet"]) == 0 and capsys.readouterr().err == ""


def test_the_heartbeat_says_a_step_is_still_running(capsys):
    """A solver call can take minutes: while one step runs, a line every `every` seconds says so."""
    import time

    from pmsolve.cli.strategy import Heartbeat

    with Heartbeat(every=0.01) as beat:
        beat("solving")
        for _ in range(500):
            if "still working" in capsys.readouterr().err:
                break
            time.sleep(0.01)
        else:
            pytest.fail("no heartbeat line")


@pytest.mark.parametrize("ports", [17, 50])
def test_too_many_ports_are_refused_before_any_subset_is_built(monkeypatch, ports):
    """50 ports have 2^50 - 1 port subsets: building them never ended (and filled the memory)."""
    from pmsolve.encodings import mapping_class

    def refuse(_ports):
        raise AssertionError("port subsets built")

    monkeypatch.setattr(mapping_class, "port_subsets", refuse)
    with pytest.raises(PmsolveError, match="at most 16 ports"):
        check_strategy("pairs", 2, ports)
    assert main(["check-strategy", "--strategy", "pairs", "--insns", "50", "--ports", str(ports)]) == 2


def test_cli_check_strategy_can_gate_ci(capsys):
    """--fail-on-counterexample: exit 1 exactly when the strategy (or the shortcut) is refuted."""
    insufficient = ["check-strategy", "--strategy", "pairs", "--insns", "2", "--ports", "3", "--max-exp-len", "3"]
    assert main(insufficient + ["--fail-on-counterexample"]) == 1
    sufficient = ["check-strategy", "--strategy", "ratio-pairs", "--insns", "2", "--ports", "3", "--method", "enumerate"]
    assert main(sufficient + ["--fail-on-counterexample"]) == 0
    assert main(["check-strategy", "--shortcut", "facile", "--insns", "3", "--ports", "4", "--max-exp-len", "3",
                 "--fail-on-counterexample"]) == 1
    assert main(["check-strategy", "--strategy", "pairs", "--insns", "2", "--ports", "3", "--max-exp-len", "3",
                 "--smallest", "--fail-on-counterexample"]) == 1
    capsys.readouterr()


@pytest.mark.parametrize("argv", [
    ["check-strategy", "--strategy", "nonsense", "--ports", "2"],
    ["check-strategy", "--strategy", "pairs", "--insns", "0", "--ports", "2"],
    ["check-strategy", "--strategy", "pairs", "--insns", "2", "--ports", "2", "--max-uops", "2"],
    ["check-strategy", "--ports", "2"],
    ["prove", "no-such-theorem"],
    ["prove", "thm-6.3", "--mutant", "no-such-mutant"],
    ["prove"],
])
def test_cli_bad_input_is_one_line(capsys, argv):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("pmsolve: error:") and err.count("\n") == 1


def test_cli_prove(capsys):
    assert main(["prove", "thm-6.3"]) == 0
    out = capsys.readouterr().out
    assert "statement:" in out and "bound:" in out and "HOLDS" in out
    assert main(["prove", "thm-6.3", "--mutant", "max-premise", "--json"]) == 0  # caught, as expected
    data = json.loads(capsys.readouterr().out)
    assert data[0]["verdict"] == "violated" and data[0]["mutant"] == "max-premise"
    assert main(["prove", "--list"]) == 0
    assert "anica-domain" in capsys.readouterr().out


def test_given_mapping(capsys, tmp_path):
    from pmsolve.formats import save_mapping

    m = PortMapping.two_level(["0", "1", "2"], {"i1": ["0"], "i2": ["1", "2"]})
    v = check_strategy("pairs", 2, 3, max_exp_len=3, given=m)
    assert v.status == "counterexample" and v.counterexample.m1 == m
    alone = PortMapping.two_level(["0", "1", "2"], {"i1": ["0"], "i2": ["0"]})
    assert check_strategy("pairs", 2, 3, max_exp_len=3, given=alone).status == "sufficient"
    path = tmp_path / "m.json"
    save_mapping(m, path)
    assert main(["check-strategy", "--strategy", "pairs", "--insns", "2", "--ports", "3", "--mapping", str(path),
                 "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["counterexample"]["m1"]["i2"][0]["ports"] == ["1", "2"]
    with pytest.raises(PmsolveError):
        check_strategy("pairs", 2, 4, given=m)  # ports do not match the class


@pytest.mark.parametrize("backend", ["z3", "cvc5", "highs", "scipy", "pysmt:z3", "smtlib:z3"])
def test_every_backend_route(backend):
    from pmsolve.backends import get

    if not get(backend).installed:
        pytest.skip(f"{backend} not installed")
    assert check_strategy("pairs", 2, 3, max_exp_len=3, backend=backend, shortest=False).status == "counterexample"
    assert check_strategy("ratio-pairs", 2, 3, max_exp_len=3, backend=backend).status == "sufficient"
