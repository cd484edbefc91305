//! The kernel modules the Linux guest loads: which ones, in which order,
//! and their bytes, uncompressed.
//!
//! What it is: [`unpack`] takes the wanted modules' names, finds them in an
//! unpacked Debian kernel package (`modules.order`, `modules.builtin`),
//! adds every module they depend on (read from each module's own
//! `.modinfo`: Debian's package ships no `modules.dep`, its postinst runs
//! depmod), and writes them uncompressed, with the load order, into the
//! guest's cache; [`load_order`] reads that order back.
//!
//! What it is not: the loading. `/init` runs busybox's `insmod` on each,
//! in the order written here (see `init_script` in `linux_guest.rs`).
//!
//! Invariants: each module comes after everything it depends on; built-in
//! modules are left out; module names are normalised to `_` (the kernel
//! treats `-` and `_` alike).

use std::collections::{BTreeSet, HashMap};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The file in the cache's module directory that lists the modules in
/// load order, one name a line.
const ORDER_FILE: &str = "ORDER";

/// Resolves `wanted` in the kernel's `modules_root`
/// (`lib/modules/<release>/`) and writes each module, and each module it
/// needs, to `out_dir` as `<name>.ko`, uncompressed (with the host's `xz`,
/// else `busybox`'s `unxz`), followed by the load order.
pub fn unpack(modules_root: &Path, busybox: &Path, wanted: &[&str], out_dir: &Path) -> Result<(), String> {
    let read = |name: &str| {
        fs::read_to_string(modules_root.join(name))
            .map_err(|e| format!("reading {}: {e}", modules_root.join(name).display()))
    };
    let mut module_bytes: HashMap<String, Vec<u8>> = HashMap::new();
    let mut depends_of = |relative: &str| -> Result<Vec<String>, String> {
        let bytes = decompress_module(&modules_root.join(relative), busybox)?;
        let depends = modinfo_depends(&bytes).map_err(|e| format!("{relative}: {e}"))?;
        module_bytes.insert(relative.to_string(), bytes);
        Ok(depends)
    };
    let load_order =
        module_load_order(&read("modules.order")?, &read("modules.builtin")?, wanted, &mut depends_of)?;
    for relative in &load_order {
        let target = out_dir.join(format!("{}.ko", module_name(relative)));
        fs::write(&target, &module_bytes[relative])
            .map_err(|e| format!("writing {}: {e}", target.display()))?;
    }
    // The load order is part of the cache: [`load_order`] reads it back.
    let order_file = out_dir.join(ORDER_FILE);
    let names: Vec<String> = load_order.iter().map(|p| module_name(p)).collect();
    fs::write(&order_file, names.join("\n") + "\n")
        .map_err(|e| format!("writing {}: {e}", order_file.display()))
}

/// The names of the modules [`unpack`] wrote to `modules_dir`, in load order.
pub fn load_order(modules_dir: &Path) -> Result<Vec<String>, String> {
    let order = fs::read_to_string(modules_dir.join(ORDER_FILE))
        .map_err(|e| format!("reading {}: {e}", modules_dir.join(ORDER_FILE).display()))?;
    Ok(order.lines().filter(|l| !l.is_empty()).map(str::to_string).collect())
}

