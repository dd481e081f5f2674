"""Which schemes the main job measures: profiles chosen from what this CPU offers.

* ``smoke`` — a handful of schemes (integer ALU, multiply, load, store, vector add/multiply),
  enough to run every stage in under a minute (CI on hardware);
* ``quick`` — about 150–300 common schemes: the catalogue's offered schemes grouped by category,
  memory use and vector width, and in each group the (at most two) most common
  mnemonics, 64-bit forms first. AVX-512 (EVEX, mask registers) is in when the CPU has it,
  because the catalogue offers it then;
* ``all`` — every scheme the catalogue offers on this CPU.
"""

from __future__ import annotations

from collections import defaultdict

from pmsolve.errors import ValidationError
from pmsolve.isa import Catalogue
from pmsolve.isa.scheme import Scheme

PROFILES = ("smoke", "quick", "all")

SMOKE = ("add_r64_r64", "imul_r64_r64", "mov_r64_m64", "mov_m64_r64", "add_r64_m64", "lea_r64_m",
         "vaddpd_ymm_ymm_ymm", "vmulpd_ymm_ymm_ymm", "vpaddd_ymm_ymm_ymm", "vpshufd_ymm_ymm_i8")

#: mnemonics in rough order of how common they are in compiled code (the quick profile's choice)
COMMON = """
mov add lea cmp sub test and xor or inc dec shl shr sar imul movzx movsx movsxd neg not cmove cmovne
sete setne rol ror bt popcnt lzcnt tzcnt andn bextr blsr blsi bzhi pdep pext rorx sarx shlx shrx mulx
adc sbb xchg bsf bsr btc bts btr bswap movbe crc32 shld shrd mul
vmovdqu vmovdqa vmovups vmovaps vmovdqu64 vmovdqu32 vmovd vmovq vbroadcastss vpbroadcastd
vaddps vaddpd vmulps vmulpd vfmadd231ps vfmadd231pd vfmadd213ps vfnmadd231pd vsubps vsubpd vaddss vaddsd
vmulss vmulsd vminps vmaxpd vdivps vdivpd vsqrtps vsqrtpd vroundps vroundpd vcmpps vcmppd
vpaddd vpaddq vpaddb vpaddw vpsubd vpsubq vpmulld vpmullw vpmuludq vpmaddwd vpsadbw vpavgb vpminsd vpmaxud
vpabsd vpand vpandn vpor vpxor vpandd vpord vpxord vpternlogd vpternlogq vandps vandpd vorps vxorps
vpslld vpsllq vpsrld vpsrlq vpsrad vpsllw vpsllvd vpsrlvq vpshufb vpshufd vpermd vpermq vpermps vpermilps
vperm2i128 vpunpcklbw vpunpckldq vpunpcklqdq vunpcklps vshufps vpalignr vpblendd vblendvps vinserti128
vextracti128 vpmovzxbd vpmovsxwd vpackssdw vpcmpeqd vpcmpgtd vpcmpeqb vpcmpd vpcmpud vptest vpmovmskb
vmovmskps vpmovd2m vpmovm2d vcvtdq2ps vcvtps2dq vcvttps2dq vcvtpd2ps vcvtps2pd vcvtsi2sd vcvtss2sd
vpcompressd vpexpandd vpconflictd vplzcntd vpopcntd vpdpbusd kandw korw kxorw knotw kmovw kmovq kshiftlw
kortestw kaddw vaesenc vaesdec vpclmulqdq vgf2p8affineqb
""".split()
_RANK = {m: n for n, m in enumerate(COMMON)}


def _group(s: Scheme) -> tuple:
    vec = max((o.width for o in s.operands if o.kind == "reg" and o.cls not in ("gpr",)), default=0)
    return s.category, s.memory, vec


def _preference(s: Scheme) -> tuple:
    """Common mnemonics first, then 64-bit then 32-bit GPR forms, fewer operands, the name."""
    gpr = [o.width for o in s.operands if o.kind == "reg" and o.cls == "gpr"]
    width_rank = 0 if 64 in gpr else 1 if 32 in gpr or not gpr else 2
    return _RANK.get(s.mnemonic, len(_RANK)), width_rank, len(s.operands), s.name


def choose(catalogue: Catalogue, profile: str, per_group: int = 2) -> list[str]:
    """The scheme names of a profile, in catalogue order, all offered on this host."""
    if profile not in PROFILES:
        raise ValidationError(f"unknown profile {profile!r}: choose one of {', '.join(PROFILES)}")
    offered = catalogue.offered()
    if profile == "all":
        return [s.name for s in offered]
    if profile == "smoke":
        names = {s.name for s in offered}
        return [n for n in SMOKE if n in names]
    groups: dict[tuple, list[Scheme]] = defaultdict(list)
    for s in offered:
        groups[_group(s)].append(s)
    chosen: list[str] = []
    for members in groups.values():
        seen: set[str] = set()
        for s in sorted(members, key=_preference):
            if s.mnemonic in seen or (_RANK.get(s.mnemonic) is None and seen):
                continue
            chosen.append(s.name)
            seen.add(s.mnemonic)
            if len(seen) >= per_group:
                break
    keep = set(chosen)
    return [s.name for s in offered if s.name in keep]


