"""The port-mapping model written once in the IR; any backend of pmsolve.backends solves it.

Every encoder returns one shape, :class:`Encoding` ``(problem, t, decode, vars)``, and takes
plain `PortMapping` / `Experiment` objects where a fixed mapping or experiment is meant.

- `throughput_lp` — the LPs of Thm 3.7 / 3.12.
- `relate_throughput` — Def. 4.5 (Fig. 4.3 / 4.5 for three levels), with `r_max` and the noise
  helpers `matches` / `differ` (sec. 4.3); mapping encodings `two_level_mapping`,
  `fixed_count_mapping`, `power_set_mapping`, `fixed_mapping`; experiment encodings
  `free_experiment`, `fixed_experiment`.
- `build_find_mapping` / `find_mapping`, `build_find_other_mapping` / `find_other_mapping` —
  sec. 4.2.3, over a `Space` of mappings; `observation` gives one measurement's constraints for
  incremental use in a `pmsolve.backends.open_session()`.
- `build_sufficiency` — does a benchmark strategy determine the mapping (two mappings agreeing
  on it but not on some bounded experiment)? Over a `MappingClass`, with the throughput terms of
  `pmsolve.encodings.tp_formula`; the checker around it is `pmsolve.strategy.check_strategy`.
  `build_shortcut_gap` — Facile's pairwise shortcut against the exact formula (App. E.2).
- `lex_geq` — lexicographic symmetry breaking (CEGIS and the sufficiency encodings).
- `build_subsumption` / `subsumes` — AnICA subsumption (Def. 8.7) as SAT.
- `build_coverage` / `best_coverage` — the coverage ILP of sec. 8.1.7.
"""

from pmsolve.encodings.cegis import (
    Space, build_find_mapping, build_find_other_mapping, find_mapping, find_other_mapping,
    observation,
)
from pmsolve.encodings.coverage import best_coverage, build_coverage
from pmsolve.encodings.encoding import Encoding
from pmsolve.encodings.experiments import ExperimentEnc, fixed_experiment, free_experiment
from pmsolve.encodings.lp import throughput_lp
from pmsolve.encodings.mapping_class import MappingClass
from pmsolve.encodings.mappings import (
    MappingEnc, UopKind, fixed_count_mapping, fixed_mapping, power_set_mapping, two_level_mapping,
)
from pmsolve.encodings.relate import differ, matches, relate_throughput, separation
from pmsolve.encodings.shortcut import build_shortcut_gap, pairwise_union_admissible
from pmsolve.encodings.subsumption import build_subsumption, subsumes
from pmsolve.encodings.sufficiency import build_sufficiency
from pmsolve.encodings.symmetry import lex_geq

__all__ = [
    "Encoding", "ExperimentEnc", "MappingClass", "MappingEnc", "Space", "UopKind",
    "best_coverage", "build_coverage", "build_find_mapping", "build_find_other_mapping",
    "build_shortcut_gap", "build_subsumption", "build_sufficiency", "differ", "find_mapping",
    "find_other_mapping", "fixed_count_mapping", "fixed_experiment", "fixed_mapping",
    "free_experiment", "lex_geq", "matches", "observation", "pairwise_union_admissible",
    "power_set_mapping", "relate_throughput", "separation", "subsumes", "throughput_lp",
    "two_level_mapping",
]
