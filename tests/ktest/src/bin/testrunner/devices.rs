//! Devices: the rules for claiming interrupt lines and I/O ports,
//! interrupts delivered as messages, the console driver serving a
//! program's output, and the rights and bad input of the PCI, device
//! memory and DMA calls.

use crate::util::{MAIN_QUEUE, TestResult, check, expect_status, expect_status_with_rights};
use abi::rights::DEVICES;
use abi::{Error, ExitStatus, Pid};
use alloc::format;
use runtime::msg::{self, Queue};
use runtime::sys;

pub fn device_claim_rules() -> TestResult {
    let e = |r: Result<(), Error>, want: Error, what: &str| -> TestResult {
        if r == Err(want) { Ok(()) } else { Err(format!("{what}: got {r:?}, expected {want:?}")) }
    };
    e(sys::claim_irq(0, 0), Error::InvalidArgument, "the timer's line")?;
    e(sys::claim_irq(99, 0), Error::InvalidArgument, "a line beyond the I/O APIC")?;
    e(sys::claim_irq(5, 7), Error::BadQueue, "a line onto an unopened queue")?;
    e(sys::ack_irq(5), Error::PermissionDenied, "ack of an unclaimed line")?;
    e(sys::io_ports(0xf4, 1), Error::PermissionDenied, "the kernel's exit port")?;
    e(sys::io_ports(0x20, 2), Error::PermissionDenied, "the interrupt controller")?;
    e(sys::io_ports(0x2f8, 0), Error::InvalidArgument, "no ports")?;
    let r = abi::decode_return(sys::raw(abi::Call::IoPorts as u64, 0xffff, 2, 0, 0, 0).0);
    check(r == Err(Error::InvalidArgument), "ports past 0xffff")?;
    // A line and ports held by us are refused to a child.
    sys::claim_irq(5, 0).map_err(|e| format!("claim line 5: {}", e.name()))?;
    sys::io_ports(0x2f8, 8).map_err(|e| format!("COM2 ports: {}", e.name()))?;
    let driver = |args: &str, want: ExitStatus| expect_status_with_rights(args, DEVICES, want);
    driver("claim-irq 5", ExitStatus::Exited(Error::InUse as u32))?;
    driver("io-ports 760", ExitStatus::Exited(Error::InUse as u32))?;
    // Released, the line is the child's.
    sys::release_irq(5).map_err(|e| e.name())?;
    driver("claim-irq 5", ExitStatus::Exited(0))?;
    // Without the right, nothing.
    expect_status("claim-irq 5", ExitStatus::Exited(Error::PermissionDenied as u32))?;
    expect_status("io-ports 760", ExitStatus::Exited(Error::PermissionDenied as u32))?;
    // Its owner ended, so the line is free again.
    sys::claim_irq(5, 0).map_err(|e| format!("reclaim line 5: {}", e.name()))?;
    sys::release_irq(5).map_err(|e| e.name())?;
    // A driver's child is not a driver unless given the right.
    driver("grandchild claim-irq 6", ExitStatus::Exited(Error::PermissionDenied as u32))
}

pub fn interrupts_as_messages() -> TestResult {
    // COM1's line is 4 unless the firmware says otherwise.
    expect_status_with_rights("uart-irq", DEVICES, ExitStatus::Exited(104))
}

/// PCI configuration space, device memory and DMA memory: only with the
/// right; bad input refused with the error that names it (tchild
/// `device-calls`, so that its DMA memory and claims end with it).
pub fn pci_and_dma_calls() -> TestResult {
    expect_status("device-calls-refused", ExitStatus::Exited(0))?;
    expect_status_with_rights("device-calls", DEVICES, ExitStatus::Exited(0))?;
    // Its claim on the host bridge ended with it.
    expect_status_with_rights("pci-claim 0", DEVICES, ExitStatus::Exited(0))
}

pub fn console_driver() -> TestResult {
    let me = sys::getpid();
    let driver =
        sys::spawn_with_rights("console", &format!("{}", me.0), abi::MAX_PRIORITY as u64 - 1, DEVICES)
            .map_err(|e| format!("spawn console: {}", e.name()))?;
    let r = msg::receive_data(MAIN_QUEUE, &mut []).map_err(|e| e.name())?;
    check(r.sender == driver && r.message[0] == protocols::console::READY, "the driver says it is ready")?;
    let link = msg::open_link(driver, Queue(r.message[1] as u32)).map_err(|e| e.name())?;
    let text = b"console driver test line\n";
    let (reply, _) = msg::call(link, &[protocols::console::OP_WRITE, 0, 0, 0], text, &mut [])
        .map_err(|e| format!("write: {}", e.name()))?;
    check(reply[0] == text.len() as u64, "the write is acknowledged with its length")?;
    let stats =
        |link| msg::call(link, &[protocols::console::OP_STATS, 0, 0, 0], &[], &mut []).map(|(w, _)| w);
    let before = stats(link).map_err(|e| e.name())?;
    // A program whose console is the driver prints through it.
    sys::set_bootstrap(abi::bootstrap::CONSOLE, driver, r.message[1] as u32).map_err(|e| e.name())?;
    let result = run_printing_child();
    sys::set_bootstrap(abi::bootstrap::CONSOLE, Pid(0), 0).map_err(|e| e.name())?;
    result?;
    let after = stats(link).map_err(|e| e.name())?;
    check(after[0] > before[0] && after[1] > before[1], "the child's output went through the driver")?;
    sys::kill(driver).map_err(|e| e.name())?;
    let (_, status) = sys::wait(Some(driver)).map_err(|e| e.name())?;
    check(status == ExitStatus::Killed, "the driver ends when killed")?;
    msg::close_link(link).map_err(|e| e.name())?;
    // Its line was released with it.
    expect_status_with_rights("uart-irq", DEVICES, ExitStatus::Exited(104))
}

fn run_printing_child() -> TestResult {
    let pid = sys::spawn("hello", "").map_err(|e| e.name())?;
    let (_, status) = sys::wait(Some(pid)).map_err(|e| e.name())?;
    check(status == ExitStatus::Exited(0), "hello ran with the console driver")
}
