//! The benchmarks that are the same program on both systems: they reach
//! the operating system only through [`Platform`] and a [`RoundTrip`]
//! channel, so Ridgeback's build and Linux's build run identical loops.

use crate::Platform;
use crate::harness::{self, Config, Measurement, Unit};
use core::hint::black_box;

/// Size of one ping-pong message: the seed's 32-byte request and reply
/// (seed 001, Ridge OS, Table 1).
pub const MESSAGE_BYTES: usize = 32;

/// A channel to a peer process that echoes each request back as its
/// reply. On Linux: a pipe pair, a Unix socket, a futex over shared memory,
/// or `sched_yield` turn-taking; on Ridgeback: a message exchange.
pub trait RoundTrip {
    /// Sends `request` and waits for the peer's reply.
    fn round_trip(&mut self, request: &[u8; MESSAGE_BYTES], reply: &mut [u8; MESSAGE_BYTES]);
}

/// A channel whose requests carry a buffer of data (up to a page) and whose
/// replies are one [`MESSAGE_BYTES`]-byte message: the seed's SendData
/// round trip (seed 001, Table 1). On Linux: a pipe pair; on Ridgeback:
/// SendData, by copy or by copy-on-write loan.
pub trait DataRoundTrip {
    /// Sends all of `request` and waits for the peer's reply, which must
    /// start with the first 8 bytes of `request`.
    fn round_trip_data(&mut self, request: &[u8], reply: &mut [u8; MESSAGE_BYTES]);
}

/// `getpid`: the cost of the cheapest kernel entry (seed 001, Table 2).
pub fn getpid<P: Platform>(config: &Config) -> Measurement {
    harness::run::<P>("getpid", Unit::NanosPerOp, config, |iterations| {
        for _ in 0..iterations {
            black_box(P::getpid());
        }
    })
}

/// Bandwidth of a user process copying `source` into `destination` with a
/// plain `copy_from_slice` (what the compiler makes of it: `memcpy`): the
/// limit any copying pipe or message system can reach (seed 002).
pub fn copy_bandwidth<P: Platform>(
    name: &str,
    config: &Config,
    source: &[u8],
    destination: &mut [u8],
) -> Measurement {
    assert_eq!(source.len(), destination.len());
    let bytes_per_op = source.len() as u64;
    // Touch both buffers first so page faults are not part of the figure.
    destination.copy_from_slice(source);
    harness::run::<P>(name, Unit::MegabytesPerSecond { bytes_per_op }, config, |iterations| {
        for _ in 0..iterations {
            // black_box on both sides: the copy must happen every time.
            black_box(&mut *destination).copy_from_slice(black_box(source));
        }
    })
}

/// Round trips of [`MESSAGE_BYTES`]-byte messages through `channel`. Each
/// request carries its sequence number and the reply must echo it, so a
/// lost or stale reply stops the benchmark instead of flattering it.
pub fn ping_pong<P: Platform>(name: &str, config: &Config, channel: &mut impl RoundTrip) -> Measurement {
    let mut sequence = 0u64;
    harness::run::<P>(name, Unit::NanosPerRoundTrip, config, |iterations| {
        let mut request = [0x5a_u8; MESSAGE_BYTES];
        let mut reply = [0_u8; MESSAGE_BYTES];
        for _ in 0..iterations {
            sequence += 1;
            request[..8].copy_from_slice(&sequence.to_le_bytes());
            channel.round_trip(&request, &mut reply);
            assert!(reply[..8] == request[..8], "{name}: reply does not echo request {sequence}");
        }
    })
}

/// Round trips carrying `request` (its whole length) each way out and a
/// [`MESSAGE_BYTES`]-byte reply back. The first 8 bytes of the request are
/// a fresh sequence number every time, written before each send as a
/// program producing new data would, and the reply must echo them.
pub fn data_ping_pong<P: Platform>(
    name: &str,
    config: &Config,
    channel: &mut impl DataRoundTrip,
    request: &mut [u8],
) -> Measurement {
    assert!(request.len() >= 8, "{name}: the request carries an 8-byte sequence number");
    let mut sequence = 0u64;
    harness::run::<P>(name, Unit::NanosPerRoundTrip, config, |iterations| {
        let mut reply = [0_u8; MESSAGE_BYTES];
        for _ in 0..iterations {
            sequence += 1;
            request[..8].copy_from_slice(&sequence.to_le_bytes());
            channel.round_trip_data(request, &mut reply);
            assert!(reply[..8] == request[..8], "{name}: reply does not echo request {sequence}");
        }
    })
}

