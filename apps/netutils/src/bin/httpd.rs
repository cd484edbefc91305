//! httpd: serve a directory over HTTP/1.1. `httpd DIR [PORT]` (port 80 by
//! default) answers GET and HEAD for the files under DIR, with
//! keep-alive (many requests on one connection, pipelined or not), a
//! listing for a directory without `index.html`, and the usual refusals
//! (400, 403 for a path that climbs out of DIR, 404, 405, 431, 505).
//! `-n COUNT` ends it after COUNT connections (for scripts and tests).
//!
//! One process per connection (`fork`), the classic UNIX server: the
//! parent only accepts, reaps finished children and goes on.

#![no_std]
#![no_main]
#![forbid(unsafe_code)]

extern crate alloc;

use alloc::string::String;
use alloc::vec::Vec;
use netutils::http::{self, MAX_HEAD_BYTES, Refusal};
use netutils::net::{CHUNK_BYTES, FAILURE, read_head, report, write_all};
use protocols::unix::{mode, open_flags};
use runtime::eprintln;
use runtime::unix::socket::{self, AF_INET, SO_REUSEADDR, SOCK_STREAM, SOL_SOCKET, SockAddr};
use runtime::unix::{self, Fd};

runtime::entry!(main);

fn main(args: runtime::Args) -> i32 {
    let mut words: Vec<&str> = Vec::new();
    let mut limit: Option<u64> = None;
    let mut it = args.iter().skip(1);
    while let Some(w) = it.next() {
        if w == "-n" {
            limit = it.next().and_then(|n| n.parse().ok());
            if limit.is_none() {
                return usage();
            }
        } else {
            words.push(w);
        }
    }
    let (root, port) = match words.as_slice() {
        [root] => (*root, 80),
        [root, port] => match port.parse::<u16>() {
            Ok(p) => (*root, p),
            Err(_) => return usage(),
        },
        _ => return usage(),
    };
    let root = root.trim_end_matches('/');
    match unix::stat(if root.is_empty() { "/" } else { root }) {
        Ok(st) if mode::is_dir(st.mode) => {}
        Ok(_) => {
            eprintln!("httpd: {root}: not a directory");
            return FAILURE;
        }
        Err(e) => {
            report("httpd", root, e);
            return FAILURE;
        }
    }
    let listener = match open_listener(port) {
        Ok(fd) => fd,
        Err(()) => return FAILURE,
    };
    eprintln!("httpd: serving {} on port {port}", if root.is_empty() { "/" } else { root });
    let mut served = 0u64;
    while limit.is_none_or(|l| served < l) {
        let (conn, _) = match socket::accept(listener) {
            Ok(c) => c,
            Err(e) => {
                report("httpd", "accept", e);
                continue;
            }
        };
        served += 1;
        match unix::fork() {
            Ok(0) => {
                let _ = unix::close(listener);
                serve_connection(conn, root);
                let _ = unix::close(conn);
                unix::exit(0);
            }
            Ok(_) => {}
            // No process for it: serve it here.
            Err(_) => serve_connection(conn, root),
        }
        let _ = unix::close(conn);
        while let Ok(Some(_)) = unix::waitpid(-1, true) {}
    }
    let _ = unix::close(listener);
    while unix::waitpid(-1, false).is_ok_and(|r| r.is_some()) {}
    0
}

fn usage() -> i32 {
    eprintln!("usage: httpd [-n COUNT] DIR [PORT]");
    FAILURE
}

fn open_listener(port: u16) -> Result<Fd, ()> {
    let fd = socket::socket(AF_INET, SOCK_STREAM, 0).map_err(|e| report("httpd", "socket", e))?;
    let _ = socket::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, 1);
    socket::bind(fd, SockAddr::new([0; 4], port))
        .map_err(|e| report("httpd", &alloc::format!("port {port}"), e))?;
    socket::listen(fd, 8).map_err(|e| report("httpd", "listen", e))?;
    Ok(fd)
}

/// Requests on one connection until the client closes it or asks to.
fn serve_connection(conn: Fd, root: &str) {
    let mut buf: Vec<u8> = Vec::new();
    loop {
        let end = match read_head(conn, &mut buf, MAX_HEAD_BYTES) {
            Ok(Some(end)) => end,
            Ok(None) => return,
            Err(protocols::unix::errno::EMSGSIZE) => {
                let _ = simple(conn, 431, false);
                return;
            }
            Err(_) => return,
        };
        let request = http::parse_request(&buf[..end]);
        buf.drain(..end);
        let keep = match request {
            Ok(r) => {
                // A body is read past (GET and HEAD have none worth using).
                if !skip_body(conn, &mut buf, r.body_bytes) {
                    return;
                }
                respond(conn, root, &r).unwrap_or(false) && r.keep_alive
            }
            Err(Refusal::BadRequest) => {
                let _ = simple(conn, 400, false);
                false
            }
            Err(Refusal::VersionNotSupported) => {
                let _ = simple(conn, 505, false);
                false
            }
        };
        if !keep {
            return;
        }
    }
}

