//! Path confinement: every path a model names is resolved inside the scan
//! root or refused.
//!
//! Takes the canonical root and a path as the model wrote it (`/` or `\`,
//! relative or absolute); gives the real path and its repo-relative `/`
//! form. `..` that leaves the root, absolute paths outside it, symlinks that
//! resolve outside it and anything inside `.git` are refused.

use std::path::{Component, Path, PathBuf};

/// Why a path is refused. The text is what the model (or the user, for
/// `--file` and config paths) is told.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PathError {
    #[error(
        "refused: {0:?} is an absolute path outside the scan root; use a path relative to the root"
    )]
    AbsoluteOutside(String),
    #[error("refused: {0:?} leaves the scan root through `..`")]
    LeavesRoot(String),
    #[error("refused: {0:?} is not a relative path")]
    NotRelative(String),
    #[error("refused: {0:?} is inside .git, which is not audited")]
    InsideGit(String),
    #[error("refused: {0:?} is a symlink whose target does not exist or cannot be read")]
    BrokenSymlink(String),
    #[error("no such file or directory: {0:?}")]
    Missing(String),
    #[error("refused: {0:?} is a symlink that resolves outside the scan root")]
    SymlinkOutside(String),
    #[error("refused: {0:?} leads into .git, which is not audited")]
    LeadsIntoGit(String),
}

/// A path resolved inside the root.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Resolved {
    /// The canonical path on disk.
    pub(crate) real: PathBuf,
    /// Repo-relative, `/`-separated; empty for the root itself.
    pub(crate) rel: String,
}

/// Resolves `requested` inside `root` (which must be canonical).
pub(crate) fn resolve(root: &Path, requested: &str) -> Result<Resolved, PathError> {
    let cleaned = requested.trim().replace('\\', "/");
    let relative = if is_absolute(&cleaned) {
        let root_text = root.to_string_lossy().replace('\\', "/");
        match cleaned.strip_prefix(root_text.as_str()) {
            Some(rest) if rest.is_empty() || rest.starts_with('/') => {
                rest.trim_start_matches('/').to_string()
            }
            _ => {
                return Err(PathError::AbsoluteOutside(requested.to_string()));
            }
        }
    } else {
        cleaned
    };
    let mut parts: Vec<String> = Vec::new();
    for component in Path::new(&relative).components() {
        match component {
            Component::Normal(p) => parts.push(p.to_string_lossy().into_owned()),
            Component::CurDir => {}
            Component::ParentDir => {
                if parts.pop().is_none() {
                    return Err(PathError::LeavesRoot(requested.to_string()));
                }
            }
            Component::RootDir | Component::Prefix(_) => {
                return Err(PathError::NotRelative(requested.to_string()));
            }
        }
    }
    if parts.iter().any(|p| p.eq_ignore_ascii_case(".git")) {
        return Err(PathError::InsideGit(requested.to_string()));
    }
    let rel = parts.join("/");
    let joined = if rel.is_empty() {
        root.to_path_buf()
    } else {
        root.join(&rel)
    };
    let real = match joined.canonicalize() {
        Ok(p) => p,
        Err(_) if joined.symlink_metadata().is_ok() => {
            return Err(PathError::BrokenSymlink(rel));
        }
        Err(_) => return Err(PathError::Missing(rel)),
    };
    let Ok(inside) = real.strip_prefix(root) else {
        return Err(PathError::SymlinkOutside(rel));
    };
    // Checked again after symlinks are resolved: `notes -> .git/config`
    // must not reach git's config (CI checkouts keep a token there), and
    // case-insensitive file systems know `.GIT` as `.git`.
    if inside
        .components()
        .any(|c| c.as_os_str().eq_ignore_ascii_case(".git"))
    {
        return Err(PathError::LeadsIntoGit(rel));
    }
    Ok(Resolved { real, rel })
}

fn is_absolute(path: &str) -> bool {
    path.starts_with('/')
        || (path.len() >= 2
            && path.as_bytes()[1] == b':'
            && path.as_bytes()[0].is_ascii_alphabetic())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn root() -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("src/sub")).unwrap();
        std::fs::write(dir.path().join("src/a.rs"), "fn a() {}\n").unwrap();
        let canonical = dir.path().canonicalize().unwrap();
        (dir, canonical)
    }

    #[test]
    fn accepts_paths_inside_with_either_separator() {
        let (_d, root) = root();
        assert_eq!(resolve(&root, "src/a.rs").unwrap().rel, "src/a.rs");
        assert_eq!(resolve(&root, "src\\a.rs").unwrap().rel, "src/a.rs");
        assert_eq!(resolve(&root, "./src/sub/../a.rs").unwrap().rel, "src/a.rs");
        assert_eq!(resolve(&root, "").unwrap().rel, "");
        let abs = format!("{}/src/a.rs", root.display());
        assert_eq!(resolve(&root, &abs).unwrap().rel, "src/a.rs");
    }

    #[test]
    fn refuses_escapes() {
        let (_d, root) = root();
        assert!(
            resolve(&root, "../etc/passwd")
                .unwrap_err()
                .to_string()
                .contains("..")
        );
        assert!(
            resolve(&root, "src/../../x")
                .unwrap_err()
                .to_string()
                .contains("..")
        );
        assert!(
            resolve(&root, "/etc/passwd")
                .unwrap_err()
                .to_string()
                .contains("absolute")
        );
        assert!(
            resolve(&root, "C:\\Windows")
                .unwrap_err()
                .to_string()
                .contains("absolute")
        );
        assert!(
            resolve(&root, ".git/config")
                .unwrap_err()
                .to_string()
                .contains(".git")
        );
        assert!(
            resolve(&root, "missing.rs")
                .unwrap_err()
                .to_string()
                .contains("no such")
        );
    }

    #[cfg(unix)]
    #[test]
    fn refuses_symlinks_that_leave_the_root() {
        let (_d, root) = root();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret.txt"), "s").unwrap();
        std::os::unix::fs::symlink(outside.path().join("secret.txt"), root.join("link")).unwrap();
        std::os::unix::fs::symlink(root.join("src/a.rs"), root.join("inside")).unwrap();
        assert!(
            resolve(&root, "link")
                .unwrap_err()
                .to_string()
                .contains("symlink")
        );
        std::fs::create_dir_all(root.join(".git")).unwrap();
        std::fs::write(root.join(".git/config"), "token").unwrap();
        std::os::unix::fs::symlink(root.join(".git/config"), root.join("notes")).unwrap();
        std::os::unix::fs::symlink(root.join(".git"), root.join("g")).unwrap();
        assert!(
            resolve(&root, "notes")
                .unwrap_err()
                .to_string()
                .contains(".git")
        );
        assert!(
            resolve(&root, "g/config")
                .unwrap_err()
                .to_string()
                .contains(".git")
        );
        assert!(
            resolve(&root, ".GIT/config")
                .unwrap_err()
                .to_string()
                .contains(".git")
        );
        assert_eq!(resolve(&root, "inside").unwrap().rel, "inside");
    }
}
