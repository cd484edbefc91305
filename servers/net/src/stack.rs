//! The stack and its loop: the two interfaces (loopback, and the card
//! when there is one), their socket sets, DHCP or a fixed address, the
//! timer, and the order in which the cradle does things.
//!
//! Two interfaces, two socket sets: a socket lives in the set of the
//! interface its traffic uses (`LO` for 127/8, `ETH` for the rest), so
//! the stack never offers a loopback segment to the card or the reverse;
//! a listener on the any-address listens in both. smoltcp polls one set
//! per interface.

use crate::link::{self, EthLink, Pool};
use crate::ports::Ports;
use crate::state::{AddrSource, ETH, LO, Net};
use crate::timer;
use abi::msg::Kind;
use alloc::collections::BTreeMap;
use alloc::rc::Rc;
use alloc::string::String;
use alloc::vec::Vec;
use core::cell::RefCell;
use core::fmt::Write;
use protocols::net::eth;
use protocols::net::locks::LockPage;
use runtime::clock::Clock;
use runtime::msg::{self, Link, Queue};
use runtime::{println, sys};
use smoltcp::iface::{Config, Interface, SocketSet};
use smoltcp::phy::{Loopback, Medium};
use smoltcp::socket::dhcpv4;
use smoltcp::time::Instant;
use smoltcp::wire::{EthernetAddress, HardwareAddress, IpAddress, IpCidr, Ipv4Address, Ipv4Cidr};

fn now_of(clock: &Clock) -> Instant {
    Instant::from_micros((clock.now_ns() / 1000) as i64)
}

impl Net {
    pub fn new(queue: Queue, timer: Link) -> Net {
        let clock = Clock::new();
        let seed = sys::rdtsc() ^ 0x9e37_79b9_7f4a_7c15;
        let now = now_of(&clock);
        let mut lo_dev = Loopback::new(Medium::Ip);
        let mut lo_config = Config::new(HardwareAddress::Ip);
        lo_config.random_seed = seed;
        let mut lo = Interface::new(lo_config, &mut lo_dev, now);
        lo.update_ip_addrs(|a| {
            let _ = a.push(IpCidr::new(IpAddress::v4(127, 0, 0, 1), 8));
        });
        let pool: Pool = Rc::new(RefCell::new(Vec::new()));
        let (mode, net_cpu) = crate::locking::modes_from(&kernel_options());
        let locks = alloc::boxed::Box::new(LockPage::default());
        locks.magic.store(protocols::net::locks::MAGIC, core::sync::atomic::Ordering::Release);
        locks.mode.store(mode, core::sync::atomic::Ordering::Release);
        let mut n = Net {
            queue,
            timer,
            armed_ns: None,
            clock,
            ifaces: alloc::vec![lo],
            sets: [SocketSet::new(Vec::new()), SocketSet::new(Vec::new())],
            lo_dev,
            eth: None,
            dhcp: None,
            addr_source: AddrSource::Dhcp,
            gateway: None,
            rxbuf: link::take_buffer(&pool),
            pool,
            monitor: sys::bootstrap(abi::bootstrap::MONITOR).map(|(p, _)| p),
            socks: BTreeMap::new(),
            claims: BTreeMap::new(),
            orphans: Vec::new(),
            parked: Vec::new(),
            ports: Ports::default(),
            buffer_bytes: 0,
            seed,
            next_serial: 1,
            locks,
            mode,
            net_cpu,
            pinned: false,
            me: sys::getpid().0,
            tsc_hz: sys::info(abi::InfoKey::TscHz).max(1),
            lock_epoch_tsc: sys::rdtsc(),
            backlog: Vec::new(),
            stack_due: false,
            retry_lock: false,
            queued: BTreeMap::new(),
            close_after: Vec::new(),
            queued_writes: 0,
            queued_write_bytes: 0,
            rings: Vec::new(),
            rings_on: rings_option(&kernel_options()),
            ring_stats: crate::ring_state::RingStats::default(),
            ring_retry_ns: None,
        };
        n.attach_card();
        n
    }

