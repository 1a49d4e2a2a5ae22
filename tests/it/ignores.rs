//! Which files a scan leaves out by ignore rules: git's, from the root
//! down, never from a directory above the repository. Real work trees made
//! with `git init`, compared with what git itself lists; `fanscan plan`
//! run as a user runs it.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

use serde_json::Value;

/// A directory tree written under `base`.
fn write(base: &Path, files: &[(&str, &str)]) {
    for (path, content) in files {
        let full = base.join(path);
        std::fs::create_dir_all(full.parent().unwrap()).unwrap();
        std::fs::write(full, content).unwrap();
    }
}

/// Git's and fanscan's view of the user's global configuration: a
/// `core.excludesFile` of our own, nothing of the machine's.
struct GitEnv {
    dir: tempfile::TempDir,
}

impl GitEnv {
    fn new(global_excludes: &str) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let excludes = dir.path().join("ignore");
        std::fs::write(&excludes, global_excludes).unwrap();
        std::fs::write(
            dir.path().join("config"),
            format!("[core]\n\texcludesFile = {}\n", excludes.display()),
        )
        .unwrap();
        Self { dir }
    }

    fn apply<'a>(&self, command: &'a mut Command) -> &'a mut Command {
        command
            .env("GIT_CONFIG_GLOBAL", self.dir.path().join("config"))
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CONFIG_SYSTEM", self.dir.path().join("no-system"))
            .env("HOME", self.dir.path())
            .env("XDG_CONFIG_HOME", self.dir.path().join("xdg"))
            .env_remove("GIT_DIR")
            .env_remove("GIT_WORK_TREE")
    }

    fn git(&self, dir: &Path, args: &[&str]) -> String {
        let out = self
            .apply(Command::new("git").arg("-C").arg(dir))
            .args(args)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    }

    /// The files git would add from `dir` (tracked, or untracked and not
    /// ignored), relative to `dir`.
    fn git_files(&self, dir: &Path) -> BTreeSet<String> {
        self.git(
            dir,
            &["ls-files", "--cached", "--others", "--exclude-standard"],
        )
        .lines()
        .map(str::to_string)
        .collect()
    }

    /// Every file `fanscan plan ROOT` accounts for: planned or skipped.
    fn fanscan_files(&self, root: &Path) -> BTreeSet<String> {
        let out = self
            .apply(&mut Command::new(env!("CARGO_BIN_EXE_fanscan")))
            .args(["plan", root.to_str().unwrap(), "--json"])
            .env_remove("OPENAI_API_KEY")
            .env_remove("ANTHROPIC_API_KEY")
            .output()
            .unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        let planned = v["plan"]["groups"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|g| g["files"].as_array().unwrap().iter());
        let skipped = v["skipped"].as_array().unwrap().iter().map(|s| &s["path"]);
        planned
            .chain(skipped)
            .map(|p| p.as_str().unwrap().to_string())
            .collect()
    }
}

fn set(paths: &[&str]) -> BTreeSet<String> {
    paths.iter().map(|p| p.to_string()).collect()
}

#[test]
fn an_outer_gitignore_does_not_drop_a_nested_repositorys_files() {
    // A checkout nested in a CI workspace whose own ignore files say
    // `*.toml`: the tracked `repo/app.toml` stays in the plan.
    let env = GitEnv::new("");
    for repo_is_git in [false, true] {
        let outer = tempfile::tempdir().unwrap();
        write(
            outer.path(),
            &[
                (".gitignore", "*.toml\n.gitignore\n"),
                (".ignore", "*.py\n"),
                (".fanscanignore", "*.rs\n"),
                ("repo/app.toml", "name = 'app'\n"),
                ("repo/src/main.rs", "fn main() {}\n"),
                ("repo/tool.py", "print(1)\n"),
                ("repo/.gitignore", "*.log\n"),
                ("repo/debug.log", "x\n"),
            ],
        );
        let repo = outer.path().join("repo");
        if repo_is_git {
            env.git(&repo, &["init", "-q"]);
            env.git(&repo, &["add", "app.toml"]);
        }
        assert_eq!(
            env.fanscan_files(&repo),
            set(&[".gitignore", "app.toml", "src/main.rs", "tool.py"]),
            "repo is a git work tree: {repo_is_git}"
        );
        if repo_is_git {
            assert_eq!(env.fanscan_files(&repo), env.git_files(&repo));
        }
    }
}

#[test]
fn the_ignore_rules_are_gits_from_the_work_tree_top_down() {
    let env = GitEnv::new("*.bak\n");
    let outer = tempfile::tempdir().unwrap();
    write(
        outer.path(),
        &[
            // Above the work tree: git reads none of it.
            (".gitignore", "*.toml\n*.md\n"),
            (".ignore", "*.py\n"),
            (
                "top/.gitignore",
                "*.log\n/sub/anchored.txt\ndeep/x.txt\nbuild/\n",
            ),
            ("top/app.toml", "x\n"),
            ("top/README.md", "x\n"),
            ("top/top.log", "x\n"),
            ("top/deep/x.txt", "x\n"),
            ("top/old.bak", "x\n"),
            ("top/sub/.gitignore", "!b.log\n*.tmp\n"),
            ("top/sub/app.toml", "x\n"),
            ("top/sub/a.log", "x\n"),
            ("top/sub/b.log", "x\n"),
            ("top/sub/anchored.txt", "x\n"),
            ("top/sub/deep/x.txt", "x\n"),
            ("top/sub/secret.key", "x\n"),
            ("top/sub/c.tmp", "x\n"),
            ("top/sub/main.rs", "fn main() {}\n"),
            ("top/sub/tool.py", "print(1)\n"),
            ("top/sub/build/out.rs", "x\n"),
            ("top/sub/x.bak", "x\n"),
            ("top/sub/inner/.gitignore", "!c.tmp\n"),
            ("top/sub/inner/c.tmp", "x\n"),
            ("top/sub/inner/d.log", "x\n"),
        ],
    );
    let top = outer.path().join("top");
    env.git(&top, &["init", "-q"]);
    std::fs::write(top.join(".git/info/exclude"), "secret.key\n").unwrap();
    let sub = top.join("sub");
    // The scanned root is the work tree's top, then a directory in it.
    for root in [&top, &sub] {
        let git = env.git_files(root);
        assert_eq!(env.fanscan_files(root), git, "{}", root.display());
    }
    // Spelled out, so that a git that changed its mind shows here.
    assert_eq!(
        env.fanscan_files(&sub),
        set(&[
            ".gitignore",
            "app.toml",
            "b.log",
            "deep/x.txt",
            "inner/.gitignore",
            "inner/c.tmp",
            "main.rs",
            "tool.py",
        ])
    );
}

#[test]
fn outside_a_work_tree_only_the_root_and_below_count() {
    // Global excludes are git's: they apply in a work tree only.
    let env = GitEnv::new("*.bak\n");
    let outer = tempfile::tempdir().unwrap();
    write(
        outer.path(),
        &[
            (".gitignore", "*.toml\n"),
            ("plain/.gitignore", "*.log\n"),
            ("plain/app.toml", "x\n"),
            ("plain/a.log", "x\n"),
            ("plain/x.bak", "x\n"),
            ("plain/sub/.fanscanignore", "*.txt\n"),
            ("plain/sub/notes.txt", "x\n"),
        ],
    );
    assert_eq!(
        env.fanscan_files(&outer.path().join("plain")),
        set(&[".gitignore", "app.toml", "sub/.fanscanignore", "x.bak"])
    );
}
