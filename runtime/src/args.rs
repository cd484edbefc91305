//! Program arguments: the bytes given to `spawn`, split on whitespace.

/// The arguments of this process.
#[derive(Clone, Copy)]
pub struct Args {
    bytes: &'static [u8],
}

impl Args {
    /// Called by `_start` only: the kernel maps the argument page read-only
    /// at `abi::layout::USER_ARGS_ADDR` and passes its address and length.
    pub fn from_start(addr: u64, len: u64) -> Args {
        let ok = addr == abi::layout::USER_ARGS_ADDR && len <= abi::layout::MAX_ARGS_BYTES;
        let bytes = if ok {
            // SAFETY: the kernel maps this page read-only for the life of the
            // process and never changes it; the length is within the page
            // (checked above).
            unsafe { core::slice::from_raw_parts(addr as *const u8, len as usize) }
        } else {
            &[]
        };
        Args { bytes }
    }

    /// The raw argument string.
    pub fn as_str(&self) -> &'static str {
        core::str::from_utf8(self.bytes).unwrap_or("")
    }

    /// The words of the argument string.
    pub fn iter(&self) -> impl Iterator<Item = &'static str> {
        self.as_str().split_ascii_whitespace()
    }

    pub fn get(&self, i: usize) -> Option<&'static str> {
        self.iter().nth(i)
    }
}
