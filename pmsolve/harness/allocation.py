"""Operand allocation (dissertation Alg. 3.1) and unrolling for throughput microbenchmarks.

Operand candidates are partitioned into three disjoint sets per register pool (general-purpose,
vector, AVX-512 mask) and for memory:
``O_R`` (only ever read), ``O_W`` (only ever written) and ``O_RW`` (only used by read-and-written
operands). ``O_R`` and ``O_W`` get just as many candidates as the most demanding scheme needs
(``O_W`` of a register pool more, up to ``WRITTEN_ROTATION``, against false dependencies);
``O_RW`` gets the rest, so the unavoidable read-after-write chains through read-written operands
are as many and as short as possible. Each operand takes the candidate of its set that was used
least recently (line 13). Immediates are ``2^(W-8) + 42`` (line 9). Registers with a fixed role
are never allocated: ``rsp`` (stack), ``r15`` (loop counter), ``r14`` (memory base: every memory
operand is ``disp(%r14)`` inside one 4 KiB page, see below) and ``r13`` (a small
positive divisor); hardwired registers of the block's schemes (``cl`` of shifts, ``rdx`` of mulx)
are taken out of the pools as well, so nothing allocated ever writes them. The bit offset of
``bt``/``bts``/``btr``/``btc`` with a memory operand is ``r13`` too: a register offset addresses a
bit string that reaches far past the operand (the pools' start values, 2^24 and more, land 2 MiB
beyond the frame's 64 KiB of memory, where the worker faults or silently flips bits of its own
heap), while 3 stays inside the slot.

AVX-512 (EVEX) operands. ``xmm``/``ymm``/``zmm`` names of one number share a representative
(``vec3``). A block whose vector operands all belong to EVEX-encoded schemes draws from
``vec16``-``vec31`` and then ``vec0``-``vec15`` (the frame loads zmm16-31 in full, so the
read-only and write-only sets come from there); as soon as one legacy/VEX scheme with a vector
operand is in the block, the pool is ``vec0``-``vec15`` (VEX cannot encode more), and the
read-written operands of its EVEX schemes get ``vec16``-``vec31`` as a set of their own
(``EVEX_ONLY``): their chains then spread over those 16 as well as the VEX schemes' over what is
left of the 16 (see ``RW_KEEP``). Mask operands
(``k`` operands and write masks ``{%k1}``) draw from ``k1``-``k7``: ``k0`` is never allocated,
because as a write mask it means "no masking". When a block has a 512-bit memory operand, the
memory slots are 64-byte aligned and disjoint, so no zmm access splits a cache line or overlaps
another slot.

Memory that is written (write-only and read-written operands) is laid out the way compiled code
writes it: **packed, in program order**. Each written operand takes the next slot of its own
width (at least 8 bytes, aligned to it) in the upper half of the page, so consecutive stores go to
neighbouring addresses, as spills, locals and structure fields do; the layout of one copy of the
experiment repeats, copy after copy, over 512 bytes, and then starts over (so a slot
always belongs to the same operand of the same instance in the copy, and a read-written slot is
met again only copies later: the chain through it stays short of the throughput). Why it
matters: a Zen 3 retires two stores in a cycle only when they go to the same 32-byte block, one
per cycle otherwise (`add [m64], r64` 0.50 cycles packed, 1.00 with every slot on a line of its
own as this harness had it; a plain store 0.50 either way when all copies hit one address). The
independent figures agree with packed: uops.info and InstLatX64 measure neighbouring addresses,
and a Zen 4's `ADD [m64], r64` runs at 0.55-0.61 there. Stores scattered over many lines are
slower than any port mapping of this layout says (``docs/memory-layout.md`` has the probe figures).
Read-only operands rotate over ``READ_ROTATION`` (8; a CPU's ``Microarchitecture.read_rotation`` where its
table says otherwise: 1 on the Zen 4, whose GPR loads beside 256-bit loads at neighbouring addresses
switch to 2.4 a cycle) neighbouring slots of the block's widest read
(at least 8 bytes, aligned to it) in ``READ_REGION``, [512, 1024): consecutive copies of a load read
neighbouring addresses, as loops over arrays, locals and structure fields do (allocation version
12); a read narrower than the block's widest sits at offset n·width of the n-th slot it meets,
so that beside a zmm load the copies of a GPR load meet different offsets of their lines, as
neighbouring addresses do (version 13: at offset 0 of eight lines an Emerald Rapids ran two a
cycle). One address for every copy (versions 5-11, as uops.info measures) runs three GPR loads a
cycle on a Zen 3 but only two on an Emerald Rapids (0.44-0.53 cycles for ``mov r64, [m64]``,
0.33 at neighbouring addresses, an independent gcc probe of 2026-12-05); 31 lines at one offset
ran 0.38-0.40 on the Zen 3 (the equal offsets meet in one L1 bank) where neighbouring addresses
give 0.333 there too (``docs/memory-layout.md``). The region shares neither its low 12 nor its
low 10 address bits with the stores of the (at most 512-byte) written span at 2048 and sits 1 KiB
below it: on a Zen 4 a block of two ``mov [m64], r64``, one ``mov r64, [m64]`` and two ``add r64,
imm32`` ran 4.0 cycles with the load at offset 32 (the fifth copy's store at 2048 + 32) and 1.07
with it elsewhere, and zmm loads on the line just below the written span ran up to 1.4x slower
than at 768 (allocation version 11).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence

from pmsolve.errors import ValidationError
from pmsolve.isa.render import GPRS, reg_name, render, representative
from pmsolve.isa.scheme import VECTOR_CLASSES, Operand, Scheme
from pmsolve.model import Experiment

MEM_BASE = "r14"
LOOP_COUNTER = "r15"
DIVISOR = "r13"
DIVISOR_VALUE = 3
RESERVED = ("rsp", LOOP_COUNTER, MEM_BASE, DIVISOR)
VECTOR_REGS = tuple(f"vec{i}" for i in range(16))          # what legacy/VEX encodings reach
#: what EVEX reaches (AVX-512); zmm16-31 first: the frame initialises them in full (zmm0-15
#: keep zero upper halves), and O_W/O_R take the first candidates
EVEX_VECTOR_REGS = tuple(f"vec{i}" for i in range(16, 32)) + VECTOR_REGS
EVEX_ONLY = "evex"    # the pool of vec16-31 for EVEX schemes' read-written operands beside VEX ones
MASK_REGS = tuple(f"k{i}" for i in range(1, 8))            # k0 cannot be a write mask
UNROLL_TARGETS = (40, 80, 200)
OPERAND_MEMORY = 4096                                       # bytes at r14 that operands may touch
READ_REGION = (512, 1024)                                   # read-only slots (docs/memory-layout.md, "Loads")
READ_ROTATION = 8                                           # neighbouring slots the copies of a load rotate over
WRITTEN_MEMORY = (2048, OPERAND_MEMORY)                    # written operands, packed (upper half)
WRITTEN_SPAN = 512                                          # copies repeat over this many bytes (docs/memory-layout.md)
WRITTEN_MIN_COPIES = 4                                      # but a large copy still repeats this often, where it fits
#: write-only registers rotate over up to this many candidates, not Alg. 3.1's one per operand:
#: some destinations the ISA calls write-only are read by the core (a false dependency), and on
#: one register every copy chains through them. On the Zen 4 ``vreduceps xmm, m128, i8`` took
#: 3.0 cycles alone and 2.3 beside four other instructions that wrote the same register in
#: between; ``vpshrdq xmm, xmm, xmm, i8`` 2.0 alone and 0.5 beside one. uops.info gives every
#: copy registers of its own. O_RW keeps at least ``RW_KEEP[pool]`` candidates where it is needed:
#: its chains, one per register, bound a copy of the block to Σ latency / len(O_RW) cycles. Two
#: chains a cycle of latency 4 (an FMA's) need eight; a block of three read-written vector forms
#: (FMAs, merge-masked forms, ``vpermt2*``) with the 16 registers VEX reaches needs twelve: with
#: eight, a4's held-out mixes on the Zen 4 read up to 1.46x their time with twelve
#: (``{bts r16, i8; vandnpd ymm, m64bcst; vfmsub213ps ymm{k}; vpshufhw xmm; vsubpd ymm{k}}`` 1.49
#: cycles against 1.04), and the 300 mixes' error against one mapping 7.6 % against 7.3 %.
#: Beside a VEX form the EVEX forms' read-written operands chain over vec16-31 instead (version
#: 14): on the Zen 5 ``{vpdpbusd ymm; vpermt2b zmm; vpmovsqb xmm, zmm{k}}`` (0.5 cycles each
#: alone) took 1.50 cycles with 14 of O_RW, 1.97 with 8, 1.22 with its EVEX ``vpdpbusd`` over
#: 30, and 1.23 so.
WRITTEN_ROTATION = 8
RW_KEEP = {"gpr": 8, "vec": 12, "mask": 8}


def immediate(width: int) -> int:
    """Alg. 3.1 line 9: W-bit immediates are 2^(W-8) + 42, except that 32-bit ones are 2^8 + 42.
    Intel's decoded-µop cache gives an instruction with a 32-bit displacement (every written
    slot here) and an immediate beyond 16 bits two slots: on Ice Lake-SP ``mov [m64], imm32``
    took 1.0 cycle with 2^24 + 42 and 0.5 with 298 or with an 8-bit displacement (uops.info:
    0.5). 298 still needs the full immediate field (it does not fit an imm8 encoding)."""
    return 2 ** 8 + 42 if width == 32 else 2 ** (width - 8) + 42


@dataclass(frozen=True)
class Instance:
    """A scheme with concrete operands. ``values`` per operand: a register name without ``%``,
    a memory operand ``disp(%r14)``, or an immediate integer."""

    scheme: Scheme
    values: tuple[str | int, ...]

    def text(self) -> str:
        return render(self.scheme, self.values)

    def locations(self) -> tuple[set[str], set[str], set[str]]:
        """(read-only, write-only, read-and-written) locations: register representatives
        (``rax``, ``vec3``) and memory slots (``mem:160``); implicit operands included."""
        r: set[str] = set()
        w: set[str] = set()
        rw: set[str] = set()
        pairs = list(zip(self.scheme.operands, self.values)) + [(o, o.fixed) for o in self.scheme.implicit]
        for o, v in pairs:
            if o.kind == "reg":
                loc = representative(str(v))
            elif o.kind == "mem":
                if not (o.read or o.write):
                    r.add(MEM_BASE)
                    continue
                loc = "mem:" + str(v).split("(")[0]
                r.add(MEM_BASE)
            else:
                continue
            (rw if reads(o, self.scheme) and o.write else r if o.read else w if o.write else set()).add(loc)
        return r, w, rw


def _pool_key(o: Operand) -> str:
    if o.kind == "mem":
        return "mem"
    if o.cls == "k":
        return "mask"
    return "gpr" if o.cls == "gpr" else "vec"


def vector_pool(schemes: Iterable[Scheme]) -> tuple[str, ...]:
    """The vector candidates of a block: all 32 when every scheme with a vector operand
    (explicit or implicit) is EVEX-encoded, else the 16 that VEX and legacy encodings reach."""
    for s in schemes:
        if s.encoding != "evex" and any(o.kind == "reg" and o.cls in VECTOR_CLASSES
                                        for o in s.operands + s.implicit):
            return VECTOR_REGS
    return EVEX_VECTOR_REGS


def _read_width(schemes: Iterable[Scheme]) -> int:
    """Bytes of a block's read-only slots: its widest read-only operand's slot width."""
    return max((_slot_width(o) for s in schemes for o in s.operands if o.kind == "mem" and not o.write),
               default=8)


def memory_slots(schemes: Iterable[Scheme]) -> tuple[str, ...]:
    """The read-only memory candidates of a block: neighbouring slots of its widest read-only
    operand's width (at least 8 bytes, aligned to it), filling ``READ_REGION``."""
    lo, hi = READ_REGION
    return tuple(f"{a}(%{MEM_BASE})" for a in range(lo, hi, _read_width(schemes)))


