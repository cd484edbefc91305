//! HTTP/1.1 as `httpd` and `fetch` need it (RFC 9110, 9112): URLs of the
//! form `http://A.B.C.D[:PORT]/path`, request and response heads, whether
//! a connection stays open, and the file a request path names.
//!
//! Invariants: nothing here panics on any input; a head longer than
//! [`MAX_HEAD_BYTES`] is refused.

use alloc::string::String;
use alloc::vec::Vec;

/// The longest request or response head accepted.
pub const MAX_HEAD_BYTES: usize = 8192;

/// A parsed `http://` URL. Hosts are IPv4 addresses (there is no DNS);
/// `localhost` is 127.0.0.1.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Url {
    pub host: [u8; 4],
    pub port: u16,
    /// The path and query, starting with `/`.
    pub path: String,
    /// The host as written, for the `Host` header.
    pub host_text: String,
}

pub fn parse_ipv4(text: &str) -> Option<[u8; 4]> {
    if text == "localhost" {
        return Some([127, 0, 0, 1]);
    }
    let mut o = [0u8; 4];
    let mut parts = text.split('.');
    for b in &mut o {
        let p = parts.next()?;
        if p.is_empty() || p.len() > 3 || !p.bytes().all(|c| c.is_ascii_digit()) {
            return None;
        }
        *b = p.parse().ok()?;
    }
    parts.next().is_none().then_some(o)
}

pub fn parse_url(url: &str) -> Result<Url, &'static str> {
    let rest = url.strip_prefix("http://").ok_or("only http:// URLs")?;
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    let (host_text, port) = match authority.rsplit_once(':') {
        Some((h, p)) => (h, p.parse::<u16>().ok().filter(|p| *p != 0).ok_or("bad port")?),
        None => (authority, 80),
    };
    let host = parse_ipv4(host_text).ok_or("the host must be an IPv4 address (there is no DNS)")?;
    Ok(Url { host, port, path: String::from(path), host_text: String::from(authority) })
}

/// Where the blank line ending a head is: the index just past it.
pub fn head_end(buf: &[u8]) -> Option<usize> {
    buf.windows(4).position(|w| w == b"\r\n\r\n").map(|i| i + 4)
}

/// A request head.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Request {
    pub method: String,
    pub target: String,
    /// 0 for HTTP/1.0, 1 for HTTP/1.1.
    pub minor: u8,
    pub keep_alive: bool,
    /// The body's length (`Content-Length`), skipped by `httpd`.
    pub body_bytes: u64,
}

/// Why a request head is refused: the status to answer with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refusal {
    BadRequest,
    VersionNotSupported,
}

fn header<'a>(lines: &[&'a str], name: &str) -> Option<&'a str> {
    lines.iter().find_map(|l| {
        let (n, v) = l.split_once(':')?;
        n.trim().eq_ignore_ascii_case(name).then(|| v.trim())
    })
}

fn has_token(value: Option<&str>, token: &str) -> bool {
    value.is_some_and(|v| v.split(',').any(|t| t.trim().eq_ignore_ascii_case(token)))
}

pub fn parse_request(head: &[u8]) -> Result<Request, Refusal> {
    let text = core::str::from_utf8(head).map_err(|_| Refusal::BadRequest)?;
    let lines: Vec<&str> = text.split("\r\n").filter(|l| !l.is_empty()).collect();
    let first = lines.first().ok_or(Refusal::BadRequest)?;
    let mut words = first.split(' ');
    let (Some(method), Some(target), Some(version), None) =
        (words.next(), words.next(), words.next(), words.next())
    else {
        return Err(Refusal::BadRequest);
    };
    let minor = match version {
        "HTTP/1.1" => 1,
        "HTTP/1.0" => 0,
        v if v.starts_with("HTTP/") => return Err(Refusal::VersionNotSupported),
        _ => return Err(Refusal::BadRequest),
    };
    if method.is_empty() || !method.bytes().all(|b| b.is_ascii_uppercase()) || !target.starts_with('/') {
        return Err(Refusal::BadRequest);
    }
    let connection = header(&lines[1..], "connection");
    let keep_alive =
        if minor == 1 { !has_token(connection, "close") } else { has_token(connection, "keep-alive") };
    let body_bytes = match header(&lines[1..], "content-length") {
        Some(v) => v.parse().map_err(|_| Refusal::BadRequest)?,
        None => 0,
    };
    if header(&lines[1..], "transfer-encoding").is_some() {
        // A chunked request body: not served.
        return Err(Refusal::BadRequest);
    }
    Ok(Request { method: String::from(method), target: String::from(target), minor, keep_alive, body_bytes })
}

