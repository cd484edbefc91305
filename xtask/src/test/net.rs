//! The network against real programs of the host (issue 13): one batch
//! boot of the test image with QEMU's user network and two forwarded
//! ports, during which the host
//! - fetches a multi-MiB file from Ridgeback's `httpd` with its own
//!   `curl` (the SHA-256 the guest prints must match the download), and
//!   100 requests on one keep-alive connection (all 200, one connect);
//! - exchanges data both ways with Ridgeback's `nc -l` from a socket
//!   client of its own (std's `TcpStream`: it sends 256 KiB and shuts
//!   its side, and must receive `/etc/inittab` whole);
//! - serves a file from Python's `http.server` on its loopback, which
//!   Ridgeback's `fetch` downloads as `http://10.0.2.2:PORT/` (QEMU's
//!   user network maps 10.0.2.2 to the host's 127.0.0.1).
//!
//! - then kills the card's driver (`service kill virtio-net`, issue 16)
//!   while the guest's `fetch` downloads the file again: the download must
//!   finish whole through the driver init starts again (the network server
//!   re-attaches `/dev/eth0`; TCP retransmits what was lost), a loopback
//!   `fetch` from the guest's own `httpd` must work, the host's `curl`
//!   must reach that `httpd` through the forwarded port, and `ifconfig`
//!   must show the link attached again (`relinks 1`).
//!
//! Every host end binds 127.0.0.1 only; every wait is bounded (the
//! boot's timeout, [`RETRY_FOR`] for the guest's servers to listen).
//! The guest's network server must hold no socket at the end (`netstat
//! -s` after the transfers).

use std::fs;
use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::outcome::Outcome;
use super::serial;
use crate::batch;
use crate::image::{ImageKind, Workspace};
use crate::qemu::{self, NetChoice};
use crate::run::RunOptions;

/// How long the host keeps trying to reach a guest server that may not
/// listen yet (QEMU accepts a forwarded connection before the guest has
/// a listener, and the guest then resets it).
const RETRY_FOR: Duration = Duration::from_secs(60);
/// Guest ports of the two servers.
const GUEST_HTTP_PORT: u16 = 80;
const GUEST_NC_PORT: u16 = 7000;
/// Bytes the host sends to the guest's `nc`, and the file Python serves.
const NC_PAYLOAD_BYTES: usize = 256 * 1024;
const PY_FILE_BYTES: usize = 3 << 20;
const KEEP_ALIVE_REQUESTS: usize = 100;
/// The guest's big file is made of its programs (the shell has no glob);
/// at least this long.
const BIG_FILE_MIN_BYTES: u64 = 2 << 20;

/// What the guest prints when its loopback fetch after the driver's
/// restart got `/etc/inittab` whole, and when its `httpd` serves again
/// (the host's cue for its `curl` through the restarted driver).
const LOOPBACK_SAME: &str = "loopback-after-restart-same";
const NET_AGAIN: &str = "net-again";

/// A free port on the host's loopback (bound, read, let go).
fn free_port() -> Result<u16, String> {
    let l = TcpListener::bind("127.0.0.1:0").map_err(|e| format!("no free port: {e}"))?;
    l.local_addr().map(|a| a.port()).map_err(|e| e.to_string())
}

/// A deterministic byte pattern (xorshift), so failures reproduce.
fn pattern(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

fn sha256_of_file(path: &Path) -> Result<String, String> {
    let out = Command::new("sha256sum").arg(path).output().map_err(|e| format!("sha256sum: {e}"))?;
    let text = String::from_utf8_lossy(&out.stdout);
    text.split_whitespace()
        .next()
        .map(str::to_string)
        .ok_or_else(|| format!("sha256sum {}: no output", path.display()))
}

/// The hash `sha256sum` printed in the guest for `path`.
fn guest_hash<'a>(output: &'a str, path: &str) -> Option<&'a str> {
    output.lines().find_map(|l| {
        let mut w = l.split_whitespace();
        let hash = w.next()?;
        (w.next() == Some(path) && hash.len() == 64).then_some(hash)
    })
}

