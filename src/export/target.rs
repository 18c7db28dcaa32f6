//! Output paths: what a path given to `--json`, `--svg`, … names, checked
//! before anything is measured ([`check_flag`]) and written without
//! destroying it ([`write()`]).
//!
//! - A regular file, or none yet, is written to a temporary file beside it
//!   and renamed over it, so a reader never sees half a file. The new file
//!   keeps the old one's permission bits (and, for root, its owner and
//!   group), so a rewrite does not change who may read it.
//! - A symlink is followed: the file it leads to is written as above and the
//!   link stays a link.
//! - A character device or a FIFO (`/dev/null`, a terminal, a pipe), or
//!   anything reached through a /proc link such as `/dev/stdout` (an open
//!   file, not a path), is opened and written in place, never renamed over.
//! - A directory, a socket or a block device is refused, and so is a file we
//!   may not write: access(2) says so, and since it always says yes to root,
//!   a regular file with no write bit at all is refused as well.

use std::ffi::OsString;
use std::fs::{File, OpenOptions};
use std::io::{self, Write as _};
use std::path::{Path, PathBuf};

use rustix::fs::{Access, AtFlags, FileType, Mode, Stat, CWD};
use rustix::io::Errno;

/// Symlinks followed at most, as the kernel's own limit (ELOOP).
const MAX_LINKS: usize = 40;

/// Temporary names tried beside a file before giving up.
const MAX_TEMPS: usize = 100;

/// What an output path names, its symlinks followed.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Target {
    /// A regular file (`keep`: its mode and owners) or no file yet: written
    /// atomically at `path`.
    File { path: PathBuf, keep: Option<Keep> },
    /// A character device, a FIFO or an open file behind a /proc link:
    /// opened at `path` and written in place, appended when it is a regular
    /// file (what the process wrote there already stays).
    InPlace { path: PathBuf, append: bool },
}

/// What a rewritten file keeps of the one it replaces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Keep {
    mode: u32,
    uid: u32,
    gid: u32,
}

/// Checks an output flag's path before anything is measured: `Err` is one
/// line naming the flag and the path ("--json r/x.json: directory r does
/// not exist"). `None` (the flag not given) is fine.
pub(crate) fn check_flag(flag: &str, path: Option<&Path>) -> Result<(), String> {
    match path {
        Some(p) => check(p).map_err(|why| format!("{flag} {}: {why}", p.display())),
        None => Ok(()),
    }
}

/// Checks that `path` can be written as [`write()`] would: `Err` says why not.
pub fn check(path: &Path) -> Result<(), String> {
    locate(path).map(|_| ())
}

/// Writes `bytes` to what `path` names (see the module's description); on an
/// error no temporary file is left behind.
pub fn write(path: &Path, bytes: &[u8]) -> io::Result<()> {
    match locate(path).map_err(io::Error::other)? {
        Target::File { path, keep } => replace(&path, bytes, keep),
        Target::InPlace { path, append } => {
            let mut f = OpenOptions::new().write(true).append(append).open(path)?;
            f.write_all(bytes)
        }
    }
}

/// Follows `path`'s symlinks and says what it names, or why it cannot be
/// written.
fn locate(path: &Path) -> Result<Target, String> {
    if path.as_os_str().is_empty() {
        return Err("the path is empty".into());
    }
    let mut at = path.to_path_buf();
    for _ in 0..MAX_LINKS {
        let found = match rustix::fs::lstat(&at) {
            Ok(st) => st,
            Err(Errno::NOENT | Errno::NOTDIR) => return new_file(path, at),
            Err(e) => return Err(via(path, &at, why(e))),
        };
        match FileType::from_raw_mode(found.st_mode) {
            FileType::Symlink if on_proc(&found) => return open_file(path, at),
            FileType::Symlink => {
                let to = std::fs::read_link(&at).map_err(|e| via(path, &at, e.to_string()))?;
                at = match at.parent() {
                    Some(dir) if to.is_relative() => dir.join(to),
                    _ => to,
                };
            }
            _ => return existing(path, at, &found),
        }
    }
    Err(format!(
        "more than {MAX_LINKS} symbolic links to follow (a loop?)"
    ))
}

