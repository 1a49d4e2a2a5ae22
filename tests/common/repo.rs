//! Temporary repositories built by code, and git run in them with a local
//! identity.

use std::path::Path;

/// A temporary repository.
pub struct Repo {
    pub dir: tempfile::TempDir,
}

impl Repo {
    pub fn new(files: &[(&str, &str)]) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let repo = Self { dir };
        for (path, content) in files {
            repo.write(path, content);
        }
        repo
    }

    /// A repository of `dirs` directories (`names`, in order) of
    /// `per_dir` files each, `file(dir, i)` giving a file's path and
    /// content.
    pub fn tree(
        names: &[&str],
        per_dir: usize,
        file: impl Fn(&str, usize) -> (String, String),
    ) -> Self {
        let repo = Self::new(&[]);
        for dir in names {
            for i in 0..per_dir {
                let (path, content) = file(dir, i);
                repo.write(&path, &content);
            }
        }
        repo
    }

    pub fn write(&self, path: &str, content: &str) {
        let full = self.dir.path().join(path);
        std::fs::create_dir_all(full.parent().unwrap()).unwrap();
        std::fs::write(full, content).unwrap();
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }
}

/// About 150 bytes (50 estimated tokens) of Rust calling `risky_<dir>()`:
/// the file of the trees whose groups are one directory each.
pub fn risky_file(dir: &str, i: usize) -> (String, String) {
    let padding = "// ".to_string() + &"pad ".repeat(28);
    (
        format!("{dir}/f{i}.rs"),
        format!("fn f{i}() {{\n    let x = risky_{dir}();\n}}\n{padding}\n"),
    )
}

/// Runs git in `dir` with a local identity, no signing and `main` as the
/// first branch; its stdout. Panics on failure.
pub fn git(dir: &Path, args: &[&str]) -> String {
    let out = std::process::Command::new("git")
        .arg("-C")
        .arg(dir)
        .args([
            "-c",
            "user.name=fanscan test",
            "-c",
            "user.email=test@example.com",
        ])
        .args([
            "-c",
            "commit.gpgsign=false",
            "-c",
            "init.defaultBranch=main",
        ])
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Stages and commits everything in `dir`.
pub fn commit_all(dir: &Path, message: &str) {
    git(dir, &["add", "-A"]);
    git(dir, &["commit", "-q", "-m", message]);
}
