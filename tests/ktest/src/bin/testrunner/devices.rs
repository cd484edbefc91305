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

/// MSI-X (docs/devices.md, "MSI-X"): the calls' rules (tchild
/// `msix-calls`, on the ktest boot's virtio-net card, which no driver
/// takes); when the driver ends, MSI-X is off on its function, and the
/// next driver gets the vector the dead one had: freed, not leaked.
pub fn msix_routes_are_the_kernel_s() -> TestResult {
    // The same search as the child's (tchild.rs `msix_function`),
    // through configuration reads, which need no claim.
    let mut found = None;
    for device in 0..32u8 {
        let address = sys::pci_address(0, device, 0);
        let read = |offset: u16| sys::pci_config_read(address, offset, 4).unwrap_or(u32::MAX);
        if read(0) & 0xffff != 0x1af4 || read(0x04) & (1 << 20) == 0 {
            continue;
        }
        let mut pointer = (read(0x34) & 0xfc) as u16;
        while pointer >= 0x40 && found.is_none() {
            let header = read(pointer);
            if header & 0xff == 0x11 {
                found = Some((address, pointer));
            }
            pointer = ((header >> 8) & 0xfc) as u16;
        }
    }
    let (address, capability) =
        found.ok_or("no virtio function with MSI-X on bus 0 (the ktest boot attaches one)")?;
    let control = || sys::pci_config_read(address, capability + 2, 2).unwrap_or(u32::MAX);
    let vector = |status| match status {
        ExitStatus::Exited(v) if v >= 0x40 => Ok(v),
        other => Err(format!("tchild msix-calls ended {other:?}")),
    };
    let first = vector(crate::util::run_with_rights("msix-calls", DEVICES)?)?;
    check(control() & (1 << 15) == 0, "MSI-X is off once its driver has ended")?;
    let second = vector(crate::util::run_with_rights("msix-calls", DEVICES)?)?;
    check(second == first, "the next driver gets the vector the dead one had")?;
    // Without the right, nothing (tchild `device-calls-refused` checks
    // both calls too).
    let refused = abi::decode_return(sys::raw(abi::Call::MsixRoute as u64, address, 0, 0, 0, 0).0);
    check(refused == Err(Error::PermissionDenied), "a route of a function the runner does not hold")
}

/// PCI command register bits (PCI Local Bus 3.0 §6.2.2).
const PCI_COMMAND: u16 = 0x04;
const PCI_BUS_MASTER: u32 = 1 << 2;
const PCI_INTERRUPT_DISABLE: u32 = 1 << 10;
/// Class code of bridges (the top byte at 0x08): the kernel leaves them alone.
const PCI_CLASS_BRIDGE: u32 = 0x06;

/// Ordinary functions (header type 0) on bus 0 that are not bridges: the
/// `pc` machine's IDE controller, VGA and NIC, whatever this QEMU has.
fn ordinary_functions() -> alloc::vec::Vec<(u8, u8)> {
    let mut found = alloc::vec::Vec::new();
    for device in 0..32u8 {
        for function in 0..8u8 {
            let address = sys::pci_address(0, device, function);
            let read = |offset| sys::pci_config_read(address, offset, 4).unwrap_or(u32::MAX);
            let (id, header, class) = (read(0), (read(0x0c) >> 16) & 0x7f, read(0x08) >> 24);
            if id & 0xffff != 0xffff && header == 0 && class != PCI_CLASS_BRIDGE {
                found.push((device, function));
            }
        }
    }
    found
}

/// Issue 16: when a driver ends, by `exit` or by a fault, the kernel turns
/// off bus mastering (and INTx) of the function it held, before its DMA
/// frames are freed; the next driver turns it on again; a function another
/// process holds is left as it is.
pub fn dead_drivers_device_stops_dma() -> TestResult {
    let functions = ordinary_functions();
    let Some(&(device, function)) = functions.first() else {
        return Err(alloc::string::String::from("no ordinary PCI function on bus 0 to drive"));
    };
    let address = sys::pci_address(0, device, function);
    let command = || sys::pci_config_read(address, PCI_COMMAND, 2).map_err(|e| e.name());
    // A bystander held by the runner, bus mastering on through the test.
    let bystander = functions.get(1).map(|&(d, f)| sys::pci_address(0, d, f));
    let mut bystander_was = 0;
    if let Some(b) = bystander {
        sys::pci_claim(b).map_err(|e| format!("claim the bystander: {}", e.name()))?;
        bystander_was = sys::pci_config_read(b, PCI_COMMAND, 2).map_err(|e| e.name())?;
        sys::pci_config_write(b, PCI_COMMAND, 2, bystander_was | PCI_BUS_MASTER).map_err(|e| e.name())?;
    }
    let result = (|| -> TestResult {
        let args = format!("bus-master {device} {function} exit");
        expect_status_with_rights(&args, DEVICES, ExitStatus::Exited(0))?;
        let after_exit = command()?;
        check(after_exit & PCI_BUS_MASTER == 0, "bus mastering is off once the driver has exited")?;
        check(after_exit & PCI_INTERRUPT_DISABLE != 0, "INTx is disabled once the driver has exited")?;
        // A driver that dies by a fault; its restart (a new driver of the
        // same function) could turn bus mastering on again (it checks).
        let args = format!("bus-master {device} {function} fault");
        let want = ExitStatus::Fault { vector: abi::vector::PAGE_FAULT, address: 0xdead_0000 };
        expect_status_with_rights(&args, DEVICES, want)?;
        check(command()? & PCI_BUS_MASTER == 0, "bus mastering is off once the driver has faulted")?;
        if let Some(b) = bystander {
            let now = sys::pci_config_read(b, PCI_COMMAND, 2).map_err(|e| e.name())?;
            check(now & PCI_BUS_MASTER != 0, "a function the dead driver did not hold keeps bus mastering")?;
        }
        Ok(())
    })();
    if let Some(b) = bystander {
        let _ = sys::pci_config_write(b, PCI_COMMAND, 2, bystander_was);
    }
    result
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
