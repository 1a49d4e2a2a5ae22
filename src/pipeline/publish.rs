//! The report as it is written out, for the formats that need more than
//! the [`Report`] value: the HTML page (the run store's history for its
//! trend, the planned files' line counts for its heat map) and the review
//! payloads (the change's commits and hunks from git).
//!
//! Takes the resolved settings and the finished report; gives the text.
//! It sits above `report` and `store` (it reads the store's history
//! through the store's API and hands plain values to the pure renderers),
//! so that every format stays a pure function that tests snapshot.

use std::collections::BTreeMap;
use std::path::Path;

use crate::config::{DiffSource, Settings};
use crate::report::html::{self, HtmlExtras, TrendRun};
use crate::report::{Format, RenderError, Report, review};
use crate::store::{Store, runs};

/// `report` in `format`. The HTML page and the review formats gather what
/// they need here; every other format is [`Report::render`] (SARIF without
/// a category).
pub fn render(settings: &Settings, report: &Report, format: Format) -> Result<String, RenderError> {
    match format {
        Format::Html => {
            html::render(report, &html_extras(settings, report)).map_err(RenderError::Text)
        }
        Format::GithubReview | Format::GitlabDiscussions => {
            let Some(DiffSource::Since(base)) = &settings.diff else {
                return Err(RenderError::NeedsDiff);
            };
            let diff =
                crate::util::git::review_diff(&settings.root, base).map_err(RenderError::Git)?;
            let text = if format == Format::GithubReview {
                review::github(report, &diff, settings.max_comments)
            } else {
                review::gitlab(report, &diff, settings.max_comments)
            };
            text.map_err(RenderError::Review)
        }
        Format::Md | Format::Json | Format::Sarif | Format::Github | Format::Codeclimate => {
            report.render(format)
        }
    }
}

/// The store's runs and the planned files' line counts.
fn html_extras(settings: &Settings, report: &Report) -> HtmlExtras {
    let mut extras = HtmlExtras::default();
    if let Some(path) = settings.store.as_deref().filter(|p| p.is_file()) {
        match Store::open_existing(path).and_then(|s| runs::history(&s)) {
            Ok(rows) => {
                extras.history = rows
                    .into_iter()
                    .map(|r| TrendRun {
                        id: r.id,
                        started_at: r.started_at,
                        finished: r.ended_at.is_some(),
                        complete: r.complete,
                        findings: r.findings,
                    })
                    .collect();
            }
            Err(e) => extras.history_note = Some(format!("no trend: {e}")),
        }
    }
    extras.lines = line_counts(
        &settings.root,
        report.plan.groups.iter().flat_map(|g| g.files.iter()),
    );
    extras
}

/// Lines of each file under `root` that can be read.
fn line_counts<'a>(root: &Path, files: impl Iterator<Item = &'a String>) -> BTreeMap<String, u64> {
    let mut out = BTreeMap::new();
    for f in files {
        if let Ok(bytes) = std::fs::read(root.join(f)) {
            let newlines = bytes.iter().filter(|b| **b == b'\n').count() as u64;
            let last = u64::from(bytes.last().is_some_and(|b| *b != b'\n'));
            out.insert(f.clone(), newlines + last);
        }
    }
    out
}
