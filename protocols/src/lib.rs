//! The interfaces of Ridgeback's servers and drivers: what each request
//! message holds and what its reply holds. Client and server both use
//! these definitions, so they cannot disagree (as `abi` does for the
//! kernel). Messages are `abi::msg::Message` (four words) plus up to one
//! page of data; requests are `call`s.
//!
//! What this crate is not: client or server code. It is `no_std`, free of
//! `unsafe`, and holds only constants and small encode/decode helpers.

#![no_std]
#![forbid(unsafe_code)]

/// Where a server tells the process that started it (init, or a test
/// program) that it serves: the starter's first queue gets the server's
/// `[READY, queue, ..]` message (each server's `READY` word is in its
/// module here).
pub const STARTER_QUEUE: u32 = 0;

/// init as the supervisor of the servers and drivers it starts (MINIX 3's
/// reincarnation server; docs/reliability.md, "Restarting dead servers and
/// drivers"). init hears of its children's ends from the kernel
/// (`set_exit_queue`, a `ChildExit` message on [`init::QUEUE`]) and starts
/// again those whose init-file line says `restart`.
pub mod init {
    /// init's second queue: its children's exit reports, the monitor's
    /// forwarded requests ([`OP_KILL`]) and anyone's [`OP_STATUS`] calls.
    pub const QUEUE: u32 = 1;
    /// A one-way `send_data` from the monitor only (it checked that the
    /// asker is root: `monitor::OP_SERVER_KILL`): end the supervised
    /// program named by the data, as a fault would. No reply.
    pub const OP_KILL: u64 = 1;
    /// A call from anyone: the state of the supervised program named by
    /// the data. Reply words: [state ([`state`]), its kernel pid (0: none
    /// now), restarts so far, quick deaths in a row]; `ENOENT` in word 0
    /// (as `unix::result`) for a name init does not supervise.
    pub const OP_STATUS: u64 = 2;
    /// A one-way `send_data` from the monitor only (`monitor::OP_SERVER_START`,
    /// root only): start the boot-image program named by the data as a
    /// supervised driver with no rights and no device entry (tests use it
    /// with a program that dies at once, to see init give up).
    pub const OP_START: u64 = 3;
    /// Word 0 of an [`OP_STATUS`] reply.
    pub mod state {
        /// Running (started and ready).
        pub const RUNNING: u64 = 1;
        /// Ended by a fault; waiting out its back-off before the next start.
        pub const WAITING: u64 = 2;
        /// Ended too often in a row: init gave up and will not start it again.
        pub const GAVE_UP: u64 = 3;
        /// Ended cleanly (exit status 0), or not marked `restart`: not restarted.
        pub const STOPPED: u64 = 4;
    }
}

/// The serial console driver (drivers/console).
///
/// The driver serves calls on its queue 0. Word 0 of a request is the
/// operation; the reply's `rax` is the byte count or an error.
pub mod console {
    /// Write the call's data to the line. Reply: bytes written.
    pub const OP_WRITE: u64 = 1;
    /// Read what has been typed: waits for at least one byte, returns at
    /// most word 1 of the request. Reply: the bytes as data.
    pub const OP_READ: u64 = 2;
    /// Statistics. Reply words: [write requests, bytes written,
    /// interrupts taken, bytes read].
    pub const OP_STATS: u64 = 3;
    /// Hand all typed input to the caller (the console device manager):
    /// word 1 = the caller's queue. From then on the driver does not echo,
    /// and sends each batch of typed bytes with `send` as a message
    /// `[INPUT, count, bytes 0..8, bytes 8..16]` (little-endian).
    pub const OP_SUBSCRIBE: u64 = 4;
    /// Word 0 of an input message.
    pub const INPUT: u64 = 0x0049_4e50_5554;
    /// Most bytes one input message carries.
    pub const INPUT_BYTES_PER_MESSAGE: usize = 16;
    /// The driver's request queue.
    pub const QUEUE: u32 = 0;
    /// The COM1 UART's I/O ports and interrupt line (PC standard).
    pub const COM1_PORT: u16 = 0x3f8;
    pub const COM1_PORT_COUNT: u16 = 8;
    pub const COM1_IRQ: u64 = 4;
    /// Word 0 of the driver's "ready" message to the process that started it.
    pub const READY: u64 = 0x0052_4541_4459;
    /// Input statistics. Reply words: [bytes sent to the subscriber, bytes
    /// dropped because the subscriber's queue was full or it had ended,
    /// the subscriber's pid (0 = none), its queue].
    pub const OP_INPUT_STATS: u64 = 5;
    /// A one-way `send` from the driver's starter (init) only: word 1 =
    /// the kernel pid of the one process that may take the typed input
    /// (`OP_SUBSCRIBE`, `OP_READ`): the terminal manager init started.
    /// A subscriber that is not it is dropped; input typed meanwhile
    /// waits for it. Until init names one, nobody may.
    pub const OP_SET_INPUT_OWNER: u64 = 6;
    /// Reply word 0 of `OP_SUBSCRIBE` or `OP_READ` from a process that is
    /// not the input's owner (`OP_SET_INPUT_OWNER`): typed input goes to
    /// the terminal manager init named, and to no one else, even while
    /// that manager is being restarted.
    pub const NOT_THE_OWNER: u64 = u64::MAX - 1;
    /// Reply word 0 of any other refused request.
    pub const REFUSED: u64 = u64::MAX;
}