def staggered(slot: str, width: int, slot_width: int, placed: dict[tuple[int, str], int]) -> str:
    """Where a read of ``width`` bytes in ``slot`` (``slot_width`` bytes) reads: the n-th slot that
    reads of this width meet (``placed`` remembers them) at offset n·width of it, so that the copies
    of a narrow load beside a wider one meet different offsets of their lines (allocation version
    13). At offset 0 of eight lines an Emerald Rapids ran ``mov r64, [m64]`` two a cycle (0.503),
    at eight offsets three (0.333), as at neighbouring addresses; 48 GPR loads beside one zmm load
    took 24.6 cycles for 16.3."""
    if width >= slot_width:
        return slot
    key = (width, slot)
    if key not in placed:
        placed[key] = (sum(1 for w, _ in placed if w == width) * width) % slot_width
    return f"{int(slot.split('(')[0]) + placed[key]}(%{MEM_BASE})"


def bit_offset(s: Scheme, o: Operand) -> bool:
    """Is ``o`` the register bit offset of a bit test on memory (``bt m32, r32`` …)?"""
    return (s.mnemonic in ("bt", "bts", "btr", "btc") and o.kind == "reg" and o.cls == "gpr"
            and any(x.kind == "mem" for x in s.operands))


#: compress/expand into a register merge with the destination's old value on the Zen 4 even
#: without a mask: every unmasked ``vpcompressd zmm, zmm`` on one O_W register chained at 5.0
#: cycles per copy, where a gcc probe with rotating destinations and uops.info read 1.33
MERGING_DESTINATION = ("vpcompressb", "vpcompressw", "vpcompressd", "vpcompressq", "vcompressps", "vcompresspd",
                       "vpexpandb", "vpexpandw", "vpexpandd", "vpexpandq", "vexpandps", "vexpandpd")


