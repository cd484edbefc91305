//! Every way into the kernel: exception and interrupt stubs, `syscall`,
//! and the single way back out.
//!
//! Interrupts and exceptions save the full register state as a
//! [`TrapFrame`] on this CPU's kernel stack and call `trap_handler` with
//! `&mut TrapFrame`. `syscall` saves it straight into the calling process's
//! slot in the process table (Hubris's and seL4's way): the per-CPU record
//! holds the end of the frame this CPU last left the kernel through, which
//! is the running process's slot, and the entry pushes the registers down
//! from there before switching to the kernel stack. So a kernel call
//! copies no frame at all.
//!
//! Both handlers return the frame to leave through: a process's slot in
//! the process table (or this CPU's idle context), which becomes the save
//! area of the next `syscall`. A context switch is "return a different
//! frame", and the kernel needs no per-process kernel stack (seL4's and
//! Ridge's design). A frame saved by `syscall` is left with `sysretq`,
//! every other one with `iretq`.
//!
//! GS: while in user mode, GS base is the user's (0) and KERNEL_GS_BASE
//! points at the CPU's record; entries from user mode `swapgs`, entries from
//! kernel mode (the idle loop) do not (SDM vol. 3A §5.8.8).
//!
//! Ownership of a saved frame: the lock holder reads and writes the frames
//! of processes that are not running. The frame of a process running on a
//! CPU belongs to that CPU alone: its entry code writes it before taking
//! the kernel lock, and its exit code reads it after letting the lock go.
//! No other CPU touches it meanwhile (a process is only changed from
//! elsewhere through flags such as `kill_requested`, never its registers).

use super::descriptors::{KERNEL_CODE, KERNEL_DATA, STAR_USER_BASE, USER_CODE, USER_DATA};
use super::percpu::{OFFSET_KERNEL_STACK_TOP, OFFSET_SAVE_AREA_END};
use core::arch::global_asm;

/// Saved registers of an interrupted context, in push order reversed (the
/// last pushed register is the first field). The fields are arch's alone:
/// code outside reads and writes the general registers through the views
/// of regs.rs, and can make only user contexts ([`TrapFrame::new_user`]),
/// so no frame it returns to the exit code can enter ring 0. `rcx` and `r11` come right
/// after the hardware part: `syscall` destroys both (they hold the return
/// rip and rflags, saved in those fields), so its entry skips their slots
/// with one instruction and `sysretq` never reads them.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct TrapFrame {
    pub(super) r15: u64,
    pub(super) r14: u64,
    pub(super) r13: u64,
    pub(super) r12: u64,
    pub(super) r10: u64,
    pub(super) r9: u64,
    pub(super) r8: u64,
    pub(super) rbp: u64,
    pub(super) rdi: u64,
    pub(super) rsi: u64,
    pub(super) rdx: u64,
    pub(super) rbx: u64,
    pub(super) rax: u64,
    pub(super) r11: u64,
    pub(super) rcx: u64,
    /// Interrupt vector, or [`SYSCALL_VECTOR`] for `syscall`.
    pub(super) vector: u64,
    pub(super) error_code: u64,
    pub(super) rip: u64,
    pub(super) cs: u64,
    pub(super) rflags: u64,
    pub(super) rsp: u64,
    pub(super) ss: u64,
}