/// The path under the served directory that a request target names:
/// the query dropped, `%XX` decoded, `.` and empty segments dropped;
/// `None` for a target that climbs out (`..`) or decodes to a NUL or a
/// bad escape.
pub fn file_path(target: &str) -> Option<String> {
    let path = target.split(['?', '#']).next().unwrap_or("");
    let mut decoded = Vec::with_capacity(path.len());
    let bytes = path.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = core::str::from_utf8(bytes.get(i + 1..i + 3)?).ok()?;
            decoded.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            decoded.push(bytes[i]);
            i += 1;
        }
    }
    if decoded.contains(&0) {
        return None;
    }
    let decoded = String::from_utf8(decoded).ok()?;
    let mut out = String::new();
    for seg in decoded.split('/') {
        match seg {
            "" | "." => {}
            ".." => return None,
            s => {
                out.push('/');
                out.push_str(s);
            }
        }
    }
    if out.is_empty() {
        out.push('/');
    }
    Some(out)
}

/// A `Content-Type` by the file name's extension.
pub fn content_type(path: &str) -> &'static str {
    let ext = path.rsplit_once('.').map_or("", |(_, e)| e);
    match ext {
        "html" | "htm" => "text/html; charset=utf-8",
        "txt" | "md" | "rs" | "sh" | "conf" => "text/plain; charset=utf-8",
        "json" => "application/json",
        "css" => "text/css",
        "js" => "text/javascript",
        "png" => "image/png",
        "svg" => "image/svg+xml",
        _ if !path.rsplit('/').next().unwrap_or("").contains('.') => "text/plain; charset=utf-8",
        _ => "application/octet-stream",
    }
}

pub fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        431 => "Request Header Fields Too Large",
        500 => "Internal Server Error",
        505 => "HTTP Version Not Supported",
        _ => "Unknown",
    }
}

/// A response head.
pub fn response_head(status: u16, content_type: &str, length: u64, keep_alive: bool) -> String {
    alloc::format!(
        "HTTP/1.1 {status} {}\r\nServer: ridgeback-httpd\r\nContent-Type: {content_type}\r\nContent-Length: {length}\r\nConnection: {}\r\n\r\n",
        reason(status),
        if keep_alive { "keep-alive" } else { "close" }
    )
}

/// What `fetch` needs of a response head.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Response {
    pub status: u16,
    pub content_length: Option<u64>,
    pub chunked: bool,
}

