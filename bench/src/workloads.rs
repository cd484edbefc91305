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

    #[test]
    fn copy_bandwidth_copies() {
        let source = [7u8; 4096];
        let mut destination = [0u8; 4096];
        let measurement = copy_bandwidth::<Quiet>("copy", &QUICK, &source, &mut destination);
        assert_eq!(destination, source);
        assert!(measurement.median > 0.0);
    }
}
