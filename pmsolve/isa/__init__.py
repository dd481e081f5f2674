"""Instruction schemes and the x86-64 catalogue (dissertation sec. 3.2.1-3.2.2).

>>> from pmsolve.isa import load_catalogue
>>> cat = load_catalogue()                 # isa/x86_64.json + isa/exclusions.txt, host CPUID applied
>>> cat["add_r64_r64"].signature()         # 'add GPR[64]:RW, GPR[64]:R'
>>> [s.name for s in cat.offered() if s.category == "vec-fma"][:3]
"""

from pmsolve.isa.catalogue import Catalogue, default_dir, host_features, load_catalogue
from pmsolve.isa.scheme import Operand, Scheme

__all__ = ["Catalogue", "Operand", "Scheme", "default_dir", "host_features", "load_catalogue"]
