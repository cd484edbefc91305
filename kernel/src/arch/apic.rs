//! Local APIC (timer, inter-processor interrupts, EOI), I/O APIC, and the
//! legacy PIC (masked) and PIT (used once, to calibrate).
//!
//! References: Intel SDM vol. 3A ch. 10 (APIC); 82093AA I/O APIC datasheet;
//! Intel 8254 PIT datasheet.

use super::cpu::{inb, outb, rdtsc};
use super::phys::phys_to_virt;
use core::sync::atomic::{AtomicU32, AtomicU64, Ordering};

pub const LAPIC_PHYS: u64 = 0xfee0_0000;
const REG_ID: u64 = 0x20;
const REG_EOI: u64 = 0xb0;
const REG_SPURIOUS: u64 = 0xf0;
const REG_ICR_LOW: u64 = 0x300;
const REG_ICR_HIGH: u64 = 0x310;
const REG_LVT_TIMER: u64 = 0x320;
const REG_TIMER_INITIAL: u64 = 0x380;
const REG_TIMER_CURRENT: u64 = 0x390;
const REG_TIMER_DIVIDE: u64 = 0x3e0;

/// Interrupt vectors the kernel uses. Device line `gsi` of the I/O APIC
/// uses `IRQ_BASE + gsi`.
pub const IRQ_BASE: u8 = 0x20;
/// The first of the vectors MSI-X entries are routed to (`devices.rs`,
/// `msix_route`): `MSIX_VECTORS` of them, above the I/O APIC's lines and
/// below the kernel's own vectors, so no route can name those.
pub const MSIX_VECTOR_BASE: u8 = 0x40;
const _: () = assert!(
    IRQ_BASE as usize + kernel_core::limits::IRQ_LINES <= MSIX_VECTOR_BASE as usize
        && MSIX_VECTOR_BASE as usize + kernel_core::limits::MSIX_VECTORS <= VECTOR_TIMER as usize,
    "the MSI-X vectors lie between the lines' vectors and the kernel's own"
);
pub const VECTOR_TIMER: u8 = 0xf0;
pub const VECTOR_RESCHEDULE: u8 = 0xf1;
pub const VECTOR_HALT: u8 = 0xf2;
pub const VECTOR_SPURIOUS: u8 = 0xff;

/// LAPIC timer counts per millisecond (divide-by-16), measured at boot.
static TIMER_COUNTS_PER_MS: AtomicU32 = AtomicU32::new(0);
/// TSC ticks per second, measured at boot.
static TSC_HZ: AtomicU64 = AtomicU64::new(0);
static TSC_AT_BOOT: AtomicU64 = AtomicU64::new(0);

fn lapic_read(reg: u64) -> u32 {
    // SAFETY: the LAPIC page is mapped uncached in the direct map
    // (memory::init) and `reg` is a valid register offset.
    unsafe { ((phys_to_virt(LAPIC_PHYS) + reg) as *const u32).read_volatile() }
}

fn lapic_write(reg: u64, value: u32) {
    // SAFETY: as in lapic_read.
    unsafe { ((phys_to_virt(LAPIC_PHYS) + reg) as *mut u32).write_volatile(value) }
}

pub fn lapic_id() -> u32 {
    lapic_read(REG_ID) >> 24
}

/// Mask both 8259 PICs: the BIOS leaves the timer on vector 8, the
/// double-fault vector.
pub fn mask_legacy_pic() {
    // SAFETY: standard 8259 remap-and-mask sequence; the PICs are unused.
    unsafe {
        outb(0x20, 0x11);
        outb(0xa0, 0x11);
        outb(0x21, 0xe0);
        outb(0xa1, 0xe8);
        outb(0x21, 4);
        outb(0xa1, 2);
        outb(0x21, 1);
        outb(0xa1, 1);
        outb(0x21, 0xff);
        outb(0xa1, 0xff);
    }
}