/// Orders the wanted modules and their dependencies so each comes after
/// everything it needs. Paths are as in `modules.order` (relative to
/// `lib/modules/<release>/`); built-in modules are left out.
/// `depends_of(path)` gives the names a module depends on.
fn module_load_order(
    modules_order: &str,
    modules_builtin: &str,
    wanted: &[&str],
    depends_of: &mut dyn FnMut(&str) -> Result<Vec<String>, String>,
) -> Result<Vec<String>, String> {
    let path_of: HashMap<String, String> =
        modules_order.lines().filter(|l| !l.is_empty()).map(|l| (module_name(l), l.to_string())).collect();
    let builtin: BTreeSet<String> = modules_builtin.lines().map(module_name).collect();

    struct Walk<'a> {
        path_of: &'a HashMap<String, String>,
        builtin: &'a BTreeSet<String>,
        depends_of: &'a mut dyn FnMut(&str) -> Result<Vec<String>, String>,
        order: Vec<String>,
        seen: BTreeSet<String>,
    }
    impl Walk<'_> {
        fn visit(&mut self, name: &str) -> Result<(), String> {
            let name = name.replace('-', "_");
            if !self.seen.insert(name.clone()) {
                return Ok(());
            }
            let Some(path) = self.path_of.get(&name) else {
                return if self.builtin.contains(&name) {
                    Ok(())
                } else {
                    Err(format!("module {name} is neither in modules.order nor built in"))
                };
            };
            for dependency in (self.depends_of)(path)? {
                self.visit(&dependency)?;
            }
            self.order.push(path.clone());
            Ok(())
        }
    }
    let mut walk =
        Walk { path_of: &path_of, builtin: &builtin, depends_of, order: Vec::new(), seen: BTreeSet::new() };
    for name in wanted {
        walk.visit(name)?;
    }
    Ok(walk.order)
}

