//! Every way into the kernel: exception and interrupt stubs, `syscall`,
//! and the single way back out.
//!
//! All entries save the full register state as a [`TrapFrame`] on this
//! CPU's kernel stack and call one Rust function with `&mut TrapFrame`. That
//! function may overwrite the frame with another process's saved state; the
//! exit path then restores whatever the frame holds and `iretq`s. So a
//! context switch is "write a different frame", and the kernel needs no
//! per-process kernel stack (seL4's and Ridge's design).
//!
//! GS: while in user mode, GS base is the user's (0) and KERNEL_GS_BASE
//! points at the CPU's record; entries from user mode `swapgs`, entries from
//! kernel mode (the idle loop) do not (SDM vol. 3A §5.8.8).

use super::descriptors::{KERNEL_CODE, KERNEL_DATA, USER_CODE, USER_DATA};
use super::percpu::{OFFSET_KERNEL_STACK_TOP, OFFSET_USER_RSP};
use core::arch::global_asm;

/// Saved registers of an interrupted context, in push order reversed (the
/// last pushed register is the first field).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct TrapFrame {
    pub r15: u64,
    pub r14: u64,
    pub r13: u64,
    pub r12: u64,
    pub r11: u64,
    pub r10: u64,
    pub r9: u64,
    pub r8: u64,
    pub rbp: u64,
    pub rdi: u64,
    pub rsi: u64,
    pub rdx: u64,
    pub rcx: u64,
    pub rbx: u64,
    pub rax: u64,
    /// Interrupt vector, or [`SYSCALL_VECTOR`] for `syscall`.
    pub vector: u64,
    pub error_code: u64,
    pub rip: u64,
    pub cs: u64,
    pub rflags: u64,
    pub rsp: u64,
    pub ss: u64,
}

/// Marks a frame saved by the `syscall` entry.
pub const SYSCALL_VECTOR: u64 = 0x100;
const FRAME_WORDS: usize = core::mem::size_of::<TrapFrame>() / 8;
/// RFLAGS.IF, plus the always-one bit 1.
pub const RFLAGS_USER: u64 = 0x202;

impl Default for TrapFrame {
    fn default() -> Self {
        TrapFrame::ZERO
    }
}

impl TrapFrame {
    pub const ZERO: TrapFrame = TrapFrame {
        r15: 0,
        r14: 0,
        r13: 0,
        r12: 0,
        r11: 0,
        r10: 0,
        r9: 0,
        r8: 0,
        rbp: 0,
        rdi: 0,
        rsi: 0,
        rdx: 0,
        rcx: 0,
        rbx: 0,
        rax: 0,
        vector: 0,
        error_code: 0,
        rip: 0,
        cs: 0,
        rflags: 0,
        rsp: 0,
        ss: 0,
    };

    /// Copy the registers a kernel call returns results in (rax, rdx, rsi,
    /// r10 and the message registers r12..r15) into `to`: all a call can
    /// change in the process that made it (see `abi`).
    pub fn copy_results_to(&self, to: &mut TrapFrame) {
        to.rax = self.rax;
        to.rdx = self.rdx;
        to.rsi = self.rsi;
        to.r10 = self.r10;
        to.r12 = self.r12;
        to.r13 = self.r13;
        to.r14 = self.r14;
        to.r15 = self.r15;
    }

    pub fn is_user(&self) -> bool {
        self.cs & 3 == 3
    }

    /// A fresh user context starting at `rip` with stack `rsp`.
    pub fn new_user(rip: u64, rsp: u64) -> TrapFrame {
        TrapFrame {
            rip,
            rsp,
            cs: USER_CODE as u64,
            ss: USER_DATA as u64,
            rflags: RFLAGS_USER,
            ..Default::default()
        }
    }

    /// The first idle context of a CPU: ask for a process at once (a
    /// reschedule interrupt to itself), then halt.
    pub fn idle_start(kernel_stack_top: u64) -> TrapFrame {
        TrapFrame { rip: idle_start as *const () as u64, ..TrapFrame::idle(kernel_stack_top) }
    }

    /// The idle context of a CPU: halt with interrupts on, on the top of
    /// this CPU's kernel stack (it keeps nothing there between interrupts).
    pub fn idle(kernel_stack_top: u64) -> TrapFrame {
        TrapFrame {
            rip: idle_loop as *const () as u64,
            rsp: kernel_stack_top,
            cs: KERNEL_CODE as u64,
            ss: KERNEL_DATA as u64,
            rflags: RFLAGS_USER,
            ..Default::default()
        }
    }
}

unsafe extern "C" {
    fn trap_stubs();
    fn idle_loop();
    fn idle_start();
    fn syscall_entry();
    fn enter_frame_asm(frame: *const TrapFrame, stack_top: u64) -> !;
}

/// Address of the entry stub for `vector` (16 bytes each).
pub fn stub_address(vector: usize) -> u64 {
    trap_stubs as *const () as u64 + 16 * vector as u64
}