/// Enable this CPU's local APIC with the spurious vector.
pub fn enable_local() {
    lapic_write(REG_SPURIOUS, 0x100 | VECTOR_SPURIOUS as u32);
}

pub fn eoi() {
    lapic_write(REG_EOI, 0);
}

/// Measure the TSC and the LAPIC timer against PIT channel 2 over a 10 ms
/// window. Done once, on the boot CPU; every CPU's timer runs at the same
/// rate.
///
/// The window is measured `CALIBRATION_TRIES` times and the shortest
/// kept: the loop sees the PIT's output only when it runs, so a vCPU that
/// the host deschedules inside the window (QEMU under TCG on a busy host)
/// measures it long; the TSC is read as soon as the gate opens, so only a
/// pause of a few instructions could make it short. With one 50 ms try,
/// boots of the same machine on a host loaded 15 on 2 cores read 2.60 to
/// 3.79 GHz for the host's 2.596 GHz TSC, and every time a benchmark
/// converted from ticks was short by that much; with three, still up to
/// 2.91 GHz (`docs/benchmarks.md`, "B results"). Short windows are less
/// often hit, and ten of them cost less boot time than the one 50 ms
/// window did with three tries.
pub fn calibrate() {
    const PIT_HZ: u64 = 1_193_182;
    const WINDOW_MS: u64 = 10;
    const CALIBRATION_TRIES: usize = 10;
    let pit_count = (PIT_HZ * WINDOW_MS / 1000) as u16;
    lapic_write(REG_TIMER_DIVIDE, 0x3); // divide by 16
    lapic_write(REG_LVT_TIMER, 1 << 16); // masked, one-shot
    let mut shortest = (u64::MAX, 0u32);
    for _ in 0..CALIBRATION_TRIES {
        // SAFETY: PIT channel 2 and port 0x61 (its gate) are unused otherwise.
        let (tsc_ticks, lapic_counts) = unsafe {
            outb(0x61, (inb(0x61) & !0x02) | 0x01);
            outb(0x43, 0xb0); // channel 2, lobyte/hibyte, mode 0
            outb(0x42, pit_count as u8);
            outb(0x42, (pit_count >> 8) as u8);
            let gate = inb(0x61) & !0x01;
            outb(0x61, gate);
            outb(0x61, gate | 0x01);
            let t0 = rdtsc();
            lapic_write(REG_TIMER_INITIAL, u32::MAX);
            while inb(0x61) & 0x20 == 0 {
                core::hint::spin_loop();
            }
            let t1 = rdtsc();
            let counts = u32::MAX - lapic_read(REG_TIMER_CURRENT);
            lapic_write(REG_TIMER_INITIAL, 0);
            (t1 - t0, counts)
        };
        if tsc_ticks < shortest.0 {
            shortest = (tsc_ticks, lapic_counts);
        }
    }
    let (tsc_ticks, lapic_counts) = shortest;
    TSC_HZ.store(tsc_ticks * 1000 / WINDOW_MS, Ordering::Relaxed);
    TIMER_COUNTS_PER_MS.store((lapic_counts as u64 / WINDOW_MS).max(1) as u32, Ordering::Relaxed);
    TSC_AT_BOOT.store(rdtsc(), Ordering::Relaxed);
}

pub fn tsc_hz() -> u64 {
    TSC_HZ.load(Ordering::Relaxed)
}

/// The TSC at uptime 0.
pub fn boot_tsc() -> u64 {
    TSC_AT_BOOT.load(Ordering::Relaxed)
}

pub fn uptime_ns() -> u64 {
    let ticks = rdtsc().wrapping_sub(TSC_AT_BOOT.load(Ordering::Relaxed));
    (ticks as u128 * 1_000_000_000 / tsc_hz().max(1) as u128) as u64
}

