//! The container image: the `Dockerfile` parses into a builder stage that
//! runs `cargo build --release --locked` and a slim runtime with git and
//! CA certificates, a numeric non-root user and `ENTRYPOINT ["fanscan"]`;
//! the Kubernetes manifests and the nightly workflow run the image its
//! header names. Base images cannot be pulled here, so the build stage's
//! commands run as a script in a copy of exactly what its COPY lines copy:
//! `cargo build` there is checked by the real cargo (the lock file is
//! current, every target the manifest names is present, offline) and
//! every file compiled in with `include_str!` is there; the binary comes
//! from this test build. `FANSCAN_DOCKER_FULL_BUILD=1` runs the real
//! release build instead.

use std::path::{Path, PathBuf};
use std::process::Command;

use regex::Regex;
use serde_json::Value;

/// One instruction: its keyword and its arguments (continuations joined).
#[derive(Debug, Clone)]
struct Instruction {
    keyword: String,
    args: String,
}

#[derive(Debug)]
struct Stage {
    base: String,
    name: String,
    steps: Vec<Instruction>,
}

fn manifest_dir() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn dockerfile() -> (String, Vec<Stage>) {
    let text = std::fs::read_to_string(manifest_dir().join("Dockerfile")).unwrap();
    let mut instructions = Vec::new();
    let mut pending = String::new();
    for line in text.lines() {
        let trimmed = line.trim();
        if pending.is_empty() && (trimmed.is_empty() || trimmed.starts_with('#')) {
            continue;
        }
        if let Some(head) = trimmed.strip_suffix('\\') {
            pending.push_str(head);
            pending.push(' ');
            continue;
        }
        pending.push_str(trimmed);
        let (keyword, args) = pending.split_once(' ').unwrap_or((&pending, ""));
        instructions.push(Instruction {
            keyword: keyword.to_ascii_uppercase(),
            args: args.trim().to_string(),
        });
        pending.clear();
    }
    assert!(pending.is_empty(), "a dangling continuation");
    let mut stages: Vec<Stage> = Vec::new();
    let from = Regex::new(r"^(\S+)\s+AS\s+(\S+)$").unwrap();
    for i in instructions {
        if i.keyword == "FROM" {
            let c = from
                .captures(&i.args)
                .unwrap_or_else(|| panic!("FROM without a stage name: {}", i.args));
            stages.push(Stage {
                base: c[1].to_string(),
                name: c[2].to_string(),
                steps: Vec::new(),
            });
        } else {
            stages
                .last_mut()
                .expect("an instruction before FROM")
                .steps
                .push(i);
        }
    }
    (text, stages)
}

fn all<'a>(stage: &'a Stage, keyword: &str) -> Vec<&'a str> {
    stage
        .steps
        .iter()
        .filter(|s| s.keyword == keyword)
        .map(|s| s.args.as_str())
        .collect()
}

/// The image the Dockerfile's header names (`docker build -t IMAGE .`).
fn image(text: &str) -> String {
    Regex::new(r"docker build -t (\S+) \.")
        .unwrap()
        .captures(text)
        .expect("the header says how to build and tag the image")[1]
        .to_string()
}

#[test]
fn the_dockerfile_has_a_builder_and_a_slim_non_root_runtime() {
    let (text, stages) = dockerfile();
    assert_eq!(stages.len(), 2, "{stages:#?}");
    let (builder, runtime) = (&stages[0], &stages[1]);
    assert_eq!(builder.name, "builder");
    assert!(builder.base.starts_with("rust:1.95"), "{}", builder.base);
    let runs = all(builder, "RUN").join("\n");
    assert!(runs.contains("cargo build --release --locked"), "{runs}");

    assert!(runtime.base.contains("slim"), "{}", runtime.base);
    let runs = all(runtime, "RUN").join("\n");
    for package in ["git", "ca-certificates"] {
        assert!(
            Regex::new(&format!(r"apt-get install [^&]*\b{package}\b"))
                .unwrap()
                .is_match(&runs),
            "{package} in the runtime: {runs}"
        );
    }
    assert!(runs.contains("--no-install-recommends") && runs.contains("rm -rf /var/lib/apt/lists"));
    let copies = all(runtime, "COPY");
    assert_eq!(
        copies,
        ["--from=builder /src/target/release/fanscan /usr/local/bin/fanscan"]
    );
    let users = all(runtime, "USER");
    assert_eq!(users.len(), 1);
    let uid: u32 = users[0]
        .split(':')
        .next()
        .unwrap()
        .parse()
        .expect("a numeric user");
    assert_ne!(uid, 0, "never root");
    // The user runs what comes after it: nothing runs as root after USER.
    let after_user = runtime
        .steps
        .iter()
        .skip_while(|s| s.keyword != "USER")
        .filter(|s| s.keyword == "RUN")
        .count();
    assert_eq!(after_user, 0);
    let entry: Value = serde_json::from_str(all(runtime, "ENTRYPOINT")[0]).unwrap();
    assert_eq!(entry, serde_json::json!(["fanscan"]), "exec form");
    assert_eq!(image(&text), "ghcr.io/your-org/fanscan:latest");
}

