//! The disk file system's counters as `bbench` and `r2bench` read them:
//! `ext2fs`'s cache statistics for `/disk` (`unix::fs_stats`, gathered by
//! the monitor from each disk manager as `point:key=value` lines), and
//! their change over a measurement, printed as a comment beside a figure
//! so that the serial log says what the figure asked of the cache.

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use bench::r2;
use runtime::unix;

/// `ext2fs`'s counters for `/disk` (`unix::fs_stats`: `point:key=value`).
pub fn disk_stats() -> Result<String, String> {
    let text = unix::fs_stats().map_err(|e| format!("the disk's counters: {}", e.name()))?;
    let prefix = format!("{}:", r2::DISK_DIR);
    let lines: Vec<&str> = text.lines().filter_map(|l| l.strip_prefix(prefix.as_str())).collect();
    if lines.is_empty() {
        return Err(format!("nothing is mounted at {} (mount: {:?})", r2::DISK_DIR, unix::mounts().ok()));
    }
    Ok(lines.join("\n"))
}

pub fn stat(stats: &str, key: &str) -> Option<u64> {
    stats.lines().find_map(|l| l.strip_prefix(key)?.strip_prefix('=')?.parse().ok())
}

/// The change of `ext2fs`'s cache counters from `before` to `after`
/// ([`disk_stats`] texts), as one comment's worth of `key=value`.
pub fn stats_delta(before: &str, after: &str) -> String {
    let mut text = String::new();
    for key in [
        "hits",
        "misses",
        "read_ahead_hits",
        "read_ahead_blocks",
        "read_transfers",
        "blocks_read",
        "write_transfers",
        "write_behind_transfers",
        "blocks_written",
        "waits",
        "flushes",
        "requests",
        "syncs",
        "device_wait_ticks",
        "flush_ticks",
        "discarded_blocks",
        "expired_transfers",
        "order_visits",
    ] {
        let delta = stat(after, key).unwrap_or(0).saturating_sub(stat(before, key).unwrap_or(0));
        text.push_str(&format!("{key}={delta} "));
    }
    text.pop();
    text
}
