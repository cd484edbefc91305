//! Benchmark B's `rk` disk (`--only brk`, `bench::b::Disk::Rk`): the
//! boot's ext2 image served by `nbdkit` with its `delay` filter (every
//! read and write waits [`bench::b::RK_ACCESS_MS`]) under its `noparallel`
//! filter (`serialize=all-requests`: one request at a time), and QEMU's
//! virtio-blk drive pointed at it (`-set drive.disk0.file=nbd:unix:…`),
//! so that the guest sees the same virtio-blk disk with a time per
//! access, as a single-arm disk of seed 004's era had.
//!
//! Why not QEMU's `throttling.*` options: QEMU's throttle is a leaky
//! bucket that lets a tenth of a second's worth of requests through at
//! once and delays only a caller that runs ahead of the rate
//! (`util/throttle.c`, `throttle_compute_wait`); a program that waits
//! for each block, as V1's `as` with one buffer did, pays nothing for
//! its accesses as long as its CPU work between them is longer than the
//! rate's interval. A disk costs every access its time whatever came
//! before; `nbdkit`'s delay does that.
//!
//! What it is not: a timing model of the RK05 (no seek by distance, no
//! rotation, no time per byte). The delay is spent asleep in the host's
//! `nbdkit` process, in real time, so it does not grow with the host's
//! load as the guest's TCG-emulated CPU work does: the figures of this
//! disk are mostly that fixed time, counted per access.
//!
//! Invariants: the server is this process's child, ended by its own pid
//! when [`Server`] is dropped (never by name); the socket lives in the
//! system's temporary directory under this process's id.

use std::fs::{self, File};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::qemu::DISK_DRIVE_ID;
use crate::tools::{self, Result};

/// The program and its Debian package (installed when missing, as QEMU is).
pub const NBDKIT: &str = "nbdkit";

/// How long the server may take to open its socket.
const START_TIMEOUT: Duration = Duration::from_secs(20);

/// `nbdkit`'s arguments: foreground, on a Unix socket, ending with its
/// parent, one request at a time, each delayed, serving `image`.
pub fn nbdkit_args(image: &Path, socket: &Path, access_ms: u32) -> Vec<String> {
    vec![
        "--foreground".to_string(),
        "--exit-with-parent".to_string(),
        "--unix".to_string(),
        socket.display().to_string(),
        // Filters apply outermost first: requests are serialised, then
        // each waits its delay, so the delays cannot overlap.
        "--filter=noparallel".to_string(),
        "--filter=delay".to_string(),
        "file".to_string(),
        image.display().to_string(),
        "serialize=all-requests".to_string(),
        format!("rdelay={access_ms}ms"),
        format!("wdelay={access_ms}ms"),
    ]
}

/// The QEMU arguments, appended after the machine's own `-drive`, that
/// point the virtio-blk drive at the server instead of the image file.
pub fn qemu_args(socket: &Path) -> Result<[String; 2]> {
    let path = socket.display().to_string();
    if path.contains(',') || path.contains(':') {
        return Err(format!(
            "the nbd socket path {path} holds a ',' or ':', which QEMU's option syntax cannot carry"
        ));
    }
    Ok(["-set".to_string(), format!("drive.{DISK_DRIVE_ID}.file=nbd:unix:{path}")])
}

/// A running `nbdkit`; dropped, it is ended and its socket removed.
pub struct Server {
    child: Child,
    socket: PathBuf,
}

impl Server {
    /// Starts `nbdkit` on `image`; its messages go to `log`. Returns once
    /// its socket exists.
    pub fn start(image: &Path, log: &Path) -> Result<Server> {
        tools::ensure_program(NBDKIT, NBDKIT, "nbdkit")?;
        let socket = std::env::temp_dir().join(format!("ridgeback-rk-{}.sock", std::process::id()));
        let _ = fs::remove_file(&socket);
        let log_file = File::create(log).map_err(|e| format!("cannot create {}: {e}", log.display()))?;
        let child = Command::new(NBDKIT)
            .args(nbdkit_args(image, &socket, bench::b::RK_ACCESS_MS))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log_file)
            .spawn()
            .map_err(|e| format!("cannot start {NBDKIT}: {e}"))?;
        let mut server = Server { child, socket };
        let deadline = Instant::now() + START_TIMEOUT;
        while !server.socket.exists() {
            if let Ok(Some(status)) = server.child.try_wait() {
                return Err(format!("{NBDKIT} ended before serving ({status}); see {}", log.display()));
            }
            if Instant::now() > deadline {
                return Err(format!("{NBDKIT} opened no socket in {} s", START_TIMEOUT.as_secs()));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Ok(server)
    }

    pub fn qemu_args(&self) -> Result<[String; 2]> {
        qemu_args(&self.socket)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        // Our own child, by its pid; it has written every request QEMU
        // sent (the file plugin writes through), so the image is whole.
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = fs::remove_file(&self.socket);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_server_is_serialised_and_delayed_for_reads_and_writes() {
        let args = nbdkit_args(Path::new("/t/ext2.img"), Path::new("/tmp/rk.sock"), 2).join(" ");
        assert_eq!(
            args,
            "--foreground --exit-with-parent --unix /tmp/rk.sock --filter=noparallel --filter=delay \
             file /t/ext2.img serialize=all-requests rdelay=2ms wdelay=2ms"
        );
    }

    #[test]
    fn qemu_points_the_drive_at_the_socket_or_refuses_a_path_it_cannot_carry() {
        let args = qemu_args(Path::new("/tmp/ridgeback-rk-7.sock")).unwrap();
        assert_eq!(
            args,
            ["-set".to_string(), "drive.disk0.file=nbd:unix:/tmp/ridgeback-rk-7.sock".to_string()]
        );
        assert!(qemu_args(Path::new("/tmp/a,b.sock")).unwrap_err().contains("','"));
        assert!(qemu_args(Path::new("/tmp/a:b.sock")).is_err());
    }
}
