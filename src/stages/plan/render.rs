//! What `fanscan plan` prints: the groups of a plan with their agent and
//! files, the planner's notes and the optional estimate, as text or JSON.
//!
//! Takes the inventory, the plan and an estimate; gives the text. Pure
//! functions, so the output has snapshot tests.

use std::fmt::Write as _;

use serde::Serialize;

use super::Plan;
use super::estimate::Estimate;
use crate::stages::inventory::{Inventory, Skipped};
use crate::util::human_count;

#[derive(Serialize)]
struct PlanJson<'a> {
    files: usize,
    skipped: &'a [Skipped],
    plan: &'a Plan,
    #[serde(skip_serializing_if = "Option::is_none")]
    estimate: Option<&'a Estimate>,
}

/// The plan as JSON: file count, skipped files with reasons, the plan and
/// the estimate when asked for.
pub fn json(
    inventory: &Inventory,
    plan: &Plan,
    estimate: Option<&Estimate>,
) -> Result<String, serde_json::Error> {
    let value = PlanJson {
        files: inventory.files.len(),
        skipped: &inventory.skipped,
        plan,
        estimate,
    };
    Ok(serde_json::to_string_pretty(&value)? + "\n")
}

/// The plan as text for people (a `fmt::Error` is a `Display` of ours
/// that failed: a bug, reported, never a short listing).
pub fn text(
    inventory: &Inventory,
    plan: &Plan,
    estimate: Option<&Estimate>,
) -> Result<String, std::fmt::Error> {
    let mut out = String::new();
    writeln!(
        out,
        "{} ({} estimated tokens), {} skipped; {} of at most {} tokens (planner: {})",
        crate::util::count(inventory.files.len(), "file"),
        human_count(inventory.total_tokens()),
        inventory.skipped.len(),
        crate::util::count(plan.groups.len(), "group"),
        human_count(plan.group_tokens),
        plan.planner
    )?;
    for g in &plan.groups {
        writeln!(
            out,
            "\n{} ({}, {} tokens, agent {})",
            g.id,
            crate::util::count(g.files.len(), "file"),
            human_count(g.tokens),
            g.agent
        )?;
        for f in &g.files {
            writeln!(out, "  {f}")?;
        }
    }
    for n in &plan.notes {
        writeln!(out, "\nnote: {n}")?;
    }
    if let Some(e) = estimate {
        writeln!(out, "\n{}", e.describe())?;
    }
    Ok(out)
}
