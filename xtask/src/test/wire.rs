//! Bad input from the wire (issue 13, "Bad input (tests)"): one batch
//! boot of the test image whose network card is joined to this test, not
//! to QEMU's user network, so the test is the only other machine on the
//! Ethernet and writes every frame the guest receives.
//!
//! The card's back end is `-netdev dgram` (QEMU 7.2+): each UDP datagram
//! between 127.0.0.1:`qemu_port` (QEMU's end) and 127.0.0.1:`host_port`
//! (this test's socket) is one Ethernet frame. The guest has the fixed
//! address [`GUEST_IP`] (`net.addr=`), the test plays [`HOST_IP`] and
//! answers the guest's ARP and ICMP echo requests, and it injects, in
//! batches:
//! - truncated headers (Ethernet, ARP, IPv4, ICMP, TCP, UDP cut at every
//!   length),
//! - bad checksums (IPv4, ICMP, TCP, UDP) — which must go unanswered,
//! - wrong lengths (IPv4 total length and header length, TCP data offset,
//!   UDP length),
//! - a TCP SYN flood at a listening port (spoofed sources) and at a closed
//!   one,
//! - random bytes (whole frames, and random payloads behind valid
//!   Ethernet and IPv4 headers),
//! - oversize frames (up to 65,000 bytes, beyond the card's 2 KiB
//!   buffers).
//!
//! Frames go in chunks of [`CHUNK_FRAMES`], each followed by a well-formed
//! ping the guest must answer before the next chunk goes: so the guest
//! consumed the chunk (nothing is lost to the host's socket buffers on a
//! slow machine), and after every chunk the driver, the stack and the
//! kernel still work. After the SYN flood a fresh SYN must be answered
//! with a SYN-ACK once the flood's half-open connections time out. At the
//! end the guest pings the test, and its `netstat -s` must show nothing
//! left, its `ifconfig` the frames received.
//!
//! Every host end is on 127.0.0.1; every wait is bounded in count and
//! time; nothing measures speed.

use std::collections::HashSet;
use std::io::Write;
use std::net::UdpSocket;
use std::path::Path;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, mpsc};
use std::time::{Duration, Instant};

use super::outcome::Outcome;
use super::serial;
use crate::batch;
use crate::image::{ImageKind, Workspace};
use crate::qemu::{self, NetChoice};
use crate::run::RunOptions;

/// The guest's and the test's addresses on the test's Ethernet.
const GUEST_IP: [u8; 4] = [10, 0, 9, 2];
const HOST_IP: [u8; 4] = [10, 0, 9, 1];
/// The test's MAC address (locally administered).
const HOST_MAC: [u8; 6] = [0x02, 0, 0, 0, 0, 1];
/// The guest's listening port (the SYN flood's target) and a closed one.
const LISTEN_PORT: u16 = 7000;
const CLOSED_PORT: u16 = 7001;
/// Frames sent before each probe ping: fewer than the driver's 32 posted
/// receive buffers, so a chunk fits the card whatever the machine's speed.
const CHUNK_FRAMES: usize = 24;
/// How often a probe ping is sent before the chunk counts as a failure,
/// and how long each waits for its reply.
const PROBE_TRIES: u32 = 10;
const PROBE_WAIT: Duration = Duration::from_secs(3);
/// How long the test waits for the listener to answer a fresh SYN after
/// the flood: the flood's half-open connections go after the stack's TCP
/// timeout (30 s, `servers/net`), plus a wide margin for a loaded machine.
const SYN_RECOVERY: Duration = Duration::from_secs(150);
/// The ICMP identifier of the test's pings.
const PING_ID: u16 = 0x5242;
/// What the guest says when its listener is up, and what the test writes
/// to its console when the injection is over.
const READY: &str = "wire-ready";

const ETH_IPV4: u16 = 0x0800;
const ETH_ARP: u16 = 0x0806;
const PROTO_ICMP: u8 = 1;
const PROTO_TCP: u8 = 6;
const PROTO_UDP: u8 = 17;
const TCP_SYN: u8 = 0x02;
const TCP_RST: u8 = 0x04;
const TCP_ACK: u8 = 0x10;

pub fn run(
    workspace: &Workspace,
    smp: u32,
    accel: qemu::AccelChoice,
    timeout_s: u64,
    log_dir: &Path,
) -> Outcome {
    let mut outcome = Outcome::step("malformed frames from the wire", Ok(()));
    outcome.passed = 0;
    if let Err(e) = run_inner(workspace, smp, accel, timeout_s, log_dir, &mut outcome) {
        outcome.problems.push(e);
    }
    if !outcome.problems.is_empty() && outcome.failed == 0 {
        outcome.failed = 1;
    }
    outcome
}