    /// Find the card's driver by its device entry and attach to it; on
    /// success the card's interface exists, configured by DHCP or by
    /// `net.addr=`.
    fn attach_card(&mut self) {
        let Some(driver) = crate::device::find_driver() else { return };
        let Ok(link) = msg::open_link(driver.0, Queue(driver.1)) else { return };
        let attached = msg::call(link, &[eth::OP_ATTACH, self.queue.0 as u64, 0, 0], &[], &mut []);
        let (mut dev, mac) = match attached.map(|(w, _)| (protocols::unix::result(w[0]), w[1])) {
            Ok((Ok(_), mac_word)) => {
                let mac = eth::mac_of(mac_word);
                (EthLink::new(link, driver.0, mac, self.pool.clone()), mac)
            }
            // Not yet named to the driver by init (it does so right after
            // starting this server): down, tried again shortly.
            Ok((Err(protocols::unix::errno::EPERM), _)) => {
                let now_ns = self.clock.now_ns();
                (EthLink::refused(link, self.pool.clone(), now_ns), link::STAND_IN_MAC)
            }
            _ => {
                println!("net: the card's driver refused the link");
                let _ = msg::close_link(link);
                return;
            }
        };
        let mut config = Config::new(HardwareAddress::Ethernet(EthernetAddress(mac)));
        config.random_seed = self.seed.rotate_left(17);
        let mut iface = Interface::new(config, &mut dev, now_of(&self.clock));
        let options = kernel_options();
        match protocols::options::lookup(&options, "net.addr").and_then(parse_cidr) {
            Some(cidr) => {
                iface.update_ip_addrs(|a| {
                    let _ = a.push(IpCidr::Ipv4(cidr));
                });
                let gw = protocols::options::lookup(&options, "net.gw")
                    .and_then(parse_ipv4)
                    .unwrap_or(Ipv4Address::new(10, 0, 2, 2));
                let _ = iface.routes_mut().add_default_ipv4_route(gw);
                self.gateway = Some(gw);
                self.addr_source = AddrSource::Fixed;
            }
            None => {
                if let Some(bad) = protocols::options::lookup(&options, "net.addr")
                    && bad != "dhcp"
                {
                    println!("net: net.addr={bad} is not A.B.C.D/P or dhcp; using DHCP");
                }
                self.dhcp = Some(self.sets[ETH].add(dhcpv4::Socket::new()));
            }
        }
        self.ifaces.push(iface);
        self.eth = Some(dev);
    }

    pub fn has_card(&self) -> bool {
        self.eth.is_some()
    }

    pub fn now(&self) -> Instant {
        now_of(&self.clock)
    }

    pub fn now_ns(&self) -> u64 {
        self.clock.now_ns()
    }

    /// A fresh sparse number: a serial in the high half, randomness below.
    pub fn fresh_id(&mut self) -> u64 {
        // xorshift: not secure, only hard to guess by accident.
        let mut x = self.seed ^ sys::rdtsc();
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.seed = x;
        let serial = self.next_serial;
        self.next_serial += 1;
        (serial << 32) | (x & 0xffff_ffff) | 1
    }

    /// The card's address, once it has one.
    pub fn eth_addr(&self) -> Option<Ipv4Address> {
        self.ifaces.get(ETH).and_then(|i| i.ipv4_addr())
    }

    pub fn serve(&mut self) -> i32 {
        if self.mode == protocols::net::locks::MODE_CLASSIC {
            return self.serve_classic();
        }
        // Seed 003's designated CPU: the stack runs there and nowhere
        // else (classic runs it on its callers' CPUs instead).
        self.pinned = match sys::set_affinity(abi::Pid(0), Some(self.net_cpu)) {
            Ok(()) => true,
            Err(e) => {
                println!("net: cannot pin the stack to cpu {}: {}", self.net_cpu, e.name());
                false
            }
        };
        loop {
            let due_now = self.next_delay_ns() == Some(0);
            if !due_now {
                self.arm_timer();
            }
            let mut buf = core::mem::take(&mut self.rxbuf);
            let first = if due_now {
                msg::try_receive(self.queue, &mut buf).ok().flatten()
            } else {
                msg::receive_data(self.queue, &mut buf).ok()
            };
            self.rxbuf = buf;
            // The designated CPU's turn: the lock once per batch of packets.
            self.take_global(false);
            if let Some(r) = first {
                self.take(r);
                for _ in 0..crate::BATCH {
                    let mut buf = core::mem::take(&mut self.rxbuf);
                    let next = msg::try_receive(self.queue, &mut buf);
                    self.rxbuf = buf;
                    match next {
                        Ok(Some(r)) => self.take(r),
                        _ => break,
                    }
                }
            }
            self.run_stack();
            self.drop_global();
        }
    }