pub fn run(
    workspace: &Workspace,
    smp: u32,
    accel: qemu::AccelChoice,
    timeout_s: u64,
    log_dir: &Path,
) -> Outcome {
    let mut outcome = Outcome::step("network against the host's programs", Ok(()));
    outcome.passed = 0;
    // The host ends of the test: installed from Debian's packages when
    // missing, as QEMU and e2fsprogs are (a fresh CI machine may lack them).
    for (program, package) in [("curl", "curl"), ("python3", "python3")] {
        if let Err(e) = crate::tools::ensure_program(program, package, program) {
            outcome.problems.push(e);
        }
    }
    if !outcome.problems.is_empty() {
        outcome.failed = 1;
        return outcome;
    }
    match run_inner(workspace, smp, accel, timeout_s, log_dir, &mut outcome) {
        Ok(()) => {}
        Err(e) => outcome.problems.push(e),
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

#[derive(Clone)]
struct Host {
    http_port: u16,
    nc_port: u16,
    dir: std::path::PathBuf,
    /// The workspace's `etc/inittab`, which the guest serves.
    inittab: std::path::PathBuf,
}

fn run_inner(
    workspace: &Workspace,
    smp: u32,
    accel: qemu::AccelChoice,
    timeout_s: u64,
    log_dir: &Path,
    outcome: &mut Outcome,
) -> Result<(), String> {
    let dir = log_dir.join("net-host");
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let py_file = dir.join("www").join("big.bin");
    fs::create_dir_all(py_file.parent().expect("has a parent")).map_err(|e| e.to_string())?;
    fs::write(&py_file, pattern(PY_FILE_BYTES, 3)).map_err(|e| e.to_string())?;
    let (http_port, nc_port, py_port) = (free_port()?, free_port()?, free_port()?);
    let mut python = PythonServer::start(&dir.join("www"), py_port)?;

    let script = format!(
        "cat /bin/utest /bin/net /bin/monitor /bin/sh /bin/testrunner /bin/utest /bin/net /bin/memfs /bin/utest > /tmp/big\n\
         sha256sum /tmp/big\n\
         nc -l {GUEST_NC_PORT} < /etc/inittab > /tmp/from-host &\n\
         httpd -n 2 / &\n\
         echo net-ready\n\
         wait\n\
         sha256sum /tmp/from-host\n\
         fetch http://10.0.2.2:{py_port}/big.bin -o /tmp/py.bin\n\
         sha256sum /tmp/py.bin\n\
         sleep 1\n\
         netstat -s\n\
         fetch http://10.0.2.2:{py_port}/big.bin -o /tmp/py2.bin &\n\
         service kill virtio-net\n\
         wait\n\
         sha256sum /tmp/py2.bin\n\
         httpd -n 2 / &\n\
         n=0; until fetch http://127.0.0.1:{GUEST_HTTP_PORT}/etc/inittab -o /tmp/lo.txt; do n=$((n+1)); [ $n -lt 60 ] || break; sleep 1; done\n\
         cmp /etc/inittab /tmp/lo.txt && echo {LOOPBACK_SAME}\n\
         echo {NET_AGAIN}\n\
         wait\n\
         ifconfig\n"
    );
    let mut forwards = NetChoice::default();
    forwards.add_forward(&format!("{http_port}:{GUEST_HTTP_PORT}"))?;
    forwards.add_forward(&format!("{nc_port}:{GUEST_NC_PORT}"))?;
    let run_opts =
        RunOptions { smp, accel, disk: qemu::DiskChoice::None, net: forwards, ..RunOptions::default() };
    let config = batch::prepare(workspace, &run_opts, &script, ImageKind::Test)?;
    let key = batch::SessionKey::of(&config);
    let host = Host { http_port, nc_port, dir: dir.clone(), inittab: workspace.root.join("etc/inittab") };

    let mut command = config.to_command()?;
    command.stdout(Stdio::piped()).stderr(Stdio::piped()).stdin(Stdio::null());
    let mut child = command.spawn().map_err(|e| format!("cannot start QEMU: {e}"))?;
    let stderr = qemu::collect_stderr(&mut child);
    let rx = serial::lines(child.stdout.take().expect("stdout is piped"));
    let deadline = Instant::now() + Duration::from_secs(timeout_s);
    let mut transcript = String::new();
    let mut host_side: Option<std::thread::JoinHandle<HostResults>> = None;
    let mut host_again: Option<std::thread::JoinHandle<Result<(), String>>> = None;
    let mut status = None;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let Ok(line) = rx.recv_timeout(left.max(Duration::from_millis(1))) else { break };
        transcript.push_str(&line);
        transcript.push('\n');
        if line.trim() == "net-ready" && host_side.is_none() {
            let h = host.clone();
            host_side = Some(std::thread::spawn(move || h.exercise()));
        }
        if line.trim() == NET_AGAIN && host_again.is_none() {
            let h = host.clone();
            host_again = Some(std::thread::spawn(move || h.curl_inittab_again()));
        }
        // Only init's line, with this boot's key (batch::SessionKey).
        if let Some((_, code)) = key.exit(&line) {
            status = Some(code);
            break;
        }
        if Instant::now() >= deadline {
            break;
        }
    }
    let _ = qemu::wait_until(&mut child, Instant::now() + Duration::from_secs(10));
    if let Ok(text) = stderr.join() {
        transcript.push_str(&text);
    }
    python.stop();
    let _ = fs::write(log_dir.join("net-host.log"), &transcript);
    let Some(host_side) = host_side else {
        return Err(format!(
            "the guest never said net-ready (status {status:?}); see {}",
            log_dir.join("net-host.log").display()
        ));
    };
    let results = host_side.join().map_err(|_| "the host side panicked".to_string())?;
    if status != Some(0) {
        outcome.problems.push(format!(
            "the guest's script ended with {status:?}; see {}/net-host.log",
            log_dir.display()
        ));
    }

    let big_hash = guest_hash(&transcript, "/tmp/big").map(str::to_string);
    check(
        outcome,
        "curl: the multi-MiB file",
        (|| {
            let got = results.big.clone()?;
            let want = big_hash.as_deref().ok_or("the guest printed no hash of /tmp/big")?;
            if got != want {
                return Err(format!("curl's download hashes to {got}, the guest's file to {want}"));
            }
            Ok(())
        })(),
    );
    check(outcome, "curl: 100 requests on one keep-alive connection", results.keep_alive.clone());
    check(
        outcome,
        "host socket client <-> nc",
        (|| {
            let sent_hash = results.nc.clone()?;
            let guest = guest_hash(&transcript, "/tmp/from-host")
                .ok_or("the guest printed no hash of what nc received")?;
            if guest != sent_hash {
                return Err(format!("nc received bytes hashing to {guest}, the host sent {sent_hash}"));
            }
            Ok(())
        })(),
    );
    check(
        outcome,
        "fetch from Python's http.server",
        (|| {
            let want = sha256_of_file(&py_file)?;
            let got = guest_hash(&transcript, "/tmp/py.bin")
                .ok_or("the guest printed no hash of the fetched file")?;
            if got != want {
                return Err(format!("fetched file hashes to {got}, the served one to {want}"));
            }
            Ok(())
        })(),
    );
    check(
        outcome,
        "fetch across a restart of virtio-net",
        (|| {
            let want = sha256_of_file(&py_file)?;
            let got = guest_hash(&transcript, "/tmp/py2.bin")
                .ok_or("the guest printed no hash of the file fetched across the restart")?;
            if got != want {
                return Err(format!("fetched file hashes to {got}, the served one to {want}"));
            }
            Ok(())
        })(),
    );
    check(outcome, "the link attached again to the new driver", {
        if transcript.lines().any(|l| l.contains("relinks 1")) {
            Ok(())
        } else {
            Err("ifconfig never says `relinks 1`".to_string())
        }
    });
    check(outcome, "loopback after the restart", {
        if transcript.lines().any(|l| l.trim() == LOOPBACK_SAME) {
            Ok(())
        } else {
            Err(format!("the guest never said {LOOPBACK_SAME}"))
        }
    });
    check(
        outcome,
        "curl through the restarted driver",
        match host_again {
            Some(h) => h.join().unwrap_or_else(|_| Err("the host side panicked".to_string())),
            None => Err(format!("the guest never said {NET_AGAIN}")),
        },
    );
    check(outcome, "no sockets or buffers left in the guest", {
        match transcript.lines().find(|l| l.starts_with("sockets ")) {
            Some(l) if l.starts_with("sockets 0 orphans 0 unclaimed 0 buffer_bytes 0") => Ok(()),
            Some(l) => Err(format!("netstat -s: {l}")),
            None => Err("no netstat -s line".to_string()),
        }
    });
    Ok(())
}

struct HostResults {
    /// SHA-256 of the big file as curl got it.
    big: Result<String, String>,
    keep_alive: Result<(), String>,
    /// SHA-256 of what the host sent to `nc` (after checking what came back).
    nc: Result<String, String>,
}

impl Host {
    fn exercise(self) -> HostResults {
        let big = self.curl_big();
        let keep_alive = self.curl_keep_alive();
        let nc = self.talk_to_nc();
        HostResults { big, keep_alive, nc }
    }

    fn curl_big(&self) -> Result<String, String> {
        let out = self.dir.join("big.got");
        let url = format!("http://127.0.0.1:{}/tmp/big", self.http_port);
        let started = Instant::now();
        loop {
            let status = Command::new("curl")
                .args(["-s", "-f", "-m", "60", "-o"])
                .arg(&out)
                .arg(&url)
                .status()
                .map_err(|e| format!("cannot run curl: {e}"))?;
            if status.success() {
                let len = fs::metadata(&out).map(|m| m.len()).unwrap_or(0);
                if len < BIG_FILE_MIN_BYTES {
                    return Err(format!(
                        "curl got {len} bytes, fewer than the {BIG_FILE_MIN_BYTES} expected"
                    ));
                }
                return sha256_of_file(&out);
            }
            if started.elapsed() > RETRY_FOR {
                return Err(format!("curl {url} kept failing ({status})"));
            }
            std::thread::sleep(Duration::from_millis(500));
        }
    }

    fn curl_keep_alive(&self) -> Result<(), String> {
        let url = format!("http://127.0.0.1:{}/etc/inittab", self.http_port);
        let last = self.dir.join("inittab.got");
        let mut command = Command::new("curl");
        command.args(["-s", "-m", "120", "-w", "%{http_code} %{num_connects}\\n"]);
        for i in 0..KEEP_ALIVE_REQUESTS {
            command.arg(&url);
            if i + 1 == KEEP_ALIVE_REQUESTS {
                command.arg("-o").arg(&last);
            } else {
                command.args(["-o", "/dev/null"]);
            }
        }
        let out = command.output().map_err(|e| format!("cannot run curl: {e}"))?;
        let text = String::from_utf8_lossy(&out.stdout);
        let lines: Vec<&str> = text.lines().collect();
        if lines.len() != KEEP_ALIVE_REQUESTS || lines.iter().any(|l| !l.starts_with("200 ")) {
            return Err(format!("curl's statuses: {}", lines.join(", ")));
        }
        let connects: u32 = lines.iter().filter_map(|l| l.split(' ').nth(1)?.parse::<u32>().ok()).sum();
        if connects != 1 {
            return Err(format!("{connects} connections for {KEEP_ALIVE_REQUESTS} requests"));
        }
        let want = fs::read(&self.inittab).map_err(|e| e.to_string())?;
        let got = fs::read(&last).map_err(|e| e.to_string())?;
        if got != want {
            return Err("the last response's body is not /etc/inittab".to_string());
        }
        Ok(())
    }

    /// `/etc/inittab` from the guest's `httpd` once its card's driver was
    /// restarted (retried while the guest is not listening yet).
    fn curl_inittab_again(&self) -> Result<(), String> {
        let out = self.dir.join("inittab-again.got");
        let url = format!("http://127.0.0.1:{}/etc/inittab", self.http_port);
        let want = fs::read(&self.inittab).map_err(|e| e.to_string())?;
        let started = Instant::now();
        loop {
            let status = Command::new("curl")
                .args(["-s", "-f", "-m", "60", "-o"])
                .arg(&out)
                .arg(&url)
                .status()
                .map_err(|e| format!("cannot run curl: {e}"))?;
            if status.success() {
                let got = fs::read(&out).map_err(|e| e.to_string())?;
                return if got == want { Ok(()) } else { Err("the body is not /etc/inittab".to_string()) };
            }
            if started.elapsed() > RETRY_FOR {
                return Err(format!("curl {url} kept failing ({status})"));
            }
            std::thread::sleep(Duration::from_millis(500));
        }
    }

    /// Send the payload to the guest's `nc -l`, shut the sending side,
    /// read until its end; it must be `/etc/inittab`.
    fn talk_to_nc(&self) -> Result<String, String> {
        let payload = pattern(NC_PAYLOAD_BYTES, 5);
        let want = fs::read(&self.inittab).map_err(|e| e.to_string())?;
        let started = Instant::now();
        loop {
            match self.nc_once(&payload) {
                Ok(got) if got == want => break,
                Ok(got) if got.is_empty() && started.elapsed() < RETRY_FOR => {}
                Ok(got) => {
                    return Err(format!("nc sent {} bytes, not /etc/inittab's {}", got.len(), want.len()));
                }
                Err(_) if started.elapsed() < RETRY_FOR => {}
                Err(e) => return Err(e),
            }
            std::thread::sleep(Duration::from_millis(500));
        }
        let path = self.dir.join("nc-payload");
        fs::write(&path, &payload).map_err(|e| e.to_string())?;
        sha256_of_file(&path)
    }

    fn nc_once(&self, payload: &[u8]) -> Result<Vec<u8>, String> {
        let mut s = TcpStream::connect(("127.0.0.1", self.nc_port)).map_err(|e| format!("connect: {e}"))?;
        s.set_read_timeout(Some(Duration::from_secs(60))).map_err(|e| e.to_string())?;
        let reader = s.try_clone().map_err(|e| e.to_string())?;
        // Read on a thread of its own while this one writes, so neither
        // side's buffers fill and stall the other.
        let read = std::thread::spawn(move || {
            let mut got = Vec::new();
            let r = (&reader).read_to_end(&mut got);
            r.map(|_| got)
        });
        s.write_all(payload).map_err(|e| format!("send: {e}"))?;
        s.shutdown(Shutdown::Write).map_err(|e| format!("shutdown: {e}"))?;
        read.join().map_err(|_| "reader panicked".to_string())?.map_err(|e| format!("receive: {e}"))
    }
}

/// Python's `http.server` on the host's loopback, stopped on drop.
struct PythonServer(Option<Child>);

impl PythonServer {
    fn start(dir: &Path, port: u16) -> Result<PythonServer, String> {
        let child = Command::new("python3")
            .args(["-m", "http.server", &port.to_string(), "--bind", "127.0.0.1", "--directory"])
            .arg(dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("cannot start python3 -m http.server: {e}"))?;
        let server = PythonServer(Some(child));
        // Listening before the guest asks (bounded).
        let started = Instant::now();
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            if started.elapsed() > Duration::from_secs(20) {
                return Err("python3 -m http.server did not start listening".to_string());
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        Ok(server)
    }

    fn stop(&mut self) {
        if let Some(mut c) = self.0.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

impl Drop for PythonServer {
    fn drop(&mut self) {
        self.stop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn guest_hashes_are_found_by_path() {
        let out = format!("{}  /tmp/big\n{}  /tmp/py.bin\n", "a".repeat(64), "b".repeat(64));
        assert_eq!(guest_hash(&out, "/tmp/py.bin"), Some("b".repeat(64).as_str()));
        assert_eq!(guest_hash(&out, "/tmp/none"), None);
        assert_eq!(guest_hash("short  /tmp/big", "/tmp/big"), None);
    }

    /// This boot alone (slow: `cargo test -p xtask -- --ignored
    /// boot_the_network_test --nocapture`).
    #[test]
    #[ignore]
    fn boot_the_network_test() {
        let workspace = Workspace::load().unwrap();
        let log_dir = workspace.target_dir.join("ktest");
        fs::create_dir_all(&log_dir).unwrap();
        let outcome = run(&workspace, 2, qemu::AccelChoice::Auto, 300, &log_dir);
        assert!(outcome.is_ok(), "{:?}", outcome.problems);
        assert_eq!(outcome.passed, 9);
    }
}