/// A path that names nothing yet: the file is created in its directory,
/// which must exist and let us create files.
fn new_file(asked: &Path, at: PathBuf) -> Result<Target, String> {
    if at.as_os_str().as_encoded_bytes().ends_with(b"/") || at.file_name().is_none() {
        return Err(via(asked, &at, "names a directory, not a file".into()));
    }
    writable_dir(&at).map_err(|e| via(asked, &at, e))?;
    Ok(Target::File {
        path: at,
        keep: None,
    })
}

/// A path that names something (not a symlink): what it is decides how it
/// is written, or whether it is refused.
fn existing(asked: &Path, at: PathBuf, st: &Stat) -> Result<Target, String> {
    let refuse = |what: &str| {
        Err(via(
            asked,
            &at,
            format!("is {what}, not a file, character device or FIFO"),
        ))
    };
    match FileType::from_raw_mode(st.st_mode) {
        FileType::RegularFile => {
            may_write_file(&at, st).map_err(|e| via(asked, &at, e))?;
            writable_dir(&at).map_err(|e| via(asked, &at, e))?;
            let keep = Keep {
                mode: st.st_mode & 0o777,
                uid: st.st_uid,
                gid: st.st_gid,
            };
            Ok(Target::File {
                path: at,
                keep: Some(keep),
            })
        }
        FileType::CharacterDevice | FileType::Fifo => {
            may_write(&at).map_err(|e| via(asked, &at, format!("cannot be written: {e}")))?;
            Ok(Target::InPlace {
                path: at,
                append: false,
            })
        }
        FileType::Directory => refuse("a directory"),
        FileType::Socket => refuse("a socket"),
        FileType::BlockDevice => refuse("a block device"),
        _ => refuse("of an unknown type"),
    }
}

/// A symlink on /proc (where /dev/stdout and /dev/fd/N lead) names an open
/// file, not a path: it is written in place, whatever it is.
fn open_file(asked: &Path, at: PathBuf) -> Result<Target, String> {
    let st = rustix::fs::stat(&at).map_err(|e| via(asked, &at, why(e)))?;
    match FileType::from_raw_mode(st.st_mode) {
        FileType::RegularFile => {
            may_write_file(&at, &st).map_err(|e| via(asked, &at, e))?;
            Ok(Target::InPlace {
                path: at,
                append: true,
            })
        }
        FileType::CharacterDevice | FileType::Fifo => {
            may_write(&at).map_err(|e| via(asked, &at, format!("cannot be written: {e}")))?;
            Ok(Target::InPlace {
                path: at,
                append: false,
            })
        }
        _ => existing(asked, at, &st),
    }
}

/// A regular file we may write: access(2) allows it, and it has a write bit
/// (root may write any file, but one made read-only is not ours to replace).
fn may_write_file(at: &Path, st: &Stat) -> Result<(), String> {
    if st.st_mode & 0o222 == 0 {
        return Err(format!(
            "the file is read-only (mode {:04o}): make it writable or choose another path",
            st.st_mode & 0o7777
        ));
    }
    may_write(at).map_err(|e| format!("the file cannot be written: {e}"))
}

/// The directory `at` goes in exists and lets us create (and rename) files.
fn writable_dir(at: &Path) -> Result<(), String> {
    let dir = dir_of(at);
    match rustix::fs::stat(dir) {
        Ok(st) if FileType::from_raw_mode(st.st_mode) == FileType::Directory => {}
        Ok(_) | Err(Errno::NOTDIR) => {
            return Err(format!("{} is not a directory", dir.display()));
        }
        Err(Errno::NOENT) => return Err(format!("directory {} does not exist", dir.display())),
        Err(e) => return Err(format!("directory {}: {}", dir.display(), why(e))),
    }
    rustix::fs::accessat(
        CWD,
        dir,
        Access::WRITE_OK | Access::EXEC_OK,
        AtFlags::EACCESS,
    )
    .map_err(|e| {
        format!(
            "cannot create files in directory {}: {}",
            dir.display(),
            why(e)
        )
    })
}