#[test]
fn the_manifests_and_the_nightly_workflow_run_that_image() {
    let (text, _) = dockerfile();
    let image = image(&text);
    let yaml = |path: &str| -> Value {
        let text = std::fs::read_to_string(manifest_dir().join(path)).unwrap();
        serde_saphyr::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
    };
    let mut found = 0;
    for path in [
        "configs/k8s/shards-job.yaml",
        "configs/k8s/merge-job.yaml",
        "configs/k8s/nightly-cronjob.yaml",
    ] {
        let v = yaml(path);
        let pod = if v["kind"] == "CronJob" {
            &v["spec"]["jobTemplate"]["spec"]["template"]["spec"]
        } else {
            &v["spec"]["template"]["spec"]
        };
        let c = &pod["containers"][0];
        assert_eq!(c["name"], "fanscan", "{path}");
        assert_eq!(c["image"], image.as_str(), "{path}");
        assert_eq!(c["securityContext"]["runAsNonRoot"], true, "{path}");
        found += 1;
    }
    let wf = yaml("configs/ci/github/nightly.yml");
    for job in ["shard", "merge"] {
        assert_eq!(
            wf["jobs"][job]["container"]["image"],
            image.as_str(),
            "{job}"
        );
        let steps = wf["jobs"][job]["steps"].as_array().unwrap();
        assert!(
            !steps.iter().any(|s| s["run"]
                .as_str()
                .is_some_and(|r| r.contains("cargo install"))),
            "{job} runs the image, it does not build fanscan"
        );
        found += 1;
    }
    assert_eq!(found, 5);
    let readme = std::fs::read_to_string(manifest_dir().join("README.md")).unwrap();
    assert!(
        readme.contains(&format!("docker build -t {image} .")),
        "the README builds it"
    );
}

/// The `include_str!` files of the sources under `src`, relative to `root`.
fn included(root: &Path, dir: &Path, out: &mut Vec<PathBuf>) {
    let re = Regex::new(r#"include_str!\("([^"]+)"\)"#).unwrap();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            included(root, &path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let text = std::fs::read_to_string(&path).unwrap();
            for c in re.captures_iter(&text) {
                let target = path.parent().unwrap().join(&c[1]);
                out.push(target.strip_prefix(root).unwrap_or(&target).to_path_buf());
            }
        }
    }
}

/// Copies `from` (a file or a folder) to `to`.
fn copy(from: &Path, to: &Path) {
    if from.is_dir() {
        std::fs::create_dir_all(to).unwrap();
        for entry in std::fs::read_dir(from).unwrap() {
            let entry = entry.unwrap();
            copy(&entry.path(), &to.join(entry.file_name()));
        }
    } else {
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(from, to).unwrap_or_else(|e| panic!("{}: {e}", from.display()));
    }
}

/// Stands in for cargo in the build stage: the real cargo checks the
/// manifest and the lock file offline (`--locked` is required), and the
/// binary this test run built is put where the release build puts it.
/// The check resolves for this machine's platform only: the registry of
/// a fresh machine holds what `cargo test` downloaded for it, never the
/// crates of other platforms, and the test fetches nothing.
const CARGO_SHIM: &str = r#"#!/bin/sh
set -eu
case " $* " in
  *" build "*) ;;
  *) exec "$REAL_CARGO" "$@" ;;
esac
case " $* " in
  *" --locked "*) ;;
  *) echo "cargo build without --locked" >&2; exit 1 ;;
esac
host=$(rustc -vV | sed -n 's/^host: //p')
if ! "$REAL_CARGO" metadata --locked --offline --format-version 1 --filter-platform "$host" > /dev/null; then
  echo "cargo metadata --locked --offline --filter-platform $host failed: Cargo.lock does not match Cargo.toml (run \`cargo update --workspace\` and commit the lock file)" >&2
  exit 1
