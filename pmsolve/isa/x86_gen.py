"""Generate the x86-64 scheme catalogue from iced-x86 (needs ``pip install 'pmsolve[isa]'``).

For every 64-bit-mode legacy, VEX or EVEX encoding (XOP, 3DNow! and MVEX are not generated),
each register-or-memory operand is split into a register and a memory scheme. A representative
instance is built and asked, through iced-x86's instruction-info API, which operands it reads
and writes, which registers and flags it uses implicitly and which CPUID features it needs. The
rule-based exclusions of dissertation sec. 3.2.2 are decided here (control flow, system, x87/MMX,
SSE next to AVX, stack and string operations, hardwired read-written operands); the curated
lists in ``isa/exclusions.txt`` are applied when loading. Every surviving scheme's AT&T template
is assembled once with GNU ``as`` so that measurement never meets an operand form the assembler
rejects.

EVEX (AVX-512) forms. Operands may be ``zmm`` registers, ``m512``, and mask registers ``k``
(``kandw_k_k_k``, ``kmovw_k_r32``, ``vpcmpd_k_zmm_zmm_i8``). Per encoding (iced ``Code``) the
generator emits, besides the register form and one memory form per register-or-memory operand:

* one **merge-masked** variant of the register form, and of the store form when the
  destination may be memory, named with a trailing ``_k``: the write mask is the scheme's last
  operand, a read-only ``k`` (``vaddpd_zmm_zmm_zmm_k`` is ``vaddpd zmm{k}, zmm, zmm``; merging
  makes the destination read-written; ``vmovups_m512_zmm_k`` is a masked store). No zeroing
  (``{z}``) variants, no masked loads (``vaddpd zmm{k}, zmm, m512``), no masked broadcasts;
* one **embedded-broadcast** variant of each memory form that allows it, whose memory operand
  is ``m32bcst``/``m64bcst``/``m16bcst`` (the SDM's notation: one element read and broadcast,
  ``vaddps_zmm_zmm_m32bcst`` is ``vaddps zmm, zmm, dword [mem]{1to16}``).

Not generated: rounding-control and SAE variants, VSIB gathers/scatters, the register pairs
of ``vp2intersect`` and the Xeon Phi ``4fmaps``/``4vnniw`` forms, Knights Corner mask
instructions.

Naming rule for EVEX forms of xmm/ymm instructions that also exist as VEX (same mnemonic and
operand kinds, hence the same name, e.g. ``vaddpd_ymm_ymm_ymm``): the VEX form keeps the name,
so no existing name changes. The EVEX twin is **dropped** when every CPUID feature of the VEX
form is implied on any AVX-512 CPU (AVX, AVX2, FMA, F16C, AES, PCLMULQDQ, or a feature the EVEX
form needs itself): it is the same instruction and GNU ``as`` would encode it as VEX anyway.
Otherwise (``vpdpbusd`` of AVX-VNNI versus AVX512-VNNI, which CPUs have separately) it is kept
as ``NAME_evex`` with the ``{evex}`` pseudo-prefix in its template. Masked and broadcast
variants have no VEX twin and carry no marker; a form whose last real operand is a mask
register (``vpmovm2d_zmm_k``) cannot be masked, so ``_k`` never names two schemes.

Encodings are checked, not assumed: the representatives of all offered VEX and EVEX schemes are
assembled and disassembled (GNU ``objdump``), and a template whose encoding ``as`` picks wrongly
gets ``{vex}``/``{evex}`` (the AVX-VNNI ``vpdpbusd ymm`` is EVEX-encoded without ``{vex}``).

Regenerate with ``python -m pmsolve.isa.x86_gen`` (writes ``isa/x86_64.json``; needs GNU
``as`` and ``objdump``).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Iterator

from pmsolve.errors import PmsolveError
from pmsolve.isa.catalogue import default_dir
from pmsolve.isa.render import render_representative
from pmsolve.isa.scheme import VECTOR_CLASSES, Operand, Scheme

try:  # the generator is the only place that needs iced-x86
    import iced_x86 as I
except ImportError:  # pragma: no cover - exercised when the extra is missing
    I = None


def _names(cls) -> dict[int, str]:
    return {getattr(cls, n): n for n in dir(cls) if not n.startswith("_") and isinstance(getattr(cls, n), int)}


# representative registers per operand position (distinct, never reserved ones)
_GPR_POS = ["RBX", "RSI", "RDI", "R8"]
_GPR_NAMES = {  # 64-bit name -> names by width
    "RBX": {8: "BL", 16: "BX", 32: "EBX", 64: "RBX"}, "RSI": {8: "SIL", 16: "SI", 32: "ESI", 64: "RSI"},
    "RDI": {8: "DIL", 16: "DI", 32: "EDI", 64: "RDI"}, "R8": {8: "R8L", 16: "R8W", 32: "R8D", 64: "R8"},
}
_FIXED = {"AL": "al", "AX": "ax", "EAX": "eax", "RAX": "rax", "CL": "cl", "DX": "dx"}
_IMM = {  # op kind -> (width, iced OpKind name)
    "IMM8": (8, "IMMEDIATE8"), "IMM16": (16, "IMMEDIATE16"), "IMM32": (32, "IMMEDIATE32"),
    "IMM64": (64, "IMMEDIATE64"), "IMM32SEX64": (32, "IMMEDIATE32TO64"), "IMM8SEX16": (8, "IMMEDIATE8TO16"),
    "IMM8SEX32": (8, "IMMEDIATE8TO32"), "IMM8SEX64": (8, "IMMEDIATE8TO64"),
}
MEM_BASE, MEM_DISP = "R14", 0x40


def immediate_value(width: int) -> int:
    """Alg. 3.1 line 9: a W-bit immediate is 2^(W-8) + 42 (non-zero high and low bytes)."""
    return 2 ** (width - 8) + 42


_VEC_WIDTH = {"XMM": 128, "YMM": 256, "ZMM": 512}
#: CPUID features every AVX-512 CPU has: a VEX form needing only these (or features its EVEX
#: twin needs anyway) runs wherever its EVEX twin does, so the twin is not generated
_IMPLIED_BY_AVX512 = frozenset({"AVX", "AVX2", "FMA", "F16C", "AES", "PCLMULQDQ"})


def _kind(opk: str) -> tuple[str, str, int, bool] | None:
    """iced OpCodeOperandKind -> (role, class, width, may_be_memory); None if unsupported."""
    m = re.fullmatch(r"R(8|16|32|64)_(REG|OPCODE|VVVV|RM|OR_MEM)", opk)
    if m:
        return ("reg", "gpr", int(m.group(1)), m.group(2) == "OR_MEM")
    m = re.fullmatch(r"(XMM|YMM|ZMM)_(REG|VVVV|RM|IS4|OR_MEM)", opk)
    if m:
        return ("reg", m.group(1).lower(), _VEC_WIDTH[m.group(1)], m.group(2) == "OR_MEM")
    m = re.fullmatch(r"K_(REG|VVVV|RM|OR_MEM)", opk)
    if m:   # mask registers (KP1_REG, the register pairs of vp2intersect, is not supported)
        return ("reg", "k", 64, m.group(1) == "OR_MEM")
    if opk == "MEM":
        return ("mem", "mem", 0, True)
    if opk in _IMM:
        return ("imm", "imm", _IMM[opk][0], False)
    if opk == "IMM8_CONST_1":
        return ("const", "imm", 8, False)
    if opk in _FIXED:
        return ("fixed", "gpr", 0, False)
    return None


_FLAG_BITS = [("OF", 1), ("SF", 2), ("ZF", 4), ("AF", 8), ("CF", 16), ("PF", 32), ("DF", 64), ("IF", 128), ("AC", 256)]


def _flags(bits: int) -> tuple[str, ...]:
    return tuple(n for n, b in _FLAG_BITS if bits & b)


_SYSTEM = {"cpuid", "rdtsc", "rdtscp", "rdpmc", "rdrand", "rdseed", "xgetbv", "rdpid", "rdpkru", "wrpkru", "lfence",
           "mfence", "sfence", "pause", "ud0", "ud1", "ud2", "hlt", "int", "int1", "int3", "into", "clzero", "ldmxcsr",
           "stmxcsr", "vldmxcsr", "vstmxcsr", "clflush", "clflushopt", "clwb", "prefetchnta", "prefetcht0",
           "prefetcht1", "prefetcht2", "prefetchw", "prefetch", "prefetchwt1", "rdfsbase", "rdgsbase", "wrfsbase",
           "wrgsbase", "xsave", "xrstor", "fxsave", "fxrstor", "fxsave64", "fxrstor64", "lahf", "sahf", "cld",
           "std", "cli", "sti", "clac", "stac", "pushf", "popf", "pushfq", "popfq", "monitorx", "mwaitx",
           "vzeroupper", "vzeroall", "endbr64", "endbr32", "wbnoinvd", "invpcid", "serialize", "xend", "xtest"}
_SYSTEM_FEATURES = {"XSAVE", "XSAVEC", "XSAVEOPT", "XSAVES", "RDRAND", "RDSEED", "SMAP", "FSGSBASE", "MONITOR",
                    "MONITORX", "RTM", "HLE", "HLE_OR_RTM", "CET_SS", "CET_IBT", "SVM", "VMX", "SMX", "SGX1",
                    "PKU", "RDPID", "CLZERO", "MCOMMIT", "INVLPGB", "UINTR", "TSE", "RDPRU", "PCONFIG", "SEV_SNP"}


def category(mnemonic: str, operands: tuple[Operand, ...]) -> str:
    """A coarse functional category (an AnICA feature), from the mnemonic."""
    m = mnemonic
    vec = any(o.cls in VECTOR_CLASSES for o in operands)
    if m.startswith("k") and any(o.cls == "k" for o in operands) and not vec:
        return "mask"
    if m.startswith("nop"):
        return "nop"
    if m == "lea":
        return "lea"
    if m.startswith("cmov"):
        return "cmov"
    if m.startswith("set"):
        return "setcc"
    if re.match(r"v?(aes|sha|pclmul|vpclmul|vaes)", m) or m.startswith(("aes", "sha", "vaes", "vpclmul")):
        return "crypto"
    if m.startswith("vfm") or m.startswith("vfnm"):
        return "vec-fma"
    if not vec:
        if m in ("imul", "mul", "mulx"):
            return "int-mul"
        if m in ("div", "idiv"):
            return "int-div"
        if re.fullmatch(r"(sh[lr]|sa[lr]|ro[lr]|rc[lr]|sh[lr]d|s[ah][lr]x|rorx)", m):
            return "shift"
        if re.fullmatch(r"(bt[crs]?|bsf|bsr|lzcnt|tzcnt|popcnt|bls[ir]|blsmsk|bzhi|pdep|pext|bextr|bswap|andn|crc32)", m):
            return "bit"
        if m.startswith("mov") or m in ("xchg",):
            return "mov"
        if m in ("add", "sub", "and", "or", "xor", "cmp", "test", "inc", "dec", "neg", "not", "adc", "sbb",
                 "adcx", "adox", "xadd", "cmpxchg"):
            return "int-alu"
        return "int-other"
    if "cvt" in m:
        return "vec-convert"
    if re.match(r"v?(div|sqrt|rcp|rsqrt)", m):
        return "vec-fp-div"
    if re.match(r"v?p?(and|andn|or|xor)(p[sd]|n)?$", m) or m in ("vptest", "vtestps", "vtestpd"):
        return "vec-logic"
    if re.match(r"v?(shuf|unpck|perm|pshuf|palignr|blend|pblend|insert|extract|broadcast|pbroadcast|pack|punpck|"
                r"movddup|movshdup|movsldup|pslldq|psrldq|pinsr|pextr|pmovzx|pmovsx|mask|pmask|movmsk|pmovmsk)", m):
        return "vec-shuffle"
    if re.match(r"v?(cmp|pcmp|comi|ucomi)", m):
        return "vec-compare"
    if re.match(r"v?mov", m):
        return "vec-move"
    if re.match(r"v?(add|sub|addsub|hadd|hsub|min|max|round|dp)(p[sd]|s[sd])", m):
        return "vec-fp-add"
    if re.match(r"v?mul(p[sd]|s[sd])", m):
        return "vec-fp-mul"
    if re.match(r"v?ps(ll|rl|ra)v?[wdq]$", m):
        return "vec-shift"
    if re.match(r"v?p(add|sub|mul|avg|abs|sign|madd|sad|min|max|hadd|hsub)", m):
        return "vec-int-arith"
    return "vec-other"


def _reg(name: str):
    return getattr(I.Register, name)


def _instance(code: int, kinds: list[tuple], mem_choice: int | None, broadcast: bool = False,
              masked: bool = False):
    """Build a representative iced Instruction; mem_choice is the operand index that is memory,
    ``broadcast`` makes that memory operand an EVEX embedded broadcast, ``masked`` adds a write
    mask (merge-masking) to the destination."""
    ins = I.Instruction()
    ins.code = code
    ops: list[tuple] = []  # (role, cls, width, fixed, value)
    gpr_pos = 0
    vec_pos = 1
    k_pos = 1
    for i, (opk, (role, cls, width, may_mem)) in enumerate(kinds):
        if role == "fixed":
            ins.set_op_kind(i, I.OpKind.REGISTER)
            ins.set_op_register(i, _reg(opk))
            ops.append(("reg", "gpr", {"AL": 8, "CL": 8, "AX": 16, "DX": 16, "EAX": 32, "RAX": 64}[opk], _FIXED[opk], None))
        elif role == "reg" and i != mem_choice:
            if cls == "gpr":
                r = _GPR_NAMES[_GPR_POS[gpr_pos]][width]
                gpr_pos += 1
            elif cls == "k":
                r = f"K{k_pos}"
                k_pos += 1
            else:
                r = f"{cls.upper()}{vec_pos}"
                vec_pos += 1
            ins.set_op_kind(i, I.OpKind.REGISTER)
            ins.set_op_register(i, _reg(r))
            ops.append(("reg", cls, width, None, None))
        elif role == "mem" or i == mem_choice:
            ins.set_op_kind(i, I.OpKind.MEMORY)
            ins.memory_base = _reg(MEM_BASE)
            ins.memory_displacement = MEM_DISP
            ins.memory_displ_size = 1
            if broadcast:
                ins.is_broadcast = True
            ops.append(("mem", "bcst" if broadcast else "mem", 0, None, None))
        elif role == "imm":
            ins.set_op_kind(i, getattr(I.OpKind, _IMM[opk][1]))
            ins.set_immediate_i64(i, immediate_value(width))
            ops.append(("imm", "imm", width, None, None))
        else:  # const 1
            ins.set_op_kind(i, I.OpKind.IMMEDIATE8)
            ins.immediate8 = 1
            ops.append(("const", "imm", 8, None, 1))
    if masked:
        ins.op_mask = _reg(f"K{k_pos}")
        ops.append(("mask", "k", 64, None, None))
    return ins, ops


_READS = {1, 2, 5, 6}      # READ, COND_READ, READ_WRITE, READ_COND_WRITE
_WRITES = {3, 4, 5, 6}     # WRITE, COND_WRITE (needs the old value: treated as read too), ...


def _access(a: int) -> tuple[bool, bool]:
    read = a in _READS or a == 4  # a conditional write keeps the old value when it does not write
    return read, a in _WRITES


_ENCODINGS = {"LEGACY": "legacy", "VEX": "vex", "EVEX": "evex"}


def _variants(info, encoding: str, mem_choice: int | None) -> list[tuple[bool, bool]]:
    """(broadcast, masked) variants of one register/memory form: the plain one; for EVEX a
    merge-masked one of the register form and of a store (memory destination, operand 0) when
    the encoding takes a write mask, and an embedded-broadcast one of a memory-source form when
    the encoding allows it. Not every combination: no masked loads, no masked broadcasts."""
    out = [(False, False)]
    if encoding != "evex":
        return out
    if info.can_use_op_mask_register and mem_choice in (None, 0):
        out.append((False, True))
    if mem_choice is not None and info.can_broadcast:
        out.append((True, False))
    return out


def generate() -> list[Scheme]:
    """All candidate schemes with rule-based exclusion reasons (not yet host-filtered)."""
    if I is None:
        raise PmsolveError("generating the ISA catalogue needs iced-x86: pip install 'pmsolve[isa]'")
    code_names = _names(I.Code)
    opk_names = _names(I.OpCodeOperandKind)
    feat_names = _names(I.CpuidFeature)
    reg_names = _names(I.Register)
    enc_names = _names(I.EncodingKind)
    flow_next = I.FlowControl.NEXT
    gas = I.Formatter(I.FormatterSyntax.GAS)
    gas.gas_show_mnemonic_size_suffix = True
    gas.uppercase_hex = False
    factory = I.InstructionInfoFactory()
    out: dict[str, Scheme] = {}     # legacy and VEX
    evex: dict[str, Scheme] = {}    # EVEX, merged into out by _resolve_twins
    for code in sorted(code_names):
        info = I.OpCodeInfo(code)
        if not info.mode64 or not info.is_instruction:
            continue
        encoding = _ENCODINGS.get(enc_names[info.encoding])
        if encoding is None:
            continue
        opks = [opk_names[info.op_kind(i)] for i in range(info.op_count)]
        kinds = [_kind(k) for k in opks]
        unsupported = [k for k, v in zip(opks, kinds) if v is None]
        if unsupported:
            continue  # branches, x87 stack, MMX, segment/control/debug registers, VSIB, far pointers
        if "_KNC_" in code_names[code] and any(k[1] == "k" for k in kinds):
            continue  # Knights Corner mask instructions (not AVX-512)
        kinds_t = list(zip(opks, kinds))
        mem_idx = [i for i, (_, k) in enumerate(kinds_t) if k[3] and k[0] == "reg"]
        choices: list[int | None] = [None] + mem_idx if mem_idx else [None]
        target = evex if encoding == "evex" else out
        for choice in choices:
            for broadcast, masked in _variants(info, encoding, choice):
                try:
                    ins, ops = _instance(code, kinds_t, choice, broadcast, masked)
                except (ValueError, AttributeError):
                    continue
                s = _describe(ins, ops, info, code_names[code], encoding, gas, factory, feat_names, reg_names,
                              flow_next)
                if s is None:
                    continue
                if s.name in target:
                    prev = target[s.name]
                    target[s.name] = replace(prev, alternatives=prev.alternatives + (s.code,))
                    continue
                target[s.name] = s
    schemes = _resolve_twins(out, evex)
    schemes = _check_assembles(schemes)
    return _check_encodings(schemes)


def _resolve_twins(out: dict[str, Scheme], evex: dict[str, Scheme]) -> list[Scheme]:
    """Merge the EVEX schemes into the others by the naming rule of the module docstring: an
    EVEX scheme whose name a VEX scheme already has is dropped when it is the same instruction
    and the VEX form runs on every CPU that runs it; else it becomes ``NAME_evex``."""
    merged = dict(out)
    for name, s in evex.items():
        twin = out.get(name)
        if twin is None:
            merged[name] = s
            continue
        same = [(o.kind, o.cls, o.width, o.read, o.write) for o in twin.operands] == \
               [(o.kind, o.cls, o.width, o.read, o.write) for o in s.operands]
        if same and set(twin.features) <= _IMPLIED_BY_AVX512 | set(s.features):
            continue
        marked = replace(s, name=name + "_evex", template="{{evex}} " + s.template)
        if marked.name in merged:
            raise PmsolveError(f"ISA generation: scheme name {marked.name!r} is taken twice")
        merged[marked.name] = marked
    return list(merged.values())


def _template(ins, ops, gas) -> tuple[str, str]:
    """(GAS mnemonic, AT&T template): formatter operands mapped back to instruction operand
    indices; decorators kept (``{1to16}``), the write mask ``{%k1}`` as a placeholder."""
    mnem = gas.format_mnemonic(ins, I.FormatMnemonicOptions.NO_PREFIXES).strip()
    mask_idx = next((i for i, op in enumerate(ops) if op[0] == "mask"), None)
    parts = []
    for k in range(gas.operand_count(ins)):
        idx = gas.get_instruction_operand(ins, k)
        if idx is None:
            parts.append(gas.format_operand(ins, k))
            continue
        text = "{%d}" % idx
        deco = re.search(r"(\{[^{}]*\})+$", gas.format_operand(ins, k))
        for d in re.findall(r"\{[^{}]*\}", deco.group(0) if deco else ""):
            if d.startswith("{%k"):
                if mask_idx is None:
                    raise PmsolveError(f"ISA generation: unexpected mask decorator in {gas.format(ins)!r}")
                text += "{{{%d}}}" % mask_idx
            else:
                text += "{" + d + "}"
        parts.append(text)
    return mnem, mnem + (" " + ", ".join(parts) if parts else "")


def _describe(ins, ops, info, code_name, encoding, gas, factory, feat_names, reg_names, flow_next) -> Scheme | None:
    ii = factory.info(ins)
    intel = I.Formatter(I.FormatterSyntax.INTEL).format_mnemonic(ins, I.FormatMnemonicOptions.NO_PREFIXES).strip()
    operands: list[Operand] = []
    explicit_regs: set[int] = set()
    mem_access = None
    for i, (role, cls, width, fixed, value) in enumerate(ops):
        if role == "mask":  # the write mask: read, the scheme's last operand
            explicit_regs.add(I.RegisterInfo(ins.op_mask).full_register)
            operands.append(Operand("reg", "k", 64, True, False))
            continue
        read, write = _access(ii.op_access(i))
        if role == "reg":
            reg = ins.op_register(i)
            explicit_regs.add(I.RegisterInfo(reg).full_register)
            operands.append(Operand("reg", cls, width, read, write, fixed))
        elif role == "mem":
            mem_size = ins.memory_size
            size = I.MemorySizeInfo(mem_size).size * 8
            acc = ii.op_access(i)
            if acc == 7:  # NO_MEM_ACCESS: an address computation (lea)
                read = write = False
            elif acc == 4:  # a masked store writes some elements and reads none (as vmaskmovps)
                read, write = False, True
            mem_access = (read, write)
            operands.append(Operand("mem", cls, size if (read or write) else 0, read, write))
        elif role == "imm":
            operands.append(Operand("imm", "imm", width, True, False))
        else:
            operands.append(Operand("const", "imm", width, True, False, None, value))
    merged: dict[int, list] = {}  # one implicit operand per register (iced may list a read and a write)
    for ur in ii.used_registers():
        full = I.RegisterInfo(ur.register).full_register
        if full in explicit_regs or full == _reg(MEM_BASE):
            continue
        read, write = _access(ur.access)
        entry = merged.setdefault(full, [ur.register, False, False])
        if I.RegisterInfo(ur.register).size > I.RegisterInfo(entry[0]).size:
            entry[0] = ur.register
        entry[1] |= read
        entry[2] |= write
    implicit: list[Operand] = []
    for reg, read, write in merged.values():
        rname = reg_names[reg].lower()
        rcls = rname[:3] if rname.startswith(VECTOR_CLASSES) else "gpr"
        implicit.append(Operand("reg", rcls, I.RegisterInfo(reg).size * 8, read, write, rname))
    flags_read = _flags(ins.rflags_read)
    flags_written = _flags(ins.rflags_modified)
    feats = tuple(feat_names[f] for f in ins.cpuid_features())
    memory = "none"
    if mem_access is not None:
        memory = {(True, False): "load", (False, True): "store", (True, True): "load+store",
                  (False, False): "agen"}[mem_access]
    name = "_".join([intel] + [o.short() for o in operands])
    mnem, template = _template(ins, ops, gas)
    vector = any(o.cls in VECTOR_CLASSES for o in operands)
    ext = [f for f in feats if f not in ("INTEL8086", "INTEL186", "INTEL286", "INTEL386", "INTEL486", "X64")]
    extension = ext[-1] if ext else "BASE"
    excluded = _rule_exclusion(ins, info, intel, operands, implicit, flags_read, flags_written, feats, vector,
                               encoding, flow_next)
    return Scheme(name=name, mnemonic=intel, code=code_name, template=template, operands=tuple(operands),
                  implicit=tuple(implicit), flags_read=flags_read, flags_written=flags_written, memory=memory,
                  encoding=encoding, extension=extension, features=feats, category=category(intel, tuple(operands)),
                  lock=bool(info.can_use_lock_prefix), rep=bool(info.can_use_rep_prefix or info.can_use_repne_prefix),
                  excluded=excluded)


def _rule_exclusion(ins, info, mnem, operands, implicit, flags_read, flags_written, feats, vector, encoding,
                    flow_next) -> str | None:
    """The rule-based exclusions of dissertation sec. 3.2.2 (first matching reason)."""
    if ins.flow_control != flow_next:
        return "control flow"
    if info.is_privileged or not info.cpl3 or info.is_input_output or mnem in _SYSTEM \
            or set(feats) & _SYSTEM_FEATURES or info.is_save_restore or info.is_serializing_amd:
        return "system instruction"
    if any(f.startswith(("FPU", "MMX")) or f in ("D3NOW", "D3NOWEXT") for f in feats):
        return "x87/MMX"
    if encoding == "legacy" and (vector or set(feats) & {"SSE", "SSE2", "SSE3", "SSSE3", "SSE4_1"}):
        return "SSE next to AVX (legacy-encoded vector instruction)"
    if info.is_stack_instruction or ins.is_stack_instruction:
        return "stack (hardwired read-written rsp)"
    if ins.is_string_instruction:
        return "string instruction (hardwired read-written rsi/rdi)"
    if mnem in ("div", "idiv"):
        return "input-dependent (division)"
    if any(o.fixed and o.read and o.write for o in operands) or any(o.read and o.write for o in implicit):
        return "hardwired read-written register"
    if set(flags_read) & set(flags_written):
        return "hardwired read-written flags"
    if any(o.fixed in ("ah", "bh", "ch", "dh") for o in implicit):
        return "hardwired ah-dh register"
    return None


def _check_assembles(schemes: list[Scheme]) -> list[Scheme]:
    """Assemble every offered scheme's representative text with GNU as; exclude rejections."""
    offered = [s for s in schemes if s.excluded is None]
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "all.s"
        src.write_text("\n".join(render_representative(s) for s in offered) + "\n")
        proc = subprocess.run(["as", "--64", "-o", str(Path(tmp) / "all.o"), str(src)],
                              capture_output=True, text=True)
    bad_lines = {int(m.group(1)) for m in re.finditer(r"all\.s:(\d+): Error", proc.stderr)}
    bad = {offered[n - 1].name for n in bad_lines if 0 < n <= len(offered)}
    return [Scheme(**{**s.__dict__, "excluded": "GNU as rejects the operand form"}) if s.name in bad else s
            for s in schemes]