pub fn parse_response(head: &[u8]) -> Option<Response> {
    let text = core::str::from_utf8(head).ok()?;
    let lines: Vec<&str> = text.split("\r\n").filter(|l| !l.is_empty()).collect();
    let mut first = lines.first()?.splitn(3, ' ');
    let version = first.next()?;
    if !version.starts_with("HTTP/1.") {
        return None;
    }
    let status: u16 = first.next()?.parse().ok()?;
    let content_length = match header(&lines[1..], "content-length") {
        Some(v) => Some(v.parse().ok()?),
        None => None,
    };
    let chunked = has_token(header(&lines[1..], "transfer-encoding"), "chunked");
    Some(Response { status, content_length, chunked })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls() {
        let u = parse_url("http://10.0.2.2:8000/a/b.txt?x=1").unwrap();
        assert_eq!((u.host, u.port, u.path.as_str()), ([10, 0, 2, 2], 8000, "/a/b.txt?x=1"));
        let u = parse_url("http://127.0.0.1").unwrap();
        assert_eq!((u.port, u.path.as_str()), (80, "/"));
        assert_eq!(parse_url("http://localhost:81/").unwrap().host, [127, 0, 0, 1]);
        for bad in [
            "https://1.2.3.4/",
            "http://example.com/",
            "http://1.2.3.4:0/",
            "http://1.2.3.4:x/",
            "ftp://a",
            "http://1.2.3/",
            "http://1.2.3.4.5/",
            "http://256.1.1.1/",
        ] {
            assert!(parse_url(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn requests_and_keep_alive() {
        let r = parse_request(b"GET /etc/inittab HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
        assert_eq!((r.method.as_str(), r.target.as_str(), r.keep_alive), ("GET", "/etc/inittab", true));
        assert!(!parse_request(b"GET / HTTP/1.1\r\nConnection: close\r\n\r\n").unwrap().keep_alive);
        assert!(!parse_request(b"GET / HTTP/1.0\r\n\r\n").unwrap().keep_alive);
        assert!(parse_request(b"GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n").unwrap().keep_alive);
        assert_eq!(parse_request(b"POST / HTTP/1.1\r\nContent-Length: 5\r\n\r\n").unwrap().body_bytes, 5);
        assert_eq!(parse_request(b"GET / HTTP/2.0\r\n\r\n"), Err(Refusal::VersionNotSupported));
        for bad in [
            &b"\r\n\r\n"[..],
            b"GET /\r\n\r\n",
            b"GET x HTTP/1.1\r\n\r\n",
            b"get / HTTP/1.1\r\n\r\n",
            b"GET / HTTP/1.1 x\r\n\r\n",
            b"\xff\xfe",
            b"GET / HTTP/1.1\r\nContent-Length: -1\r\n\r\n",
        ] {
            assert_eq!(parse_request(bad), Err(Refusal::BadRequest), "{bad:?}");
        }
    }

    #[test]
    fn paths_stay_inside() {
        assert_eq!(file_path("/etc/inittab").as_deref(), Some("/etc/inittab"));
        assert_eq!(file_path("/").as_deref(), Some("/"));
        assert_eq!(file_path("//a/./b/?q=1").as_deref(), Some("/a/b"));
        assert_eq!(file_path("/a%20b").as_deref(), Some("/a b"));
        for bad in ["/../etc", "/a/../../b", "/%2e%2e/x", "/a%00", "/a%zz", "/a%2"] {
            assert_eq!(file_path(bad), None, "{bad}");
        }
    }

    #[test]
    fn heads() {
        assert_eq!(head_end(b"a\r\n\r\nbody"), Some(5));
        assert_eq!(head_end(b"a\r\n"), None);
        let r = parse_response(b"HTTP/1.0 200 OK\r\nContent-Length: 12\r\n\r\n").unwrap();
        assert_eq!((r.status, r.content_length, r.chunked), (200, Some(12), false));
        let r = parse_response(b"HTTP/1.1 404 Not Found\r\nTransfer-Encoding: chunked\r\n\r\n").unwrap();
        assert_eq!((r.status, r.content_length, r.chunked), (404, None, true));
        assert!(parse_response(b"SSH-2.0\r\n\r\n").is_none());
        let h = response_head(200, "text/plain", 3, true);
        assert!(
            h.starts_with("HTTP/1.1 200 OK\r\n")
                && h.contains("Content-Length: 3\r\n")
                && h.ends_with("\r\n\r\n")
        );
    }

    #[test]
    fn types() {
        assert_eq!(content_type("/etc/inittab"), "text/plain; charset=utf-8");
        assert_eq!(content_type("/a/b.bin"), "application/octet-stream");
        assert_eq!(content_type("/x.html"), "text/html; charset=utf-8");
    }
}
