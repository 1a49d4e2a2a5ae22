//! The shipped manifests for running shards: `configs/k8s/` (an Indexed
//! Job, a merge Job, a CronJob, their ConfigMap) and
//! `configs/ci/github/nightly.yml`. Each parses; N agrees everywhere; the
//! shard arguments line up with the index; and their scripts, run as they
//! are with `sh` against a temporary repository and the mock model, make
//! parts that merge into the report of one run. The Indexed Job retries
//! per index: exit code 2 fails an index at once, 3 is retried. Every
//! Kubernetes manifest validates against the Kubernetes schema of 1.30 to
//! 1.34 (`kubernetes-validate`, installed by `.ci/run`; under CI=true the
//! test fails, never skips, without it).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use fanscan::Report;

use crate::common::{MockModel, Repo, auditor_behaviour};

fn config(path: &str) -> Value {
    let full = Path::new(env!("CARGO_MANIFEST_DIR")).join(path);
    let text = std::fs::read_to_string(&full).unwrap();
    serde_saphyr::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// Six directories, one group each with `group_tokens = 100`.
fn tree() -> Repo {
    let padding = "// ".to_string() + &"pad ".repeat(50);
    Repo::tree(&["a", "b", "c", "d", "e", "f"], 1, |dir, _| {
        (
            format!("{dir}/lib.rs"),
            format!("fn f(s: &str) -> u32 {{\n    s.parse().unwrap()\n}}\n{padding}\n"),
        )
    })
}

/// The shipped fanscan.toml of the ConfigMap, pointed at the mock and
/// scaled down to the small tree (base_url and group_tokens).
fn test_config(dir: &Path, mock: &MockModel) -> PathBuf {
    let map = config("configs/k8s/fanscan-config.yaml");
    assert_eq!(map["kind"], "ConfigMap");
    let shipped = map["data"]["fanscan.toml"].as_str().unwrap();
    assert!(shipped.contains("api_key_env = \"OPENAI_API_KEY\""));
    let text: String = shipped
        .lines()
        .filter(|l| !l.starts_with("group_tokens") && !l.starts_with("max_cost"))
        .map(|l| format!("{l}\n"))
        .collect::<String>()
        + &format!("group_tokens = 100\nbase_url = \"{}\"\n", mock.base_url());
    let path = dir.join("fanscan.toml");
    std::fs::write(&path, text).unwrap();
    path
}

/// `PATH` with the built `fanscan` first.
fn path_with_fanscan() -> String {
    let bin = Path::new(env!("CARGO_BIN_EXE_fanscan")).parent().unwrap();
    format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

/// Runs `script` with `sh -c` in `cwd` with `env`; its exit code and stderr.
async fn sh(script: String, cwd: PathBuf, env: Vec<(String, String)>) -> (i32, String) {
    tokio::task::spawn_blocking(move || {
        let out = Command::new("sh")
            .arg("-c")
            .arg(&script)
            .current_dir(cwd)
            .env("PATH", path_with_fanscan())
            .envs(env)
            .output()
            .unwrap();
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    })
    .await
    .unwrap()
}

/// The one container's script of a pod template.
fn script(pod: &Value) -> String {
    let containers = pod["spec"]["containers"].as_array().unwrap();
    assert_eq!(containers.len(), 1);
    let c = &containers[0];
    assert_eq!(c["command"], serde_json::json!(["sh", "-c"]));
    c["args"][0].as_str().unwrap().to_string()
}

/// Checks the API key comes from a Secret.
fn key_from_secret(pod: &Value) {
    let env = pod["spec"]["containers"][0]["env"].as_array().unwrap();
    let key = env
        .iter()
        .find(|e| e["name"] == "OPENAI_API_KEY")
        .expect("the API key is in the environment");
    let secret = &key["valueFrom"]["secretKeyRef"];
    assert!(
        secret["name"].is_string() && secret["key"].is_string(),
        "{key}"
    );
    assert!(key.get("value").is_none(), "never a literal key");
}

/// Checks an Indexed Job spec; its N.
fn indexed(spec: &Value) -> u64 {
    assert_eq!(spec["completionMode"], "Indexed");
    let n = spec["completions"].as_u64().unwrap();
    assert_eq!(spec["parallelism"].as_u64(), Some(n));
    assert!(n >= 2);
    let script = script(&spec["template"]);
    assert!(
        script.contains(&format!("--shard-from-env --shard-count {n} ")),
        "{script}"
    );
    assert!(script.contains("$JOB_COMPLETION_INDEX"));
    key_from_secret(&spec["template"]);
    n
}

fn fingerprints(report: &Report) -> BTreeSet<String> {
    report
        .findings
        .iter()
        .map(|m| m.fingerprint.clone())
        .collect()
}

/// One unsharded run of `repo` with `config`, through the binary.
async fn one_run(repo: &Repo, config: &Path) -> Report {
    let script = format!(
        "fanscan scan . --config {} --no-store --quiet --format json",
        config.display()
    );
    let cwd = repo.path().to_path_buf();
    let out = tokio::task::spawn_blocking(move || {
        Command::new("sh")
            .arg("-c")
            .arg(&script)
            .current_dir(cwd)
            .env("PATH", path_with_fanscan())
            .env("OPENAI_API_KEY", "test-key")
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_kubernetes_indexed_job_and_merge_job_make_one_run() {
    let shards = config("configs/k8s/shards-job.yaml");
    assert_eq!(shards["kind"], "Job");
    let n = indexed(&shards["spec"]);
    let merge_job = config("configs/k8s/merge-job.yaml");
    assert_eq!(merge_job["kind"], "Job");
    key_from_secret(&merge_job["spec"]["template"]);
    let merge_script = script(&merge_job["spec"]["template"]);
    assert!(merge_script.contains("fanscan merge"), "{merge_script}");
    // The merge reads where the shards write.
    let parts_root = |job: &Value| {
        job["spec"]["template"]["spec"]["containers"][0]["env"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["name"] == "PARTS_ROOT")
            .unwrap()["value"]
            .clone()
    };
    assert_eq!(parts_root(&shards), parts_root(&merge_job));

    let repo = tree();
    let mock = MockModel::openai(auditor_behaviour("unwrap")).await;
    let dir = tempfile::tempdir().unwrap();
    let config = test_config(dir.path(), &mock);
    let parts = dir.path().join("parts");
    let env = |index: Option<u64>| {
        let mut env = vec![
            ("REPO".to_string(), repo.path().display().to_string()),
            ("PARTS_ROOT".into(), parts.display().to_string()),
            ("FANSCAN_CONFIG".into(), config.display().to_string()),
            ("OPENAI_API_KEY".into(), "test-key".into()),
        ];
        if let Some(i) = index {
            env.push(("JOB_COMPLETION_INDEX".into(), i.to_string()));
        }
        env
    };
    let shard_script = script(&shards["spec"]["template"]);
    for index in 0..n {
        let (code, err) = sh(shard_script.clone(), dir.path().into(), env(Some(index))).await;
        assert_eq!(code, 0, "pod {index}: {err}");
        let part: Report = serde_json::from_str(
            &std::fs::read_to_string(parts.join(format!("part-{index}.json"))).unwrap(),
        )
        .unwrap();
        let shard = part.shard.unwrap();
        assert_eq!((shard.index as u64, shard.count as u64), (index + 1, n));
    }
    let (code, err) = sh(merge_script, dir.path().into(), env(None)).await;
    assert_eq!(code, 0, "merge: {err}");
    let merged: Report =
        serde_json::from_str(&std::fs::read_to_string(parts.join("report.json")).unwrap()).unwrap();
    let one = one_run(&repo, &config).await;
    assert!(merged.complete && !one.findings.is_empty());
    assert_eq!(fingerprints(&merged), fingerprints(&one));
    assert_eq!(merged.coverage, one.coverage);
    assert_eq!(merged.plan.groups.len(), 6, "one group a directory");
}

/// A stand-in `fanscan` that writes its `--output` file and exits `code`.
fn fake_fanscan(dir: &Path, code: i32) -> String {
    let bin = dir.join(format!("bin-{code}"));
    std::fs::create_dir_all(&bin).unwrap();
    let script = bin.join("fanscan");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\nwhile [ $# -gt 0 ]; do [ \"$1\" = --output ] && echo '{{}}' > \"$2\"; shift; done\nexit {code}\n"
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_indexed_job_fails_an_index_on_a_configuration_error_and_retries_an_incomplete_shard() {
    let job = config("configs/k8s/shards-job.yaml");
    let spec = &job["spec"];
    // Retries are counted per index, not for the whole Job.
    let per_index = spec["backoffLimitPerIndex"].as_u64().unwrap();
    assert!((1..=5).contains(&per_index), "{per_index}");
    assert!(spec.get("backoffLimit").is_none(), "one limit, per index");
    // podFailurePolicy needs restartPolicy Never.
    assert_eq!(spec["template"]["spec"]["restartPolicy"], "Never");
    let container = spec["template"]["spec"]["containers"][0]["name"]
        .as_str()
        .unwrap();
    let rules = spec["podFailurePolicy"]["rules"].as_array().unwrap();
    let on_exit = |code: u64| -> &str {
        rules
            .iter()
            .find(|r| {
                r["onExitCodes"]["operator"] == "In"
                    && r["onExitCodes"]["values"]
                        .as_array()
                        .is_some_and(|v| v.iter().any(|c| c.as_u64() == Some(code)))
            })
            .map(|r| {
                assert_eq!(r["onExitCodes"]["containerName"], container, "{r}");
                r["action"].as_str().unwrap()
            })
            .unwrap_or_else(|| panic!("no rule for exit code {code}"))
    };
    // A configuration error fails the index at once; an incomplete shard
    // is retried (counted against backoffLimitPerIndex).
    assert_eq!(on_exit(2), "FailIndex");
    assert_eq!(on_exit(3), "Count");
    assert!(rules.iter().any(|r| r["action"] == "Ignore"
        && r["onPodConditions"][0]["type"] == "DisruptionTarget"
        && r["onPodConditions"][0]["status"] == "True"));

    // The script hands fanscan's exit code to the policy, and publishes
    // a complete or incomplete part, never one of a failed start.
    let shard_script = script(&spec["template"]);
    let dir = tempfile::tempdir().unwrap();
    for (code, published) in [(0, true), (3, true), (2, false), (1, false)] {
        let parts = dir.path().join(format!("parts-{code}"));
        let env = vec![
            ("PATH".to_string(), fake_fanscan(dir.path(), code)),
            ("REPO".into(), dir.path().display().to_string()),
            ("PARTS_ROOT".into(), parts.display().to_string()),
            ("FANSCAN_CONFIG".into(), "/nowhere/fanscan.toml".into()),
            ("JOB_COMPLETION_INDEX".into(), "1".into()),
        ];
        let (exit, err) = sh(shard_script.clone(), dir.path().into(), env).await;
        assert_eq!(exit, code, "{err}");
        assert_eq!(
            parts.join("part-1.json").is_file(),
            published,
            "exit {code}"
        );
    }
    // And the real binary's configuration error is exit code 2.
    let repo = tree();
    let parts = dir.path().join("parts-real");
    let env = vec![
        ("REPO".to_string(), repo.path().display().to_string()),
        ("PARTS_ROOT".into(), parts.display().to_string()),
        ("FANSCAN_CONFIG".into(), "/nowhere/fanscan.toml".into()),
        ("JOB_COMPLETION_INDEX".into(), "0".into()),
    ];
    let (exit, err) = sh(shard_script, dir.path().into(), env).await;
    assert_eq!(exit, 2, "{err}");
    assert!(err.contains("/nowhere/fanscan.toml"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_kubernetes_cronjob_shards_and_merges_on_pod_zero() {
    let cron = config("configs/k8s/nightly-cronjob.yaml");
    assert_eq!(cron["kind"], "CronJob");
    assert!(cron["spec"]["schedule"].is_string());
    let job = &cron["spec"]["jobTemplate"]["spec"];
    let n = indexed(job);
    let script = script(&job["template"]);
    assert!(
        script.contains(&format!("-ge {n} ]")),
        "pod 0 waits for N parts: {script}"
    );

    let repo = tree();
    let mock = MockModel::openai(auditor_behaviour("unwrap")).await;
    let dir = tempfile::tempdir().unwrap();
    let config = test_config(dir.path(), &mock);
    let parts = dir.path().join("parts");
    // Pod 0 merges, so it runs last here (it would wait in a cluster).
    for index in (1..n).chain([0]) {
        let env = vec![
            ("REPO".to_string(), repo.path().display().to_string()),
            ("PARTS_ROOT".into(), parts.display().to_string()),
            ("FANSCAN_CONFIG".into(), config.display().to_string()),
            ("OPENAI_API_KEY".into(), "test-key".into()),
            ("JOB_COMPLETION_INDEX".into(), index.to_string()),
        ];
        let (code, err) = sh(script.clone(), dir.path().into(), env).await;
        assert_eq!(code, 0, "pod {index}: {err}");
    }
    let night = std::fs::read_dir(&parts)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.is_dir())
        .unwrap();
    let report = std::fs::read_to_string(night.join("report.md")).unwrap();
    assert!(report.contains("unwrap"), "{report}");
    // Each shard index has its own store, and the merge one.
    for index in 0..n {
        assert!(parts.join(format!("store-{index}.db")).is_file());
    }
    assert!(parts.join("store-merge.db").is_file());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_github_matrix_workflow_uploads_parts_and_merges_them() {
    let wf = config("configs/ci/github/nightly.yml");
    assert!(wf["on"]["schedule"][0]["cron"].is_string());
    let shard_job = &wf["jobs"]["shard"];
    let matrix: Vec<u64> = shard_job["strategy"]["matrix"]["shard"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap())
        .collect();
    let n = matrix.len() as u64;
    assert_eq!(matrix, (1..=n).collect::<Vec<_>>(), "shards 1..=N");
    let step = |job: &Value, needle: &str| -> Value {
        job["steps"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| {
                s["run"].as_str().is_some_and(|r| r.contains(needle))
                    || s["uses"].as_str().is_some_and(|u| u.starts_with(needle))
            })
            .unwrap_or_else(|| panic!("no step {needle}"))
            .clone()
    };
    let scan = step(shard_job, "fanscan scan");
    let scan_run = scan["run"].as_str().unwrap();
    assert!(
        scan_run.contains(&format!("--shard ${{{{ matrix.shard }}}}/{n} ")),
        "{scan_run}"
    );
    assert_eq!(
        scan["env"]["OPENAI_API_KEY"],
        "${{ secrets.OPENAI_API_KEY }}"
    );
    let upload = step(shard_job, "actions/upload-artifact");
    let name = upload["with"]["name"].as_str().unwrap();
    let merge_job = &wf["jobs"]["merge"];
    assert_eq!(merge_job["needs"], "shard");
    let download = step(merge_job, "actions/download-artifact");
    let pattern = download["with"]["pattern"].as_str().unwrap();
    assert_eq!(
        pattern.trim_end_matches('*'),
        name.trim_end_matches("${{ matrix.shard }}"),
        "the merge downloads what the shards upload"
    );
    let merge_run = step(merge_job, "fanscan merge")["run"]
        .as_str()
        .unwrap()
        .to_string();

    let repo = tree();
    let mock = MockModel::openai(auditor_behaviour("unwrap")).await;
    let dir = tempfile::tempdir().unwrap();
    let config = test_config(dir.path(), &mock);
    let temp = dir.path().join("runner-temp");
    std::fs::create_dir_all(temp.join("parts")).unwrap();
    let env = vec![
        ("FANSCAN_CONFIG".to_string(), config.display().to_string()),
        ("OPENAI_API_KEY".into(), "test-key".into()),
    ];
    let expand = |run: &str, shard: Option<u64>| {
        let run = run.replace("${{ runner.temp }}", &temp.display().to_string());
        match shard {
            Some(k) => run.replace("${{ matrix.shard }}", &k.to_string()),
            None => run,
        }
    };
    for k in 1..=n {
        let (code, err) = sh(expand(scan_run, Some(k)), repo.path().into(), env.clone()).await;
        assert_eq!(code, 0, "shard {k}: {err}");
        // What upload-artifact and download-artifact (merge-multiple) do.
        let part = format!("part-{k}.json");
        std::fs::rename(temp.join(&part), temp.join("parts").join(&part)).unwrap();
    }
    let (code, err) = sh(expand(&merge_run, None), repo.path().into(), env.clone()).await;
    assert_eq!(code, 0, "merge: {err}");
    let sarif: Value =
        serde_json::from_str(&std::fs::read_to_string(temp.join("fanscan.sarif")).unwrap())
            .unwrap();
    let one = one_run(&repo, &config).await;
    // One run however many shards (code scanning takes at most 20 a file),
    // and findings that do not gate are not uploaded as alerts.
    assert_eq!(sarif["runs"].as_array().unwrap().len(), 1);
    assert!(merge_run.contains("--sarif-suppressed omit"), "{merge_run}");
    assert_eq!(
        sarif["runs"][0]["results"].as_array().unwrap().len(),
        one.findings.len()
    );
    assert!(!one.findings.is_empty());
}

// ---- the Kubernetes schema ----

/// The Kubernetes versions every manifest must apply to.
const KUBERNETES_VERSIONS: [&str; 5] = ["1.30.0", "1.31.0", "1.32.0", "1.33.0", "1.34.0"];

/// `python3 -m kubernetes_validate`, if it runs: the PyPI package
/// `kubernetes-validate` that `.ci/run` installs, which carries the
/// schema of each Kubernetes version and validates offline.
fn kubernetes_validate() -> Option<Command> {
    let probe = Command::new("python3")
        .args(["-m", "kubernetes_validate", "--version"])
        .output()
        .ok()?;
    probe.status.success().then(|| {
        let mut command = Command::new("python3");
        command.args(["-m", "kubernetes_validate"]);
        command
    })
}

/// How many resources a manifest holds: its non-empty YAML documents.
fn documents(path: &Path) -> usize {
    let text = std::fs::read_to_string(path).unwrap();
    serde_saphyr::from_multiple::<Value>(&text)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .into_iter()
        .filter(|d| !d.is_null())
        .count()
}

/// What `kubectl apply` would reject: every resource of every
/// `configs/k8s/*.yaml` is valid against the Kubernetes schema of each
/// version, unknown fields rejected as the API server's strict field
/// validation does, and scalars read as YAML reads them (an unquoted
/// `0000…` commit is the number 0, not the string an env value must be).
#[test]
fn every_kubernetes_manifest_validates_against_the_kubernetes_schema() {
    let Some(mut validate) = kubernetes_validate() else {
        if std::env::var("CI").is_ok_and(|v| v == "true") {
            panic!(
                "CI=true and no kubernetes-validate: install it (python3 -m pip install kubernetes-validate, as .ci/run does)"
            );
        }
        eprintln!(
            "\n\n!!!!!!!! SKIPPED: every_kubernetes_manifest_validates_against_the_kubernetes_schema: `python3 -m kubernetes_validate` does not run (python3 -m pip install kubernetes-validate) !!!!!!!!\n\n"
        );
        return;
    };
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("configs/k8s");
    let mut manifests: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml" || e == "yml"))
        .collect();
    manifests.sort();
    assert!(
        manifests.len() >= 4,
        "{}: the ConfigMap, the two Jobs and the CronJob: {manifests:?}",
        dir.display()
    );
    validate.arg("--strict");
    for version in KUBERNETES_VERSIONS {
        validate.args(["-k", version]);
    }
    let out = validate.args(&manifests).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "kubectl apply would reject these manifests ({}):\n{stdout}{stderr}",
        out.status
    );
    // Every resource passed: a kind the validator has no schema for is
    // only a warning, which would prove nothing.
    for manifest in &manifests {
        let resources = documents(manifest);
        assert!(resources >= 1, "{}: no resource", manifest.display());
        for version in KUBERNETES_VERSIONS {
            let minor = version.trim_end_matches(".0");
            let passed = stdout
                .lines()
                .filter(|l| {
                    l.starts_with(&format!("INFO {} passed for resource ", manifest.display()))
                        && l.ends_with(&format!(" against version {minor}"))
                })
                .count();
            assert_eq!(
                passed,
                resources,
                "{}: {resources} resources, {passed} validated against Kubernetes {version}:\n{stdout}{stderr}",
                manifest.display()
            );
        }
    }
}