fn check(outcome: &mut Outcome, name: &str, result: Result<(), String>) {
    match result {
        Ok(()) => outcome.passed += 1,
        Err(e) => {
            outcome.failed += 1;
            outcome.problems.push(format!("{name}: {e}"));
        }
    }
}

fn run_inner(
    workspace: &Workspace,
    smp: u32,
    accel: qemu::AccelChoice,
    timeout_s: u64,
    log_dir: &Path,
    outcome: &mut Outcome,
) -> Result<(), String> {
    let socket = UdpSocket::bind("127.0.0.1:0").map_err(|e| format!("udp bind: {e}"))?;
    let host_port = socket.local_addr().map_err(|e| e.to_string())?.port();
    // QEMU's end: a port free now (bound and let go; QEMU binds it).
    let qemu_port = UdpSocket::bind("127.0.0.1:0")
        .and_then(|s| s.local_addr())
        .map_err(|e| format!("udp bind: {e}"))?
        .port();
    let [a, b, c, d] = GUEST_IP;
    let [ha, hb, hc, hd] = HOST_IP;
    let script = format!(
        "nc -l {LISTEN_PORT} > /dev/null &\n\
         sleep 1\n\
         echo {READY}\n\
         read go\n\
         ping -c 3 {ha}.{hb}.{hc}.{hd}\n\
         kill $!\n\
         sleep 1\n\
         netstat -s\n\
         ifconfig\n"
    );
    let run_opts = RunOptions {
        smp,
        accel,
        disk: qemu::DiskChoice::None,
        net: NetChoice::None,
        cmdline: format!("net.addr={a}.{b}.{c}.{d}/24"),
        ..RunOptions::default()
    };
    let config = batch::prepare(workspace, &run_opts, &script, ImageKind::Test)?;
    let key = batch::SessionKey::of(&config);
    let mut command = config.to_command()?;
    command.args([
        "-netdev".to_string(),
        format!(
            "dgram,id=wire0,local.type=inet,local.host=127.0.0.1,local.port={qemu_port},\
             remote.type=inet,remote.host=127.0.0.1,remote.port={host_port}"
        ),
        "-device".to_string(),
        format!("{},netdev=wire0,addr={}", qemu::NET_DEVICE, qemu::NET_PCI_SLOT),
    ]);
    command.stdout(Stdio::piped()).stderr(Stdio::piped()).stdin(Stdio::piped());
    let mut child = command.spawn().map_err(|e| format!("cannot start QEMU: {e}"))?;
    let stderr = qemu::collect_stderr(&mut child);
    let mut stdin = child.stdin.take().expect("stdin is piped");
    let rx = serial::lines(child.stdout.take().expect("stdout is piped"));

    let stop = Arc::new(AtomicBool::new(false));
    let (results_tx, results_rx) = mpsc::channel::<Vec<(String, Result<(), String>)>>();
    let deadline = Instant::now() + Duration::from_secs(timeout_s);
    let mut transcript = String::new();
    let mut peer_thread = None;
    let mut results = None;
    let mut status = None;
    let mut socket = Some(socket);
    loop {
        if results.is_none()
            && let Ok(r) = results_rx.try_recv()
        {
            results = Some(r);
            // The injection is over: let the guest's script go on.
            let _ = stdin.write_all(b"go\n").and_then(|()| stdin.flush());
        }
        if Instant::now() >= deadline {
            break;
        }
        let line = match serial::next(&rx, &mut child, Duration::from_millis(200)) {
            serial::Next::Line(line) => line,
            serial::Next::Quiet => continue,
            serial::Next::Ended => break,
        };
        transcript.push_str(&line);
        transcript.push('\n');
        if line.trim() == READY
            && let Some(socket) = socket.take()
        {
            let stop = Arc::clone(&stop);
            let results_tx = results_tx.clone();
            peer_thread = Some(std::thread::spawn(move || {
                let mut peer = Peer::new(socket, qemu_port);
                let r = peer.exercise();
                let _ = results_tx.send(r);
                // Go on answering the guest's ARP and pings.
                while !stop.load(Ordering::Relaxed) {
                    peer.receive_for(Duration::from_millis(100));
                }
                peer.stats()
            }));
        }
        // Only init's line, with this boot's key (batch::SessionKey).
        if let Some((_, code)) = key.exit(&line) {
            status = Some(code);
            break;
        }
    }
    let _ = qemu::wait_until(&mut child, Instant::now() + Duration::from_secs(10));
    stop.store(true, Ordering::Relaxed);
    if let Ok(text) = stderr.join() {
        transcript.push_str(&text);
    }
    let log = log_dir.join("net-wire.log");
    let _ = std::fs::write(&log, &transcript);
    let Some(peer_thread) = peer_thread else {
        return Err(format!("the guest never said {READY} (status {status:?}); see {}", log.display()));
    };
    let stats = peer_thread.join().map_err(|_| "the test's peer panicked".to_string())?;
    let Some(results) = results else {
        return Err(format!("the injection did not finish before the timeout; see {}", log.display()));
    };
    for (name, r) in results {
        check(outcome, &name, r);
    }
    check(
        outcome,
        "the guest's session ended normally",
        if status == Some(0) { Ok(()) } else { Err(format!("status {status:?}; see {}", log.display())) },
    );
    check(outcome, "the guest pings the test afterwards", {
        match transcript.lines().find(|l| l.contains("packets transmitted")) {
            Some(l) if !l.contains(" 0 received") => Ok(()),
            Some(l) => Err(l.to_string()),
            None => Err("no ping statistics".to_string()),
        }
    });
    check(outcome, "no sockets or buffers left in the guest", {
        match transcript.lines().find(|l| l.starts_with("sockets ")) {
            Some(l) if l.starts_with("sockets 0 orphans 0 unclaimed 0 buffer_bytes 0") => Ok(()),
            Some(l) => Err(format!("netstat -s: {l}")),
            None => Err("no netstat -s line".to_string()),
        }
    });
    check(outcome, "the injected frames reached the stack", {
        let rx = transcript.lines().find_map(|l| {
            let rest = l.trim().strip_prefix("rx frames ")?;
            rest.split_whitespace().next()?.parse::<u64>().ok()
        });
        match rx {
            // Frames QEMU delivers (at most a full frame's 1,514 bytes);
            // half of them is the bar, since the card may drop some while
            // its buffers are all full.
            Some(n) if n >= stats.deliverable / 2 => Ok(()),
            Some(n) => Err(format!("ifconfig: rx frames {n} of {} sent", stats.deliverable)),
            None => Err("no rx frames line from ifconfig".to_string()),
        }
    });
    println!(
        "wire: {} frames sent ({} of them malformed), {} received from the guest; see {}",
        stats.sent,
        stats.malformed,
        stats.received,
        log.display()
    );
    Ok(())
}

