"""pmsolve.executor: the same results on every backend, and no finished work lost with a worker.

The Dask tests share one LocalCluster on loopback (2 single-threaded worker processes, ~2 s
to start) and skip when Dask is not installed (CI installs it with ``.[all,test]``).
"""

from __future__ import annotations

import os
import random
import signal
import sqlite3
import threading
from collections import Counter
from dataclasses import replace

import pytest

import anica_helpers as H
import executor_helpers as X
from pmsolve.anica.campaign import Campaign
from pmsolve.anica.config import Config
from pmsolve.anica.domain import AbstractBlock, Universe
from pmsolve.predictors import CachedPredictor, predict_many
from pmsolve.anica.sampler import Sampler, to_block
from pmsolve.errors import ValidationError
from pmsolve.executor import PoolExecutor, SerialExecutor, current_executor, dask_available, open_executor
from pmsolve.harness import SimulatedOracle
from pmsolve.infer.pmevo import PmevoOptions, infer
from pmsolve.model import Experiment, PortMapping
from pmsolve.throughput import evaluate_many

needs_dask = pytest.mark.skipif(not dask_available(), reason="dask[distributed] is not installed")

TRUTH = PortMapping(["0", "1", "2", "3"], {
    "add": [(("0", "1", "2"), 1)], "mul": [(("1",), 1)], "load": [(("3",), 1)],
    "store": [(("2",), 1), (("3",), 1)], "fma": [(("0", "1"), 2)], "div": [(("0",), 3)]})
@pytest.fixture(scope="module")
def universe() -> Universe:
    return H.make_universe()


@pytest.fixture(scope="module")
def dask_ex():
    if not dask_available():
        pytest.skip("dask[distributed] is not installed")
    ex = open_executor("dask", workers=2)
    yield ex
    ex.close()


def test_open_executor_choices_and_errors():
    assert isinstance(open_executor(workers=1), SerialExecutor)
    with open_executor(workers=2) as ex:
        assert isinstance(ex, PoolExecutor)
    with pytest.raises(ValidationError, match="unknown executor"):
        open_executor("threads")
    with pytest.raises(ValidationError, match="needs the dask executor"):
        open_executor("pool", workers=2, scheduler="tcp://127.0.0.1:1")
    with pytest.raises(ValidationError, match="at least 1"):
        open_executor(workers=0)


class CountingExecutor(SerialExecutor):
    def __init__(self):
        self.calls = 0

    def map(self, fn, items, *, on_result=None):
        self.calls += 1
        return super().map(fn, items, on_result=on_result)


def test_pmevo_uses_the_ambient_executor():
    from pmsolve.executor import use_executor

    cfg = PmevoOptions(ports=4, preset="paper", budget_seconds=None, population=20, generations=2, seed=1)
    plain = infer(SimulatedOracle(TRUTH), cfg)
    ex = CountingExecutor()
    with use_executor(ex):
        got = infer(SimulatedOracle(TRUTH), cfg)
    assert ex.calls >= 3 and got.mapping.uops == plain.mapping.uops


def test_pool_streams_results_and_survives_a_killed_worker():
    """A worker killed mid-run: the pool is replaced, finished results are kept (each item's
    callback runs exactly once, none is redone), the run completes."""
    items = list(range(40))
    calls: list[tuple[int, int]] = []
    killed: list[int] = []
    with PoolExecutor(2) as ex:
        def on_result(k: int, r: int) -> None:
            calls.append((k, r))
            if len(calls) == 5 and not killed:
                killed.append(ex.worker_pids()[0])
                os.kill(killed[0], signal.SIGKILL)
        out = ex.map(X.slow_square, items, on_result=on_result)
    assert killed and out == [x * x for x in items]
    assert Counter(k for k, _ in calls) == Counter(items)   # one callback per item: nothing redone
    assert sorted(calls) == list(enumerate(out))


def test_picklable_predictors_run_on_the_pool_others_on_the_client(universe):
    smp, rng = Sampler(universe), random.Random(0)
    blocks = [to_block(universe, c) for c in (smp.sample(AbstractBlock.top(2), rng) for _ in range(40)) if c]
    with PoolExecutor(2) as ex:
        got = predict_many([X.PidPredictor("far"), X.PidPredictor("near", local=True)], blocks, chunk=5,
                           executor=ex)
        pids = set(ex.worker_pids())
    assert {p.cycles for p in got["far"]} <= {float(p) for p in pids}
    assert {p.cycles for p in got["near"]} == {float(os.getpid())}


# --------------------------------------------------------------------------- same results