/// Marks a frame saved by the `syscall` entry.
/// Its `rcx` and `r11` fields are stale: user code sees rip and rflags in
/// those registers after a kernel call, as after `syscall` itself. So is
/// its `error_code` (whatever the last exception left there; nothing
/// reads it for a syscall frame), and `cs` and `ss` are the ones already
/// in the slot, which are always the user selectors.
pub const SYSCALL_VECTOR: u64 = 0x100;
/// Where the `syscall` entry starts saving: the end of the `rsp` field
/// (it pushes the user's `rsp` first, then stores the rest around it).
const SAVE_AREA_END_OFFSET: usize = core::mem::offset_of!(TrapFrame, ss);
/// Offsets from the `rsp` field, where the `syscall` entry's stack pointer
/// is once it has pushed the user's `rsp`.
const fn from_rsp(offset: usize) -> isize {
    offset as isize - core::mem::offset_of!(TrapFrame, rsp) as isize
}
const RSP_TO_RFLAGS: isize = from_rsp(core::mem::offset_of!(TrapFrame, rflags));
const RSP_TO_RIP: isize = from_rsp(core::mem::offset_of!(TrapFrame, rip));
const RSP_TO_VECTOR: isize = from_rsp(core::mem::offset_of!(TrapFrame, vector));
/// Past `rcx` and `r11` (left stale), to where `rax` is pushed next.
const RSP_TO_R11: isize = from_rsp(core::mem::offset_of!(TrapFrame, r11));
const _: () = assert!(
    SAVE_AREA_END_OFFSET == core::mem::offset_of!(TrapFrame, rsp) + 8
        && core::mem::offset_of!(TrapFrame, rax) + 8 == core::mem::offset_of!(TrapFrame, r11),
    "the syscall entry pushes rsp from the end of its field and the other registers below r11"
);
// `sysretq` loads these selectors (SDM vol. 3A §5.8.8: CS = STAR[63:48] +
// 16, SS = STAR[63:48] + 8, RPL 3), the same that TrapFrame::new_user puts
// in a fresh frame. So a running process's frame always holds them (a
// saved interrupt frame copies what the CPU had), and the syscall entry
// need not store them.
const _: () = assert!(
    (STAR_USER_BASE + 16) | 3 == USER_CODE && (STAR_USER_BASE + 8) | 3 == USER_DATA,
    "syscall frames keep the user selectors of the frame they were saved over"
);
/// Offsets from the `r11` field, where the exit code's stack pointer is
/// once the other general registers are popped.
const fn from_r11(offset: usize) -> usize {
    offset - core::mem::offset_of!(TrapFrame, r11)
}
const R11_TO_VECTOR: usize = from_r11(core::mem::offset_of!(TrapFrame, vector));
const R11_TO_RIP: usize = from_r11(core::mem::offset_of!(TrapFrame, rip));
const R11_TO_RFLAGS: usize = from_r11(core::mem::offset_of!(TrapFrame, rflags));
const R11_TO_RSP: usize = from_r11(core::mem::offset_of!(TrapFrame, rsp));
const R11_TO_SS: usize = from_r11(SAVE_AREA_END_OFFSET);
const _: () = assert!(
    core::mem::offset_of!(TrapFrame, rcx) == core::mem::offset_of!(TrapFrame, r11) + 8 && R11_TO_VECTOR == 16,
    "the exit code pops r11, rcx, then skips vector and error code"
);
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

    pub fn is_user(&self) -> bool {
        self.cs & 3 == 3
    }

    /// The interrupt vector (or [`SYSCALL_VECTOR`]).
    pub fn vector(&self) -> u64 {
        self.vector
    }

    /// The error code the CPU pushed for an exception (0 for others).
    pub fn error_code(&self) -> u64 {
        self.error_code
    }

    /// The interrupted instruction.
    pub fn rip(&self) -> u64 {
        self.rip
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
    fn idle_start(kernel_stack_top: u64) -> TrapFrame {
        TrapFrame { rip: idle_start as *const () as u64, ..TrapFrame::idle(kernel_stack_top) }
    }

    /// The idle context of a CPU: halt with interrupts on, on the top of
    /// this CPU's kernel stack (it keeps nothing there between interrupts).
    fn idle(kernel_stack_top: u64) -> TrapFrame {
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
    fn leave_through_asm(frame: *mut TrapFrame) -> !;
    fn leave_syscall_frame_asm(frame: *mut TrapFrame) -> !;
}

/// Where a kernel entry leaves to, as the kernel's handlers return it: the
/// saved registers of the process this CPU runs next (a slot of the
/// process table) or this CPU's idle context ([`idle_frame`]).
#[derive(Clone, Copy, Debug)]
pub enum Exit {
    /// A frame saved by the `syscall` entry (a process blocked in a kernel
    /// call, which the call fast path switches to): left with `sysretq`
    /// without the exit's test of the vector.
    SyscallFrame(*mut TrapFrame),
    /// Any frame.
    Frame(*mut TrapFrame),
}

/// [`leave_through`] for a frame known to be saved by the `syscall`
/// entry (its `vector` is [`SYSCALL_VECTOR`]).
///
/// # Safety
/// As [`leave_through`], and the frame was saved by `syscall_entry`.
#[inline(always)]
unsafe fn leave_syscall_frame(frame: *mut TrapFrame) -> ! {
    // SAFETY: as for leave_through; and the frame was saved by
    // syscall_entry (the caller's promise), so leaving with sysretq
    // restores all of it: its rcx and r11 are stale by the ABI, its cs
    // and ss are the ones sysretq loads.
    unsafe {
        debug_assert_eq!((*frame).vector, SYSCALL_VECTOR);
        leave_syscall_frame_asm(frame)
    }
}

/// Leave the kernel through `frame`, abandoning the kernel stack.
///
/// # Safety
/// `frame` lives for ever and holds a complete context: a process's slot
/// in the process table (the kernel's handlers return only those, whose
/// contexts only `TrapFrame::new_user` or a saved entry made) or this
/// CPU's idle context. It is this CPU's alone until the next entry (trap.rs
/// of the kernel: a running process's frame is touched by no other CPU),
/// and the kernel lock is released.
#[inline(always)]
unsafe fn leave_through(frame: *mut TrapFrame) -> ! {
    // SAFETY: the caller's promise; nothing on the kernel stack is used
    // again.
    unsafe { leave_through_asm(frame) }
}

/// Address of the entry stub for `vector` (16 bytes each).
pub fn stub_address(vector: usize) -> u64 {
    trap_stubs as *const () as u64 + 16 * vector as u64
}

pub fn syscall_entry_address() -> u64 {
    syscall_entry as *const () as u64
}

/// Enter this CPU's idle loop for the first time (it asks for a process
/// at once), abandoning the kernel stack. The end of each CPU's bring-up.
pub fn enter_idle() -> ! {
    let cpu = super::percpu::current_cpu();
    let slot = idle_frame();
    // SAFETY: (1) `slot` is this CPU's own idle context, a static that only
    // this CPU uses; nothing else refers to it now. (2) the frame is a
    // complete kernel context that runs on the top of this CPU's kernel
    // stack, and nothing on the abandoned stack is used again.
    unsafe {
        *slot = TrapFrame::idle_start(super::percpu::kernel_stack_top(cpu));
        leave_through_asm(slot)
    }
}

/// This CPU's idle context (halting on the top of its kernel stack), for
/// the scheduler to return when it has nothing to run.
pub fn idle_frame() -> *mut TrapFrame {
    let cpu = super::percpu::current_cpu();
    let frame = TrapFrame::idle(super::percpu::kernel_stack_top(cpu));
    // SAFETY: each CPU uses only its own slot, and only while in the kernel
    // with interrupts off (here, or in its exit code after this returns);
    // the slot is a static, so the pointer stays valid.
    unsafe {
        let slot = &raw mut IDLE[cpu];
        *slot = frame;
        slot
    }
}

static mut IDLE: [TrapFrame; kernel_core::limits::MAX_CPUS] =
    [TrapFrame::ZERO; kernel_core::limits::MAX_CPUS];

// Vectors for which the CPU pushes an error code (SDM vol. 3A table 6-1).
global_asm!(
    r#"
    /* The general registers but rcx and r11, in TrapFrame order. */
    .macro PUSH_OTHER_REGISTERS
    push rax
    push rbx
    push rdx
    push rsi
    push rdi
    push rbp
    push r8
    push r9
    push r10
    push r12
    push r13
    push r14
    push r15
    .endm

    .macro POP_OTHER_REGISTERS
    pop r15
    pop r14
    pop r13
    pop r12
    pop r10
    pop r9
    pop r8
    pop rbp
    pop rdi
    pop rsi
    pop rdx
    pop rbx
    pop rax
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
    push rcx
    push r11
    PUSH_OTHER_REGISTERS
    cld
    mov rdi, rsp
    call {trap_handler}
    /* rax: the frame to leave through, or null for the frame on the
       stack (the interrupted context, untouched). */
    test rax, rax
    jz restore
    mov rdi, rax
    jmp leave_through

    /* The kernel-call path (this entry and exit, and syscall_handler,
       see SYSCALL_SECTION) shares one section: a round trip's code then
       spans fewer pages, and under QEMU every page touched after a CR3
       write costs a software-TLB refill. */
    .section .text.ridgeback_syscall, "ax", @progbits
    .balign 64
    /* The CPU's syscall: rcx = user rip, r11 = user rflags, IF clear.
       The registers go straight into the caller's slot of the process
       table: gs:[save_area_end] is the end of the frame this CPU last
       left through, which is the running process's (see the module
       comment). */
    .global syscall_entry
syscall_entry:
    swapgs
    /* rsp = &frame.ss; the per-CPU field holds the user's rsp until the
       exit (leave_through, leave_syscall_frame) sets it again: nothing
       else reads it meanwhile. */
    xchg rsp, gs:[{save_area_end}]
    push qword ptr gs:[{save_area_end}]
    /* rsp = &frame.rsp. ss and cs already hold the user selectors, and
       the error code is not read for a syscall frame (see TrapFrame). */
    mov [rsp + {rsp_to_rflags}], r11
    mov [rsp + {rsp_to_rip}], rcx
    mov qword ptr [rsp + {rsp_to_vector}], {syscall_vector}
    lea rsp, [rsp + {rsp_to_r11}]   /* rcx and r11: stale (see SYSCALL_VECTOR) */
    PUSH_OTHER_REGISTERS
    mov rsp, gs:[{kstack}]
    /* It leaves through leave_through (below) and does not return. */
    call {syscall_handler}
    ud2

    /* rdi = the frame to leave through: it is also where the next
       syscall on this CPU saves its registers. */
    .global leave_through_asm
leave_through_asm:
leave_through:
    lea rcx, [rdi + {save_area_end_offset}]
    mov gs:[{save_area_end}], rcx
    mov rsp, rdi
restore:
    POP_OTHER_REGISTERS
    /* rsp = &frame.r11. A frame saved by syscall goes back with sysretq
       (rcx = rip, r11 = rflags, as syscall left them; the ABI says a
       kernel call destroys both), unless its rip is outside the
       canonical lower half: sysretq would fault in ring 0 there (the
       Intel SYSRET erratum), so that one takes iretq, with the same rcx
       and r11. */
    cmp qword ptr [rsp + {r11_to_vector}], {syscall_vector}
    jne 3f
    mov rcx, [rsp + {r11_to_rip}]
    mov r11, rcx
    shr r11, 47
    jnz 4f
    mov r11, [rsp + {r11_to_rflags}]
    mov rsp, [rsp + {r11_to_rsp}]
    swapgs
    sysretq
4:
noncanonical_rip:
    mov r11, [rsp + {r11_to_rflags}]
    add rsp, {r11_to_rip}
    swapgs
    iretq

    /* rdi = a frame saved by syscall_entry (see leave_syscall_frame):
       leave_through without the vector test. */
    .global leave_syscall_frame_asm
leave_syscall_frame_asm:
    mov rsp, rdi
    POP_OTHER_REGISTERS
    lea rcx, [rsp + {r11_to_ss}]
    mov gs:[{save_area_end}], rcx
    mov rcx, [rsp + {r11_to_rip}]
    mov r11, rcx
    shr r11, 47
    jnz noncanonical_rip
    mov r11, [rsp + {r11_to_rflags}]
    mov rsp, [rsp + {r11_to_rsp}]
    swapgs
    sysretq
3:
    pop r11
    pop rcx
    add rsp, 16
    test qword ptr [rsp + 8], 3
    jz 2f
    swapgs
2:
    iretq

    .global idle_start
idle_start:
    int {reschedule}
    .global idle_loop
idle_loop:
    hlt
    jmp idle_loop
    "#,
    trap_handler = sym crate::trap::trap_handler,
    syscall_handler = sym syscall_handler,
    kstack = const OFFSET_KERNEL_STACK_TOP,
    save_area_end = const OFFSET_SAVE_AREA_END,
    syscall_vector = const SYSCALL_VECTOR,
    save_area_end_offset = const SAVE_AREA_END_OFFSET,
    rsp_to_rflags = const RSP_TO_RFLAGS,
    rsp_to_rip = const RSP_TO_RIP,
    rsp_to_vector = const RSP_TO_VECTOR,
    rsp_to_r11 = const RSP_TO_R11,
    r11_to_vector = const R11_TO_VECTOR,
    r11_to_rip = const R11_TO_RIP,
    r11_to_rflags = const R11_TO_RFLAGS,
    r11_to_rsp = const R11_TO_RSP,
    r11_to_ss = const R11_TO_SS,
    reschedule = const super::apic::VECTOR_RESCHEDULE,
);

/// What `syscall_entry` calls: `crate::trap::syscall_handler`, inlined
/// here so that it lands in the entry code's section (see the comment
/// there), then the way out it chose. Never returns, so nothing of the
/// caller's needs restoring around the fast path.
// SAFETY (link_section): an ordinary code section of its own, which the
// linker script's `*(.text .text.*)` places in `.text` like any other.
#[unsafe(link_section = ".text.ridgeback_syscall")]
extern "C" fn syscall_handler() -> ! {
    match crate::trap::syscall_handler() {
        // SAFETY: the kernel's handler returns a frame of the process
        // table saved by the syscall entry (the fast path switches only to
        // a process blocked in a kernel call), with the lock released.
        Exit::SyscallFrame(frame) => unsafe { leave_syscall_frame(frame) },
        // SAFETY: the kernel's handler returns a frame of the process
        // table or this CPU's idle frame, with the lock released.
        Exit::Frame(frame) => unsafe { leave_through(frame) },
    }
}

/// Program the `syscall` MSRs on this CPU (SDM vol. 3A §5.8.8).
pub(super) fn init_syscall() {
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

/// Registers, formatted for fault reports.
impl core::fmt::Display for TrapFrame {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let r = self;
        writeln!(
            f,
            "  rip {:016x}  rsp {:016x}  rflags {:016x}  cs {:x} ss {:x}",
            r.rip, r.rsp, r.rflags, r.cs, r.ss
        )?;
        writeln!(f, "  rax {:016x}  rbx {:016x}  rcx {:016x}  rdx {:016x}", r.rax, r.rbx, r.rcx, r.rdx)?;
        writeln!(f, "  rsi {:016x}  rdi {:016x}  rbp {:016x}  r8  {:016x}", r.rsi, r.rdi, r.rbp, r.r8)?;
        writeln!(f, "  r9  {:016x}  r10 {:016x}  r11 {:016x}  r12 {:016x}", r.r9, r.r10, r.r11, r.r12)?;
        write!(f, "  r13 {:016x}  r14 {:016x}  r15 {:016x}", r.r13, r.r14, r.r15)
    }
}