/// Counts of the test's side.
#[derive(Clone, Copy, Debug, Default)]
struct PeerStats {
    sent: u64,
    malformed: u64,
    /// Frames of at most a full frame's length (QEMU delivers those).
    deliverable: u64,
    received: u64,
}

/// What the guest sent back during one wait.
#[derive(Default)]
struct Heard {
    /// Sequence numbers of echo replies to the test's pings.
    echo_replies: HashSet<u16>,
    /// (our port, flags) of TCP segments to the test.
    tcp: Vec<(u16, u8)>,
}

/// The test's end of the Ethernet.
struct Peer {
    socket: UdpSocket,
    qemu_port: u16,
    guest_mac: Option<[u8; 6]>,
    seq: u16,
    rng: u64,
    stats: PeerStats,
}

impl Peer {
    fn new(socket: UdpSocket, qemu_port: u16) -> Peer {
        let _ = socket.set_read_timeout(Some(Duration::from_millis(50)));
        Peer {
            socket,
            qemu_port,
            guest_mac: None,
            seq: 0,
            rng: 0x9e37_79b9_7f4a_7c15,
            stats: PeerStats::default(),
        }
    }

    fn stats(&self) -> PeerStats {
        self.stats
    }

    fn random(&mut self) -> u64 {
        self.rng ^= self.rng << 13;
        self.rng ^= self.rng >> 7;
        self.rng ^= self.rng << 17;
        self.rng
    }

    fn random_bytes(&mut self, len: usize) -> Vec<u8> {
        (0..len).map(|_| self.random() as u8).collect()
    }

    fn send(&mut self, frame: &[u8]) {
        self.stats.sent += 1;
        if frame.len() <= 1514 {
            self.stats.deliverable += 1;
        }
        let _ = self.socket.send_to(frame, ("127.0.0.1", self.qemu_port));
    }

    fn guest_mac(&self) -> [u8; 6] {
        self.guest_mac.unwrap_or([0xff; 6])
    }