_PREFIX_OF = {"vex": "{{vex}} ", "evex": "{{evex}} "}


def _check_encodings(schemes: list[Scheme]) -> list[Scheme]:
    """Make GNU as emit each offered VEX/EVEX scheme in its own encoding: where ``as`` picks the
    other one for a representative instance (``vpdpbusd ymm`` is EVEX unless told ``{vex}``),
    the template gets the pseudo-prefix. Checked by disassembling the representatives."""
    todo = [s for s in schemes if s.excluded is None and s.encoding in _PREFIX_OF
            and not s.template.startswith(("{{vex}}", "{{evex}}"))]
    if not todo:
        return schemes
    with tempfile.TemporaryDirectory() as tmp:
        src, obj = Path(tmp) / "enc.s", Path(tmp) / "enc.o"
        src.write_text("\n".join(render_representative(s) for s in todo) + "\n")
        proc = subprocess.run(["as", "--64", "-o", str(obj), str(src)], capture_output=True, text=True)
        if proc.returncode:
            raise PmsolveError(f"ISA generation: GNU as rejects an offered template: {proc.stderr[:500]}")
        dis = subprocess.run(["objdump", "-d", "-w", str(obj)], capture_output=True, text=True, check=True).stdout
    first = [int(m.group(1)[:2], 16) for m in re.finditer(r"^\s*[0-9a-f]+:\t([0-9a-f ]+)\t\S", dis, re.M)]
    if len(first) != len(todo):
        raise PmsolveError(f"ISA generation: {len(todo)} templates disassemble to {len(first)} instructions")
    got = {s.name: ("evex" if b == 0x62 else "vex" if b in (0xC4, 0xC5) else None) for s, b in zip(todo, first)}
    return [replace(s, template=_PREFIX_OF[s.encoding] + s.template)
            if got.get(s.name) not in (None, s.encoding) else s for s in schemes]


def write_catalogue(path: Path) -> int:
    schemes = sorted(generate(), key=lambda s: s.name)
    doc = {"format": "pmsolve.isa", "version": 1, "isa": "x86-64",
           "generator": f"pmsolve.isa.x86_gen with iced-x86 {getattr(I, '__version__', '?')}",
           "encodings": ["legacy", "vex", "evex"], "schemes": [s.to_json() for s in schemes]}
    path.parent.mkdir(parents=True, exist_ok=True)
    head = json.dumps({k: v for k, v in doc.items() if k != "schemes"}, ensure_ascii=False)[:-1]
    body = ",\n".join(json.dumps(s, ensure_ascii=False, separators=(",", ":")) for s in doc["schemes"])
    path.write_text(head + ', "schemes": [\n' + body + "\n]}\n")  # one scheme per line: readable diffs
    return len(schemes)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    out = Path(argv[0]) if argv else default_dir() / "x86_64.json"
    n = write_catalogue(out)
    print(f"wrote {n} schemes to {out}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
