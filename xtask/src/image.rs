//! The workspace as xtask sees it, and the build of a boot image.
//!
//! Everything is discovered from `cargo metadata`, so adding a crate needs
//! no edit here:
//! - **host crates** are the workspace's `default-members` (the root
//!   `Cargo.toml` lists exactly the host-buildable crates there), plus the
//!   packages under `bench/` (except `bench/ridgeback/`), whose programs
//!   are also built for Linux and are linted and unit-tested on the host;
//! - **target crates** are every other member: built and linted for
//!   `x86_64-unknown-none`;
//! - **user programs** are the `bin` targets of packages under `apps/`,
//!   `servers/` and `drivers/` (the normal image), plus those under `tests/`
//!   (the test image only) or under `bench/ridgeback/` (the bench image
//!   only, which `cargo xtask bench` boots).
//!
//! What it is not: a boot. It hands the built files ([`BuiltImage`]) to the
//! layers above (`qemu`'s configuration, the commands); it stands on
//! [`crate::tools`] and [`crate::multiboot`] only.
//!
//! Invariant: program names are unique across both images and differ from
//! the kernel's. The kernel names a module by the basename of its path, and
//! cargo puts every binary of a target in one directory, so two programs
//! with one name would overwrite each other.

use std::collections::BTreeMap;
use std::fmt;
use std::fs;
use std::path::{Component, Path, PathBuf};
use std::process::ExitCode;

use serde_json::Value;

use crate::multiboot;
use crate::tools::{self, Result};

/// The Rust target of the kernel and of every user program.
pub const TARGET: &str = "x86_64-unknown-none";
/// The cargo profile of images: release, because TCG is slow enough already.
pub const PROFILE: &str = "release";
/// The kernel's package and binary name.
pub const KERNEL: &str = "kernel";
/// The program the test image boots as init: a `bin` target under `tests/`.
pub const TEST_RUNNER: &str = "testrunner";
/// The kernel command line that boots the test image into [`TEST_RUNNER`]
/// (`cargo xtask test`, and `cargo xtask image --test` unless `--cmdline`
/// says otherwise).
pub const TEST_KERNEL_CMDLINE: &str = "init=testrunner";

/// Which boot image.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ImageKind {
    /// The programs of `apps/`, `servers/`, `drivers/`.
    Normal,
    /// The normal programs plus those of `tests/` (among them the test runner).
    Test,
    /// The normal programs plus the benchmark program of `bench/ridgeback/`.
    Bench,
}

impl ImageKind {
    /// Whether this image carries programs from a directory of `dir_kind`.
    fn includes(self, dir_kind: ImageKind) -> bool {
        dir_kind == ImageKind::Normal || dir_kind == self
    }
}

impl fmt::Display for ImageKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ImageKind::Normal => "normal",
            ImageKind::Test => "test",
            ImageKind::Bench => "bench",
        })
    }
}

/// Directories whose packages' `bin` targets are user programs, with the
/// image that carries them (the normal ones are in every image).
const PROGRAM_DIRS: [(&str, ImageKind); 5] = [
    ("apps", ImageKind::Normal),
    ("servers", ImageKind::Normal),
    ("drivers", ImageKind::Normal),
    ("tests", ImageKind::Test),
    ("bench/ridgeback", ImageKind::Bench),
];

/// Top-level directories of host crates that are not default members
/// (program directories inside them excepted).
const HOST_DIRS: [&str; 1] = ["bench"];

fn top_dir(dir: &Path) -> Option<&std::ffi::OsStr> {
    match dir.components().next() {
        Some(Component::Normal(top)) => Some(top),
        _ => None,
    }
}

fn program_dir_kind(dir: &Path) -> Option<ImageKind> {
    PROGRAM_DIRS.iter().find(|(prefix, _)| dir.starts_with(prefix)).map(|&(_, kind)| kind)
}

/// One workspace member.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Package {
    pub name: String,
    /// The manifest's directory, relative to the workspace root.
    pub dir: PathBuf,
    /// Names of the package's `bin` targets.
    pub bins: Vec<String>,
    /// Built, linted and tested on the host, not for the target.
    pub is_host: bool,
}

/// A user program: one `bin` target, one Multiboot module.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Program {
    pub package: String,
    pub name: String,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Workspace {
    pub root: PathBuf,
    pub target_dir: PathBuf,
    pub packages: Vec<Package>,
}