    /// Receive for `wait`: answer the guest's ARP requests and pings to
    /// the test's address, learn its MAC, note what it says to us.
    fn receive_for(&mut self, wait: Duration) -> Heard {
        let mut heard = Heard::default();
        let end = Instant::now() + wait;
        let mut buf = vec![0u8; 65536];
        while Instant::now() < end {
            let Ok((n, _)) = self.socket.recv_from(&mut buf) else { continue };
            self.stats.received += 1;
            let f = &buf[..n];
            if f.len() < 14 {
                continue;
            }
            let ethertype = u16::from_be_bytes([f[12], f[13]]);
            let src_mac: [u8; 6] = f[6..12].try_into().expect("6 bytes");
            if ethertype == ETH_ARP && f.len() >= 42 {
                if f[28..32] == GUEST_IP {
                    self.guest_mac = Some(src_mac);
                }
                if f[20..22] == [0, 1] && f[38..42] == HOST_IP {
                    let reply = arp(2, src_mac, f[28..32].try_into().expect("4 bytes"));
                    self.send_quietly(&reply);
                }
            } else if ethertype == ETH_IPV4 && f.len() >= 34 {
                let ihl = usize::from(f[14] & 0xf) * 4;
                let proto = f[23];
                let l4 = &f[(14 + ihl).min(f.len())..];
                if f[30..34] != HOST_IP {
                    continue;
                }
                if proto == PROTO_ICMP && l4.len() >= 8 {
                    if l4[0] == 0 && u16::from_be_bytes([l4[4], l4[5]]) == PING_ID {
                        heard.echo_replies.insert(u16::from_be_bytes([l4[6], l4[7]]));
                    } else if l4[0] == 8 {
                        // The guest's ping: answer it.
                        let mut icmp = l4.to_vec();
                        icmp[0] = 0;
                        icmp[2..4].copy_from_slice(&[0, 0]);
                        let c = checksum(&icmp);
                        icmp[2..4].copy_from_slice(&c.to_be_bytes());
                        let dst = f[26..30].try_into().expect("4 bytes");
                        let reply = eth(src_mac, ETH_IPV4, &ipv4(PROTO_ICMP, dst, 1, &icmp));
                        self.send_quietly(&reply);
                    }
                } else if proto == PROTO_TCP && l4.len() >= 20 {
                    heard.tcp.push((u16::from_be_bytes([l4[2], l4[3]]), l4[13]));
                }
            }
        }
        heard
    }

    /// An answer of the test's, not counted as injected.
    fn send_quietly(&mut self, frame: &[u8]) {
        let _ = self.socket.send_to(frame, ("127.0.0.1", self.qemu_port));
    }

    fn next_seq(&mut self) -> u16 {
        self.seq = self.seq.wrapping_add(1);
        self.seq
    }

    fn ping_frame(&self, seq: u16) -> Vec<u8> {
        eth(self.guest_mac(), ETH_IPV4, &ipv4(PROTO_ICMP, GUEST_IP, seq, &echo_request(seq, 32)))
    }

    /// A well-formed ping the guest must answer; everything heard meanwhile.
    fn probe(&mut self, heard: &mut Heard) -> Result<(), String> {
        for _ in 0..PROBE_TRIES {
            if self.guest_mac.is_none() {
                self.send_quietly(&arp(1, [0xff; 6], GUEST_IP));
            }
            let seq = self.next_seq();
            let frame = self.ping_frame(seq);
            self.send_quietly(&frame);
            let end = Instant::now() + PROBE_WAIT;
            while Instant::now() < end {
                let h = self.receive_for(Duration::from_millis(100));
                let answered = h.echo_replies.contains(&seq);
                heard.echo_replies.extend(h.echo_replies);
                heard.tcp.extend(h.tcp);
                if answered {
                    return Ok(());
                }
            }
        }
        Err(format!("the guest answered none of {PROBE_TRIES} pings"))
    }

    /// Send `frames` (all malformed) in chunks, each followed by a probe.
    fn inject(&mut self, frames: &[Vec<u8>]) -> Result<Heard, String> {
        let mut heard = Heard::default();
        for (i, chunk) in frames.chunks(CHUNK_FRAMES).enumerate() {
            for f in chunk {
                self.stats.malformed += 1;
                self.send(f);
            }
            self.probe(&mut heard)
                .map_err(|e| format!("after chunk {i} ({} frames in): {e}", i * CHUNK_FRAMES))?;
        }
        Ok(heard)
    }

