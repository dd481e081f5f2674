# pmsolve measurement frame for x86-64 (dissertation App. D, in-process variant).
#
# Every kernel is a function   uint64_t KERNEL(uint64_t iterations, void *memory)
# (System V: rdi, rsi) that runs the loop body `iterations` times and returns the TSC ticks
# the loop took (lfence; rdtsc on both sides). It saves the callee-saved registers and the
# caller's MXCSR, sets MXCSR to "all exceptions masked, flush-to-zero, denormals-are-zero",
# initialises every register the body may use to a fixed value, and ends with vzeroupper.
# Reserved registers (never written by bodies, see pmsolve/harness/allocation.py):
#   r15 loop counter, r14 memory base, r13 divisor (3), rsp stack.
# Memory: [r14 + 0, 4096) operand slots, [r14 + 4096, +1536) vector initial values.
# AVX-512: when XCR0 says the OS enabled the opmask and zmm state (bits 5-7, read with xgetbv:
# ~30 cycles, no VM exit, unlike cpuid), {hi16} loads zmm16-zmm31 (in full when the body names a
# zmm register, else their low 256 bits: see pmsolve/harness/assemble.py) and k1-k7 are set with
# kxnorw (AVX512F, which every AVX-512 CPU runs: the low 16 mask bits set, the rest clear).
# zmm0-15 keep zero upper halves (bits 256-511): dirty upper state there would slow 256-bit
# code on Intel AVX-512 cores, while full writes of zmm16-31 do not (glibc's AVX-512 string
# functions rely on that and skip vzeroupper); allocation hands zmm16-31 out first for that
# reason. Any 512-bit instruction, though, slows scalar memory code for a while on Ice Lake-SP,
# hence full loads only for bodies that use zmm registers themselves.
# zmm16-31 and k0-k7 are caller-saved in the System V ABI: nothing to save or restore.
# The final vzeroupper stays (upper halves of zmm0-15 written by the body).
# Placeholders: {name} kernel label, {body} the instructions of one iteration.
    .p2align 6
{name}:
    push %rbx
    push %rbp
    push %r12
    push %r13
    push %r14
    push %r15
    sub $16, %rsp
    stmxcsr (%rsp)
    movl $0x9fc0, 4(%rsp)
    ldmxcsr 4(%rsp)
    vzeroupper
    mov %rdi, %r15
    mov %rsi, %r14
    mov $3, %r13
    vmovups 4096(%r14), %ymm0
    vmovups 4128(%r14), %ymm1
    vmovups 4160(%r14), %ymm2
    vmovups 4192(%r14), %ymm3
    vmovups 4224(%r14), %ymm4
    vmovups 4256(%r14), %ymm5
    vmovups 4288(%r14), %ymm6
    vmovups 4320(%r14), %ymm7
    vmovups 4352(%r14), %ymm8
    vmovups 4384(%r14), %ymm9
    vmovups 4416(%r14), %ymm10
    vmovups 4448(%r14), %ymm11
    vmovups 4480(%r14), %ymm12
    vmovups 4512(%r14), %ymm13
    vmovups 4544(%r14), %ymm14
    vmovups 4576(%r14), %ymm15
    xor %ecx, %ecx
    xgetbv
    and $0xe6, %eax
    cmp $0xe6, %eax
    jne .L{name}_no_avx512
    {hi16}
    kxnorw %k0, %k0, %k1
    kxnorw %k0, %k0, %k2
    kxnorw %k0, %k0, %k3
    kxnorw %k0, %k0, %k4
    kxnorw %k0, %k0, %k5
    kxnorw %k0, %k0, %k6
    kxnorw %k0, %k0, %k7
.L{name}_no_avx512:
    lfence
    rdtsc
    shl $32, %rdx
    or %rdx, %rax
    mov %rax, 8(%rsp)
    mov $0x1000011, %rax
    mov $0x1000013, %rbx
    mov $5, %rcx
    mov $0x1000017, %rdx
    mov $0x100001d, %rsi
    mov $0x100001f, %rdi
    mov $0x1000025, %rbp
    mov $0x1000029, %r8
    mov $0x100002b, %r9
    mov $0x100002f, %r10
    mov $0x1000035, %r11
    mov $0x100003b, %r12
    .p2align 6
.L{name}_loop:
{body}
    dec %r15
    jnz .L{name}_loop
    lfence
    rdtsc
    shl $32, %rdx
    or %rdx, %rax
    sub 8(%rsp), %rax
    vzeroupper
    ldmxcsr (%rsp)
    add $16, %rsp
    pop %r15
    pop %r14
    pop %r13
    pop %r12
    pop %rbp
    pop %rbx
    ret
