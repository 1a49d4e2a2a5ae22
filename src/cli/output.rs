//! Writing a run's report: stdout or files in each asked format, the
//! GitHub job summary, the baseline file, and the one-line summary on
//! stderr. A failed output is reported and makes the exit code 1; the
//! others are still written.

use std::io::Write;
use std::path::Path;

use anyhow::Context as _;

use fanscan::{Accept, Baseline, Context, Format, Report, Settings, exit};

/// Writes the report to every output, the baseline when asked, and a
/// one-line summary to stderr; the exit code.
pub(crate) fn write_outputs(ctx: &Context, report: &Report, quiet: bool) -> i32 {
    let settings = &ctx.settings;
    let outputs = settings.outputs();
    let mut code = report.exit_code();
    let category = outputs.category();
    if outputs.stdout() || outputs.plain().is_some() {
        match render_as(settings, report, settings.format(), category) {
            Ok(text) => {
                if let Err(e) = emit(outputs.plain(), &text) {
                    code = output_failed(&e);
                    eprintln!("fanscan: the report follows on stdout so that nothing is lost");
                    if let Err(e) = emit(None, &text) {
                        output_failed(&e);
                    }
                }
            }
            Err(e) => code = output_failed(&e),
        }
    }
    for (format, file) in outputs.extra() {
        if let Err(e) =
            render_as(settings, report, *format, category).and_then(|t| emit(Some(file), &t))
        {
            code = output_failed(&e);
        }
    }
    if let Some(summary) = outputs.step_summary() {
        // The job summary is a convenience: a failure to append is a
        // warning, never a changed verdict.
        if let Err(e) = append_step_summary(report, summary) {
            eprintln!("fanscan: warning: {e:#}");
        }
    }
    if let Some(file) = settings.write_baseline()
        && let Err(e) = write_baseline(ctx, report, file, quiet)
    {
        code = output_failed(&e);
    }
    if !quiet {
        eprintln!(
            "fanscan: {}, {}, {} unverified, {} suppressed, {} baselined; {}; gate {}",
            plural(report.groups.len(), "group"),
            plural(report.findings.len(), "open verified finding"),
            report.unverified.len(),
            report.suppressed.len(),
            report.baselined.len(),
            if report.complete {
                "complete".to_string()
            } else {
                format!("INCOMPLETE: {}", report.incomplete_reasons.join(" "))
            },
            report.gate.reason
        );
    }
    code
}

/// Writes `text` to `output`, or to stdout.
pub(crate) fn emit(output: Option<&Path>, text: &str) -> anyhow::Result<()> {
    match output {
        Some(path) => std::fs::write(path, text)
            .with_context(|| format!("{}: cannot write the report", path.display())),
        None => {
            let mut out = std::io::stdout().lock();
            out.write_all(text.as_bytes())
                .and_then(|()| out.flush())
                .context("cannot write to stdout")
        }
    }
}

/// Prints a failure to write output; exit code 1.
fn output_failed(e: &anyhow::Error) -> i32 {
    eprintln!("fanscan: {e:#}");
    exit::ERROR
}

/// The report in `format`; SARIF with the category.
fn render_as(
    settings: &Settings,
    report: &Report,
    format: Format,
    category: Option<&str>,
) -> anyhow::Result<String> {
    match format {
        Format::Sarif => report.render_sarif(category, settings.outputs().sarif_suppressed()),
        Format::Md
        | Format::Json
        | Format::Github
        | Format::Codeclimate
        | Format::Html
        | Format::GithubReview
        | Format::GitlabDiscussions => fanscan::render(settings, report, format),
    }
    .map_err(anyhow::Error::new)
}

/// Appends the Markdown report to $GITHUB_STEP_SUMMARY.
fn append_step_summary(report: &Report, summary: &Path) -> anyhow::Result<()> {
    let text = report.render(Format::Md)?;
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(summary)
        .with_context(|| format!("{}: cannot open $GITHUB_STEP_SUMMARY", summary.display()))?;
    file.write_all(step_summary_text(&text).as_bytes())
        .with_context(|| {
            format!(
                "{}: cannot append to $GITHUB_STEP_SUMMARY",
                summary.display()
            )
        })
}

/// GitHub keeps at most 1 MiB of a step's summary and drops a larger one
/// whole: a long report is cut at a line, with a note where the rest is.
const STEP_SUMMARY_MAX: usize = 1_000_000;

fn step_summary_text(markdown: &str) -> String {
    const NOTE: &str = "\n\n_The report is longer than a job summary may be (1 MiB): the rest is in the report fanscan wrote (`--output`)._\n";
    if markdown.len() < STEP_SUMMARY_MAX {
        return format!("{markdown}\n");
    }
    let mut end = STEP_SUMMARY_MAX - NOTE.len();
    while !markdown.is_char_boundary(end) {
        end -= 1;
    }
    let cut = markdown[..end].rfind('\n').unwrap_or(end);
    format!("{}{NOTE}", &markdown[..cut])
}

/// Writes the run's open and baselined findings as a baseline to `file`,
/// keeping the reasons of the earlier baseline's entries.
fn write_baseline(ctx: &Context, report: &Report, file: &Path, quiet: bool) -> anyhow::Result<()> {
    let accepted = report
        .findings
        .iter()
        .chain(report.baselined.iter().map(|b| &b.finding));
    let file_sha256 = |path: &str| ctx.file_sha256(path);
    let baseline = Baseline::of(
        accepted,
        ctx.baseline.as_ref(),
        &Accept {
            reason: ctx.settings.baseline_reason(),
            expires: ctx.settings.baseline_expires(),
            today: ctx.settings.today(),
            file_sha256: &file_sha256,
        },
    );
    let text = baseline.to_json().context("cannot encode the baseline")?;
    if let Some(dir) = file.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).with_context(|| {
            format!("{}: cannot create the baseline's directory", dir.display())
        })?;
    }
    std::fs::write(file, text)
        .with_context(|| format!("{}: cannot write the baseline", file.display()))?;
    if !report.complete {
        eprintln!(
            "fanscan: warning: the run is incomplete, so {} holds only the findings of the files that were reviewed",
            file.display()
        );
    }
    if !quiet {
        eprintln!(
            "fanscan: wrote {} findings to the baseline {}",
            baseline.findings.len(),
            file.display()
        );
    }
    Ok(())
}

/// `1 group`, `2 groups`.
fn plural(n: usize, word: &str) -> String {
    if n == 1 {
        format!("1 {word}")
    } else {
        format!("{n} {word}s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_step_summary_is_cut_at_a_line_under_githubs_limit() {
        let short = step_summary_text("# report\n");
        assert_eq!(short, "# report\n\n");
        let long: String = (0..200_000).map(|i| format!("line {i} é\n")).collect();
        let text = step_summary_text(&long);
        assert!(text.len() < STEP_SUMMARY_MAX);
        assert!(text.ends_with("(`--output`)._\n"));
        let body = text.split("\n\n_The report").next().unwrap();
        assert!(long.starts_with(body));
        assert!(body.ends_with(" é"), "cut at a line end");
    }
}