def reads(o: Operand, s: Scheme) -> bool:
    """Does the operand read its location? Also when it only writes 8 or 16 bits of a
    general-purpose register: x86 keeps the upper bits, so the write merges with (depends on)
    the old value. Written as write-only, every ``sete r8`` of a block would land in the one
    O_W register and form a chain of merges (1 cycle each on Zen 4, where 2 fit in a cycle).
    Likewise the register destination of compress/expand (``MERGING_DESTINATION``)."""
    return o.read or (o.write and o.kind == "reg" and (
        (o.cls == "gpr" and o.width in (8, 16)) or s.mnemonic in MERGING_DESTINATION))


def _role(o: Operand, s: Scheme) -> str:
    return "RW" if reads(o, s) and o.write else "R" if o.read else "W"


@dataclass(frozen=True)
class Partition:
    """The candidate sets ``O_R``, ``O_W``, ``O_RW`` per pool (gpr, vec, mask, mem)."""

    sets: Mapping[tuple[str, str], tuple[str, ...]]

    def __getitem__(self, key: tuple[str, str]) -> tuple[str, ...]:
        return self.sets.get(key, ())


def fixed_registers(schemes: Iterable[Scheme]) -> set[str]:
    """Representatives of all hardwired registers the schemes use (explicit fixed and implicit)."""
    out: set[str] = set()
    for s in schemes:
        for o in list(s.operands) + list(s.implicit):
            if o.fixed and o.kind == "reg":
                out.add(representative(o.fixed))
    return out


