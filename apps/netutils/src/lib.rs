//! The helpers of the network programs (`src/bin/`: `nc`, `httpd`,
//! `fetch`, `ping`, `ifconfig`, `netstat`).
//!
//! - [`http`]: pure logic: URLs, request and response heads, keep-alive
//!   rules, the path a request names under the served directory, built
//!   on the host too and tested there (`cargo test -p netutils --lib`);
//! - [`net`] (target only): whole writes, reading a head, and error
//!   reports on top of `runtime::unix`.
//!
//! What it is not: a general HTTP library. HTTP/1.1 as the programs
//! need it: GET and HEAD, `Content-Length` bodies, keep-alive.

#![no_std]
#![forbid(unsafe_code)]

extern crate alloc;
#[cfg(test)]
extern crate std;

pub mod http;

#[cfg(target_os = "none")]
pub mod net;