impl Workspace {
    /// Reads the workspace from `cargo metadata`.
    pub fn load() -> Result<Workspace> {
        let mut command = tools::cargo();
        command.args(["metadata", "--format-version", "1", "--no-deps"]);
        Workspace::from_metadata(&tools::output(&mut command)?)
    }

    /// Parses `cargo metadata --format-version 1 --no-deps` output.
    pub fn from_metadata(json: &str) -> Result<Workspace> {
        let bad = |what: &str| format!("unexpected `cargo metadata` output: {what}");
        let meta: Value = serde_json::from_str(json).map_err(|err| bad(&err.to_string()))?;
        let str_at = |value: &Value, key: &str| -> Result<String> {
            value[key].as_str().map(str::to_string).ok_or_else(|| bad(&format!("no string `{key}`")))
        };
        let root = PathBuf::from(str_at(&meta, "workspace_root")?);
        let target_dir = PathBuf::from(str_at(&meta, "target_directory")?);
        let default_ids: Vec<&str> = meta["workspace_default_members"]
            .as_array()
            .ok_or_else(|| bad("no `workspace_default_members` (cargo too old?)"))?
            .iter()
            .filter_map(Value::as_str)
            .collect();
        let member_ids: Vec<&str> = meta["workspace_members"]
            .as_array()
            .ok_or_else(|| bad("no `workspace_members`"))?
            .iter()
            .filter_map(Value::as_str)
            .collect();
        let mut packages = Vec::new();
        for package in meta["packages"].as_array().ok_or_else(|| bad("no `packages`"))? {
            let id = str_at(package, "id")?;
            if !member_ids.contains(&id.as_str()) {
                continue;
            }
            let manifest = PathBuf::from(str_at(package, "manifest_path")?);
            let dir = manifest
                .parent()
                .and_then(|dir| dir.strip_prefix(&root).ok())
                .ok_or_else(|| bad(&format!("{} is outside the workspace", manifest.display())))?
                .to_path_buf();
            let mut bins = Vec::new();
            for target in package["targets"].as_array().ok_or_else(|| bad("no `targets`"))? {
                let is_bin = target["kind"].as_array().is_some_and(|kinds| kinds.iter().any(|k| k == "bin"));
                if is_bin {
                    bins.push(str_at(target, "name")?);
                }
            }
            let is_host = default_ids.contains(&id.as_str())
                || (top_dir(&dir).is_some_and(|top| HOST_DIRS.iter().any(|h| top == *h))
                    && program_dir_kind(&dir).is_none());
            packages.push(Package { name: str_at(package, "name")?, dir, bins, is_host });
        }
        packages.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(Workspace { root, target_dir, packages })
    }

    /// Packages built and tested on the host.
    pub fn host_packages(&self) -> Vec<&str> {
        self.packages.iter().filter(|p| p.is_host).map(|p| p.name.as_str()).collect()
    }

    /// Packages built for `x86_64-unknown-none`.
    pub fn target_packages(&self) -> Vec<&str> {
        self.packages.iter().filter(|p| !p.is_host).map(|p| p.name.as_str()).collect()
    }

    /// The user programs of an image, sorted by name (so that the module
    /// order, and with it the boot, is the same on every machine).
    pub fn programs(&self, kind: ImageKind) -> Result<Vec<Program>> {
        // All programs of both images take part in the uniqueness check: a
        // test program may not shadow a normal one either.
        let mut by_name: BTreeMap<&str, (&Package, ImageKind)> = BTreeMap::new();
        for package in &self.packages {
            let Some(dir_kind) = program_dir_kind(&package.dir) else {
                continue;
            };
            for bin in &package.bins {
                if bin == KERNEL {
                    return Err(format!(
                        "package {} has a program called `{KERNEL}`, the kernel's name; rename it",
                        package.name
                    ));
                }
                if let Some((other, _)) = by_name.insert(bin, (package, dir_kind)) {
                    return Err(format!(
                        "two user programs are called `{bin}` (in packages {} and {}); \
                         the kernel names modules by file name, so program names must be unique",
                        other.name, package.name
                    ));
                }
            }
        }
        Ok(by_name
            .into_iter()
            .filter(|(_, (_, dir_kind))| kind.includes(*dir_kind))
            .map(|(name, (package, _))| Program { package: package.name.clone(), name: name.to_string() })
            .collect())
    }