/// Start this CPU's periodic timer.
pub fn start_timer(period_ms: u64) {
    lapic_write(REG_TIMER_DIVIDE, 0x3);
    lapic_write(REG_LVT_TIMER, (1 << 17) | VECTOR_TIMER as u32); // periodic
    let counts = TIMER_COUNTS_PER_MS.load(Ordering::Relaxed) as u64 * period_ms;
    lapic_write(REG_TIMER_INITIAL, counts.min(u32::MAX as u64) as u32);
}

fn wait_icr_idle() {
    while lapic_read(REG_ICR_LOW) & (1 << 12) != 0 {
        core::hint::spin_loop();
    }
}

fn send_icr(apic_id: u32, low: u32) {
    wait_icr_idle();
    lapic_write(REG_ICR_HIGH, apic_id << 24);
    lapic_write(REG_ICR_LOW, low);
    wait_icr_idle();
}

/// A fixed-vector interrupt to one CPU.
pub fn send_ipi(apic_id: u32, vector: u8) {
    send_icr(apic_id, vector as u32);
}

/// A fixed-vector interrupt to every CPU but this one.
pub fn send_ipi_all_others(vector: u8) {
    wait_icr_idle();
    lapic_write(REG_ICR_HIGH, 0);
    lapic_write(REG_ICR_LOW, (3 << 18) | vector as u32);
}

pub fn send_init(apic_id: u32) {
    send_icr(apic_id, 0x4500);
}

pub fn send_startup(apic_id: u32, page: u8) {
    send_icr(apic_id, 0x4600 | page as u32);
}

/// Busy-wait using the TSC (only after `calibrate`).
pub fn delay_us(us: u64) {
    let end = rdtsc() + tsc_hz() / 1_000_000 * us;
    while rdtsc() < end {
        core::hint::spin_loop();
    }
}

/// The I/O APIC: device interrupt lines. All lines start masked; a driver
/// that claims a line unmasks it. Only firmware discovery makes one, at the
/// address the MADT gives (firmware.rs), so its registers are never
/// anything but the device's.
#[derive(Clone, Copy, Debug)]
pub struct IoApic {
    phys: u64,
}

impl IoApic {
    pub(super) fn at(phys: u64) -> IoApic {
        IoApic { phys }
    }

    pub fn phys(&self) -> u64 {
        self.phys
    }

    fn select(&self, reg: u32) -> *mut u32 {
        let base = phys_to_virt(self.phys);
        // SAFETY: the I/O APIC page is mapped uncached (memory::init);
        // IOREGSEL at offset 0 selects the register IOWIN reads.
        unsafe { (base as *mut u32).write_volatile(reg) };
        (base + 0x10) as *mut u32
    }

    fn read(&self, reg: u32) -> u32 {
        // SAFETY: IOWIN after IOREGSEL; the kernel lock serialises users.
        unsafe { self.select(reg).read_volatile() }
    }

    fn write(&self, reg: u32, value: u32) {
        // SAFETY: as in read.
        unsafe { self.select(reg).write_volatile(value) }
    }

    pub fn line_count(&self) -> u32 {
        ((self.read(1) >> 16) & 0xff) + 1
    }

    /// Route line `line` to `vector` on the CPU with `apic_id`, masked or not.
    /// `level`/`active_low` come from the MADT's overrides (ISA lines are
    /// edge-triggered, active high, unless overridden).
    pub fn route(&self, line: u32, vector: u8, apic_id: u32, level: bool, active_low: bool, masked: bool) {
        let low =
            vector as u32 | ((active_low as u32) << 13) | ((level as u32) << 15) | ((masked as u32) << 16);
        self.write(0x11 + 2 * line, apic_id << 24);
        self.write(0x10 + 2 * line, low);
    }

    pub fn mask_all(&self) {
        for line in 0..self.line_count() {
            self.write(0x10 + 2 * line, 1 << 16);
            self.write(0x11 + 2 * line, 0);
        }
    }
}