    fn exercise(&mut self) -> Vec<(String, Result<(), String>)> {
        let mut results = Vec::new();
        let first = self.probe(&mut Heard::default());
        let failed = first.is_err();
        results.push(("well-formed pings are answered".to_string(), first));
        if failed {
            return results;
        }
        let frames = self.truncated();
        results.push(("truncated headers".to_string(), self.inject(&frames).map(drop)));
        results.push(("bad checksums go unanswered".to_string(), self.bad_checksums()));
        let frames = self.wrong_lengths();
        results.push(("wrong lengths".to_string(), self.inject(&frames).map(drop)));
        let frames = self.random_frames();
        results.push(("random bytes".to_string(), self.inject(&frames).map(drop)));
        let frames = self.oversize();
        results.push(("oversize frames".to_string(), self.inject(&frames).map(drop)));
        results.push(("a SYN flood".to_string(), self.syn_flood()));
        results
    }

    /// Every well-formed frame of each kind, cut at every length short of whole.
    fn truncated(&self) -> Vec<Vec<u8>> {
        let mac = self.guest_mac();
        let whole = [
            arp(1, mac, GUEST_IP),
            self.ping_frame(0xfff0),
            eth(mac, ETH_IPV4, &ipv4(PROTO_TCP, GUEST_IP, 7, &tcp(40000, LISTEN_PORT, 1, 0, TCP_SYN, &[]))),
            eth(mac, ETH_IPV4, &ipv4(PROTO_UDP, GUEST_IP, 8, &udp(40000, 9, b"hello"))),
        ];
        let mut frames = Vec::new();
        for w in &whole {
            // From one byte: QEMU's `dgram` back end takes an empty
            // datagram for the end of the connection and stops reading
            // (net/dgram.c), and no wire carries an empty frame.
            for len in 1..w.len() {
                frames.push(w[..len].to_vec());
            }
        }
        frames
    }

    /// Pings, SYNs and datagrams with one checksum wrong: none may be
    /// answered (RFC 1122 §3.2.1.2, §4.2.2.7: such a datagram is dropped).
    fn bad_checksums(&mut self) -> Result<(), String> {
        let mac = self.guest_mac();
        let mut frames = Vec::new();
        let mut bad_pings = Vec::new();
        let mut bad_ports = Vec::new();
        for k in 0..48u16 {
            let seq = 0x8000 + k;
            bad_pings.push(seq);
            let mut ip = ipv4(PROTO_ICMP, GUEST_IP, seq, &echo_request(seq, 32));
            if k % 2 == 0 {
                ip[10] ^= 0x5a; // the IPv4 header's checksum
            } else {
                ip[20 + 2] ^= 0x5a; // the ICMP checksum
            }
            frames.push(eth(mac, ETH_IPV4, &ip));
            let port = 50000 + k;
            bad_ports.push(port);
            let mut seg = tcp(port, LISTEN_PORT, 1000, 0, TCP_SYN, &[]);
            seg[16] ^= 0x5a; // the TCP checksum
            frames.push(eth(mac, ETH_IPV4, &ipv4(PROTO_TCP, GUEST_IP, seq, &seg)));
            let mut dgram = udp(port, 9, b"bad checksum");
            dgram[6] ^= 0x5a;
            frames.push(eth(mac, ETH_IPV4, &ipv4(PROTO_UDP, GUEST_IP, seq, &dgram)));
        }
        let heard = self.inject(&frames)?;
        // A little longer for late answers.
        let late = self.receive_for(Duration::from_secs(1));
        let replies: Vec<u16> = bad_pings
            .iter()
            .copied()
            .filter(|s| heard.echo_replies.contains(s) || late.echo_replies.contains(s))
            .collect();
        if !replies.is_empty() {
            return Err(format!("pings with bad checksums were answered: {replies:?}"));
        }
        let answered: Vec<(u16, u8)> =
            heard.tcp.iter().chain(&late.tcp).copied().filter(|(p, _)| bad_ports.contains(p)).collect();
        if !answered.is_empty() {
            return Err(format!("SYNs with bad checksums were answered: {answered:?}"));
        }
        Ok(())
    }