    /// Where cargo puts the kernel and the user programs.
    pub fn bin_dir(&self) -> PathBuf {
        self.target_dir.join(TARGET).join(PROFILE)
    }
}

/// The outputs of a build: what QEMU boots.
#[derive(Clone, Debug)]
pub struct BuiltImage {
    pub kernel: PathBuf,
    /// Absolute paths, one per user program, in [`Workspace::programs`] order.
    pub modules: Vec<PathBuf>,
}

impl BuiltImage {
    pub fn has_program(&self, name: &str) -> bool {
        self.modules.iter().any(|m| m.file_name() == Some(name.as_ref()))
    }
}

/// Builds the kernel and the programs of an image, then checks that QEMU
/// can load the kernel and that every module exists.
pub fn build(workspace: &Workspace, kind: ImageKind) -> Result<BuiltImage> {
    tools::ensure_target(TARGET)?;
    let programs = workspace.programs(kind)?;
    let mut packages = vec![KERNEL];
    for program in &programs {
        if !packages.contains(&program.package.as_str()) {
            packages.push(&program.package);
        }
    }
    let mut command = tools::cargo();
    command.args(["build", "--profile", PROFILE, "--target", TARGET]);
    for package in &packages {
        command.args(["-p", package]);
    }
    tools::run(&mut command).map_err(|err| format!("building the {kind} image failed: {err}"))?;

    let bin_dir = workspace.bin_dir();
    let kernel = bin_dir.join(KERNEL);
    let bytes = fs::read(&kernel).map_err(|err| format!("cannot read {}: {err}", kernel.display()))?;
    let layout = multiboot::check_kernel(&bytes)
        .map_err(|err| format!("{} cannot be booted by QEMU's Multiboot1 loader: {err}", kernel.display()))?;
    eprintln!("xtask: kernel loads under Multiboot1: {layout}");

    let mut modules = Vec::with_capacity(programs.len());
    for program in &programs {
        let path = bin_dir.join(&program.name);
        if !path.is_file() {
            return Err(format!(
                "program {} (package {}) was built but {} is missing",
                program.name,
                program.package,
                path.display()
            ));
        }
        modules.push(path);
    }
    modules.extend(config_files(workspace)?);
    let names: Vec<&str> = programs.iter().map(|p| p.name.as_str()).collect();
    eprintln!("xtask: {kind} image: kernel + {} program(s): {}", names.len(), names.join(", "));
    Ok(BuiltImage { kernel, modules })
}

/// The files of the repository's `etc/` directory, copied next to the
/// programs as `etc.<name>`: the directory manager puts a module called so
/// at `/etc/<name>` (the init file among them).
fn config_files(workspace: &Workspace) -> Result<Vec<PathBuf>> {
    let dir = workspace.root.join("etc");
    let mut out = Vec::new();
    let Ok(entries) = fs::read_dir(&dir) else { return Ok(out) };
    let mut paths: Vec<PathBuf> =
        entries.filter_map(|e| e.ok().map(|e| e.path())).filter(|p| p.is_file()).collect();
    paths.sort();
    for path in paths {
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .ok_or_else(|| format!("odd file name {}", path.display()))?;
        let copy = workspace.bin_dir().join(format!("etc.{name}"));
        fs::copy(&path, &copy)
            .map_err(|err| format!("cannot copy {} to {}: {err}", path.display(), copy.display()))?;
        out.push(copy);
    }
    Ok(out)
}