fi
mkdir -p target/release
cp "$FANSCAN_BIN" target/release/fanscan
"#;

#[test]
fn the_build_stage_runs_as_a_script_on_what_it_copies() {
    let (_, stages) = dockerfile();
    let builder = &stages[0];
    let image = tempfile::tempdir().unwrap();
    let mut workdir = PathBuf::from("/");
    let shims = tempfile::tempdir().unwrap();
    let full = std::env::var("FANSCAN_DOCKER_FULL_BUILD").is_ok_and(|v| v == "1");
    let real_cargo = option_env!("CARGO").unwrap_or("cargo");
    let cargo = shims.path().join("cargo");
    std::fs::write(&cargo, CARGO_SHIM).unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&cargo, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let inside = |p: &Path| image.path().join(p.strip_prefix("/").unwrap_or(p));
    for step in &builder.steps {
        match step.keyword.as_str() {
            "WORKDIR" => {
                workdir = workdir.join(&step.args);
                std::fs::create_dir_all(inside(&workdir)).unwrap();
            }
            "COPY" => {
                let parts: Vec<&str> = step.args.split_whitespace().collect();
                let (dest, sources) = parts.split_last().unwrap();
                let dest = workdir.join(dest);
                for s in sources {
                    assert!(!s.starts_with("--"), "a COPY flag in the build stage: {s}");
                    let from = manifest_dir().join(s);
                    let into_dir =
                        sources.len() > 1 || parts.last().is_some_and(|d| d.ends_with('/'));
                    let to = if into_dir {
                        inside(&dest).join(Path::new(s).file_name().unwrap())
                    } else {
                        inside(&dest)
                    };
                    copy(&from, &to);
                }
            }
            "RUN" => {
                let mut cmd = Command::new("sh");
                cmd.args(["-ec", &step.args]).current_dir(inside(&workdir));
                if !full {
                    cmd.env(
                        "PATH",
                        format!(
                            "{}:{}",
                            shims.path().display(),
                            std::env::var("PATH").unwrap_or_default()
                        ),
                    )
                    .env("REAL_CARGO", real_cargo)
                    .env("FANSCAN_BIN", env!("CARGO_BIN_EXE_fanscan"))
                    .env("CARGO_NET_OFFLINE", "true");
                }
                let out = cmd.output().unwrap();
                assert!(
                    out.status.success(),
                    "RUN {}: {}",
                    step.args,
                    String::from_utf8_lossy(&out.stderr)
                );
            }
            "ENV" | "ARG" => {}
            other => panic!("the test does not know {other} in the build stage"),
        }
    }
    // What the runtime copies from the builder is there, and runs.
    let bin = inside(Path::new("/src/target/release/fanscan"));
    let out = Command::new(&bin).arg("--version").output().unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("fanscan "));
    // Every target of the manifest but the tests is there (cargo leaves a
    // target whose file is missing out of its metadata, so compare).
    let targets = |dir: &Path| -> std::collections::BTreeSet<String> {
        let out = Command::new(real_cargo)
            .args([
                "metadata",
                "--no-deps",
                "--offline",
                "--format-version",
                "1",
            ])
            .current_dir(dir)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let meta: Value = serde_json::from_slice(&out.stdout).unwrap();
        meta["packages"][0]["targets"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|t| t["kind"][0] != "test")
            .map(|t| format!("{} {}", t["kind"][0], t["name"]))
            .collect()
    };
    let wanted = targets(manifest_dir());
    assert!(
        wanted.iter().any(|t| t.starts_with("\"bench\"")),
        "{wanted:?}"
    );
    assert_eq!(
        targets(&inside(&workdir)),
        wanted,
        "targets the Dockerfile does not copy"
    );
    // Every file compiled into the binary was copied.
    let mut files = Vec::new();
    included(manifest_dir(), &manifest_dir().join("src"), &mut files);
    assert!(files.len() > 5);
    for f in files {
        let normal: PathBuf = f.components().fold(PathBuf::new(), |mut p, c| {
            match c {
                std::path::Component::ParentDir => {
                    p.pop();
                }
                other => p.push(other),
            }
            p
        });
        assert!(
            inside(&workdir).join(&normal).is_file(),
            "{} is compiled in but not copied by the Dockerfile",
            normal.display()
        );
    }
}