    /// One message: a frame, a tick, a request, or a fault in a caller's
    /// lock window.
    pub fn take(&mut self, r: msg::Received) {
        match r.kind {
            Kind::Data if r.message[0] == eth::RX => {
                if let Some(dev) = self.eth.as_mut() {
                    let fresh = link::take_buffer(&self.pool);
                    let frame = core::mem::replace(&mut self.rxbuf, fresh);
                    dev.push(frame, r.len);
                }
            }
            Kind::Short if r.message[0] == timer::TICK => self.armed_ns = None,
            Kind::Data if r.message[0] == protocols::net::OP_WRITE_QUEUED => {
                let len = r.len.min(self.rxbuf.len()).min(r.message[2] as usize);
                let data = core::mem::take(&mut self.rxbuf);
                self.queued_write(r.message[1], &data[..len]);
                self.rxbuf = data;
            }
            Kind::PageFault => {
                let m = r.message;
                if !self.ring_fault(abi::Pid(m[0]), m[1], m[3]) {
                    self.page_fault(m);
                }
            }
            Kind::Short if r.message[0] == protocols::net::OP_RING_DRAINED => {
                // The stack's pass after this batch refills the ring.
                self.ring_stats.drained += 1;
            }
            Kind::Call => {
                let data = core::mem::take(&mut self.rxbuf);
                self.request(r.sender, r.reply, r.message, &data[..r.len.min(data.len())]);
                self.rxbuf = data;
            }
            _ => {}
        }
    }

    /// Poll the interfaces and finish what the poll made possible, until
    /// nothing changes (bounded: a busy stack is polled again after the
    /// next batch of messages).
    pub fn run_stack(&mut self) {
        self.tend_link();
        for _ in 0..8 {
            self.drain_queued();
            let changed = self.poll_interfaces();
            self.dhcp_events();
            let mut progressed = self.service();
            // Reads take what the rings hold without the stack (rings.rs).
            progressed |= self.fill_rings();
            if !changed && !progressed && !self.eth.as_ref().is_some_and(EthLink::has_frames) {
                break;
            }
        }
    }

    /// Whether any socket's state may have changed.
    fn poll_interfaces(&mut self) -> bool {
        let now = self.now();
        let mut changed = false;
        let [lo_set, eth_set] = &mut self.sets;
        changed |= self.ifaces[LO].poll(now, &mut self.lo_dev, lo_set) != smoltcp::iface::PollResult::None;
        if let (Some(dev), Some(iface)) = (self.eth.as_mut(), self.ifaces.get_mut(ETH)) {
            changed |= iface.poll(now, dev, eth_set) != smoltcp::iface::PollResult::None;
        }
        changed
    }

    fn dhcp_events(&mut self) {
        let Some(h) = self.dhcp else { return };
        let event = self.sets[ETH].get_mut::<dhcpv4::Socket>(h).poll();
        let Some(iface) = self.ifaces.get_mut(ETH) else { return };
        match event {
            Some(dhcpv4::Event::Configured(config)) => {
                iface.update_ip_addrs(|a| {
                    a.clear();
                    let _ = a.push(IpCidr::Ipv4(config.address));
                });
                match config.router {
                    Some(router) => {
                        let _ = iface.routes_mut().add_default_ipv4_route(router);
                    }
                    None => {
                        iface.routes_mut().remove_default_ipv4_route();
                    }
                }
                self.gateway = config.router;
            }
            Some(dhcpv4::Event::Deconfigured) => {
                iface.update_ip_addrs(|a| a.clear());
                iface.routes_mut().remove_default_ipv4_route();
                self.gateway = None;
            }
            None => {}
        }
    }

    /// Nanoseconds until something is due: the stack's next timer, a
    /// waiting `poll`'s timeout, an unclaimed connection's expiry.
    pub fn next_delay_ns(&mut self) -> Option<u64> {
        let now = self.now();
        let mut delay: Option<u64> = None;
        let mut consider = |d: u64| delay = Some(delay.map_or(d, |x: u64| x.min(d)));
        let [lo_set, eth_set] = &self.sets;
        if let Some(d) = self.ifaces[LO].poll_delay(now, lo_set) {
            consider(d.total_micros() * 1000);
        }
        if let Some(iface) = self.ifaces.get_mut(ETH)
            && let Some(d) = iface.poll_delay(now, eth_set)
        {
            consider(d.total_micros() * 1000);
        }
        let now_ns = self.clock.now_ns();
        if let Some(dev) = self.eth.as_ref() {
            consider(dev.due_in_ns(now_ns)); // link.rs: the driver's probe or re-attach
        }
        for deadline in self.deadlines() {
            consider(deadline.saturating_sub(now_ns));
        }
        delay
    }

    /// Make sure the timer will tick by the next deadline.
    pub fn arm_timer(&mut self) {
        let Some(delay) = self.next_delay_ns() else { return };
        let want = self.clock.now_ns().saturating_add(delay);
        self.arm_timer_at(want);
    }

