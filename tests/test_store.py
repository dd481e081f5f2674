"""The measurement store: keys, raw samples, WAL, and resuming a SIGKILLed campaign."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
from collections import Counter
from pathlib import Path

import pytest

from pmsolve.harness import RecordedOracle, SimulatedOracle
from pmsolve.harness.cache import CachingOracle
from pmsolve.harness.store import (MeasurementStore, canonical_experiment, machine_description, machine_fingerprint,
                                   parse_experiment)
from pmsolve.model import Experiment, PortMapping

ROOT = Path(__file__).resolve().parents[1]
MAPPING = PortMapping.two_level(["0", "1", "2"], {"a": ["0"], "b": ["0", "1"], "c": ["2"], "d": ["1", "2"]})


def test_canonical_keys():
    e = Experiment({"b": 2, "a": 1})
    assert canonical_experiment(e) == "a:1;b:2" == canonical_experiment(Experiment({"a": 1, "b": 2}))
    assert parse_experiment("a:1;b:2") == e
    assert parse_experiment("add_r64_r64:4;imul_r64_r64:1") == Experiment({"add_r64_r64": 4, "imul_r64_r64": 1})


def test_machine_fingerprint_follows_the_description_not_its_key_order():
    desc = machine_description()
    assert {"arch", "cpus"} <= set(desc)
    fp = machine_fingerprint(desc)
    assert machine_fingerprint() == fp and len(fp) == 16 and int(fp, 16) >= 0
    assert machine_fingerprint(dict(reversed(list(desc.items())))) == fp       # key order is irrelevant
    seen = {fp}
    for key, value in desc.items():                          # every part of the description matters
        changed = machine_fingerprint({**desc, key: f"{value} (other)"})
        assert changed not in seen, key
        seen.add(changed)
    assert machine_fingerprint({k: v for k, v in desc.items() if k != "arch"}) != fp
    other = {"model name": "AMD EPYC 9R45", "cpu family": "26", "flags": "avx512f fma sse2", "cpus": 2}
    assert machine_fingerprint(other) == machine_fingerprint(dict(sorted(other.items(), reverse=True)))
    assert machine_fingerprint(other) != machine_fingerprint({**other, "flags": "fma sse2"})


class Counting(SimulatedOracle):
    def __init__(self, *a, **k):
        super().__init__(*a, **k)
        self.asked: Counter = Counter()

    def measure(self, experiments):
        for e in experiments:
            self.asked[e] += 1
        return super().measure(experiments)


def test_stored_oracle_reuses_and_keys_by_settings(tmp_path):
    store = MeasurementStore(tmp_path / "m.sqlite")
    inner = Counting(MAPPING)
    so = CachingOracle.in_sqlite(inner, store, settings={"x": 1})
    exps = [Experiment({"a": 1}), Experiment({"a": 1, "b": 2}), Experiment({"d": 3})]
    first = so.measure(exps + exps[:1])
    assert first == inner.measure(exps + exps[:1])[:4]
    inner.asked.clear()
    assert CachingOracle.in_sqlite(inner, store, settings={"x": 1}).measure(exps) == first[:3]
    assert not inner.asked                                   # all answered from the store
    CachingOracle.in_sqlite(inner, store, settings={"x": 2}).measure(exps[:1])
    assert inner.asked[exps[0]] == 1                         # other settings: measured again
    assert {k[2] for k in store.keys()} == {3, 1}
    # raw samples kept; a recorded oracle replays the store
    rows = store.rows(settings='{"x":1}')
    assert rows[0].samples == [first[0]]
    rec = RecordedOracle(store.measurements(settings='{"x":1}'))
    assert rec.measure(exps) == first[:3]
    assert store.db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_errors_are_stored_and_retried_once_by_a_resumed_run(tmp_path):
    from pmsolve.errors import PmsolveError
    from pmsolve.errors import MeasurementError

    class Flaky(Counting):
        broken = True

        def measure(self, experiments):
            self.asked.update(experiments)
            if self.broken and any("c" in e for e in experiments):
                raise MeasurementError("fault")
            return SimulatedOracle.measure(self, experiments)

    store = MeasurementStore(tmp_path / "m.sqlite")
    inner = Flaky(MAPPING)
    so = CachingOracle.in_sqlite(inner, store, on_error="nan")
    vals = so.measure([Experiment({"a": 1}), Experiment({"c": 1}), Experiment({"b": 1})])
    assert vals[0] == 1 and vals[2] == 0.5 and vals[1] != vals[1]
    asked = inner.asked[Experiment({"c": 1})]
    so.measure([Experiment({"c": 1})])                      # this run's own failure: not again
    assert inner.asked[Experiment({"c": 1})] == asked
    assert [r.error for r in store.rows() if not r.ok] == ["fault"]
    with pytest.raises(PmsolveError, match="could not be measured"):   # a resumed run: once more
        CachingOracle.in_sqlite(inner, store).measure([Experiment({"c": 1})])
    assert inner.asked[Experiment({"c": 1})] == asked + 1
    inner.broken = False                                     # the cause fixed: the resumed run goes on
    assert CachingOracle.in_sqlite(inner, store).measure([Experiment({"c": 1})]) == [1.0]
    assert [r for r in store.rows() if not r.ok] == []


CAMPAIGN = textwrap.dedent("""
    import os, signal, sys
    from pmsolve.harness.simulated import SimulatedOracle
    from pmsolve.harness.cache import CachingOracle
    from pmsolve.harness.store import MeasurementStore
    from pmsolve.model import Experiment, PortMapping

    m = PortMapping.two_level(["0", "1", "2"], {"a": ["0"], "b": ["0", "1"], "c": ["2"], "d": ["1", "2"]})
    db, log_path, where, at = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    log = open(log_path, "a", buffering=1)

    class Streaming(SimulatedOracle):
        def measure_iter(self, experiments):         # streams like the hardware oracle
            for i, e in enumerate(experiments):
                v = self.measure([e])[0]
                log.write(str(e) + "\\n")              # this measurement is complete
                if where == "measured" and self.queries == at:
                    os.kill(os.getpid(), signal.SIGKILL)   # measured, not yet committed
                yield i, type("R", (), dict(experiment=e, cycles=v, spread=0.0, noisy=False, attempts=1,
                                            error=None, samples={"s": [v]}, reference=[], ratios=[]))()
                if where == "committed" and self.queries == at:
                    os.kill(os.getpid(), signal.SIGKILL)   # resumed by the store after its put() returned

    exps = [Experiment({"a": i % 3 + 1, "b": i // 3 + 1, "c": 1}) for i in range(30)]
    vals = CachingOracle.in_sqlite(Streaming(m), db, settings={"t": 1}).measure(exps)
    print(",".join(map(str, vals)))
""")
EXPS = [Experiment({"a": i % 3 + 1, "b": i // 3 + 1, "c": 1}) for i in range(30)]


@pytest.mark.parametrize("where,at", [("measured", 1), ("committed", 12), ("measured", 17), ("measured", 30)])
def test_sigkill_mid_campaign_then_resume(tmp_path, where, at):
    """SIGKILL at a known point of a streaming campaign: right after the at-th measurement (before
    its commit) or right after the at-th commit. The store then holds exactly the committed
    experiments, and the rerun measures exactly the others, once each (the one killed between
    measurement and commit a second time): the guarantee of pmsolve.harness.store."""
    db, log, script = tmp_path / "m.sqlite", tmp_path / "log.txt", tmp_path / "campaign.py"
    script.write_text(CAMPAIGN)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    killed = subprocess.run([sys.executable, str(script), str(db), str(log), where, str(at)], env=env,
                            capture_output=True, text=True, timeout=120)
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    committed = at - 1 if where == "measured" else at
    assert log.read_text().splitlines() == [str(e) for e in EXPS[:at]]
    expected = SimulatedOracle(MAPPING).measure(EXPS)
    rows = MeasurementStore(db).rows()
    assert [(r.experiment, r.cycles, r.samples) for r in rows] == \
        [(e, v, {"variants": {"s": [v]}, "reference": [], "ratios": []})
         for e, v in zip(EXPS[:committed], expected)]                       # exactly the committed ones

    out = subprocess.run([sys.executable, str(script), str(db), str(log), "none", "0"], env=env,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert [float(x) for x in out.stdout.strip().split(",")] == expected
    measured = log.read_text().splitlines()
    assert measured[at:] == [str(e) for e in EXPS[committed:]]             # the rerun: exactly the missing ones
    assert Counter(measured) == Counter({str(e): 1 + (k == at - 1 and where == "measured")
                                         for k, e in enumerate(EXPS)})
    assert sqlite3.connect(db).execute("SELECT COUNT(*) FROM measurements").fetchone()[0] == 30


def test_bad_store_file(tmp_path):
    from pmsolve.errors import FormatError

    p = tmp_path / "x.sqlite"
    p.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(FormatError):
        MeasurementStore(p)


def test_store_oracle_spec(tmp_path):
    from pmsolve.errors import ValidationError
    from pmsolve.harness import open_oracle

    db = tmp_path / "m.sqlite"
    so = CachingOracle.in_sqlite(SimulatedOracle(MAPPING), MeasurementStore(db), settings={"k": 1})
    vals = so.measure([Experiment({"a": 1}), Experiment({"b": 3})])
    rec = open_oracle(f"store:{db}")
    assert rec.measure([Experiment({"b": 3}), Experiment({"a": 1})]) == vals[::-1]
    CachingOracle.in_sqlite(SimulatedOracle(MAPPING, noise=0.1), MeasurementStore(db)).measure([Experiment({"a": 1})])
    with pytest.raises(ValidationError, match="2 matching"):
        open_oracle(f"store:{db}")
    assert open_oracle(f"store:{db}?settings=" + '{"k":1}').measure([Experiment({"a": 1})]) == vals[:1]
    with pytest.raises(ValidationError, match="does not exist"):
        open_oracle(f"store:{tmp_path / 'nope.sqlite'}")


# --------------------------------------------------------------------------- the caching oracle, fingerprints

def test_oracle_fingerprints_follow_what_determines_the_answers():
    from pmsolve.harness import oracle_fingerprint
    from pmsolve.model import Measurement

    base = oracle_fingerprint(SimulatedOracle(MAPPING, noise=0.01, seed=1, r_max=3))
    assert base == oracle_fingerprint(SimulatedOracle(PortMapping.two_level(
        ["0", "1", "2"], {"d": ["2", "1"], "c": ["2"], "b": ["1", "0"], "a": ["0"]}), noise=0.01, seed=1, r_max=3))
    other = PortMapping.two_level(["0", "1", "2"], {"a": ["0"], "b": ["0", "1"], "c": ["2"], "d": ["2"]})
    for changed in (SimulatedOracle(other, noise=0.01, seed=1, r_max=3), SimulatedOracle(MAPPING, noise=0.02, seed=1, r_max=3),
                    SimulatedOracle(MAPPING, noise=0.01, seed=2, r_max=3), SimulatedOracle(MAPPING, noise=0.01, seed=1),
                    SimulatedOracle(MAPPING, noise=0.01, seed=1, r_max=3, uop_counter=True)):
        assert oracle_fingerprint(changed) != base
    rec = [Measurement(Experiment({"a": 1}), 1.0), Measurement(Experiment({"b": 2}), 1.0)]
    assert oracle_fingerprint(RecordedOracle(rec)) == oracle_fingerprint(RecordedOracle(rec[::-1]))
    assert oracle_fingerprint(RecordedOracle(rec)) != oracle_fingerprint(RecordedOracle(rec[:1] + [
        Measurement(Experiment({"b": 2}), 1.5)]))


def test_the_sqlite_store_keeps_the_answers_of_different_simulated_truths_apart(tmp_path):
    """Two truths with the same shape used to share a key (their describe() text): the second
    replayed the first one's answers. Keyed by the oracle's fingerprint, each gets its own."""
    other = PortMapping.two_level(["0", "1", "2"], {"a": ["0"], "b": ["0", "1"], "c": ["2"], "d": ["2"]})
    assert SimulatedOracle(other).describe() == SimulatedOracle(MAPPING).describe()
    db = tmp_path / "m.sqlite"
    e = [Experiment({"d": 2})]
    assert CachingOracle.in_sqlite(SimulatedOracle(MAPPING), db).measure(e) == [1.0]
    second = CachingOracle.in_sqlite(Counting(other), db)
    assert second.measure(e) == [2.0] and second.measured == 1
    assert len(MeasurementStore(db).keys()) == 2


def test_caching_oracle_in_a_state_file_resumes_and_refuses_another_oracle(tmp_path):
    from pmsolve.errors import ValidationError
    from pmsolve.fileio import StateFile
    from pmsolve.harness import oracle_fingerprint

    path = tmp_path / "s.json"
    exps = [Experiment({"a": 1}), Experiment({"b": 1, "d": 2}), Experiment({"a": 1})]
    inner = Counting(MAPPING, uop_counter=True)
    first = CachingOracle.in_state(inner, StateFile(path, "test", {"oracle": oracle_fingerprint(inner)}))
    values = first.measure(exps)
    assert first.uop_counts(exps[:1]) == [1.0] and first.measured == 2 and set(inner.asked.values()) == {1}
    again = Counting(MAPPING, uop_counter=True)
    state = StateFile(path, "test", {"oracle": oracle_fingerprint(again)})
    cached = CachingOracle.in_state(again, state)
    assert state.resumed and cached.known() == exps[:2]
    assert cached.measure(exps[::-1]) == values[::-1] and cached.uop_counts(exps[:1]) == [1.0]
    assert not again.asked and cached.measured == 0                 # everything came from the file
    before = path.read_bytes()
    with pytest.raises(ValidationError, match=r"another run \(oracle\.noise: 0\.0 in the file, 0\.1 now\).*delete it"):
        StateFile(path, "test", {"oracle": oracle_fingerprint(SimulatedOracle(MAPPING, noise=0.1, uop_counter=True))})
    with pytest.raises(ValidationError, match="a test state file, not a cegis one"):
        StateFile(path, "cegis", {"oracle": oracle_fingerprint(again)})
    assert path.read_bytes() == before


def test_a_state_over_a_sqlite_store_is_saved_seldom_and_a_killed_run_measures_nothing_again(tmp_path):
    """A JSON state whose inner oracle commits every row to SQLite is not saved with every
    batch (on a Zen 4 ``--all`` run, 790 saves of a state growing to 26 MB took 313 s): a run
    killed before its next save measures nothing again, and a save keeps every row once, in
    measurement order, a row measured again in its old place."""
    from pmsolve.fileio import StateFile
    from pmsolve.harness import oracle_fingerprint
    from pmsolve.harness.cache import JsonRows
    from pmsolve.harness.store import StoredRow

    a, bd, c = Experiment({"a": 1}), Experiment({"b": 1, "d": 2}), Experiment({"c": 3})
    path, db = tmp_path / "s.json", tmp_path / "m.sqlite"
    first = CachingOracle.in_state(CachingOracle.in_sqlite(Counting(MAPPING), db), StateFile(path, "test", {}))
    values = first.measure([a, bd]) + first.measure([c])
    assert first.measured == 3 and not path.exists()            # killed here: the rows are in SQLite
    inner = Counting(MAPPING)
    state = StateFile(path, "test", {})
    again = CachingOracle.in_state(CachingOracle.in_sqlite(inner, db), state)
    assert again.measure([c, a, bd]) == [values[2], values[0], values[1]] and not inner.asked
    state.save()
    rows = JsonRows(StateFile(path, "test", {}))
    assert list(rows.rows) == [c, a, bd]
    rows.put([StoredRow(a, 9.0, None, False, 2, None, None, 0.0)])
    assert [r["experiment"] for r in rows.state.data["measurements"]] == [{"c": 3}, {"a": 1}, {"b": 1, "d": 2}]
    assert rows.state.data["measurements"][1]["cycles"] == 9.0 and path.exists()
    plain = CachingOracle.in_state(Counting(MAPPING), StateFile(tmp_path / "p.json", "test", {}))
    plain.measure([a])
    assert (tmp_path / "p.json").exists()                       # no durable store: saved at once
