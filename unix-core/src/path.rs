//! Paths: the monitor turns every path a process gives it into an
//! absolute, normalised one (no `.`, `..` or repeated `/`) before any
//! other server sees it, so the directory manager walks plain names only.

use alloc::string::String;
use alloc::vec::Vec;

pub use protocols::unix::{MAX_NAME_BYTES, MAX_PATH_BYTES};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PathError {
    Empty,
    TooLong,
    NameTooLong,
}

/// `path` resolved against the absolute directory `cwd`: absolute and
/// normalised. `..` at the root stays at the root (POSIX).
pub fn normalize(cwd: &str, path: &str) -> Result<String, PathError> {
    if path.is_empty() {
        return Err(PathError::Empty);
    }
    if path.len() > MAX_PATH_BYTES {
        return Err(PathError::TooLong);
    }
    if is_normal_absolute(path) {
        // The common case (a program's own absolute paths: R2's `creat`):
        // the path as it is, one copy, no vector of parts.
        return Ok(String::from(path));
    }
    let mut parts: Vec<&str> = Vec::new();
    let base = if path.starts_with('/') { "" } else { cwd };
    for name in base.split('/').chain(path.split('/')) {
        match name {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            n if n.len() > MAX_NAME_BYTES => return Err(PathError::NameTooLong),
            n => parts.push(n),
        }
    }
    let mut out = String::with_capacity(path.len() + cwd.len() + 1);
    for p in &parts {
        out.push('/');
        out.push_str(p);
    }
    if out.is_empty() {
        out.push('/');
    }
    if out.len() > MAX_PATH_BYTES {
        return Err(PathError::TooLong);
    }
    Ok(out)
}

/// Is `path` absolute and already what [`normalize`] would make of it:
/// names of at most [`MAX_NAME_BYTES`], none empty, `.` or `..`, and no
/// `/` at the end? (`/` itself is left to the general case.)
fn is_normal_absolute(path: &str) -> bool {
    let Some(rest) = path.strip_prefix('/') else { return false };
    rest.split('/')
        .all(|name| !name.is_empty() && name != "." && name != ".." && name.len() <= MAX_NAME_BYTES)
}

/// The parent directory and last name of a normalised absolute path
/// (`None` for `/`).
pub fn split_last(abs: &str) -> Option<(&str, &str)> {
    if abs == "/" {
        return None;
    }
    let i = abs.rfind('/')?;
    let parent = if i == 0 { "/" } else { &abs[..i] };
    Some((parent, &abs[i + 1..]))
}

/// The names of a normalised absolute path, root first.
pub fn components(abs: &str) -> impl Iterator<Item = &str> {
    abs.split('/').filter(|s| !s.is_empty())
}

/// Is `inner` equal to `outer` or below it (both normalised)?
pub fn is_within(inner: &str, outer: &str) -> bool {
    outer == "/"
        || inner == outer
        || (inner.starts_with(outer) && inner.as_bytes().get(outer.len()) == Some(&b'/'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_and_absolute() {
        assert_eq!(normalize("/home/u", "a/b").unwrap(), "/home/u/a/b");
        assert_eq!(normalize("/home/u", "/etc//passwd").unwrap(), "/etc/passwd");
        assert_eq!(normalize("/", ".").unwrap(), "/");
        assert_eq!(normalize("/a/b", "../c/./d/").unwrap(), "/a/c/d");
        assert_eq!(normalize("/", "../../x").unwrap(), "/x");
    }

    #[test]
    fn normal_absolute_paths_come_back_as_they_are_and_others_are_normalised() {
        for normal in ["/a", "/disk/r2/r2c17", "/a/b.c/..d/.e"] {
            assert!(is_normal_absolute(normal), "{normal}");
            assert_eq!(normalize("/cwd", normal).unwrap(), normal);
        }
        for other in ["/", "//a", "/a/", "/a//b", "/a/./b", "/a/../b", "/.", "/..", "a/b", ""] {
            assert!(!is_normal_absolute(other), "{other}");
        }
        assert_eq!(normalize("/cwd", "/a/../b/").unwrap(), "/b");
        let long_name = alloc::format!("/{}", "x".repeat(MAX_NAME_BYTES + 1));
        assert!(!is_normal_absolute(&long_name));
        assert_eq!(normalize("/", &long_name), Err(PathError::NameTooLong));
    }

    #[test]
    fn bad_paths() {
        assert_eq!(normalize("/", ""), Err(PathError::Empty));
        let long_name = "x".repeat(MAX_NAME_BYTES + 1);
        assert_eq!(normalize("/", &long_name), Err(PathError::NameTooLong));
        let long_path = "a/".repeat(MAX_PATH_BYTES);
        assert_eq!(normalize("/", &long_path), Err(PathError::TooLong));
    }

    #[test]
    fn split_and_within() {
        assert_eq!(split_last("/a/b"), Some(("/a", "b")));
        assert_eq!(split_last("/a"), Some(("/", "a")));
        assert_eq!(split_last("/"), None);
        assert!(is_within("/a/b", "/a"));
        assert!(!is_within("/ab", "/a"));
        assert!(is_within("/a", "/"));
        assert_eq!(components("/x/y").collect::<Vec<_>>(), ["x", "y"]);
    }
}