    /// Make sure the timer will tick by `want` (ns on the clock).
    pub fn arm_timer_at(&mut self, want: u64) {
        if self.armed_ns.is_some_and(|a| a <= want) {
            return;
        }
        if msg::send(self.timer, &[timer::ARM, want, 0, 0]).is_ok() {
            self.armed_ns = Some(want);
        }
    }

    /// `OP_IFCONFIG`'s text.
    pub fn ifconfig_text(&self) -> String {
        let mut t = String::new();
        let _ = writeln!(t, "lo: inet 127.0.0.1/8 mtu 65535");
        match (&self.eth, self.ifaces.get(ETH)) {
            (Some(dev), Some(iface)) => {
                let m = dev.mac;
                let _ = write!(
                    t,
                    "eth0: ether {:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x} mtu {}",
                    m[0],
                    m[1],
                    m[2],
                    m[3],
                    m[4],
                    m[5],
                    eth::MTU_BYTES
                );
                match iface.ip_addrs().first() {
                    Some(a) => {
                        let how = if self.addr_source == AddrSource::Dhcp { "dhcp" } else { "fixed" };
                        let _ = write!(t, " inet {a} ({how})");
                    }
                    None => {
                        let _ = write!(t, " (no address yet: waiting for DHCP)");
                    }
                }
                if let Some(gw) = self.gateway {
                    let _ = write!(t, " gateway {gw}");
                }
                let s = dev.stats;
                let _ = writeln!(
                    t,
                    "\n  rx frames {} dropped {}  tx frames {} dropped {}  relinks {}{}",
                    s.rx_frames,
                    s.rx_dropped,
                    s.tx_frames,
                    s.tx_dropped,
                    s.relinks,
                    if dev.is_down() { " (down: the driver ended)" } else { "" }
                );
            }
            _ => {
                let _ = writeln!(t, "eth0: none (no network card)");
            }
        }
        t
    }
}

/// `net.rings=on|off` (default on): whether `net=scalable` gives readers
/// receive rings (off: every read is a call, as before them; for
/// measuring the difference in one build). Another value is reported
/// and the default used.
fn rings_option(options: &str) -> bool {
    match protocols::options::lookup(options, "net.rings") {
        None | Some("on") => true,
        Some("off") => false,
        Some(other) => {
            println!("net: net.rings={other} is not on or off; using on");
            true
        }
    }
}

fn kernel_options() -> String {
    let mut buf = [0u8; 1024];
    let n = sys::kernel_options(&mut buf).unwrap_or(0).min(buf.len());
    String::from(core::str::from_utf8(&buf[..n]).unwrap_or(""))
}

pub fn parse_ipv4(text: &str) -> Option<Ipv4Address> {
    let mut o = [0u8; 4];
    let mut parts = text.split('.');
    for b in &mut o {
        *b = parts.next()?.parse().ok()?;
    }
    parts.next().is_none().then(|| Ipv4Address::new(o[0], o[1], o[2], o[3]))
}

fn parse_cidr(text: &str) -> Option<Ipv4Cidr> {
    let (addr, prefix) = text.split_once('/')?;
    let prefix: u8 = prefix.parse().ok().filter(|p| *p <= 32)?;
    Some(Ipv4Cidr::new(parse_ipv4(addr)?, prefix))
}

impl Net {
    /// The stack's hook (`run_stack`, both modes): tend the card's link,
    /// and when it was attached to a new driver, check the card's MAC
    /// address. The same card (the same MAC, as a restarted driver of
    /// the same function reads it) keeps its address: a DHCP lease or
    /// `net.addr=` is the card's, not the driver's, and the DHCP client
    /// renews the lease when it is due; a different MAC is a different
    /// card: the interface takes it and DHCP starts over (smoltcp's
    /// `reset`, which drops the address until the new lease). Sockets
    /// stay as they are. (Starting DHCP over on every restart drops the
    /// address until the new lease: in the first run of the network
    /// test, a connection made across the restart was then refused.)
    pub fn tend_link(&mut self) {
        let now_ns = self.clock.now_ns();
        let Some(dev) = self.eth.as_mut() else { return };
        let Some(mac) = dev.tend(now_ns, self.queue) else { return };
        let hw = smoltcp::wire::HardwareAddress::Ethernet(smoltcp::wire::EthernetAddress(mac));
        let Some(iface) = self.ifaces.get_mut(ETH) else { return };
        if iface.hardware_addr() == hw {
            return;
        }
        iface.set_hardware_addr(hw);
        if let Some(h) = self.dhcp {
            self.sets[ETH].get_mut::<smoltcp::socket::dhcpv4::Socket>(h).reset();
        }
    }
}