/// `cargo xtask build`: the kernel and every program of every image.
pub fn build_command() -> Result<ExitCode> {
    let workspace = Workspace::load()?;
    build(&workspace, ImageKind::Test)?;
    build(&workspace, ImageKind::Bench)?;
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `cargo metadata` output trimmed to the fields xtask reads.
    fn metadata(packages: &[(&str, &str, &[&str], bool)]) -> String {
        let mut json_packages = Vec::new();
        let mut members = Vec::new();
        let mut defaults = Vec::new();
        for (name, dir, bins, is_host) in packages {
            let id = format!("path+file:///w/{dir}#{name}@0.1.0");
            let mut targets: Vec<Value> =
                bins.iter().map(|b| serde_json::json!({"name": b, "kind": ["bin"]})).collect();
            targets.push(serde_json::json!({"name": name.replace('-', "_"), "kind": ["lib"]}));
            json_packages.push(serde_json::json!({
                "name": name,
                "id": id,
                "manifest_path": format!("/w/{dir}/Cargo.toml"),
                "targets": targets,
            }));
            members.push(id.clone());
            if *is_host {
                defaults.push(id);
            }
        }
        serde_json::json!({
            "packages": json_packages,
            "workspace_members": members,
            "workspace_default_members": defaults,
            "workspace_root": "/w",
            "target_directory": "/w/target",
        })
        .to_string()
    }

    fn sample() -> Workspace {
        Workspace::from_metadata(&metadata(&[
            ("abi", "abi", &[], true),
            ("kernel-core", "kernel-core", &[], true),
            ("xtask", "xtask", &["xtask"], true),
            ("kernel", "kernel", &["kernel"], false),
            ("runtime", "runtime", &[], false),
            ("init", "apps/init", &["init"], false),
            ("coreutils", "apps/coreutils", &["ls", "cat"], false),
            ("console", "drivers/console", &["console"], false),
            ("vm", "servers/vm", &["vm"], false),
            ("testrunner", "tests/testrunner", &["testrunner"], false),
            ("ipc-tests", "tests/ipc", &["ipc-tests"], false),
            ("bench", "bench", &["bench"], false),
            ("ridgebench", "bench/ridgeback", &["ridgebench"], false),
        ]))
        .unwrap()
    }

    fn names(programs: &[Program]) -> Vec<&str> {
        programs.iter().map(|p| p.name.as_str()).collect()
    }

    #[test]
    fn splits_host_and_target_crates() {
        let ws = sample();
        assert_eq!(ws.root, PathBuf::from("/w"));
        assert_eq!(ws.bin_dir(), PathBuf::from("/w/target/x86_64-unknown-none/release"));
        assert_eq!(ws.host_packages(), ["abi", "bench", "kernel-core", "xtask"]);
        assert_eq!(
            ws.target_packages(),
            [
                "console",
                "coreutils",
                "init",
                "ipc-tests",
                "kernel",
                "ridgebench",
                "runtime",
                "testrunner",
                "vm"
            ]
        );
    }

    #[test]
    fn discovers_programs_per_image() {
        let ws = sample();
        let normal = ws.programs(ImageKind::Normal).unwrap();
        assert_eq!(names(&normal), ["cat", "console", "init", "ls", "vm"]);
        assert_eq!(normal[0].package, "coreutils");
        let test = ws.programs(ImageKind::Test).unwrap();
        assert_eq!(names(&test), ["cat", "console", "init", "ipc-tests", "ls", "testrunner", "vm"]);
        // The bench image: the normal programs and the benchmark, no tests.
        let bench = ws.programs(ImageKind::Bench).unwrap();
        assert_eq!(names(&bench), ["cat", "console", "init", "ls", "ridgebench", "vm"]);
    }

    #[test]
    fn program_names_must_be_unique() {
        let ws = Workspace::from_metadata(&metadata(&[
            ("init", "apps/init", &["init"], false),
            ("fake-init", "tests/fake-init", &["init"], false),
        ]))
        .unwrap();
        // Even the normal image refuses: the binaries share one directory.
        let err = ws.programs(ImageKind::Normal).unwrap_err();
        assert!(err.contains("`init`") && err.contains("fake-init"), "{err}");

        let ws = Workspace::from_metadata(&metadata(&[("k", "apps/k", &["kernel"], false)])).unwrap();
        assert!(ws.programs(ImageKind::Normal).unwrap_err().contains("kernel's name"));
    }

    #[test]
    fn only_program_dirs_hold_programs() {
        let ws = Workspace::from_metadata(&metadata(&[
            ("bench-pipe", "bench/pipe", &["bench-pipe"], false),
            ("apps-helper", "runtime/apps", &["helper"], false),
        ]))
        .unwrap();
        assert!(ws.programs(ImageKind::Test).unwrap().is_empty());
    }

    #[test]
    fn rejects_garbage_metadata() {
        assert!(Workspace::from_metadata("not json").is_err());
        assert!(Workspace::from_metadata("{}").is_err());
    }
}