/// access(2) with the effective IDs: may we open `at` for writing?
fn may_write(at: &Path) -> Result<(), String> {
    rustix::fs::accessat(CWD, at, Access::WRITE_OK, AtFlags::EACCESS).map_err(why)
}

/// Whether a symlink lives on /proc (its device is that of /proc/self).
fn on_proc(link: &Stat) -> bool {
    rustix::fs::lstat("/proc/self").is_ok_and(|proc| proc.st_dev == link.st_dev)
}

/// The directory a file goes in (`.` for a bare name).
fn dir_of(at: &Path) -> &Path {
    at.parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
}

/// A reason, saying where a symlink led when it did.
fn via(asked: &Path, at: &Path, reason: String) -> String {
    if asked == at {
        reason
    } else {
        format!("(a symlink to {}) {reason}", at.display())
    }
}

/// An errno as a short phrase: "permission denied".
fn why(e: Errno) -> String {
    let text = io::Error::from(e).to_string();
    let text = text.split(" (os error").next().unwrap_or(&text);
    let mut c = text.chars();
    match c.next() {
        Some(first) => first.to_lowercase().chain(c).collect(),
        None => text.to_string(),
    }
}

/// Writes `bytes` to a new temporary file beside `path` and renames it over
/// `path`, keeping `keep`'s mode (and owners, for root); the temporary file
/// is removed on any error.
fn replace(path: &Path, bytes: &[u8], keep: Option<Keep>) -> io::Result<()> {
    let (mut f, tmp) = temporary(path)?;
    let result = (|| {
        if let Some(k) = keep {
            if rustix::process::geteuid().is_root() {
                rustix::fs::fchown(
                    &f,
                    Some(rustix::fs::Uid::from_raw(k.uid)),
                    Some(rustix::fs::Gid::from_raw(k.gid)),
                )?;
            }
            // After fchown, which may clear mode bits.
            rustix::fs::fchmod(&f, Mode::from_raw_mode(k.mode))?;
        }
        f.write_all(bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// A new file beside `path` named `.NAME.tmpPID` (or `.NAME.tmpPID.K` when
/// that is taken), created exclusively so nothing already there, not even a
/// symlink, is opened.
fn temporary(path: &Path) -> io::Result<(File, PathBuf)> {
    let name = path
        .file_name()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "not a file path"))?;
    let dir = dir_of(path);
    let pid = std::process::id();
    let mut last = None;
    for k in 0..MAX_TEMPS {
        let mut tmp = OsString::from(".");
        tmp.push(name);
        tmp.push(format!(".tmp{pid}"));
        if k > 0 {
            tmp.push(format!(".{k}"));
        }
        let tmp = dir.join(tmp);
        match OpenOptions::new().write(true).create_new(true).open(&tmp) {
            Ok(f) => return Ok((f, tmp)),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => last = Some(e),
            Err(e) => return Err(e),
        }
    }
    Err(last.unwrap_or_else(|| io::Error::other("no temporary name is free")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::{FileTypeExt as _, PermissionsExt as _};

    /// A fresh directory for one test, removed when dropped.
    struct Scratch(PathBuf);

    impl Scratch {
        fn new(name: &str) -> Scratch {
            let dir =
                std::env::temp_dir().join(format!("c10k-target-{name}-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(&dir).unwrap();
            Scratch(dir)
        }

        fn names(&self) -> Vec<String> {
            let mut v: Vec<String> = std::fs::read_dir(&self.0)
                .unwrap()
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect();
            v.sort();
            v
        }
    }

    impl Drop for Scratch {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn mode(p: &Path) -> u32 {
        std::fs::metadata(p).unwrap().permissions().mode() & 0o7777
    }

    #[test]
    fn a_file_is_replaced_and_no_temporary_is_left() {
        let d = Scratch::new("replace");
        let p = d.0.join("x.json");
        write(&p, b"one").unwrap();
        write(&p, b"two").unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"two");
        assert_eq!(d.names(), ["x.json"], "temporary files left behind");
    }

    #[test]
    fn a_rewrite_keeps_the_mode() {
        let d = Scratch::new("mode");
        let p = d.0.join("x.json");
        std::fs::write(&p, b"old").unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o640)).unwrap();
        write(&p, b"new").unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"new");
        assert_eq!(mode(&p), 0o640);
    }

    #[test]
    fn a_rewrite_by_root_keeps_the_owner() {
        use std::os::unix::fs::MetadataExt as _;
        // Only root can give a file to another user; others have nothing
        // to keep.
        if !rustix::process::geteuid().is_root() {
            return;
        }
        let d = Scratch::new("owner");
        let p = d.0.join("x.json");
        std::fs::write(&p, b"old").unwrap();
        std::os::unix::fs::chown(&p, Some(65534), Some(65534)).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).unwrap();
        write(&p, b"new").unwrap();
        let m = std::fs::metadata(&p).unwrap();
        assert_eq!((m.uid(), m.gid(), mode(&p)), (65534, 65534, 0o600));
        assert_eq!(std::fs::read(&p).unwrap(), b"new");
    }

    #[test]
    fn a_symlink_stays_a_symlink_and_its_target_gets_the_bytes() {
        let d = Scratch::new("symlink");
        std::fs::create_dir(d.0.join("real")).unwrap();
        let target = d.0.join("real/r.json");
        std::fs::write(&target, b"old").unwrap();
        let link = d.0.join("link.json");
        std::os::unix::fs::symlink("real/r.json", &link).unwrap();
        check(&link).unwrap();
        write(&link, b"new").unwrap();
        assert!(std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(std::fs::read(&target).unwrap(), b"new");
        // A dangling link makes its target.
        let dangling = d.0.join("dangling.json");
        std::os::unix::fs::symlink("real/new.json", &dangling).unwrap();
        write(&dangling, b"made").unwrap();
        assert_eq!(std::fs::read(d.0.join("real/new.json")).unwrap(), b"made");
        assert_eq!(d.names(), ["dangling.json", "link.json", "real"]);
    }

    #[test]
    fn a_read_only_file_is_refused_even_for_root() {
        let d = Scratch::new("readonly");
        let p = d.0.join("x.json");
        std::fs::write(&p, b"keep me").unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o444)).unwrap();
        let e = check(&p).unwrap_err();
        assert!(e.contains("read-only (mode 0444)"), "{e}");
        assert!(write(&p, b"new").is_err());
        assert_eq!(std::fs::read(&p).unwrap(), b"keep me");
        assert_eq!(mode(&p), 0o444);
    }

    #[test]
    fn a_missing_directory_is_refused() {
        let d = Scratch::new("missing");
        let p = d.0.join("nope/x.json");
        let e = check_flag("--json", Some(&p)).unwrap_err();
        assert_eq!(
            e,
            format!(
                "--json {}: directory {} does not exist",
                p.display(),
                d.0.join("nope").display()
            )
        );
        assert!(write(&p, b"x").is_err());
        let file = d.0.join("file");
        std::fs::write(&file, b"").unwrap();
        let e = check(&file.join("x.json")).unwrap_err();
        assert!(e.contains("is not a directory"), "{e}");
    }

    #[test]
    fn directories_and_sockets_are_refused() {
        let d = Scratch::new("dirs");
        let e = check(&d.0).unwrap_err();
        assert!(e.contains("is a directory"), "{e}");
        let sock = d.0.join("s.sock");
        let _listener = std::os::unix::net::UnixListener::bind(&sock).unwrap();
        let e = check(&sock).unwrap_err();
        assert!(e.contains("is a socket"), "{e}");
        assert!(check(Path::new("")).is_err());
    }

    #[test]
    fn dev_null_is_written_in_place() {
        let null = Path::new("/dev/null");
        check(null).unwrap();
        write(null, b"nothing").unwrap();
        assert!(std::fs::symlink_metadata(null)
            .unwrap()
            .file_type()
            .is_char_device());
    }

    #[test]
    fn a_link_loop_is_refused() {
        let d = Scratch::new("loop");
        std::os::unix::fs::symlink("b", d.0.join("a")).unwrap();
        std::os::unix::fs::symlink("a", d.0.join("b")).unwrap();
        let e = check(&d.0.join("a")).unwrap_err();
        assert!(e.contains("symbolic links"), "{e}");
    }
}