def _experiments(n: int) -> list[Experiment]:
    rng = random.Random(1)
    return [Experiment([rng.choice(TRUTH.instructions) for _ in range(rng.randint(1, 5))]) for _ in range(n)]


def test_batch_throughput_on_a_pool_is_the_serial_array():
    exps = _experiments(2_000)
    with PoolExecutor(2) as ex:
        got = evaluate_many(TRUTH, exps, 4, executor=ex, chunk=300)
    assert got.tolist() == evaluate_many(TRUTH, exps, 4).tolist()

def _anica_cfg() -> Config:
    return Config(a="factory:anica_helpers:base", b="factory:anica_helpers:slow_bsf", uops="none",
                  samples=12, chunk=6, orders=2, batch=10, block_size=3, max_discoveries=3,
                  max_seconds=300, max_samples=25, seed=5, workers=2)


def _campaign(universe, folder, executor):
    cache = folder / "predictions.sqlite"
    camp = Campaign(_anica_cfg(), folder, CachedPredictor(H.base(), cache), CachedPredictor(H.slow_bsf(), cache),
                    universe=universe, progress=lambda m: None, executor=executor)
    try:
        st = camp.run()
    finally:
        camp.pair.close()
    with sqlite3.connect(cache) as db:
        rows = db.execute("SELECT predictor, block, cycles, error FROM predictions ORDER BY 1, 2").fetchall()
    return [d.to_json() for d in st.discoveries], st.kept, rows


@needs_dask
def test_serial_pool_and_dask_give_identical_pmevo_and_anica_results(universe, tmp_path, dask_ex):
    cfg = PmevoOptions(ports=4, budget_seconds=None, population=60, generations=6, seed=9, training=40)
    runs = {}
    with PoolExecutor(2) as pool:
        for name, ex in (("serial", SerialExecutor()), ("pool", pool), ("dask", dask_ex)):
            r = infer(SimulatedOracle(TRUTH), replace(cfg, executor=ex))
            runs[name] = (r.mapping.uops, r.d_avg, r.volume, r.evolution.evaluations,
                          [h.get("best_d") for h in r.evolution.history])
            (tmp_path / name).mkdir()
            runs[name] += _campaign(universe, tmp_path / name, ex)
    exps = _experiments(1_000)
    assert evaluate_many(TRUTH, exps, executor=dask_ex, chunk=150).tolist() == evaluate_many(TRUTH, exps).tolist()
    assert runs["serial"][5] and runs["serial"][7]  # discoveries and stored predictions exist
    assert runs["pool"] == runs["serial"]
    assert runs["dask"] == runs["serial"]


# --------------------------------------------------------------------------- a lost worker

@needs_dask
def test_killed_dask_worker_loses_no_stored_prediction(universe, tmp_path, dask_ex):
    smp, rng = Sampler(universe), random.Random(3)
    blocks = []
    while len(blocks) < 160:
        c = smp.sample(AbstractBlock.top(rng.randint(1, 3)), rng)
        if c is not None:
            blocks.append(to_block(universe, c))
    want = predict_many([H.base(), H.slow_bsf()], blocks, workers=1)
    n_unique = len({b.key for b in blocks})
    cache = tmp_path / "predictions.sqlite"
    preds = [CachedPredictor(X.SlowPredictor(H.base(), 0.15), cache),
             CachedPredictor(X.SlowPredictor(H.slow_bsf(), 0.15), cache)]
    before: dict = {}
    lock = threading.Lock()

    def progress(name: str, done: int, total: int) -> None:
        with lock:
            if before:
                return
            with sqlite3.connect(cache) as db:  # what is stored when the worker dies
                before.update(db.execute("SELECT predictor || block, created FROM predictions").fetchall())
            os.kill(dask_ex.worker_pids()[0], signal.SIGKILL)

    got = predict_many(preds, blocks, chunk=8, executor=dask_ex, progress=progress)
    assert got == want
    with sqlite3.connect(cache) as db:
        after = dict(db.execute("SELECT predictor || block, created FROM predictions").fetchall())
    assert 0 < len(before) < 2 * n_unique == len(after)
    assert all(after[k] == t for k, t in before.items())  # kept, not predicted again
    # a second run is answered from the store alone
    again = [CachedPredictor(X.SlowPredictor(H.base(), 0.15), cache),
             CachedPredictor(X.SlowPredictor(H.slow_bsf(), 0.15), cache)]
    assert predict_many(again, blocks, executor=dask_ex) == want
    assert all(p.misses == 0 and p.hits == n_unique for p in again)