def representative_order(catalogue: Catalogue, names: list[str]) -> tuple[str, ...]:
    """The order in which schemes should represent their class of blocking candidates: fewer
    memory operands, fewer operands read (a pure load before a load that also computes), fewer
    operands, then the name. Only a preference: experiments decide what a representative is."""
    def key(n: str) -> tuple:
        s = catalogue[n]
        mem = sum(1 for o in s.operands if o.kind == "mem")
        reads = sum(1 for o in list(s.operands) + list(s.implicit) if o.read and o.kind not in ("imm", "const"))
        return mem, reads, len(s.operands) + len(s.implicit), n
    return tuple(sorted(names, key=key))


def not_blocking(catalogue: Catalogue, names: list[str]) -> tuple[str, ...]:
    """Schemes that are several µops on unrelated port groups, so they bridge groups of blocking
    candidates that share no port; they are characterised like every scheme:

    * forms that access memory *and* compute (``add r64, m64``, ``sete m8``): a load or store
      besides the operation. Plain moves to and from memory stay candidates, the only ones that
      block the load and store ports;
    * forms whose register operands span the general-purpose and the vector (or mask) register
      files (``vmovd r32, xmm``, ``vcvtsi2sd xmm, xmm, r64``): the value crosses between the
      integer and the vector side. On a Zen 3 ``vmovd r32, xmm`` alone takes 1.0 cycle, four
      ``add r64, i32`` 1.0, and the two together 2.0: taken as one µop on one port it
      contradicted the integer ALUs' class, which the pair screening then dropped;
    * forms that read the flags (``sete r8``, ``cmove r64, r64``): every flag-writing scheme
      beside them feeds them, so their pairs measure that dependency as well as the ports. On a
      Zen 5 ``{add r64, i32; sete r8: 5}`` takes 1.59 cycles where the two parts take 0.19 and
      0.96, and ``sete r8`` as the ALUs' blocking instruction made misfits of the flag-writing
      GPR forms characterised against it (benchmarks/RESULTS.md §1.31);
    * forms on mask registers alone (``kandw k, k, k``, ``kmovw k, k``): they share the vector
      pipes, but beside them vector forms of several cycles' latency run slower by a share of a
      µop that no port placement gives. On a Zen 5 two of any of six such forms take 1.0 cycle,
      with one ``vaddpd ymm`` 1.31 (1.0 on disjoint ports, 1.5 on shared ones), with one
      ``vfmadd132ps ymm`` 1.33-1.35, with one ``vpaddd ymm`` (one cycle's latency) 1.00; as
      blocking instructions they made about 1,450 vector forms of an ``--all`` run misfits that
      "cannot evade" their ports (§1.32)."""
    moves = ("mov", "vec-move")
    out = []
    for n in names:
        s = catalogue[n]
        files = {_register_file(o.cls) for o in s.operands if o.kind == "reg"}
        computes = s.memory not in ("none", "agen") and s.category not in moves and not s.mnemonic.startswith("kmov")
        masks_only = files == {"mask"} and s.memory == "none"
        if computes or len(files) > 1 or s.flags_read or masks_only:
            out.append(n)
    return tuple(out)


#: mnemonics whose load form may be the load alone (a move, a broadcast of the loaded element)
LOAD_ALONE = ("mov", "vmov", "vbroadcast", "vpbroadcast", "kmov", "lddqu", "vlddqu")


def min_uops(catalogue: Catalogue, names: list[str]) -> tuple[tuple[str, int], ...]:
    """Floors for the counter-free characterisation's first guess of µops (``ExplainOptions.
    min_uops``): a memory access is a µop of its own beside the operation, on every x86 core the
    port model describes (a load on the load ports, a store's address and data), so a load form
    has at least 2 (1 for moves and broadcasts), a store at least 2, a read-modify-write at least
    3. The guess from tp⁻¹ alone (2·tp⁻¹) is 1 for the many memory forms that run at two per
    cycle: on an Emerald Rapids quick run 60 of its 85 schemes whose guess was below the µops
    found were such forms, and each was measured twice over (benchmarks/RESULTS.md §1.28)."""
    out = []
    for n in names:
        s = catalogue[n]
        floor = {"load": 1 if s.mnemonic.startswith(LOAD_ALONE) else 2, "store": 2, "load+store": 3}.get(s.memory, 1)
        if floor > 1:
            out.append((n, floor))
    return tuple(out)


def _register_file(cls: str) -> str:
    return "gpr" if cls == "gpr" else "mask" if cls == "k" else "vector"