    fn wrong_lengths(&self) -> Vec<Vec<u8>> {
        let mac = self.guest_mac();
        let mut frames = Vec::new();
        let base = ipv4(PROTO_ICMP, GUEST_IP, 0x7000, &echo_request(0x7000, 32));
        // IPv4 total length: shorter than the header, longer than the frame.
        for total in [0u16, 1, 19, 20, 21, 27, 61, 100, 1500, 65535] {
            let mut ip = base.clone();
            ip[2..4].copy_from_slice(&total.to_be_bytes());
            fix_ip_checksum(&mut ip);
            frames.push(eth(mac, ETH_IPV4, &ip));
        }
        // IPv4 header length: below the minimum, past the packet.
        for ihl in [0u8, 1, 4, 6, 15] {
            let mut ip = base.clone();
            ip[0] = 0x40 | ihl;
            fix_ip_checksum(&mut ip);
            frames.push(eth(mac, ETH_IPV4, &ip));
        }
        // Versions other than 4.
        for version in [0u8, 6, 15] {
            let mut ip = base.clone();
            ip[0] = version << 4 | 5;
            fix_ip_checksum(&mut ip);
            frames.push(eth(mac, ETH_IPV4, &ip));
        }
        // TCP data offset: below the header, past the segment.
        for offset in [0u8, 1, 4, 6, 15] {
            let mut seg = tcp(40001, LISTEN_PORT, 1, 0, TCP_SYN, b"data");
            seg[12] = offset << 4;
            let mut ip = ipv4(PROTO_TCP, GUEST_IP, 0x7001, &seg);
            fix_tcp_udp_checksum(&mut ip, 16);
            frames.push(eth(mac, ETH_IPV4, &ip));
        }
        // TCP options that claim more than they have.
        let mut seg = tcp(40002, LISTEN_PORT, 1, 0, TCP_SYN, &[]);
        seg[12] = 6 << 4;
        seg.extend_from_slice(&[2, 40, 0, 0]); // MSS option of length 40
        let mut ip = ipv4(PROTO_TCP, GUEST_IP, 0x7002, &seg);
        fix_tcp_udp_checksum(&mut ip, 16);
        frames.push(eth(mac, ETH_IPV4, &ip));
        // UDP length: below the header, past the datagram.
        for len in [0u16, 1, 7, 9, 100, 65535] {
            let mut dgram = udp(40003, 9, b"length");
            dgram[4..6].copy_from_slice(&len.to_be_bytes());
            let mut ip = ipv4(PROTO_UDP, GUEST_IP, 0x7003, &dgram);
            fix_tcp_udp_checksum(&mut ip, 6);
            frames.push(eth(mac, ETH_IPV4, &ip));
        }
        // ARP with other hardware and protocol lengths.
        for (hlen, plen) in [(0u8, 0u8), (6, 16), (255, 255)] {
            let mut f = arp(1, mac, GUEST_IP);
            f[18] = hlen;
            f[19] = plen;
            frames.push(f);
        }
        frames
    }

    fn random_frames(&mut self) -> Vec<Vec<u8>> {
        let mac = self.guest_mac();
        let mut frames = Vec::new();
        for _ in 0..480 {
            let len = 1 + (self.random() % 1514) as usize;
            frames.push(self.random_bytes(len));
        }
        for _ in 0..240 {
            let len = (self.random() % 1500) as usize;
            let payload = self.random_bytes(len);
            frames.push(eth(mac, ETH_IPV4, &payload));
        }
        for k in 0..240u16 {
            let proto = [PROTO_ICMP, PROTO_TCP, PROTO_UDP][usize::from(k % 3)];
            let len = (self.random() % 1480) as usize;
            let payload = self.random_bytes(len);
            frames.push(eth(mac, ETH_IPV4, &ipv4(proto, GUEST_IP, k, &payload)));
        }
        frames
    }

    fn oversize(&self) -> Vec<Vec<u8>> {
        let mac = self.guest_mac();
        [1515usize, 1518, 1600, 2048, 4096, 9000, 16384, 65000]
            .iter()
            .map(|&len| {
                let data = len.saturating_sub(14 + 20 + 8);
                let mut ip = ipv4(PROTO_ICMP, GUEST_IP, 0x6000, &echo_request(0x6000, data));
                // The header's length field saturates at 64 KiB - 1.
                let total = (ip.len().min(65535)) as u16;
                ip[2..4].copy_from_slice(&total.to_be_bytes());
                fix_ip_checksum(&mut ip);
                eth(mac, ETH_IPV4, &ip)
            })
            .collect()
    }

