//! fetch: download a URL, like a small wget. `fetch URL [-o FILE]`
//! writes the body to FILE (standard output without `-o`) and says how
//! many bytes came. HTTP/1.0 with `Connection: close` (so no server
//! chunks the body); the body ends at `Content-Length` or at the end of
//! the stream. Exit status 1 for anything but 200, a short body, or an
//! error on the way.

#![no_std]
#![no_main]
#![forbid(unsafe_code)]

extern crate alloc;

use alloc::vec::Vec;
use netutils::http::{self, MAX_HEAD_BYTES};
use netutils::net::{CHUNK_BYTES, FAILURE, read_head, report, write_all};
use protocols::unix::open_flags::{O_CREAT, O_TRUNC, O_WRONLY};
use runtime::eprintln;
use runtime::unix::socket::{self, AF_INET, SOCK_STREAM, SockAddr};
use runtime::unix::{self, Fd};

runtime::entry!(main);

fn main(args: runtime::Args) -> i32 {
    let words: Vec<&str> = args.iter().skip(1).collect();
    let (url, out_path) = match words.as_slice() {
        [url] => (*url, None),
        [url, "-o", file] | ["-o", file, url] => (*url, Some(*file)),
        _ => {
            eprintln!("usage: fetch URL [-o FILE]");
            return FAILURE;
        }
    };
    let url = match http::parse_url(url) {
        Ok(u) => u,
        Err(why) => {
            eprintln!("fetch: {url}: {why}");
            return FAILURE;
        }
    };
    let to = SockAddr::new(url.host, url.port);
    let fd = match socket::socket(AF_INET, SOCK_STREAM, 0).and_then(|fd| socket::connect(fd, to).map(|()| fd))
    {
        Ok(fd) => fd,
        Err(e) => {
            report("fetch", &alloc::format!("{to}"), e);
            return FAILURE;
        }
    };
    let status = get(fd, &url, out_path);
    let _ = unix::close(fd);
    status
}

fn get(fd: Fd, url: &http::Url, out_path: Option<&str>) -> i32 {
    let request = alloc::format!(
        "GET {} HTTP/1.0\r\nHost: {}\r\nUser-Agent: ridgeback-fetch\r\nConnection: close\r\n\r\n",
        url.path,
        url.host_text
    );
    if let Err(e) = write_all(fd, request.as_bytes()) {
        report("fetch", "send", e);
        return FAILURE;
    }
    let mut buf = Vec::new();
    let end = match read_head(fd, &mut buf, MAX_HEAD_BYTES) {
        Ok(Some(end)) => end,
        Ok(None) => {
            eprintln!("fetch: the server closed the connection without an answer");
            return FAILURE;
        }
        Err(e) => {
            report("fetch", "receive", e);
            return FAILURE;
        }
    };
    let Some(response) = http::parse_response(&buf[..end]) else {
        eprintln!("fetch: not an HTTP response");
        return FAILURE;
    };
    if response.status != 200 {
        eprintln!("fetch: {} {}", response.status, http::reason(response.status));
        return FAILURE;
    }
    if response.chunked {
        eprintln!("fetch: a chunked body (asked for HTTP/1.0): not supported");
        return FAILURE;
    }
    let out = match out_path {
        Some(p) => match unix::open(p, O_WRONLY | O_CREAT | O_TRUNC, 0o644) {
            Ok(fd) => fd,
            Err(e) => {
                report("fetch", p, e);
                return FAILURE;
            }
        },
        None => 1,
    };
    let result = body(fd, out, &buf[end..], response.content_length);
    if out != 1 {
        let _ = unix::close(out);
    }
    match result {
        Ok(n) => {
            if let Some(p) = out_path {
                eprintln!("fetch: {n} bytes to {p}");
            }
            0
        }
        Err(why) => {
            eprintln!("fetch: {why}");
            FAILURE
        }
    }
}

/// Copy the body (`first` already read) to `out`; its length.
fn body(fd: Fd, out: Fd, first: &[u8], length: Option<u64>) -> Result<u64, alloc::string::String> {
    let take = length.map_or(first.len(), |l| (l as usize).min(first.len()));
    write_all(out, &first[..take]).map_err(|e| alloc::format!("write: {}", e.name()))?;
    let mut got = take as u64;
    let mut buf = alloc::vec![0u8; CHUNK_BYTES];
    loop {
        if length.is_some_and(|l| got >= l) {
            return Ok(got);
        }
        let want = length.map_or(buf.len(), |l| ((l - got) as usize).min(buf.len()));
        let n = unix::read(fd, &mut buf[..want]).map_err(|e| alloc::format!("receive: {}", e.name()))?;
        if n == 0 {
            return match length {
                Some(l) => Err(alloc::format!("the body ended after {got} of {l} bytes")),
                None => Ok(got),
            };
        }
        write_all(out, &buf[..n]).map_err(|e| alloc::format!("write: {}", e.name()))?;
        got += n as u64;
    }
}
