//! Running fanscan: the binary, settings for a provider at a mock, and
//! the snapshot redactions.

use std::path::Path;
use std::process::Output;

use fanscan::{ProviderArgs, ProviderKind, Report, ScanArgs, Settings};

/// Runs the `fanscan` binary.
pub fn fanscan(args: &[&str]) -> Output {
    fanscan_with_env(args, &[])
}

/// Runs the `fanscan` binary with `vars` set (e.g. `FANSCAN_TODAY`, the
/// run's date).
pub fn fanscan_with_env(args: &[&str], vars: &[(&str, &str)]) -> Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_fanscan"))
        .args(args)
        // The run's date is the clock's unless a test sets it.
        .env_remove("FANSCAN_TODAY")
        .envs(vars.iter().copied())
        .env_remove("OPENAI_API_KEY")
        .env_remove("ANTHROPIC_API_KEY")
        // A test run inside GitHub Actions must not write the job summary.
        .env_remove("GITHUB_STEP_SUMMARY")
        // A temporary repository is never inside another one, wherever the
        // temporary directory is: reports say "not a git repository" of a
        // tree that is none.
        .env("GIT_CEILING_DIRECTORIES", std::env::temp_dir())
        .output()
        .unwrap()
}

/// The JSON report a run printed; panics with both outputs if it is not.
pub fn report_of(out: &Output) -> Report {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "not a JSON report ({e}): {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

/// Resolved settings for `kind` at `base_url` (model `mock-model`, a
/// `timeout` in seconds), no configuration file, no environment.
pub fn provider_settings(
    kind: ProviderKind,
    base_url: &str,
    timeout: u64,
    repo: &Path,
    scan: &ScanArgs,
) -> Settings {
    let provider = ProviderArgs {
        provider: Some(kind),
        model: Some("mock-model".into()),
        base_url: Some(base_url.to_string()),
        timeout: Some(timeout),
        ..ProviderArgs::default()
    };
    Settings::resolve(repo, &provider, scan, None, &|_| None).unwrap()
}

/// insta settings with the default redactions of a rendered report:
/// fanscan's own version, every SHA-256 (the agent, rules and plan
/// hashes of the manifest) and the scanned commit's id, so that a release or an edit of a prompt or of
/// the rules does not churn the snapshots. Fingerprints and group ids stay:
/// they are what a baseline or a resumed run relies on.
pub fn redactions() -> insta::Settings {
    let mut settings = insta::Settings::clone_current();
    settings.add_filter(
        r#"("name": "fanscan",\s*"version": )"[^"]*""#,
        r#"$1"[version]""#,
    );
    settings.add_filter(r"\b[0-9a-f]{64}\b", "[sha256]");
    // The scanned commit of a temporary repository (its id has the
    // commit's time in it): in full, and as the reports abbreviate it.
    settings.add_filter(r"\b[0-9a-f]{40}\b", "[commit]");
    settings.add_filter(r"(?i)\b(commit) [0-9a-f]{12}\b", "$1 [commit]");
    settings
}