    /// Two thousand SYNs to the listening port from spoofed addresses
    /// and ports (never acknowledged), five hundred to a closed port; then
    /// a fresh SYN must get a SYN-ACK once the half-open connections
    /// time out.
    fn syn_flood(&mut self) -> Result<(), String> {
        let mac = self.guest_mac();
        let mut frames = Vec::new();
        for k in 0..2000u32 {
            let src = [10, 0, 9, 10 + (k % 200) as u8];
            let seg = tcp_from(src, 20000 + k as u16, LISTEN_PORT, self.random() as u32, 0, TCP_SYN);
            frames.push(eth(mac, ETH_IPV4, &ipv4_from(PROTO_TCP, src, GUEST_IP, k as u16, &seg)));
        }
        for k in 0..500u16 {
            let seg = tcp(30000 + k, CLOSED_PORT, u32::from(k), 0, TCP_SYN, &[]);
            frames.push(eth(mac, ETH_IPV4, &ipv4(PROTO_TCP, GUEST_IP, k, &seg)));
        }
        self.inject(&frames)?;
        let started = Instant::now();
        let mut port = 45000;
        while started.elapsed() < SYN_RECOVERY {
            port += 1;
            let seg = tcp(port, LISTEN_PORT, 77, 0, TCP_SYN, &[]);
            let frame = eth(mac, ETH_IPV4, &ipv4(PROTO_TCP, GUEST_IP, port, &seg));
            self.send_quietly(&frame);
            let heard = self.receive_for(Duration::from_secs(3));
            if heard
                .tcp
                .iter()
                .any(|&(p, flags)| p == port && flags & (TCP_SYN | TCP_ACK) == TCP_SYN | TCP_ACK)
            {
                // Leave no half-open connection of ours behind.
                let rst = tcp(port, LISTEN_PORT, 78, 0, TCP_RST, &[]);
                let frame = eth(mac, ETH_IPV4, &ipv4(PROTO_TCP, GUEST_IP, port, &rst));
                self.send_quietly(&frame);
                return Ok(());
            }
        }
        Err(format!("no SYN-ACK to a fresh SYN within {} s of the flood", SYN_RECOVERY.as_secs()))
    }
}