/// The context-switch figure: `yield` in a loop while one peer process,
/// started by the caller on the same CPU at the same priority, does the
/// same. Each iteration is a round trip of two switches (to the peer and
/// back) and two kernel entries. The caller must make sure the peer
/// exists and shares the CPU: without it, `yield` returns at once and the
/// figure is only the kernel entry (the Ridgeback build checks that with
/// its context-switch counter).
pub fn yield_pair<P: Platform>(name: &str, config: &Config) -> Measurement {
    harness::run::<P>(name, Unit::NanosPerRoundTrip, config, |iterations| {
        for _ in 0..iterations {
            P::yield_now();
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Echo {
        round_trips: u64,
    }
    impl RoundTrip for Echo {
        fn round_trip(&mut self, request: &[u8; MESSAGE_BYTES], reply: &mut [u8; MESSAGE_BYTES]) {
            self.round_trips += 1;
            *reply = *request;
        }
    }

    struct Quiet;
    impl Platform for Quiet {
        fn tsc_hz() -> u64 {
            1_000_000_000
        }
        fn getpid() -> u64 {
            1
        }
        fn yield_now() {}
        fn write_stdout(_: &[u8]) {}
    }

    const QUICK: Config = Config { sample_count: 3, min_sample_ns: 100_000 };

    #[test]
    fn ping_pong_counts_every_round_trip() {
        let mut echo = Echo { round_trips: 0 };
        let measurement = ping_pong::<Quiet>("echo", &QUICK, &mut echo);
        assert!(echo.round_trips >= 3 * measurement.iterations);
    }

    #[test]
    #[should_panic(expected = "does not echo")]
    fn ping_pong_rejects_a_wrong_reply() {
        struct Stale;
        impl RoundTrip for Stale {
            fn round_trip(&mut self, _: &[u8; MESSAGE_BYTES], reply: &mut [u8; MESSAGE_BYTES]) {
                *reply = [0; MESSAGE_BYTES];
            }
        }
        ping_pong::<Quiet>("stale", &QUICK, &mut Stale);
    }

    /// Echoes the first 8 bytes, counting the bytes it was sent.
    struct DataEcho {
        bytes: u64,
    }
    impl DataRoundTrip for DataEcho {
        fn round_trip_data(&mut self, request: &[u8], reply: &mut [u8; MESSAGE_BYTES]) {
            self.bytes += request.len() as u64;
            reply[..8].copy_from_slice(&request[..8]);
        }
    }

    #[test]
    fn data_ping_pong_sends_the_whole_buffer_with_a_fresh_sequence() {
        let mut echo = DataEcho { bytes: 0 };
        const REQUEST_BYTES: u64 = 4096;
        let mut request = [0u8; REQUEST_BYTES as usize];
        let measurement = data_ping_pong::<Quiet>("data", &QUICK, &mut echo, &mut request);
        assert_eq!(echo.bytes % REQUEST_BYTES, 0);
        assert!(echo.bytes / REQUEST_BYTES >= 3 * measurement.iterations);
        assert_ne!(request[..8], [0; 8], "the sequence number was written");
    }

    #[test]
    #[should_panic(expected = "does not echo")]
    fn data_ping_pong_rejects_a_stale_reply() {
        struct Stale;
        impl DataRoundTrip for Stale {
            fn round_trip_data(&mut self, _: &[u8], reply: &mut [u8; MESSAGE_BYTES]) {
                *reply = [0; MESSAGE_BYTES];
            }
        }
        data_ping_pong::<Quiet>("stale", &QUICK, &mut Stale, &mut [0u8; 64]);
    }

    #[test]
    fn yield_pair_yields_every_iteration() {
        use core::sync::atomic::{AtomicU64, Ordering};
        static YIELDS: AtomicU64 = AtomicU64::new(0);
        struct Yielding;
        impl Platform for Yielding {
            fn tsc_hz() -> u64 {
                1_000_000_000
            }
            fn getpid() -> u64 {
                1
            }
            fn yield_now() {
                YIELDS.fetch_add(1, Ordering::Relaxed);
            }
            fn write_stdout(_: &[u8]) {}
        }
        let measurement = yield_pair::<Yielding>("yield", &QUICK);
        assert!(YIELDS.load(Ordering::Relaxed) >= 3 * measurement.iterations);
    }

    #[test]
    fn copy_bandwidth_copies() {
        const COPY_BYTES: usize = 4096;
        let source = [7u8; COPY_BYTES];
        let mut destination = [0u8; COPY_BYTES];
        let measurement = copy_bandwidth::<Quiet>("copy", &QUICK, &source, &mut destination);
        assert_eq!(destination, source);
        assert!(measurement.median > 0.0);
    }
}