def check_hardwired(schemes: Iterable[Scheme]) -> None:
    """Refuse blocks where one scheme writes a hardwired register that another reads: that
    read-after-write dependency cannot be allocated away (sec. 3.2.1)."""
    readers: dict[str, str] = {}
    writers: dict[str, str] = {}
    for s in schemes:
        for o in list(s.operands) + list(s.implicit):
            if o.fixed and o.kind == "reg":
                rep = representative(o.fixed)
                if o.read:
                    readers.setdefault(rep, s.name)
                if o.write:
                    writers.setdefault(rep, s.name)
    for rep in sorted(set(readers) & set(writers)):
        raise ValidationError(f"operand allocation: {writers[rep]} writes the hardwired register {rep} "
                              f"that {readers[rep]} reads; these schemes cannot share an experiment "
                              "without a read-after-write dependency")


def partition(schemes: Sequence[Scheme], rotation: int = READ_ROTATION) -> Partition:
    """Sec. 3.2.1: a small O_R (what the most demanding scheme needs; read-only memory: up to
    ``rotation`` neighbouring slots), O_W that much or up to ``WRITTEN_ROTATION`` where the pool
    has room, the rest O_RW."""
    check_hardwired(schemes)
    fixed = fixed_registers(schemes)
    need: Counter[tuple[str, str]] = Counter()
    for s in {id(s): s for s in schemes}.values():   # distinct schemes, without hashing each copy
        per: Counter[tuple[str, str]] = Counter()
        for o in s.operands:
            if o.fixed or o.kind in ("imm", "const") or bit_offset(s, o):
                continue
            if o.kind == "mem" and not (o.read or o.write):
                per[("mem", "R")] += 1   # an address only (lea): any never-written slot
                continue
            per[(_pool_key(o), _role(o, s))] += 1
        for k, n in per.items():
            need[k] = max(need[k], n)
    pools = {
        "gpr": [r for r in GPRS if r not in RESERVED and r not in fixed],
        "vec": [v for v in vector_pool(schemes) if v not in fixed],
        "mask": [k for k in MASK_REGS if k not in fixed],
        "mem": list(memory_slots(schemes)),
    }
    sets: dict[tuple[str, str], tuple[str, ...]] = {}
    for pool, cands in pools.items():
        if pool == "mem":   # written memory is packed in program order (written_addresses)
            if need[(pool, "R")] > len(cands):
                raise ValidationError(f"operand allocation: the schemes need {need[(pool, 'R')]} read-only memory "
                                      f"operands, but only {len(cands)} slots are free")
            # copies rotate over neighbouring addresses, as loads of arrays and locals do: one
            # address for every copy runs two GPR loads a cycle on an Emerald Rapids, not three
            sets[(pool, "R")] = tuple(cands[:max(need[(pool, "R")], min(rotation, len(cands)))])
            continue
        n_r, n_w = need[(pool, "R")], need[(pool, "W")]
        n_rw_min = 1 if need[(pool, "RW")] else 0
        if n_r + n_w + max(n_rw_min, need[(pool, "RW")]) > len(cands):
            raise ValidationError(f"operand allocation: the schemes need {n_r} read-only, {n_w} write-only and "
                                  f"{need[(pool, 'RW')]} read-written {pool} operands, but only {len(cands)} "
                                  f"{pool} candidates are free")
        if n_w:   # rotate write-only registers where the pool has room (WRITTEN_ROTATION)
            keep = max(need[(pool, "RW")], RW_KEEP[pool] if need[(pool, "RW")] else 0)
            n_w += max(0, min(WRITTEN_ROTATION - n_w, len(cands) - n_r - n_w - keep))
        sets[(pool, "W")] = tuple(cands[:n_w])
        sets[(pool, "R")] = tuple(cands[n_w:n_w + n_r])
        sets[(pool, "RW")] = tuple(cands[n_w + n_r:])
    vex_block = vector_pool(schemes) == VECTOR_REGS
    if vex_block and any(s.encoding == "evex" and _pool_key(o) == "vec" and _role(o, s) == "RW"
                         for s in schemes for o in s.operands):
        sets[(EVEX_ONLY, "RW")] = tuple(r for r in EVEX_VECTOR_REGS[:16] if r not in fixed)
    return Partition(sets)