/// The first pager (servers/pager): zero-filled pages and copy-on-write
/// copies of template pages, for regions its clients register.
///
/// A client registers a region with a call (word 1 = start, word 2 = length
/// in bytes), then hands the region to the pager with `sys::set_pager`.
pub mod pager {
    /// Pages of the region start zero-filled and writable.
    pub const OP_REGISTER_ZERO: u64 = 1;
    /// Every page of the region starts as a copy-on-write share of the
    /// template page sent as the call's data (up to one page, the rest zero).
    pub const OP_REGISTER_TEMPLATE: u64 = 2;
    /// Faults in the region are refused: the faulting process ends.
    pub const OP_REGISTER_REFUSE: u64 = 3;
    /// Faults in the region are never answered (for tests of pagers that die).
    pub const OP_REGISTER_STALL: u64 = 4;
    /// Reply word 0: how many bytes of template `word 1` differ from what
    /// was registered (0 = untouched by clients' writes).
    pub const OP_CHECK_TEMPLATE: u64 = 5;
    /// The pager's queue.
    pub const QUEUE: u32 = 0;
    /// Word 0 of the pager's "ready" message to the process that started it.
    pub const READY: u64 = 0x0050_4147_4552;
}
/// Memory accounting, answered by the long-lived servers whose memory
/// grows as caches (memfs, the monitor, virtio-blk, ext2fs): the soak subtracts
/// each cache by its owner's own counter instead of a slack
/// (docs/reliability.md, "Soak"). A call on the server's request queue,
/// to anyone: the figures say how much, never what.
pub mod heap {
    /// Reply words: [heap bytes in use (the allocator's live blocks), heap
    /// bytes (the break: every heap page the process may have touched),
    /// bytes of bounded caches outside the heap (virtio-blk's DMA
    /// buffers), 0]. A number no protocol's operations reach.
    pub const OP_HEAP_STATS: u64 = 0x4845_4150;
}
pub mod net;
pub mod unix;

/// Servers' boot options: words `server.option=value` on the kernel
/// command line (before any `--`), which the kernel leaves alone and a
/// server reads with the `kernel_options` call.
pub mod options {
    /// The value of `key` (e.g. `monitor.files`) on `cmdline`; the last
    /// occurrence wins, as for kernel options.
    pub fn lookup<'a>(cmdline: &'a str, key: &str) -> Option<&'a str> {
        cmdline
            .split_ascii_whitespace()
            .take_while(|w| *w != "--")
            .filter_map(|w| w.split_once('='))
            .filter(|(k, _)| *k == key)
            .map(|(_, v)| v)
            .last()
    }

    /// A size in bytes: digits with an optional `K`, `M` or `G` suffix
    /// (powers of 1024, either case): `ramdisk.size=64M`. `None` for
    /// anything else, or a size that does not fit in a u64.
    pub fn parse_size_bytes(value: &str) -> Option<u64> {
        let (digits, shift) = match value.as_bytes().last()? {
            b'k' | b'K' => (&value[..value.len() - 1], 10),
            b'm' | b'M' => (&value[..value.len() - 1], 20),
            b'g' | b'G' => (&value[..value.len() - 1], 30),
            _ => (value, 0),
        };
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let number: u64 = digits.parse().ok()?;
        number.checked_mul(1u64 << shift)
    }

    #[cfg(test)]
    mod tests {
        #[test]
        fn sizes_take_binary_suffixes() {
            use super::parse_size_bytes as p;
            assert_eq!(p("0"), Some(0));
            assert_eq!(p("512"), Some(512));
            assert_eq!(p("64M"), Some(64 << 20));
            assert_eq!(p("64m"), Some(64 << 20));
            assert_eq!(p("16K"), Some(16 << 10));
            assert_eq!(p("1G"), Some(1 << 30));
            for bad in ["", "M", "-1", "1.5M", "12T", " 1", "0x10", "99999999999999999999", "17179869184G"] {
                assert_eq!(p(bad), None, "{bad}");
            }
        }

        #[test]
        fn lookup_finds_the_last_before_init_args() {
            let line = "cpus=2 monitor.files=per-file monitor.files=shared -- monitor.files=x";
            assert_eq!(super::lookup(line, "monitor.files"), Some("shared"));
            assert_eq!(super::lookup(line, "vm.x"), None);
        }
    }
}
