//! Turning the machine off, with a status QEMU's runner can read.

use crate::arch::{apic, cpu, serial};
use crate::kprintln;

/// Power the machine off: through QEMU's isa-debug-exit when present
/// (code 0 → success status), else ACPI's PM1a control of QEMU's PIIX4.
pub fn power_off(code: u32) -> ! {
    kprintln!("power off (status {code})");
    apic::send_ipi_all_others(apic::VECTOR_HALT);
    let exit = if code == 0 { abi::qemu_exit::SUCCESS_CODE } else { abi::qemu_exit::FAILURE_CODE };
    serial::qemu_exit(exit);
    cpu::acpi_power_off();
    cpu::halt_forever()
}
