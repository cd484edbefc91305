//! The digest `tchild args` exits with: FNV-1a (32 bits) of its argument
//! bytes, so that the test runner checks the bytes that reached the child,
//! not only their number. Both programs include this file with `#[path]`.

/// FNV-1a, 32 bits (Fowler, Noll, Vo): every byte changes the result.
pub fn fnv1a_32(bytes: &[u8]) -> u32 {
    bytes.iter().fold(0x811c_9dc5u32, |hash, &b| (hash ^ u32::from(b)).wrapping_mul(0x0100_0193))
}
