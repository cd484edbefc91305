//! Program arguments. A process started by the kernel's `spawn` gets
//! whitespace-separated text; a UNIX process started by the monitor's
//! `exec` gets an exec block (`protocols::unix::exec_args`) whose
//! arguments may hold any bytes but NUL. `Args` reads both.

/// The arguments of this process.
#[derive(Clone, Copy)]
pub struct Args {
    bytes: &'static [u8],
    /// Some(argc) for an exec block (then `bytes` are the NUL-ended strings).
    argc: Option<usize>,
}

impl Args {
    /// Called by `_start` only: the kernel maps the argument page read-only
    /// at `abi::layout::USER_ARGS_ADDR` and passes its address and length.
    pub fn from_start(addr: u64, len: u64) -> Args {
        let ok = addr == abi::layout::USER_ARGS_ADDR && len <= abi::layout::MAX_ARGS_BYTES;
        let bytes: &'static [u8] = if ok {
            // SAFETY: the kernel maps this page read-only for the life of the
            // process and never changes it; the length is within the page
            // (checked above).
            unsafe { core::slice::from_raw_parts(addr as *const u8, len as usize) }
        } else {
            &[]
        };
        match protocols::unix::exec_args::decode(bytes) {
            Some((header, strings)) => {
                crate::unix::set_exec_block(bytes);
                Args { bytes: strings, argc: Some(header.argc as usize) }
            }
            None => Args { bytes, argc: None },
        }
    }

    /// The raw argument string (for a UNIX process: the arguments after
    /// the program name, joined by spaces is not possible without a heap,
    /// so this is the first argument only).
    pub fn as_str(&self) -> &'static str {
        match self.argc {
            None => core::str::from_utf8(self.bytes).unwrap_or(""),
            Some(_) => self.iter().nth(1).unwrap_or(""),
        }
    }

    /// The words of the argument string; for a UNIX process, `argv`
    /// (program name first).
    pub fn iter(&self) -> impl Iterator<Item = &'static str> {
        let bytes = self.bytes;
        let (plain, exec) = match self.argc {
            None => (Some(core::str::from_utf8(bytes).unwrap_or("").split_ascii_whitespace()), None),
            Some(argc) => (
                None,
                Some(bytes.split(|&b| b == 0).map(|s| core::str::from_utf8(s).unwrap_or("")).take(argc)),
            ),
        };
        plain.into_iter().flatten().chain(exec.into_iter().flatten())
    }

    pub fn get(&self, i: usize) -> Option<&'static str> {
        self.iter().nth(i)
    }

    /// Started by the monitor's `exec` (a UNIX process)?
    pub fn is_unix(&self) -> bool {
        self.argc.is_some()
    }
}