fn skip_body(conn: Fd, buf: &mut Vec<u8>, mut left: u64) -> bool {
    let take = (left as usize).min(buf.len());
    buf.drain(..take);
    left -= take as u64;
    let mut scratch = alloc::vec![0u8; 4096];
    while left > 0 {
        match unix::read(conn, &mut scratch[..(left as usize).min(4096)]) {
            Ok(0) | Err(_) => return false,
            Ok(n) => left -= n as u64,
        }
    }
    true
}

/// A response with a short text body.
fn simple(conn: Fd, status: u16, keep_alive: bool) -> Result<bool, ()> {
    let body = alloc::format!("{status} {}\n", http::reason(status));
    let head = http::response_head(status, "text/plain; charset=utf-8", body.len() as u64, keep_alive);
    write_all(conn, head.as_bytes()).map_err(|_| ())?;
    write_all(conn, body.as_bytes()).map_err(|_| ())?;
    Ok(keep_alive)
}

/// Answer one request; whether the connection may go on.
fn respond(conn: Fd, root: &str, r: &http::Request) -> Result<bool, ()> {
    let head_only = r.method == "HEAD";
    if r.method != "GET" && !head_only {
        return simple(conn, 405, r.keep_alive);
    }
    let Some(rel) = http::file_path(&r.target) else { return simple(conn, 403, r.keep_alive) };
    let mut path = String::from(root);
    path.push_str(&rel);
    let st = match unix::stat(&path) {
        Ok(st) => st,
        Err(_) => return simple(conn, 404, r.keep_alive),
    };
    if mode::is_dir(st.mode) {
        let index = alloc::format!("{}/index.html", path.trim_end_matches('/'));
        if unix::stat(&index).is_ok_and(|s| mode::is_reg(s.mode)) {
            return send_file(conn, &index, r.keep_alive, head_only);
        }
        return listing(conn, &path, &rel, r.keep_alive, head_only);
    }
    if !mode::is_reg(st.mode) {
        return simple(conn, 403, r.keep_alive);
    }
    send_file(conn, &path, r.keep_alive, head_only)
}

fn send_file(conn: Fd, path: &str, keep_alive: bool, head_only: bool) -> Result<bool, ()> {
    let fd = match unix::open(path, open_flags::O_RDONLY, 0) {
        Ok(fd) => fd,
        Err(_) => return simple(conn, 403, keep_alive),
    };
    let size = unix::fstat(fd).map(|s| s.size_bytes).unwrap_or(0);
    let head = http::response_head(200, http::content_type(path), size, keep_alive);
    let result = (|| {
        write_all(conn, head.as_bytes()).map_err(|_| ())?;
        if head_only {
            return Ok(keep_alive);
        }
        let mut buf = alloc::vec![0u8; CHUNK_BYTES];
        let mut left = size;
        while left > 0 {
            let want = (left as usize).min(buf.len());
            let n = unix::read(fd, &mut buf[..want]).map_err(|_| ())?;
            if n == 0 {
                // The file shrank: the promised length cannot be kept.
                return Err(());
            }
            write_all(conn, &buf[..n]).map_err(|_| ())?;
            left -= n as u64;
        }
        Ok(keep_alive)
    })();
    let _ = unix::close(fd);
    result
}

fn listing(conn: Fd, path: &str, rel: &str, keep_alive: bool, head_only: bool) -> Result<bool, ()> {
    let entries = match unix::read_dir(path) {
        Ok(e) => e,
        Err(_) => return simple(conn, 403, keep_alive),
    };
    let mut body = alloc::format!("<!DOCTYPE html>\n<title>{rel}</title>\n<h1>{rel}</h1>\n<ul>\n");
    let base = rel.trim_end_matches('/');
    for e in entries.iter().filter(|e| e.name != ".") {
        let slash = if mode::is_dir(e.mode) { "/" } else { "" };
        body.push_str(&alloc::format!("<li><a href=\"{base}/{}{slash}\">{}{slash}</a>\n", e.name, e.name));
    }
    body.push_str("</ul>\n");
    let head = http::response_head(200, "text/html; charset=utf-8", body.len() as u64, keep_alive);
    write_all(conn, head.as_bytes()).map_err(|_| ())?;
    if !head_only {
        write_all(conn, body.as_bytes()).map_err(|_| ())?;
    }
    Ok(keep_alive)
}