pub fn syscall_entry_address() -> u64 {
    syscall_entry as *const () as u64
}

/// Leave the kernel into `frame` on this CPU, abandoning the current kernel
/// stack contents. Used once per CPU at the end of bring-up.
pub fn enter_frame(frame: &TrapFrame, kernel_stack_top: u64) -> ! {
    let cpu = super::percpu::current_cpu();
    // SAFETY: (1) each CPU uses only its own staging slot, once, here; the
    // slot is a static, so the copy below cannot overlap the top of the
    // stack that the asm overwrites (the caller's `frame` may live there).
    // (2) the frame is a complete context (TrapFrame::idle_start), and
    // nothing on the abandoned stack is used again.
    unsafe {
        let slot = &raw mut STAGING[cpu];
        *slot = *frame;
        enter_frame_asm(slot, kernel_stack_top)
    }
}

static mut STAGING: [TrapFrame; kernel_core::limits::MAX_CPUS] =
    [TrapFrame::ZERO; kernel_core::limits::MAX_CPUS];

// Vectors for which the CPU pushes an error code (SDM vol. 3A table 6-1).
global_asm!(
    r#"
    .macro PUSH_GENERAL_REGISTERS
    push rax
    push rbx
    push rcx
    push rdx
    push rsi
    push rdi
    push rbp
    push r8
    push r9
    push r10
    push r11
    push r12
    push r13
    push r14
    push r15
    .endm

    .text
    .balign 16
    .global trap_stubs
trap_stubs:
    .set vec, 0
    .rept 256
    .balign 16
    .if (vec == 8) || ((vec >= 10) && (vec <= 14)) || (vec == 17) || (vec == 21) || (vec == 29) || (vec == 30)
    nop
    nop
    .else
    push 0
    .endif
    push vec
    jmp trap_common
    .set vec, vec + 1
    .endr

trap_common:
    test qword ptr [rsp + 24], 3
    jz 1f
    swapgs
1:
    PUSH_GENERAL_REGISTERS
    cld
    mov rdi, rsp
    call {trap_handler}
    jmp trap_return

    .global syscall_entry
syscall_entry:
    swapgs
    mov gs:[{user_rsp}], rsp
    mov rsp, gs:[{kstack}]
    push {user_data}
    push qword ptr gs:[{user_rsp}]
    push r11
    push {user_code}
    push rcx
    push 0
    push {syscall_vector}
    PUSH_GENERAL_REGISTERS
    mov rdi, rsp
    call {syscall_handler}

trap_return:
    pop r15
    pop r14
    pop r13
    pop r12
    pop r11
    pop r10
    pop r9
    pop r8
    pop rbp
    pop rdi
    pop rsi
    pop rdx
    pop rcx
    pop rbx
    pop rax
    add rsp, 16
    test qword ptr [rsp + 8], 3
    jz 2f
    swapgs
2:
    iretq

    .global enter_frame_asm
enter_frame_asm:
    /* rdi = frame, rsi = kernel stack top: copy the frame just below the
       top, switch to it, and leave through trap_return. GS is this CPU's
       record here, so the frame's privilege decides the swapgs as usual. */
    sub rsi, {frame_bytes}
    mov rsp, rsi
    mov rcx, {frame_words}
    mov rax, rdi
    mov rdi, rsi
    mov rsi, rax
    rep movsq
    jmp trap_return

    .global idle_start
idle_start:
    int {reschedule}
    .global idle_loop
idle_loop:
    hlt
    jmp idle_loop
    "#,
    trap_handler = sym crate::trap::trap_handler,
    syscall_handler = sym crate::trap::syscall_handler,
    user_rsp = const OFFSET_USER_RSP,
    kstack = const OFFSET_KERNEL_STACK_TOP,
    user_data = const USER_DATA as u64,
    user_code = const USER_CODE as u64,
    syscall_vector = const SYSCALL_VECTOR,
    frame_bytes = const FRAME_WORDS * 8,
    frame_words = const FRAME_WORDS,
    reschedule = const super::apic::VECTOR_RESCHEDULE,
);

/// Program the `syscall` MSRs on this CPU (SDM vol. 3A §5.8.8).
pub fn init_syscall() {
    use super::cpu::*;
    // SAFETY: these MSRs exist on every x86-64 CPU; the values point at our
    // entry code and selectors, and FMASK clears IF, TF, DF and AC on entry
    // so the kernel runs with interrupts off.
    unsafe {
        wrmsr(MSR_EFER, rdmsr(MSR_EFER) | EFER_SCE);
        wrmsr(MSR_STAR, ((super::descriptors::STAR_USER_BASE as u64) << 48) | ((KERNEL_CODE as u64) << 32));
        wrmsr(MSR_LSTAR, syscall_entry_address());
        wrmsr(MSR_FMASK, (1 << 9) | (1 << 8) | (1 << 10) | (1 << 18));
    }
}
