"""The measurement store: keys, raw samples, WAL, and resuming a SIGKILLed campaign."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from collections import Counter
from pathlib import Path

import pytest

from pmsolve.harness import RecordedOracle, SimulatedOracle
from pmsolve.harness.store import (MeasurementStore, StoredOracle, canonical_experiment, machine_fingerprint,
                                   parse_experiment)
from pmsolve.model import Experiment, PortMapping

ROOT = Path(__file__).resolve().parents[1]
MAPPING = PortMapping.two_level(["0", "1", "2"], {"a": ["0"], "b": ["0", "1"], "c": ["2"], "d": ["1", "2"]})


def test_canonical_keys():
    e = Experiment({"b": 2, "a": 1})
    assert canonical_experiment(e) == "a:1;b:2" == canonical_experiment(Experiment({"a": 1, "b": 2}))
    assert parse_experiment("a:1;b:2") == e
    assert parse_experiment("add_r64_r64:4;imul_r64_r64:1") == Experiment({"add_r64_r64": 4, "imul_r64_r64": 1})
    assert machine_fingerprint() == machine_fingerprint() and len(machine_fingerprint()) == 16
    assert machine_fingerprint({"model name": "x"}) != machine_fingerprint({"model name": "y"})


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
    so = StoredOracle(inner, store, settings={"x": 1})
    exps = [Experiment({"a": 1}), Experiment({"a": 1, "b": 2}), Experiment({"d": 3})]
    first = so.measure(exps + exps[:1])
    assert first == inner.measure(exps + exps[:1])[:4]
    inner.asked.clear()
    assert StoredOracle(inner, store, settings={"x": 1}).measure(exps) == first[:3]
    assert not inner.asked                                   # all answered from the store
    StoredOracle(inner, store, settings={"x": 2}).measure(exps[:1])
    assert inner.asked[exps[0]] == 1                         # other settings: measured again
    assert {k[2] for k in store.keys()} == {3, 1}
    # raw samples kept; a recorded oracle replays the store
    rows = store.rows(settings='{"x":1}')
    assert rows[0].samples == [first[0]]
    rec = RecordedOracle(store.measurements(settings='{"x":1}'))
    assert rec.measure(exps) == first[:3]
    assert store.db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_errors_are_stored_not_retried(tmp_path):
    from pmsolve.errors import PmsolveError
    from pmsolve.harness.hardware import MeasurementError

    class Flaky(Counting):
        def measure(self, experiments):
            if any("c" in e for e in experiments):
                raise MeasurementError("fault")
            return super().measure(experiments)

    store = MeasurementStore(tmp_path / "m.sqlite")
    inner = Flaky(MAPPING)
    so = StoredOracle(inner, store, on_error="nan")
    vals = so.measure([Experiment({"a": 1}), Experiment({"c": 1}), Experiment({"b": 1})])
    assert vals[0] == 1 and vals[2] == 0.5 and vals[1] != vals[1]
    with pytest.raises(PmsolveError, match="could not be measured"):
        StoredOracle(inner, store).measure([Experiment({"c": 1})])
    assert [r.error for r in store.rows() if not r.ok] == ["fault"]


CAMPAIGN = textwrap.dedent("""
    import sys, time
    from pmsolve.harness.simulated import SimulatedOracle
    from pmsolve.harness.store import MeasurementStore, StoredOracle
    from pmsolve.model import Experiment, PortMapping

    m = PortMapping.two_level(["0", "1", "2"], {"a": ["0"], "b": ["0", "1"], "c": ["2"], "d": ["1", "2"]})
    log = open(sys.argv[2], "a", buffering=1)

    class Slow(SimulatedOracle):
        def measure_iter(self, experiments):        # streams like the hardware oracle
            for i, e in enumerate(experiments):
                time.sleep(0.05)                      # a measurement takes a while
                v = self.measure([e])[0]
                log.write(str(e) + "\\n")              # this measurement is complete
                yield i, type("R", (), dict(experiment=e, cycles=v, spread=0.0, noisy=False, attempts=1,
                                            error=None, samples={"s": [v]}, reference=[], ratios=[]))()

    exps = [Experiment({"a": i % 3 + 1, "b": i // 3 + 1, "c": 1}) for i in range(30)]
    vals = StoredOracle(Slow(m), MeasurementStore(sys.argv[1]), settings={"t": 1}).measure(exps)
    print(",".join(map(str, vals)))
""")


def test_sigkill_mid_campaign_then_resume(tmp_path):
    """Kill a campaign with SIGKILL mid-way; the rerun measures only what is missing."""
    db, log, script = tmp_path / "m.sqlite", tmp_path / "log.txt", tmp_path / "campaign.py"
    script.write_text(CAMPAIGN)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, str(script), str(db), str(log)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.time() + 60
    while time.time() < deadline:
        if log.exists() and len(log.read_text().splitlines()) >= 10:
            break
        time.sleep(0.01)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    done_before = log.read_text().splitlines()
    assert 10 <= len(done_before) < 30, "the campaign must be killed mid-way"
    stored = sqlite3.connect(db).execute("SELECT COUNT(*) FROM measurements").fetchone()[0]
    assert stored >= len(done_before) - 1                    # at most the one in flight is lost

    out = subprocess.run([sys.executable, str(script), str(db), str(log)], env=env, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    measured = Counter(log.read_text().splitlines())
    assert len(measured) == 30                               # nothing lost
    assert max(measured.values()) == 1, [e for e, n in measured.items() if n > 1]   # nothing measured twice
    expected = SimulatedOracle(MAPPING).measure(
        [Experiment({"a": i % 3 + 1, "b": i // 3 + 1, "c": 1}) for i in range(30)])
    assert [float(x) for x in out.stdout.strip().split(",")] == expected
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
    so = StoredOracle(SimulatedOracle(MAPPING), MeasurementStore(db), settings={"k": 1})
    vals = so.measure([Experiment({"a": 1}), Experiment({"b": 3})])
    rec = open_oracle(f"store:{db}")
    assert rec.measure([Experiment({"b": 3}), Experiment({"a": 1})]) == vals[::-1]
    StoredOracle(SimulatedOracle(MAPPING, noise=0.1), MeasurementStore(db)).measure([Experiment({"a": 1})])
    with pytest.raises(ValidationError, match="2 matching"):
        open_oracle(f"store:{db}")
    assert open_oracle(f"store:{db}?settings=" + '{"k":1}').measure([Experiment({"a": 1})]) == vals[:1]
    with pytest.raises(ValidationError, match="does not exist"):
        open_oracle(f"store:{tmp_path / 'nope.sqlite'}")