/// The `depends=` entry of a module's `.modinfo` ELF section: the names of
/// the modules it needs, comma-separated (written by the kernel's modpost).
fn modinfo_depends(elf: &[u8]) -> Result<Vec<String>, String> {
    // ELF64 little endian (System V ABI, "ELF header" and "Sections").
    let u16_at = |at: usize| elf.get(at..at + 2).map(|b| u16::from_le_bytes([b[0], b[1]]) as usize);
    let u32_at = |at: usize| elf.get(at..at + 4).map(|b| u32::from_le_bytes(b.try_into().unwrap()) as usize);
    let u64_at = |at: usize| elf.get(at..at + 8).map(|b| u64::from_le_bytes(b.try_into().unwrap()) as usize);
    if !elf.starts_with(b"\x7fELF\x02") {
        return Err("not an ELF64 file".into());
    }
    let truncated = || "truncated ELF".to_string();
    let section_headers_at = u64_at(0x28).ok_or_else(truncated)?;
    let header_size = u16_at(0x3a).ok_or_else(truncated)?;
    let section_count = u16_at(0x3c).ok_or_else(truncated)?;
    let names_index = u16_at(0x3e).ok_or_else(truncated)?;
    // (name offset, file offset, size) of section `i`.
    let section = |i: usize| {
        let at = section_headers_at + i * header_size;
        Some((u32_at(at)?, u64_at(at + 0x18)?, u64_at(at + 0x20)?))
    };
    let (_, names_at, names_len) = section(names_index).ok_or_else(truncated)?;
    let names = elf.get(names_at..names_at + names_len).ok_or_else(truncated)?;
    for i in 0..section_count {
        let (name_at, at, len) = section(i).ok_or_else(truncated)?;
        let name = names.get(name_at..).and_then(|n| n.split(|&b| b == 0).next()).unwrap_or_default();
        if name != b".modinfo" {
            continue;
        }
        let info = elf.get(at..at + len).ok_or_else(truncated)?;
        let depends = info
            .split(|&b| b == 0)
            .find_map(|entry| entry.strip_prefix(b"depends="))
            .map(|list| {
                String::from_utf8_lossy(list)
                    .split(',')
                    .filter(|d| !d.is_empty())
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default();
        return Ok(depends);
    }
    Err("no .modinfo section".into())
}

/// `kernel/drivers/block/brd.ko.xz` -> `brd`; the kernel treats `-` and
/// `_` in module names alike, so normalise to `_`.
fn module_name(path: &str) -> String {
    let file = path.rsplit('/').next().unwrap_or(path);
    file.split(".ko").next().unwrap_or(file).replace('-', "_")
}

/// The bytes of a module, decompressed. `modules.order` names `x.ko`;
/// Debian ships either that or `x.ko.xz` (depending on the kernel's
/// CONFIG_MODULE_COMPRESS_*). The host's `xz` decompresses, else the
/// unpacked busybox's `unxz`, so busybox's `insmod` in the guest never
/// needs to.
fn decompress_module(path: &Path, busybox: &Path) -> Result<Vec<u8>, String> {
    if path.is_file() {
        return fs::read(path).map_err(|e| format!("reading {}: {e}", path.display()));
    }
    let mut compressed = path.as_os_str().to_owned();
    compressed.push(".xz");
    let compressed = PathBuf::from(compressed);
    if !compressed.is_file() {
        return Err(format!("neither {} nor its .xz exists", path.display()));
    }
    let mut host_xz = Command::new("xz");
    host_xz.arg("-dc").arg(&compressed);
    let mut busybox_xz = Command::new(busybox);
    busybox_xz.arg("unxz").arg("-c").arg(&compressed);
    let mut failures = Vec::new();
    for mut command in [host_xz, busybox_xz] {
        match command.output() {
            Ok(out) if out.status.success() && !out.stdout.is_empty() => return Ok(out.stdout),
            Ok(out) => failures.push(format!("{command:?}: {}", String::from_utf8_lossy(&out.stderr).trim())),
            Err(e) => failures.push(format!("{command:?}: {e}")),
        }
    }
    Err(format!("cannot decompress {}: {}", compressed.display(), failures.join("; ")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn module_order_puts_dependencies_first_and_skips_builtins() {
        let order = "kernel/drivers/block/brd.ko\n\
                     kernel/drivers/block/virtio_blk.ko\n\
                     kernel/drivers/virtio/virtio_ring.ko\n\
                     kernel/drivers/virtio/virtio.ko\n";
        let builtin = "kernel/drivers/tty/serial/8250/8250.ko\n";
        let mut depends_of = |path: &str| -> Result<Vec<String>, String> {
            Ok(match module_name(path).as_str() {
                "virtio_blk" => vec!["virtio".into(), "virtio_ring".into(), "8250".into()],
                "virtio_ring" => vec!["virtio".into()],
                _ => vec![],
            })
        };
        let paths =
            module_load_order(order, builtin, &["virtio-blk", "brd", "8250"], &mut depends_of).unwrap();
        let names: Vec<String> = paths.iter().map(|p| module_name(p)).collect();
        assert_eq!(names, ["virtio", "virtio_ring", "virtio_blk", "brd"]);
        assert!(module_load_order(order, builtin, &["nonexistent"], &mut depends_of).is_err());
    }

    /// A minimal ELF64 with a section-name table and a `.modinfo` section.
    fn elf_with_modinfo(modinfo: &[u8]) -> Vec<u8> {
        let names = b"\0.shstrtab\0.modinfo\0";
        let mut elf = vec![0u8; 64];
        elf[..5].copy_from_slice(b"\x7fELF\x02");
        let names_at = elf.len();
        elf.extend_from_slice(names);
        let modinfo_at = elf.len();
        elf.extend_from_slice(modinfo);
        let headers_at = elf.len();
        elf[0x28..0x30].copy_from_slice(&(headers_at as u64).to_le_bytes());
        elf[0x3a..0x3c].copy_from_slice(&64u16.to_le_bytes());
        elf[0x3c..0x3e].copy_from_slice(&3u16.to_le_bytes());
        elf[0x3e..0x40].copy_from_slice(&1u16.to_le_bytes());
        for (name_at, at, len) in
            [(0u32, 0usize, 0usize), (1, names_at, names.len()), (11, modinfo_at, modinfo.len())]
        {
            let mut header = [0u8; 64];
            header[..4].copy_from_slice(&name_at.to_le_bytes());
            header[0x18..0x20].copy_from_slice(&(at as u64).to_le_bytes());
            header[0x20..0x28].copy_from_slice(&(len as u64).to_le_bytes());
            elf.extend_from_slice(&header);
        }
        elf
    }

    #[test]
    fn modinfo_depends_reads_the_modinfo_section() {
        let elf = elf_with_modinfo(b"license=GPL\0depends=virtio,virtio_ring\0name=virtio_blk\0");
        assert_eq!(modinfo_depends(&elf).unwrap(), ["virtio", "virtio_ring"]);
        assert_eq!(
            modinfo_depends(&elf_with_modinfo(b"depends=\0name=brd\0")).unwrap(),
            Vec::<String>::new()
        );
        assert!(modinfo_depends(b"not an elf").is_err());
        assert!(modinfo_depends(&elf[..100]).is_err());
    }
}