def _slot_width(o: Operand) -> int:
    """Bytes of a memory operand's slot: its width, at least 8, a power of two."""
    size = 8
    while size * 8 < o.width:
        size *= 2
    return size


def _period(schemes: Sequence[Scheme]) -> int:
    """The length of one copy: the shortest prefix the list repeats (``body`` makes copies)."""
    n = len(schemes)
    names = [s.name for s in schemes]
    return next(p for p in range(1, n + 1) if n % p == 0 and names == names[:p] * (n // p))


def written_addresses(schemes: Sequence[Scheme]) -> list[str]:
    """The addresses of the written memory operands of ``schemes``, in program order: packed slots
    of one copy (each aligned to its width), the copy's layout repeated over ``WRITTEN_SPAN`` bytes,
    so a read-written slot is met again a few dozen stores later (a large copy still repeats
    ``WRITTEN_MIN_COPIES`` times where the region holds them: the chain through a slot stays short)."""
    period = _period(schemes)
    widths = [_slot_width(o) for s in schemes[:period] for o in s.operands
              if o.kind == "mem" and o.write and not o.fixed]
    if not widths:
        return []
    offsets, at = [], 0
    for w in widths:
        at = -(-at // w) * w
        offsets.append(at)
        at += w
    align = max(widths)
    footprint = -(-at // align) * align
    start, end = WRITTEN_MEMORY
    if footprint > end - start:
        # one copy writes more than the region (a characterisation's 2,615 `kmovq m64, k` against
        # a slow scheme stopped an `--all` run): its slots wrap around the region, every copy alike
        return [f"{start + off % (end - start)}(%{MEM_BASE})"
                for _ in range(len(schemes) // period) for off in offsets]
    copies = max(WRITTEN_SPAN // footprint, min(WRITTEN_MIN_COPIES, (end - start) // footprint))
    return [f"{start + (c % copies) * footprint + off}(%{MEM_BASE})"
            for c in range(len(schemes) // period) for off in offsets]


def allocate(schemes: Sequence[Scheme], part: Partition | None = None,
             rotation: int = READ_ROTATION) -> list[Instance]:
    """Alg. 3.1: instantiate a list of schemes, each operand with the least recently used
    candidate of its set (a timestamp per candidate, advanced per operand); written memory
    operands take the packed addresses of :func:`written_addresses` instead. ``rotation``: the
    CPU's read layout (``Microarchitecture.read_rotation``).

    The candidate sets are disjoint, so each is kept as a queue from least to most recently used
    (a use moves the candidate to the back): the same choice as the smallest timestamp, first
    in set order on ties, without scanning the set for every operand (the parent assembles every
    experiment of a campaign while the worker measures; this was 40 % of its time)."""
    part = part or partition(schemes, rotation)
    written = iter(written_addresses(schemes))
    read_width, placed = _read_width(schemes), {}
    queues = {key: list(cands) for key, cands in part.sets.items()}
    plans: dict[int, list[tuple[str, Any, Operand]]] = {}   # by id: a Scheme hashes all its operands
    out: list[Instance] = []
    for s in schemes:
        plan = plans.get(id(s))
        if plan is None:
            plan = plans[id(s)] = _operand_plan(s, evex_only=(EVEX_ONLY, "RW") in part.sets)
        values: list[str | int] = []
        taken: list[str] = []  # distinct candidates for the operands of one instruction
        for how, what, o in plan:
            if how == "value":
                values.append(what)
            elif how == "written":
                values.append(next(written))
            else:
                queue = queues.get(what, [])
                chosen = next((c for c in queue if c not in taken), None)
                if chosen is None:
                    raise ValidationError(f"operand allocation: no {what[1]} candidate left for {s.name}")
                queue.remove(chosen)
                queue.append(chosen)
                taken.append(chosen)
                values.append(staggered(chosen, _slot_width(o), read_width, placed) if o.kind == "mem"
                              else reg_name(chosen, o))
        out.append(Instance(s, tuple(values)))
    return out


def _operand_plan(s: Scheme, evex_only: bool = False) -> list[tuple[str, Any, Operand]]:
    """Per operand of a scheme: a fixed ``value``, a ``written`` memory slot, or a ``pick`` from
    the candidate set ``(pool, role)``; with ``evex_only``, an EVEX scheme's read-written vector
    operands pick from ``(EVEX_ONLY, "RW")``."""
    plan: list[tuple[str, Any, Operand]] = []
    for o in s.operands:
        if o.kind == "imm":
            plan.append(("value", immediate(o.width), o))
        elif o.kind == "const":
            plan.append(("value", o.value if o.value is not None else 1, o))
        elif o.fixed:
            plan.append(("value", o.fixed, o))
        elif bit_offset(s, o):
            plan.append(("value", reg_name(DIVISOR, o), o))
        elif o.kind == "mem" and o.write:
            plan.append(("written", None, o))
        else:
            role = "R" if o.kind == "mem" and not (o.read or o.write) else _role(o, s)
            pool = _pool_key(o)
            if evex_only and pool == "vec" and role == "RW" and s.encoding == "evex":
                pool = EVEX_ONLY
            plan.append(("pick", (pool, role), o))
    return plan


def unroll_factors(size: int, targets: Sequence[int] = UNROLL_TARGETS) -> list[int]:
    """Copies of an experiment of ``size`` instructions giving about 40/80/200 instructions."""
    return sorted({max(1, round(t / size)) for t in targets})


def body(counts: Mapping[Scheme, int] | Sequence[tuple[Scheme, int]], factor: int) -> list[Scheme]:
    """The unrolled list of schemes: ``factor`` copies of the experiment, each in a fixed order
    (schemes interleaved round-robin so that equal schemes are spread out)."""
    pairs = [(s, c) for s, c in (counts.items() if isinstance(counts, Mapping) else counts) if c]
    if not pairs:
        return []
    by_name = {s.name: s for s, _ in pairs}
    one = [by_name[i] for i in Experiment([(s.name, c) for s, c in pairs]).in_program_order()]
    return one * factor


def dependency_report(instances: Sequence[Instance]) -> dict[str, set[str]]:
    """Locations that break the allocation's promise (for tests and sanity checks): read-only
    locations that something writes, write-only ones that something reads, and read-written
    ones also used in a read-only or write-only role."""
    r: set[str] = set()
    w: set[str] = set()
    rw: set[str] = set()
    for ins in instances:
        a, b, c = ins.locations()
        r |= a
        w |= b
        rw |= c
    return {"read_but_written": r & (w | rw), "written_but_read": w & (r | rw), "rw_shared": rw & (r | w)}
