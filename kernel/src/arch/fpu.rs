//! The x87/SSE register file of foreign processes (Linux programs, see
//! `crate::foreign`), and their FS segment base.
//!
//! The kernel and every Ridgeback program are built soft-float
//! (`x86_64-unknown-none`): they never touch x87 or SSE registers, and
//! SSE stays off (CR4.OSFXSR clear, so an SSE instruction is an invalid
//! opcode: the `sse_is_refused` kernel test). A Linux program assumes
//! SSE2 (the x86-64 baseline), so it runs with SSE on, and its registers
//! are saved with `fxsave` on every kernel entry from it and restored with
//! `fxrstor` each time it is resumed (SDM vol. 1 §10.5). Nothing else uses
//! them in between, so no lazy switching is needed. AVX (XSAVE) stays off.
//!
//! What this is not: a general FPU service for Ridgeback programs.
//! Invariant: an [`FpuArea`] only ever holds [`FpuArea::initial`] or what
//! `fxsave` wrote, so `fxrstor` never faults on reserved MXCSR bits.

use super::cpu::{MSR_FS_BASE, read_cr4, write_cr4, wrmsr};
use core::arch::asm;

const CR0_MP: u64 = 1 << 1;
const CR0_EM: u64 = 1 << 2;
const CR0_TS: u64 = 1 << 3;
const CR4_OSFXSR: u64 = 1 << 9;
const CR4_OSXMMEXCPT: u64 = 1 << 10;
/// MXCSR and MXCSR_MASK in the `fxsave` image (SDM vol. 1 table 10-2).
const MXCSR_AT: usize = 24;
const MXCSR_MASK_AT: usize = 28;
/// The MXCSR bits every SSE2 CPU has when MXCSR_MASK reads 0.
const DEFAULT_MXCSR_MASK: u32 = 0xffbf;

/// The 512-byte `fxsave` image (SDM vol. 1 table 10-2), 16-byte aligned.
#[repr(C, align(16))]
#[derive(Clone)]
pub struct FpuArea([u8; 512]);

impl FpuArea {
    /// The state after `fninit` with SSE's defaults: x87 control word
    /// 0x37f (all exceptions masked, 64-bit precision), MXCSR 0x1f80 (all
    /// masked, round to nearest), everything else zero: what Linux gives
    /// a new program.
    pub fn initial() -> FpuArea {
        let mut a = [0u8; 512];
        a[0..2].copy_from_slice(&0x037fu16.to_le_bytes());
        a[24..28].copy_from_slice(&0x1f80u32.to_le_bytes());
        FpuArea(a)
    }

    /// A copy of the image (for a foreign process's server).
    pub fn bytes(&self) -> [u8; 512] {
        self.0
    }

    /// Take `image` as the registers to load, with MXCSR's unsupported
    /// bits cleared: the mask is MXCSR_MASK as `fxsave` wrote it in this
    /// area (0 there means the architectural default 0xffbf, SDM vol. 1
    /// §11.6.6), so the invariant holds whatever `image` says.
    pub fn load_sanitized(&mut self, image: &[u8; 512]) {
        let word = |a: &[u8; 512], at: usize| u32::from_le_bytes([a[at], a[at + 1], a[at + 2], a[at + 3]]);
        let mask = match word(&self.0, MXCSR_MASK_AT) {
            0 => DEFAULT_MXCSR_MASK,
            m => m,
        };
        let mxcsr = word(image, MXCSR_AT) & mask;
        self.0 = *image;
        self.0[MXCSR_AT..MXCSR_AT + 4].copy_from_slice(&mxcsr.to_le_bytes());
        self.0[MXCSR_MASK_AT..MXCSR_MASK_AT + 4].copy_from_slice(&mask.to_le_bytes());
    }

    /// Save this CPU's x87/SSE registers here.
    pub fn save(&mut self) {
        // SAFETY: fxsave writes exactly 512 bytes at a 16-byte aligned
        // address, which `self` is (repr(align(16)), 512 bytes).
        unsafe { asm!("fxsave64 [{}]", in(reg) self.0.as_mut_ptr(), options(nostack, preserves_flags)) }
    }

    /// Load this CPU's x87/SSE registers from here.
    pub fn restore(&self) {
        // SAFETY: 512 aligned bytes that `initial` or `fxsave` wrote (the
        // module's invariant: the field is private), so MXCSR's reserved
        // bits are clear and fxrstor cannot fault.
        unsafe { asm!("fxrstor64 [{}]", in(reg) self.0.as_ptr(), options(nostack, preserves_flags)) }
    }
}

/// Turn SSE on for a foreign process on this CPU: CR4.OSFXSR and
/// OSXMMEXCPT, CR0.MP, and neither CR0.EM nor TS (SDM vol. 3A §13.1.3).
pub fn enable() {
    // SAFETY: these bits only change how x87/SSE instructions behave; the
    // kernel executes none but fxsave and fxrstor.
    unsafe {
        let cr0: u64;
        asm!("mov {}, cr0", out(reg) cr0, options(nomem, nostack, preserves_flags));
        let cr0 = (cr0 | CR0_MP) & !(CR0_EM | CR0_TS);
        asm!("mov cr0, {}", in(reg) cr0, options(nostack, preserves_flags));
        write_cr4(read_cr4() | CR4_OSFXSR | CR4_OSXMMEXCPT);
    }
}

/// Turn SSE off again (a Ridgeback program runs next) and clear the FS
/// base a foreign process left.
pub fn disable() {
    // SAFETY: as `enable`; FS base 0 is canonical.
    unsafe {
        write_cr4(read_cr4() & !(CR4_OSFXSR | CR4_OSXMMEXCPT));
        wrmsr(MSR_FS_BASE, 0);
    }
}

/// Set the FS segment base (a foreign process's thread pointer). A
/// non-canonical value would fault in `wrmsr`: the caller checks it is a
/// user address; anything above the user half is written as 0.
pub fn set_fs_base(base: u64) {
    let base = if base < abi::layout::USER_END { base } else { 0 };
    // SAFETY: FS_BASE exists on every x86-64 CPU and `base` is canonical.
    unsafe { wrmsr(MSR_FS_BASE, base) }
}