/// The Internet checksum (RFC 1071).
fn checksum(bytes: &[u8]) -> u16 {
    let mut sum: u32 = 0;
    for pair in bytes.chunks(2) {
        let word = u16::from_be_bytes([pair[0], pair.get(1).copied().unwrap_or(0)]);
        sum += u32::from(word);
    }
    while sum >> 16 != 0 {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

fn eth(dst: [u8; 6], ethertype: u16, payload: &[u8]) -> Vec<u8> {
    let mut f = Vec::with_capacity(14 + payload.len());
    f.extend_from_slice(&dst);
    f.extend_from_slice(&HOST_MAC);
    f.extend_from_slice(&ethertype.to_be_bytes());
    f.extend_from_slice(payload);
    f
}

/// An ARP request (op 1) or reply (op 2) from the test to `target`.
fn arp(op: u16, dst: [u8; 6], target_ip: [u8; 4]) -> Vec<u8> {
    let mut a = vec![0, 1, 8, 0, 6, 4];
    a.extend_from_slice(&op.to_be_bytes());
    a.extend_from_slice(&HOST_MAC);
    a.extend_from_slice(&HOST_IP);
    a.extend_from_slice(&if op == 1 { [0; 6] } else { dst });
    a.extend_from_slice(&target_ip);
    eth(dst, ETH_ARP, &a)
}

fn ipv4(proto: u8, dst: [u8; 4], id: u16, payload: &[u8]) -> Vec<u8> {
    ipv4_from(proto, HOST_IP, dst, id, payload)
}

fn ipv4_from(proto: u8, src: [u8; 4], dst: [u8; 4], id: u16, payload: &[u8]) -> Vec<u8> {
    let total = (20 + payload.len()).min(65535) as u16;
    let mut ip = vec![0x45, 0];
    ip.extend_from_slice(&total.to_be_bytes());
    ip.extend_from_slice(&id.to_be_bytes());
    ip.extend_from_slice(&[0, 0, 64, proto, 0, 0]);
    ip.extend_from_slice(&src);
    ip.extend_from_slice(&dst);
    fix_ip_checksum(&mut ip);
    ip.extend_from_slice(payload);
    ip
}

fn fix_ip_checksum(ip: &mut [u8]) {
    ip[10..12].copy_from_slice(&[0, 0]);
    let c = checksum(&ip[..20]);
    ip[10..12].copy_from_slice(&c.to_be_bytes());
}

/// Recompute the TCP or UDP checksum (at `at` in the segment) of an IPv4
/// packet with a 20-byte header, over the pseudo-header.
fn fix_tcp_udp_checksum(ip: &mut [u8], at: usize) {
    ip[20 + at..20 + at + 2].copy_from_slice(&[0, 0]);
    let c =
        l4_checksum(ip[12..16].try_into().expect("4"), ip[16..20].try_into().expect("4"), ip[9], &ip[20..]);
    ip[20 + at..20 + at + 2].copy_from_slice(&c.to_be_bytes());
}

fn l4_checksum(src: [u8; 4], dst: [u8; 4], proto: u8, segment: &[u8]) -> u16 {
    let mut pseudo = Vec::with_capacity(12 + segment.len());
    pseudo.extend_from_slice(&src);
    pseudo.extend_from_slice(&dst);
    pseudo.extend_from_slice(&[0, proto]);
    pseudo.extend_from_slice(&(segment.len() as u16).to_be_bytes());
    pseudo.extend_from_slice(segment);
    checksum(&pseudo)
}

fn echo_request(seq: u16, data_bytes: usize) -> Vec<u8> {
    let mut icmp = vec![8, 0, 0, 0];
    icmp.extend_from_slice(&PING_ID.to_be_bytes());
    icmp.extend_from_slice(&seq.to_be_bytes());
    icmp.extend((0..data_bytes).map(|i| i as u8));
    let c = checksum(&icmp);
    icmp[2..4].copy_from_slice(&c.to_be_bytes());
    icmp
}

fn tcp(sport: u16, dport: u16, seq: u32, ack: u32, flags: u8, payload: &[u8]) -> Vec<u8> {
    let mut seg = tcp_header(sport, dport, seq, ack, flags);
    seg.extend_from_slice(payload);
    let c = l4_checksum(HOST_IP, GUEST_IP, PROTO_TCP, &seg);
    seg[16..18].copy_from_slice(&c.to_be_bytes());
    seg
}

fn tcp_from(src: [u8; 4], sport: u16, dport: u16, seq: u32, ack: u32, flags: u8) -> Vec<u8> {
    let mut seg = tcp_header(sport, dport, seq, ack, flags);
    let c = l4_checksum(src, GUEST_IP, PROTO_TCP, &seg);
    seg[16..18].copy_from_slice(&c.to_be_bytes());
    seg
}

fn tcp_header(sport: u16, dport: u16, seq: u32, ack: u32, flags: u8) -> Vec<u8> {
    let mut seg = Vec::with_capacity(20);
    seg.extend_from_slice(&sport.to_be_bytes());
    seg.extend_from_slice(&dport.to_be_bytes());
    seg.extend_from_slice(&seq.to_be_bytes());
    seg.extend_from_slice(&ack.to_be_bytes());
    seg.extend_from_slice(&[5 << 4, flags, 0xff, 0xff, 0, 0, 0, 0]);
    seg
}

fn udp(sport: u16, dport: u16, payload: &[u8]) -> Vec<u8> {
    let mut d = Vec::with_capacity(8 + payload.len());
    d.extend_from_slice(&sport.to_be_bytes());
    d.extend_from_slice(&dport.to_be_bytes());
    d.extend_from_slice(&((8 + payload.len()) as u16).to_be_bytes());
    d.extend_from_slice(&[0, 0]);
    d.extend_from_slice(payload);
    let c = l4_checksum(HOST_IP, GUEST_IP, PROTO_UDP, &d);
    d[6..8].copy_from_slice(&c.to_be_bytes());
    d
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 1071's example: the sum of these words is ddf2, so the
    /// checksum is its complement.
    #[test]
    fn checksum_matches_rfc_1071() {
        let bytes = [0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7];
        assert_eq!(checksum(&bytes), !0xddf2);
    }

    #[test]
    fn built_headers_check_out() {
        let ip = ipv4(PROTO_ICMP, GUEST_IP, 1, &echo_request(1, 32));
        assert_eq!(checksum(&ip[..20]), 0, "IPv4 header sums to zero");
        assert_eq!(checksum(&ip[20..]), 0, "ICMP message sums to zero");
        let seg = tcp(1, 2, 3, 4, TCP_SYN, b"x");
        assert_eq!(l4_checksum(HOST_IP, GUEST_IP, PROTO_TCP, &seg), 0);
        let d = udp(1, 2, b"abc");
        assert_eq!(l4_checksum(HOST_IP, GUEST_IP, PROTO_UDP, &d), 0);
        let mut bad = ipv4(PROTO_UDP, GUEST_IP, 1, &d);
        bad[20 + 4..20 + 6].copy_from_slice(&3u16.to_be_bytes());
        fix_tcp_udp_checksum(&mut bad, 6);
        assert_eq!(l4_checksum(HOST_IP, GUEST_IP, PROTO_UDP, &bad[20..]), 0);
    }

    /// This boot alone (slow: `cargo test -p xtask -- --ignored
    /// boot_the_wire_test --nocapture`).
    #[test]
    #[ignore]
    fn boot_the_wire_test() {
        let workspace = Workspace::load().unwrap();
        let log_dir = workspace.target_dir.join("ktest");
        std::fs::create_dir_all(&log_dir).unwrap();
        let outcome = run(&workspace, 2, qemu::AccelChoice::Auto, 600, &log_dir);
        assert!(outcome.is_ok(), "{:?}", outcome.problems);
    }
}
