//! The numbers `tforeign` (a foreign process) and the test runner (its
//! server) agree on: the call numbers it makes and the register values it
//! sets before its first call.

/// First call: m0..m3 = this, V_RDI, V_RSI, V_RDX; answered with ECHO_RESULT.
pub const NR_ECHO: u64 = 1000;
/// Second call: rdi = the address of the registers it saw after the first.
pub const NR_REPORT: u64 = 1001;
/// Last call: the runner ends it.
pub const NR_DONE: u64 = 1002;
pub const ECHO_RESULT: u64 = 0x0e0e_0e0e_0e0e_0e0e;
pub const V_RBX: u64 = 0x1111_2222_3333_4444;
pub const V_RBP: u64 = 0x5555_6666_7777_8888;
pub const V_RDI: u64 = 0x0101_0101_0101_0101;
pub const V_RSI: u64 = 0x0202_0202_0202_0202;
pub const V_RDX: u64 = 0x0303_0303_0303_0303;
pub const V_R8: u64 = 0x0808_0808_0808_0808;
pub const V_R9: u64 = 0x0909_0909_0909_0909;
pub const V_R10: u64 = 0x0a0a_0a0a_0a0a_0a0a;
pub const V_R12: u64 = 0x0c0c_0c0c_0c0c_0c0c;
pub const V_R13: u64 = 0x0d0d_0d0d_0d0d_0d0d;
pub const V_R14: u64 = 0x0e0e_0e0e_0e0e_0e0f;
pub const V_R15: u64 = 0x0f0f_0f0f_0f0f_0f0f;
/// Words of the report: rax, rbx, rcx, rdx, rsi, rdi, rbp, r8, r9, r10,
/// r11, r12, r13, r14, r15, xmm0 (low half), the address right after the
/// first `syscall`, rflags after it, rsp.
pub const REPORT_WORDS: usize = 19;
