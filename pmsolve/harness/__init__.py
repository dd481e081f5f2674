"""The measurement side: oracles that answer throughput experiments (DESIGN §4).

Every oracle implements :class:`~pmsolve.harness.oracle.Oracle`; inference algorithms only
talk to that protocol, so a simulated ground truth, a recorded file and (later) real hardware
are interchangeable. :func:`open_oracle` builds one from a CLI spec string;
:class:`CachingOracle` remembers (and persists) the answers of any of them.
"""

from pmsolve.harness.cache import CachingOracle
from pmsolve.harness.oracle import open_oracle
from pmsolve.harness.protocol import Oracle, oracle_fingerprint
from pmsolve.harness.recorded import RecordedOracle
from pmsolve.harness.simulated import SimulatedOracle

__all__ = ["CachingOracle", "Oracle", "RecordedOracle", "SimulatedOracle", "open_oracle", "oracle_fingerprint"]
