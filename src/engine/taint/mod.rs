//! Taint rules on syntax trees: a sink of `configs/taint.toml` is reported
//! only when a value from a source reaches its argument, and the finding
//! carries the trace (source line → assignments → sink line).
//!
//! How, on the tree of one file ([`Syntax`]):
//! - a sink is a call (or a PHP construct: `include`, `echo`) whose callee
//!   names one of the sink's calls; its value is the arguments the sink
//!   names (all of them by default, Python keyword arguments by name);
//! - the value is walked by a cursor. A call of a sanitizer of the sink's
//!   class (or of every class: a number, a hash, a length, a test that
//!   answers yes or no) and a cast to a number are clean and not entered.
//!   An expression whose text matches a source of `configs/sources.toml`
//!   of a kind the class accepts (an HTTP request for a web sink) is the
//!   source. A name is followed to its assignments in the same function
//!   before its use, the last one that always runs on the way first (an
//!   assignment in a branch or a loop the use is outside of, or one that
//!   adds to the value, `.=` and `+=`, lets the earlier ones through), and
//!   the assigned values are walked in turn. A string with interpolation,
//!   concatenation, formatting, a container written to (`$a['k'] = …`)
//!   and any call not known as a sanitizer pass their parts through.
//! - a parameter is a source when its framework makes it one: a Spring or
//!   JAX-RS annotation (`@RequestParam`, `@PathVariable`, `@QueryParam`,
//!   ...), a Flask route's `<name>`. Other parameters end the trace: this
//!   analysis stays within the function (the line rules and the source
//!   check see further, with less certainty).
//! - for a redirect or a server-side request, a value that starts with a
//!   fixed path (`/items/…`) or a fixed `scheme://host/` is not a risk.
//!
//! Every walk is bounded ([`BUDGET`] nodes a trace, [`MOST_STEPS`] values
//! followed) and goes by a cursor, never by recursion.

mod across;
mod allowed;
mod callers;
mod constant;
mod foreign;
mod guards;
mod keys;
mod table;
#[cfg(test)]
mod tests;

use std::collections::{BTreeSet, HashMap, HashSet};
use std::rc::Rc;
use std::sync::LazyLock;

use tree_sitter::Node;

pub(crate) use across::{Across, across};
pub(crate) use callers::{Listed, Outcome, follow, read_references};
pub(crate) use table::{Table, TaintTableError};

use super::sources::{self, Files, Judged, SourceTable};
use super::syntax::{
    FUNCTION_KINDS, Grammar, Limits, Syntax, Trees, Visit, parse, walk, whole_text,
};
use crate::util::language::language_of;

/// Bumped whenever the analysis would report the same code differently.
const VERSION: u32 = 11;

/// Most nodes one trace walks.
const BUDGET: usize = 20_000;

/// Most nodes all the traces of one file walk, for one set of questions
/// of its tree ([`Scopes`]): a file of twenty thousand sinks must not cost
/// twenty thousand full traces. Past it each trace still walks
/// [`LEAST_BUDGET`] nodes; a trace cut at its bound finds no flow and
/// proves nothing safe, and the file is said to have been traced in part
/// ([`Scopes::cut_short`]).
const FILE_BUDGET: usize = 1_000_000;

/// The nodes a trace walks however much of [`FILE_BUDGET`] is spent.
const LEAST_BUDGET: usize = 500;

/// Most values (a sink's argument, an assignment's right side) one trace
/// follows.
const MOST_STEPS: usize = 256;

/// What the findings of taint rules depend on: the analysis's version, its
/// table and the source table.
pub(crate) fn identity() -> String {
    format!(
        " taint v{VERSION} {}{}",
        crate::util::sha256_hex(table::TABLE.as_bytes()),
        super::sources::identity()
    )
}

/// What the tree says of the values on a line that a line rule flagged.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum LineStatus {
    /// A source reaches them: the steps, from the source to the line.
    Traced(Vec<Step>),
    /// Every value is a literal or a constant (or made from them by the
    /// line's own calls): nothing reaches the line from outside.
    Constant,
    /// Every value is a literal, a constant, or one that the condition
    /// around the line checked to be a number or alphanumeric.
    Checked,
    /// They come only from the function's parameters (named) or the
    /// object's own state: whoever calls the function decides them.
    FromCaller(Vec<String>),
    /// The function builds them from literal text and its parameters
    /// (named) or the object's state: it splices what the caller passes
    /// into a command or a query itself.
    Built(Vec<String>),
    /// Something the walk does not follow: a call of another function, a
    /// name set outside the function, a line it cannot read as values.
    Unknown,
    /// The line is in an arm that a constant condition rules out: it
    /// never runs.
    Dead,
}

/// One step of a trace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Step {
    pub(crate) line: u32,
    /// What happens there, for a reader: the source, an assignment, the sink.
    pub(crate) what: String,
}

/// A value traced from a source to a sink.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Flow {
    /// The sink's id (`include/php`).
    pub(crate) sink: String,
    /// The sink's line.
    pub(crate) line: u32,
    /// From the source to the sink, in order.
    pub(crate) steps: Vec<Step>,
    /// The walk passed over a call it cannot see into (a method of an
    /// object, defined elsewhere): what such a call returns may not
    /// depend on what it was given, so the trace alone proves nothing.
    pub(crate) through_calls: bool,
}

impl Flow {
    /// The trace as one sentence: `line 3: … → line 4: … → line 5: …`.
    pub(crate) fn trace(&self) -> String {
        self.steps
            .iter()
            .map(|s| format!("line {}: {}", s.line, s.what))
            .collect::<Vec<_>>()
            .join(" → ")
    }
}

/// The taint rules, ready to run.
pub(crate) struct Taint {
    table: Table,
    sources: &'static SourceTable,
}

impl std::fmt::Debug for Taint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Taint").field("table", &self.table).finish()
    }
}

/// Why the taint rules cannot run: a fanscan bug in a bundled table.
#[derive(Debug, thiserror::Error)]
pub(crate) enum TaintError {
    #[error(transparent)]
    Table(#[from] TaintTableError),
    #[error("{0}")]
    Sources(String),
    #[error("configs/taint.toml: sink {sink}: {problem}")]
    Sample { sink: String, problem: String },
}

impl Taint {
    /// The bundled table, checked once (a test checks it on every change).
    pub(crate) fn bundled() -> Result<&'static Self, &'static TaintError> {
        static BUNDLED: LazyLock<Result<Taint, TaintError>> = LazyLock::new(|| {
            let sources = SourceTable::bundled().map_err(|e| TaintError::Sources(e.to_string()))?;
            Taint::parse("configs/taint.toml", table::TABLE, sources)
        });
        BUNDLED.as_ref()
    }

    /// Reads a table and checks every sink's samples.
    fn parse(
        source_name: &str,
        text: &str,
        sources: &'static SourceTable,
    ) -> Result<Self, TaintError> {
        let table = Table::parse(source_name, text)?;
        let mut taint = Self { table, sources };
        let samples = std::mem::take(&mut taint.table.samples);
        for (sink, (examples, counterexamples)) in taint.table.sinks.iter().zip(&samples) {
            let problem = |problem: String| TaintError::Sample {
                sink: sink.id.clone(),
                problem,
            };
            for (sample, wanted) in examples
                .iter()
                .map(|s| (s, true))
                .chain(counterexamples.iter().map(|s| (s, false)))
            {
                let syntax = parse(&sample.file, &sample.code, &Limits::default())
                    .map_err(|e| problem(format!("{} does not parse: {e}", sample.file)))?;
                let found = taint
                    .flows(&sample.file, &syntax)
                    .iter()
                    .any(|f| f.sink == sink.id);
                if found != wanted {
                    let what = if wanted {
                        "example is not reported"
                    } else {
                        "counterexample is reported"
                    };
                    return Err(problem(format!("{what}: {:?}", sample.code)));
                }
            }
        }
        Ok(taint)
    }

    pub(crate) fn table(&self) -> &Table {
        &self.table
    }

    /// Whether `line` of a file in `language` may hold a sink: it names one
    /// of the language's sink calls, or holds HTML markup where a sink of
    /// HTML strings is written for the language. A file with no such line
    /// is not parsed for the taint rules.
    pub(crate) fn may_hold(&self, language: &str, line: &str) -> bool {
        let mut sinks = self
            .table
            .sinks
            .iter()
            .filter(|s| s.languages.iter().any(|l| l == language));
        sinks.any(|s| {
            (s.html_strings && has_html_element(line))
                || s.properties.iter().any(|p| line.contains(p.as_str()))
                || s.calls
                    .iter()
                    .any(|c| line.contains(c.rsplit('.').next().unwrap_or(c)))
        })
    }

    /// Whether any sink is written for `language`.
    pub(crate) fn covers(&self, language: &str) -> bool {
        self.table
            .sinks
            .iter()
            .any(|s| s.languages.iter().any(|l| l == language))
    }

    /// Every traced flow into a sink of `path`'s language in `syntax`, in
    /// the order of the sinks in the file.
    pub(crate) fn flows(&self, path: &str, syntax: &Syntax) -> Vec<Flow> {
        self.flows_in(path, syntax, &mut Scopes::default())
    }

    /// [`Taint::flows`], with the scopes of the file's functions made
    /// once for every question asked of the same tree.
    pub(crate) fn flows_in<'t>(
        &self,
        path: &str,
        syntax: &'t Syntax,
        scopes: &mut Scopes<'t>,
    ) -> Vec<Flow> {
        self.sinks_in(path, syntax, scopes, &mut Vec::new())
    }

    /// [`Taint::flows_in`], and each sink's value that comes from a
    /// parameter of a function its file never passes a source to, pushed
    /// onto `opens`: the file's callers elsewhere decide it ([`across`]).
    fn sinks_in<'t>(
        &self,
        path: &str,
        syntax: &'t Syntax,
        scopes: &mut Scopes<'t>,
        opens: &mut Vec<across::Open>,
    ) -> Vec<Flow> {
        let Some(language) = language_of(path) else {
            return Vec::new();
        };
        let sinks: Vec<_> = self
            .table
            .sinks
            .iter()
            .filter(|s| s.languages.iter().any(|l| l == language))
            .collect();
        if sinks.is_empty() {
            return Vec::new();
        }
        let mut out = Vec::new();
        walk(syntax.root(), |node, _| {
            // Punctuation and keywords are leaves: nothing to find there.
            if !node.is_named() {
                return Visit::Skip;
            }
            if let Some(call) = Call::of(node, syntax) {
                for sink in sinks.iter().filter(|s| s.calls(&call.dotted)) {
                    out.extend(self.flow_into(syntax, scopes, sink, &call, opens));
                }
                if let Some(values) = html_format(syntax, scopes, &call) {
                    for sink in sinks.iter().filter(|s| s.html_strings) {
                        out.extend(
                            self.flow_into_string(syntax, scopes, sink, node, &values, opens),
                        );
                    }
                }
            } else if html_string(syntax, node) {
                for sink in sinks.iter().filter(|s| s.html_strings) {
                    out.extend(self.flow_into_string(syntax, scopes, sink, node, &[node], opens));
                }
            } else if let Some((member, value)) = member_assigned(syntax, node) {
                for sink in sinks
                    .iter()
                    .filter(|s| s.properties.iter().any(|p| p == member))
                {
                    out.extend(self.flow_into_member(syntax, scopes, sink, node, value, opens));
                }
            }
            Visit::Enter
        });
        // A string of markup that flows on into an output sink of its
        // class is that sink's finding.
        let class = |f: &Flow| f.sink.split('/').next().unwrap_or_default().to_string();
        let passed: BTreeSet<(String, u32)> = out
            .iter()
            .flat_map(|f| {
                f.steps
                    .iter()
                    .filter(|s| s.line != f.line)
                    .map(move |s| (class(f), s.line))
            })
            .collect();
        out.retain(|f| {
            let string = self.table.sink(&f.sink).is_some_and(|s| s.html_strings);
            !(string && passed.contains(&(class(f), f.line)))
        });
        // One finding a line and class: `echo "<p>$x</p>"` is one sink.
        let mut seen = BTreeSet::new();
        out.retain(|f| seen.insert((class(f), f.line)));
        out
    }

    /// The flow into `node`, a string built with HTML markup, if a source
    /// reaches one of `values` (its parts, or a format's arguments).
    fn flow_into_string<'t>(
        &self,
        syntax: &'t Syntax,
        scopes: &mut Scopes<'t>,
        sink: &table::Sink,
        node: Node<'t>,
        values: &[Node<'t>],
        opens: &mut Vec<across::Open>,
    ) -> Option<Flow> {
        let class = self.table.class_of(sink);
        let what = "is written into a string of HTML markup";
        let (first, last) = (line_of(node), end_line_of(node));
        let (mut steps, through_calls) = match self.trace(syntax, scopes, node, class, values) {
            Ok(traced) => traced,
            Err(ends) => {
                across::Open::push(opens, sink, first, what.into(), ends);
                return None;
            }
        };
        // A string over several lines is flagged where the source is, when
        // it is inside the string.
        let line = steps
            .first()
            .map(|s| s.line)
            .filter(|l| (first..=last).contains(l))
            .unwrap_or(first);
        steps.push(Step {
            line,
            what: what.into(),
        });
        Some(Flow {
            sink: sink.id.clone(),
            line,
            steps,
            through_calls,
        })
    }

    /// The flow into `node`, an assignment of `value` to a member that is
    /// `sink` (`el.innerHTML = …`), if a source reaches the value.
    fn flow_into_member<'t>(
        &self,
        syntax: &'t Syntax,
        scopes: &mut Scopes<'t>,
        sink: &table::Sink,
        node: Node<'t>,
        value: Node<'t>,
        opens: &mut Vec<across::Open>,
    ) -> Option<Flow> {
        let class = self.table.class_of(sink);
        let line = line_of(node);
        let target = node
            .child_by_field_name("left")
            .map_or("", |l| syntax.text_of(l));
        let what = format!(
            "is assigned to `{}` ({})",
            shown(target),
            class.title.to_lowercase()
        );
        let (mut steps, through_calls) = match self.trace(syntax, scopes, node, class, &[value]) {
            Ok(traced) => traced,
            Err(ends) => {
                across::Open::push(opens, sink, line, what, ends);
                return None;
            }
        };
        steps.push(Step { line, what });
        Some(Flow {
            sink: sink.id.clone(),
            line,
            steps,
            through_calls,
        })
    }

    /// What reaches `line` of `syntax` (a line rule's finding of weakness
    /// `cwe`): the arguments of every call that starts on the line and the
    /// right side of every assignment there, followed back through the
    /// function like a taint rule's value, from a source of any kind but a
    /// file (the sink's own read, on a path rule's line). The
    /// class of the CWE, when the table has one, says what cleans; else
    /// every class's sanitizers do.
    #[cfg(test)]
    pub(crate) fn line_status(&self, syntax: &Syntax, line: u32, cwe: Option<u32>) -> LineStatus {
        self.line_status_in(syntax, &mut Scopes::default(), line, cwe)
    }

    /// [`Taint::line_status`], with the scopes of the file's functions
    /// made once for every question asked of the same tree.
    pub(crate) fn line_status_in<'t>(
        &self,
        syntax: &'t Syntax,
        scopes: &mut Scopes<'t>,
        line: u32,
        cwe: Option<u32>,
    ) -> LineStatus {
        self.line_status_with(syntax, scopes, line, cwe, cwe == Some(89), None)
    }

    /// [`Taint::line_status_in`], following calls into the classes of
    /// the other files `foreign` holds. Of a line that runs a `query`, a
    /// call's parameters bound beside it are not values.
    fn line_status_with<'t>(
        &self,
        syntax: &'t Syntax,
        scopes: &mut Scopes<'t>,
        line: u32,
        cwe: Option<u32>,
        query: bool,
        foreign: Option<&foreign::Foreign<'_>>,
    ) -> LineStatus {
        let Some(row) = line.checked_sub(1).map(|r| r as usize) else {
            return LineStatus::Unknown;
        };
        // A pointer passed to a call can be written through (`strcpy(buf,
        // …)`): C's values are not followed by names.
        if matches!(syntax.grammar, Grammar::C | Grammar::Cpp) {
            return LineStatus::Unknown;
        }
        let mut values: Vec<Node<'_>> = Vec::new();
        let mut at = None;
        let Some(on_row) = syntax.node_on_row(row) else {
            return LineStatus::Unknown;
        };
        walk(on_row, |n, _| {
            let (start, end) = (n.start_position().row, n.end_position().row);
            if end < row || start > row {
                return Visit::Skip;
            }
            if start == row {
                if let Some(call) = Call::of(n, syntax) {
                    values.extend(call.values(syntax, query));
                    at.get_or_insert(n);
                } else if let Some(value) = assigned_value(n).or_else(|| returned_value(n)) {
                    if !self.object_of_the_sink(syntax, value) {
                        values.push(value);
                    }
                    at.get_or_insert(n);
                }
            }
            Visit::Enter
        });
        // A line with no call or assignment of its own starting on it (the
        // value of `String sql =` on the line below): the statement it is
        // part of, read whole below.
        let at = match at {
            Some(at) => at,
            None => {
                let mut n = on_row;
                while !(n.kind().ends_with("statement") || n.kind().ends_with("declaration")) {
                    match n.parent() {
                        Some(p) if !FUNCTION_KINDS.contains(&p.kind()) => n = p,
                        _ => return LineStatus::Unknown,
                    }
                }
                n
            }
        };
        // A statement over several lines has values on the others too.
        let mut statement = at;
        while !(statement.kind().ends_with("statement")
            || statement.kind().ends_with("declaration"))
        {
            match statement.parent() {
                Some(p) if !FUNCTION_KINDS.contains(&p.kind()) => statement = p,
                _ => break,
            }
        }
        let rows = (statement.start_position().row, statement.end_position().row);
        // A statement written over several lines is read whole: its
        // values on the other lines too. One that holds a block (a
        // lambda's body, a nested function) is not read as values.
        let spans = rows != (row, row);
        let simple = (statement.kind().ends_with("statement")
            || statement.kind().ends_with("declaration"))
            && !matches!(statement.kind(), "body_statement" | "compound_statement");
        let unreadable = spans && (!simple || has_block(statement));
        if spans && !unreadable {
            values.clear();
            walk(statement, |n, _| {
                if let Some(call) = Call::of(n, syntax) {
                    values.extend(call.values(syntax, query));
                } else if let Some(value) = assigned_value(n).or_else(|| returned_value(n))
                    && !self.object_of_the_sink(syntax, value)
                {
                    values.push(value);
                }
                Visit::Enter
            });
        }
        // A line of no value at all proves nothing.
        if values.is_empty() {
            return LineStatus::Unknown;
        }
        let class = self.any_class(cwe);
        let scope = scopes.around(syntax, at);
        if scope.is_dead(at) {
            return LineStatus::Dead;
        }
        let mut tracer = Tracer::new(syntax, self.sources, &class, scope, scopes);
        tracer.foreign = foreign;
        tracer.seen.line_rows = Some(if spans { rows } else { (row, row) });
        let traced = values.iter().find_map(|v| tracer.trace(*v));
        let seen = std::mem::take(&mut tracer.seen);
        // A trace through a call of another function is no proof: what the
        // call returns may not depend on what it was given.
        if let Some(steps) = traced {
            return if seen.calls {
                LineStatus::Unknown
            } else {
                LineStatus::Traced(steps)
            };
        }
        if seen.opaque || unreadable {
            LineStatus::Unknown
        } else if seen.params.is_empty() && !seen.state && seen.checked {
            LineStatus::Checked
        } else if seen.params.is_empty() && !seen.state {
            LineStatus::Constant
        } else {
            let mut names: Vec<String> = seen.params.into_iter().collect();
            if seen.state {
                names.push("the object's own state".into());
            }
            if seen.strings {
                // Built here from the caller's values and literal text: the
                // function itself splices them into a command or a query.
                LineStatus::Built(names)
            } else {
                LineStatus::FromCaller(names)
            }
        }
    }

    /// Whether `value`, assigned on the flagged line, is a call that runs
    /// a query and takes arguments (`rs = statement.executeQuery(sql)`):
    /// its arguments are the line's values, and the statement or
    /// connection it is called on is none. Any other call keeps its object
    /// as a value (`location.hash.slice(1)`, `base.concat(x)`).
    fn object_of_the_sink(&self, syntax: &Syntax, value: Node<'_>) -> bool {
        Call::of(value, syntax).is_some_and(|call| {
            call.receiver
                .is_some_and(|r| !self.sources.any_source(syntax.text_of(r)))
                && !(call.args.is_empty() && call.keywords.is_empty())
                && (SQL_RUNS.contains(&call.last()) || call.last() == "prepareCall")
        })
    }

    /// The class a line rule's CWE is judged as: sources of every kind, and
    /// what cleans it (the table's class of that CWE, else every class's
    /// sanitizers).
    fn any_class(&self, cwe: Option<u32>) -> table::Class {
        let own = self.table.classes.iter().find(|c| Some(c.cwe) == cwe);
        let sanitizers = match own {
            Some(c) => c.sanitizers.clone(),
            None => self
                .table
                .classes
                .iter()
                .flat_map(|c| c.sanitizers.iter().cloned())
                .collect(),
        };
        table::Class {
            name: "line".into(),
            cwe: cwe.unwrap_or_default(),
            severity: crate::model::findings::Severity::Info,
            title: String::new(),
            message: String::new(),
            // A file read on the line is most often the sink itself (a
            // path rule's `Files.readAllBytes(…)`), not what reaches it.
            sources: self
                .sources
                .kinds()
                .filter(|k| *k != "a file or a socket")
                .map(str::to_string)
                .collect(),
            sanitizers,
            fixed_prefix: false,
            source_calls: Vec::new(),
            numbers_clean: true,
        }
    }

    /// The steps from a source to the first of `values` (read in the
    /// function around `at`) that one reaches; else the parameters they
    /// come from of functions their file never passes a source to.
    fn trace<'t>(
        &self,
        syntax: &'t Syntax,
        scopes: &mut Scopes<'t>,
        at: Node<'t>,
        class: &table::Class,
        values: &[Node<'t>],
    ) -> Result<(Vec<Step>, bool), Vec<End>> {
        let scope = scopes.around(syntax, at);
        // A sink in an arm that never runs is no flow.
        if scope.is_dead(at) {
            return Err(Vec::new());
        }
        let mut tracer = Tracer::new(syntax, self.sources, class, scope, scopes);
        match values.iter().find_map(|v| tracer.trace(*v)) {
            Some(steps) => Ok((steps, tracer.seen.calls)),
            None => {
                let mut ends = std::mem::take(&mut tracer.ends);
                // The value is its parameters' alone only when nothing else
                // went into it that the walk could not see.
                let seen = &tracer.seen;
                let whole = !seen.opaque
                    && !seen.state
                    && seen
                        .params
                        .iter()
                        .all(|p| ends.iter().any(|e| e.param == *p));
                for end in &mut ends {
                    end.whole = whole;
                }
                Err(ends)
            }
        }
    }

    /// The flow into `call`, a call of `sink`, if a source reaches the
    /// arguments it names.
    fn flow_into<'t>(
        &self,
        syntax: &'t Syntax,
        scopes: &mut Scopes<'t>,
        sink: &table::Sink,
        call: &Call<'t>,
        opens: &mut Vec<across::Open>,
    ) -> Option<Flow> {
        let class = self.table.class_of(sink);
        if let Some(needle) = &sink.contains
            && !syntax.text_of(call.node).to_lowercase().contains(needle)
        {
            return None;
        }
        if !sink.only_read_by.is_empty()
            && let Some(next) = call.node.parent().and_then(|p| {
                let p = if MEMBER_KINDS.contains(&p.kind()) {
                    p.parent()?
                } else {
                    p
                };
                Call::of(p, syntax)
            })
            && next.receiver == Some(call.node)
            && sink.only_read_by.iter().any(|m| m == next.last())
        {
            return None;
        }
        let values: Vec<Node<'_>> = call
            .args
            .iter()
            .enumerate()
            .filter(|(i, _)| sink.args.as_ref().is_none_or(|a| a.contains(i)))
            .map(|(_, n)| *n)
            .chain(
                call.keywords
                    .iter()
                    .filter(|(k, _)| sink.keywords.iter().any(|w| w == k))
                    .map(|(_, n)| *n),
            )
            .filter(|v| !(class.fixed_prefix && fixed_prefix(syntax, *v)))
            .filter(|v| !(sink.not_lists && LIST_KINDS.contains(&v.kind())))
            .filter(|v| !sink.built || built_here(syntax, scopes, *v))
            .collect();
        if values.is_empty() {
            return None;
        }
        let line = line_of(call.node);
        let what = format!("reaches `{}` ({})", call.dotted, class.title.to_lowercase());
        let (mut steps, through_calls) = match self.trace(syntax, scopes, call.node, class, &values)
        {
            Ok(traced) => traced,
            Err(ends) => {
                across::Open::push(opens, sink, line, what, ends);
                return None;
            }
        };
        steps.push(Step { line, what });
        Some(Flow {
            sink: sink.id.clone(),
            line,
            steps,
            through_calls,
        })
    }
}

/// The last named child of `node`.
fn last_named(node: Node<'_>) -> Option<Node<'_>> {
    let count = u32::try_from(node.named_child_count()).ok()?;
    node.named_child(count.checked_sub(1)?)
}

/// The skeptic's check of one finding, on the syntax trees of the files
/// it has read: a finding of a taint rule whose flow the file's tree still
/// shows, or the run traced into it from another file (`across`), is
/// confirmed, with that trace; a line in an arm that never runs, or whose
/// every value is a literal, a constant or checked for its kind, with
/// calls into the other files' classes followed ([`foreign`]), is refuted;
/// a source traced to the line confirms; anything else is uncertain and
/// says why. What the trees cannot see is never refuted.
pub(crate) fn judge(
    table: &SourceTable,
    trees: &Trees,
    across: Option<&Across>,
    path: &str,
    files: &Files,
    line: u32,
    rule: Option<&str>,
) -> Judged {
    if let Some(flow) = across.and_then(|a| a.at(path, line, rule)) {
        return flow.confirmed(9, "traced on the syntax trees across files");
    }
    if !table.is_sink_rule(rule) {
        return Judged::uncertain(
            "the rule engine judges only findings that need untrusted input to reach a sink".into(),
        );
    }
    if !files.get(path).is_some_and(|l| l.contains_key(&line)) {
        return Judged::uncertain(format!("line {line} was not shown"));
    }
    // One look at the tree, its functions' scopes made once: the taint
    // rule's flow into the line, and what reaches the line, with calls
    // followed into the classes of the other files read.
    let foreign = foreign::Foreign::new(trees, files, path);
    let looked = on_tree(trees, path, files, |taint, syntax| {
        let mut scopes = Scopes::default();
        let flow = rule
            .filter(|r| taint.table.sink(r).is_some())
            .and_then(|r| {
                // The file's flows as the run's pass found them in this
                // text, else traced now: a file of many findings is not
                // traced whole once for each.
                let cached = across.and_then(|a| a.flows_in_file(path, syntax.text()));
                let found = |f: &&Flow| f.line == line && f.sink == r;
                match cached {
                    Some((flows, _)) => flows.iter().find(found).cloned(),
                    None => taint
                        .flows_in(path, syntax, &mut scopes)
                        .iter()
                        .find(found)
                        .cloned(),
                }
            });
        // Without the rule's CWE at hand, every class's sanitizers clean.
        // A flow through a call the run's pass could not see into is
        // looked at again, with the calls into other files followed.
        let status = flow.as_ref().is_none_or(|f| f.through_calls).then(|| {
            let query = rule.is_some_and(|r| r.starts_with("sql/"));
            taint.line_status_with(syntax, &mut scopes, line, None, query, Some(&foreign))
        });
        (flow, status)
    });
    let Some((flow, status)) = looked else {
        return Judged::uncertain(format!(
            "{path} was not read whole or does not parse: the rule engine judges a finding on its file's syntax tree"
        ));
    };
    let followed = foreign.followed();
    let mut into_files: Vec<&str> = followed.iter().map(|(p, _)| p.as_str()).collect();
    into_files.dedup();
    let into = if into_files.is_empty() {
        String::new()
    } else {
        format!(" (calls followed into {})", into_files.join(", "))
    };
    let proven = |verdict, why: String, flow: Vec<u32>| Judged {
        verdict,
        confidence: 9,
        why,
        flow,
        elsewhere: followed.clone(),
        wants: BTreeSet::new(),
    };
    // The classes a call goes into that no file read declares.
    let wanted = foreign
        .wants()
        .into_iter()
        .map(|c| format!("`{c}`"))
        .collect::<Vec<_>>()
        .join(", ");
    let traced = |steps: &[Step]| {
        let flow: Vec<u32> = steps.iter().map(|s| s.line).collect();
        let trace = Flow {
            sink: String::new(),
            line,
            steps: steps.to_vec(),
            through_calls: false,
        };
        proven(
            "confirmed",
            format!(
                "traced on the syntax tree{into}: {} → line {line}",
                trace.trace()
            ),
            flow,
        )
    };
    // The run's own flow is overruled only by what a call returns in
    // another file's class, read there.
    let refutable = flow.is_none() || !followed.is_empty();
    match status {
        Some(LineStatus::Dead) if refutable => proven(
            "refuted",
            format!(
                "on the syntax tree, line {line} is in an arm that a constant condition rules out: it never runs"
            ),
            vec![line],
        ),
        Some(LineStatus::Constant) if refutable => proven(
            "refuted",
            format!(
                "on the syntax tree, every value at line {line} is a literal or a constant, or made from them by the line's own calls: nothing reaches it from outside{into}"
            ),
            vec![line],
        ),
        Some(LineStatus::Checked) if refutable => proven(
            "refuted",
            format!(
                "on the syntax tree, every value at line {line} is a literal or a constant, or one that the condition around the line checked to be a number or letters and digits only{into}"
            ),
            vec![line],
        ),
        Some(LineStatus::Traced(steps)) => traced(&steps),
        // The run's flow, through a call the tree cannot see into: what
        // the call returns may depend on what it was given, and the
        // classes it goes into are read first when the repository has them.
        _ if flow.is_some() && !wanted.is_empty() => Judged {
            wants: foreign.wants(),
            ..Judged::uncertain(format!(
                "a request value reaches line {line} through a call into {wanted}, which no file read declares"
            ))
        },
        _ if let Some(flow) = flow => proven(
            "confirmed",
            format!("traced on the syntax tree: {}", flow.trace()),
            flow.steps.iter().map(|s| s.line).collect(),
        ),
        Some(LineStatus::FromCaller(names) | LineStatus::Built(names)) => {
            Judged::uncertain(format!(
                "the value at line {line} depends on {}; the rule engine could not follow it further",
                names
                    .iter()
                    .map(|n| if n.starts_with("the ") {
                        n.clone()
                    } else {
                        format!("the parameter `{n}`")
                    })
                    .collect::<Vec<_>>()
                    .join(" and ")
            ))
        }
        _ => Judged {
            wants: foreign.wants(),
            ..Judged::uncertain(format!(
                "the value at line {line} comes through something the syntax tree does not show{}; the rule engine does not refute it",
                if wanted.is_empty() {
                    String::new()
                } else {
                    format!(" (a call into {wanted}, which no file read declares)")
                }
            ))
        },
    }
}

/// Whether `statement` holds a block: a lambda's or a nested function's
/// body, a branch.
fn has_block(statement: Node<'_>) -> bool {
    let mut found = false;
    walk(statement, |n, _| {
        if found {
            return Visit::Skip;
        }
        if n != statement
            && (FUNCTION_KINDS.contains(&n.kind())
                || n.kind().ends_with("block")
                || n.kind() == "compound_statement"
                || n.kind() == "body_statement")
        {
            found = true;
            return Visit::Skip;
        }
        Visit::Enter
    });
    found
}

/// `f` of the tree of `path`, when the whole file is in `files` and parses.
fn on_tree<T>(
    trees: &Trees,
    path: &str,
    files: &Files,
    f: impl FnOnce(&Taint, &Syntax) -> T,
) -> Option<T> {
    let taint = Taint::bundled().ok()?;
    let lines = files.get(path)?;
    let text = whole_text(lines.iter().map(|(n, l)| (*n, l.as_str())))?;
    let parsed = trees.get(path, &text);
    let syntax = parsed.as_ref().as_ref().ok()?;
    Some(f(taint, syntax))
}

fn end_line_of(node: Node<'_>) -> u32 {
    u32::try_from(node.end_position().row).map_or(u32::MAX, |r| r.saturating_add(1))
}

fn line_of(node: Node<'_>) -> u32 {
    u32::try_from(node.start_position().row).map_or(u32::MAX, |r| r.saturating_add(1))
}

/// A call, or a construct that takes values like one.
struct Call<'t> {
    node: Node<'t>,
    /// The callee as a dotted name: `requests.get`, `response.sendRedirect`.
    dotted: String,
    args: Vec<Node<'t>>,
    /// Python's keyword arguments: name and value.
    keywords: Vec<(String, Node<'t>)>,
    /// The object a method is called on (`payload` in `payload.append(x)`).
    receiver: Option<Node<'t>>,
    /// The node that holds the arguments.
    list: Option<Node<'t>>,
}

impl<'t> Call<'t> {
    fn of(node: Node<'t>, syntax: &'t Syntax) -> Option<Self> {
        let field = |name: &str| node.child_by_field_name(name);
        let text = |n: Node<'t>| syntax.text_of(n);
        let (callee, args_node): (String, Option<Node<'t>>) = match node.kind() {
            "call" => match (field("receiver"), field("method")) {
                // Ruby: `receiver.method args`.
                (receiver, Some(method)) => (
                    match receiver {
                        Some(r) => format!("{}.{}", text(r), text(method)),
                        None => text(method).to_string(),
                    },
                    field("arguments"),
                ),
                // Python: `function(arguments)`.
                (_, None) => (text(field("function")?).to_string(), field("arguments")),
            },
            "call_expression" | "invocation_expression" | "function_call_expression" => {
                (text(field("function")?).to_string(), field("arguments"))
            }
            "new_expression" => (text(field("constructor")?).to_string(), field("arguments")),
            "method_invocation"
            | "member_call_expression"
            | "nullsafe_member_call_expression"
            | "scoped_call_expression" => {
                let name = text(field("name")?);
                let receiver = field("object").or_else(|| field("scope"));
                (
                    match receiver {
                        Some(r) => format!("{}.{name}", text(r)),
                        None => name.to_string(),
                    },
                    field("arguments"),
                )
            }
            "object_creation_expression" => {
                let ty = field("type").or_else(|| {
                    let mut c = node.walk();
                    node.named_children(&mut c)
                        .find(|n| matches!(n.kind(), "name" | "qualified_name"))
                })?;
                let args = field("arguments").or_else(|| {
                    let mut c = node.walk();
                    node.named_children(&mut c)
                        .find(|n| n.kind() == "arguments")
                });
                (text(ty).to_string(), args)
            }
            "include_expression"
            | "include_once_expression"
            | "require_expression"
            | "require_once_expression" => (
                node.kind().trim_end_matches("_expression").to_string(),
                Some(node),
            ),
            "echo_statement" => ("echo".to_string(), Some(node)),
            "print_intrinsic" => ("print".to_string(), Some(node)),
            _ => return None,
        };
        // A type's arguments are not its name: `new ArrayList<String>()`
        // calls `ArrayList`.
        let callee = callee.split('<').next().unwrap_or(&callee);
        let dotted: String = callee
            .replace("?->", ".")
            .replace("->", ".")
            .replace("::", ".")
            .chars()
            .filter(|c| !c.is_whitespace())
            .collect();
        let mut args = Vec::new();
        let mut keywords = Vec::new();
        if let Some(list) = args_node {
            let mut c = list.walk();
            for arg in list.named_children(&mut c) {
                if arg.kind().ends_with("comment") {
                    continue;
                }
                if arg.kind() == "keyword_argument" {
                    if let (Some(k), Some(v)) = (
                        arg.child_by_field_name("name"),
                        arg.child_by_field_name("value"),
                    ) {
                        keywords.push((text(k).to_string(), v));
                    }
                    continue;
                }
                // `echo $a, $b;` holds its values in a sequence.
                if arg.kind() == "sequence_expression" {
                    let mut s = arg.walk();
                    args.extend(arg.named_children(&mut s));
                    continue;
                }
                // PHP and C# wrap a value in an `argument`: the value is
                // its last part (after a name, a `ref`, a spread).
                let value = if arg.kind() == "argument" {
                    last_named(arg).unwrap_or(arg)
                } else {
                    arg
                };
                args.push(value);
            }
        }
        let receiver = Self::receiver_of(node);
        Some(Self {
            node,
            dotted,
            args,
            keywords,
            receiver,
            list: args_node.filter(|l| *l != node),
        })
    }

    /// The object a call `node` is made on, if it is a call of a method.
    fn receiver_of(node: Node<'t>) -> Option<Node<'t>> {
        let field = |name: &str| node.child_by_field_name(name);
        field("receiver").or_else(|| field("object")).or_else(|| {
            let callee = field("function")?;
            callee
                .child_by_field_name("object")
                .or_else(|| callee.child_by_field_name("operand"))
                .or_else(|| callee.child_by_field_name("expression"))
        })
    }

    /// The argument the call passes for the parameter `name` at
    /// `position`: a keyword argument of that name, else the argument at
    /// that position (not in a call that names any argument).
    fn argument_for(&self, name: &str, position: Option<usize>) -> Option<Node<'t>> {
        if let Some((_, v)) = self.keywords.iter().find(|(k, _)| k == name) {
            return Some(*v);
        }
        if !self.keywords.is_empty() {
            return None;
        }
        self.args.get(position?).copied()
    }

    /// The values a call on a flagged line takes: its arguments, but for
    /// a call that runs a `query` with parameters bound beside it
    /// (`cur.execute(q, (x,))`, `db.Query(q, x)`) only the query, and for
    /// one that writes to its first argument (`fmt.Fprintf(w, …)`) not the
    /// writer.
    fn values(&self, syntax: &Syntax, query: bool) -> Vec<Node<'t>> {
        let name = self.last();
        let args = match self.args.as_slice() {
            [_, _, ..] if query && SQL_RUNS.contains(&name) => {
                // The query: the first argument that reads as one (a
                // string, text built, a name), not a context or a kind
                // passed before it (`Exec(ctx, q)`, `DB::query(Database::SELECT, q)`).
                if let Some(q) = self.args.iter().find(|a| query_like(syntax, **a)) {
                    return vec![*q];
                }
                self.args.as_slice()
            }
            [_, rest @ ..] if !rest.is_empty() && WRITES.contains(&name) => rest,
            all => all,
        };
        args.iter()
            .copied()
            .chain(self.keywords.iter().map(|(_, v)| *v))
            .collect()
    }

    /// The callee's last name.
    fn last(&self) -> &str {
        self.dotted.rsplit('.').next().unwrap_or(&self.dotted)
    }
}

/// Calls that run a query whose later arguments are bound parameters.
const SQL_RUNS: &[&str] = &[
    "execute",
    "executemany",
    "executeQuery",
    "executeUpdate",
    "query",
    "Query",
    "QueryRow",
    "Exec",
    "prepare",
    "prepareStatement",
    "raw",
    "run",
    "all",
];

/// Whether `arg` reads as a query: a string, text built from parts, or a
/// name that is not a context's.
fn query_like(syntax: &Syntax, arg: Node<'_>) -> bool {
    let kind = arg.kind();
    if kind.contains("string") || kind.starts_with("binary") || kind == "concatenated_string" {
        return true;
    }
    let name = syntax.text_of(arg).to_ascii_lowercase();
    matches!(kind, "identifier" | "variable_name")
        && !name.contains("ctx")
        && !name.contains("context")
}

/// Calls that write their later arguments to their first (a response, a
/// stream): the first is where the value goes, not the value.
const WRITES: &[&str] = &["Fprintf", "Fprint", "Fprintln", "WriteString", "fprintf"];

/// Whether `value` is text built in its function: a string spliced with
/// other parts or a format's result (`"… WHERE id = " + id`, `f"…{id}"`,
/// `"…%s" % id`, `fmt.Sprintf(…)`), or a name the function last set to
/// such text before `value` (or added to).
fn built_here<'t>(syntax: &'t Syntax, scopes: &mut Scopes<'t>, value: Node<'t>) -> bool {
    let text_built = |n: Node<'_>| {
        // `(…)`, and Go's one value of `q := …`.
        let n = if matches!(n.kind(), "parenthesized_expression" | "expression_list") {
            n.named_child(0).unwrap_or(n)
        } else {
            n
        };
        STRING_BUILDS.contains(&n.kind())
            || n.kind().contains("string")
            || Call::of(n, syntax).is_some_and(|c| FORMATTERS.contains(&c.last()))
    };
    if text_built(value) {
        return true;
    }
    if !matches!(value.kind(), "identifier" | "variable_name") {
        return false;
    }
    let scope = scopes.around(syntax, value);
    scope
        .reaching(syntax.text_of(value), value.start_byte())
        .iter()
        .any(|a| text_built(a.value))
}

/// Node kinds of a list or an array written out, in every grammar.
const LIST_KINDS: &[&str] = &[
    "array",
    "list",
    "array_creation_expression",
    "array_initializer",
    "composite_literal",
];

/// Node kinds that build a string from parts.
const STRING_BUILDS: &[&str] = &[
    "binary_expression",
    "binary_operator",
    "encapsed_string",
    "string",
    "template_string",
    "interpolated_string_expression",
    "heredoc",
];

/// HTML elements a string of markup opens or closes.
const HTML_ELEMENTS: &[&str] = &[
    "a",
    "abbr",
    "article",
    "aside",
    "audio",
    "b",
    "blockquote",
    "body",
    "br",
    "button",
    "canvas",
    "caption",
    "center",
    "code",
    "dd",
    "div",
    "dl",
    "dt",
    "em",
    "embed",
    "fieldset",
    "font",
    "footer",
    "form",
    "frame",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "head",
    "header",
    "hr",
    "html",
    "i",
    "iframe",
    "img",
    "input",
    "label",
    "legend",
    "li",
    "link",
    "main",
    "meta",
    "nav",
    "object",
    "ol",
    "option",
    "p",
    "pre",
    "script",
    "section",
    "select",
    "small",
    "source",
    "span",
    "strong",
    "style",
    "sub",
    "sup",
    "svg",
    "table",
    "tbody",
    "td",
    "textarea",
    "tfoot",
    "th",
    "thead",
    "title",
    "tr",
    "u",
    "ul",
    "video",
];

/// Whether `node` is the outermost expression that builds a string from a
/// literal holding HTML markup and at least one part that is not literal.
fn html_string(syntax: &Syntax, node: Node<'_>) -> bool {
    if !STRING_BUILDS.contains(&node.kind())
        || node
            .parent()
            .is_some_and(|p| STRING_BUILDS.contains(&p.kind()))
    {
        return false;
    }
    // No markup without a `<`: most expressions end here.
    if !syntax.text_of(node).contains('<') {
        return false;
    }
    let mut literal_html = false;
    let mut other = false;
    walk(node, |n, _| {
        let kind = n.kind();
        let text_part =
            kind.contains("content") || kind.contains("fragment") || kind == "string_value";
        if text_part || n.child_count() == 0 {
            if matches!(kind, "identifier" | "name" | "variable_name") {
                other = true;
            } else {
                literal_html |= has_html_element(syntax.text_of(n));
            }
            Visit::Skip
        } else if STRING_BUILDS.contains(&kind) || kind.contains("string") {
            // A string's parts, or the parts of a concatenation.
            Visit::Enter
        } else {
            // A part that is not literal: a variable, a call, a subscript,
            // an interpolation.
            other = true;
            Visit::Skip
        }
    });
    literal_html && other
}

/// The values a call formats into a template of HTML markup
/// (`String.format("<div>%s</div>", v)`, `fmt.Sprintf(page, v)` with
/// `page` a literal of markup set once in the function, Python's
/// `"<p>{}</p>".format(v)`), or `None` when it is no such call.
fn html_format<'t>(
    syntax: &'t Syntax,
    scopes: &mut Scopes<'t>,
    call: &Call<'t>,
) -> Option<Vec<Node<'t>>> {
    if !FORMATTERS.contains(&call.last()) {
        return None;
    }
    let mut markup = |template: Node<'t>| {
        let template = if matches!(template.kind(), "identifier" | "variable_name") {
            let scope = scopes.around(syntax, call.node);
            let name = syntax.text_of(template);
            match scope.reaching(name, template.start_byte()).as_slice() {
                [one] if !one.adds => one.value,
                _ => return false,
            }
        } else {
            template
        };
        markup_literal(syntax, template)
    };
    // `format(template, v…)`, or Python's `template.format(v…)`.
    if let Some(first) = call.args.first()
        && markup(*first)
    {
        let values = call.args.get(1..)?.to_vec();
        return (!values.is_empty()).then_some(values);
    }
    let receiver = call.receiver?;
    (call.last() == "format" && markup(receiver) && !call.args.is_empty())
        .then(|| call.args.clone())
}

/// Whether `node` is a string literal holding HTML markup.
fn markup_literal(syntax: &Syntax, node: Node<'_>) -> bool {
    let kind = node.kind();
    (kind.contains("string") || kind == "template_string") && has_html_element(syntax.text_of(node))
}

/// Whether `text` opens or closes an HTML element (`<p>`, `</div`, `<a `).
fn has_html_element(text: &str) -> bool {
    text.match_indices('<').any(|(at, _)| {
        let rest = text.get(at + 1..).unwrap_or_default();
        let rest = rest.strip_prefix('/').unwrap_or(rest);
        let len = rest.bytes().take_while(u8::is_ascii_alphanumeric).count();
        let name = rest.get(..len).unwrap_or_default();
        let after = rest.get(len..).and_then(|r| r.chars().next());
        HTML_ELEMENTS.iter().any(|e| e.eq_ignore_ascii_case(name))
            && after.is_none_or(|c| c.is_whitespace() || c == '>' || c == '/')
    })
}

/// Whether `value` starts with a literal that fixes where it points: a
/// path of this site (`/items/…`, not `//host`) or `scheme://host/…`.
fn fixed_prefix(syntax: &Syntax, value: Node<'_>) -> bool {
    let mut node = value;
    // The leftmost part of a concatenation, a `%` format or `.format`.
    for _ in 0..64 {
        let next = match node.kind() {
            "binary_expression" | "binary_operator" | "concatenated_string" => node
                .child_by_field_name("left")
                .or_else(|| node.named_child(0)),
            "parenthesized_expression" => node.named_child(0),
            "call" | "call_expression" => node
                .child_by_field_name("function")
                .and_then(|f| f.child_by_field_name("object")),
            _ => None,
        };
        match next {
            Some(n) => node = n,
            None => break,
        }
    }
    if !(node.kind().contains("string") || node.kind().contains("template")) {
        return false;
    }
    // The literal text before the first interpolation.
    let mut prefix = String::new();
    let mut c = node.walk();
    let parts: Vec<Node<'_>> = node.children(&mut c).collect();
    if parts.iter().any(|p| p.is_named()) {
        for p in parts.iter().filter(|p| p.is_named()) {
            let kind = p.kind();
            if kind.contains("content") || kind.contains("fragment") || kind == "string_value" {
                prefix.push_str(syntax.text_of(*p));
            } else if kind.contains("escape") || kind.ends_with("_start") || kind.ends_with("_end")
            {
                continue;
            } else {
                break;
            }
        }
    } else {
        // A string without parts: its text between the quotes.
        let t = syntax.text_of(node);
        let t = t.trim_start_matches(|c: char| c.is_ascii_alphabetic() || c == '@' || c == '$');
        prefix = t
            .trim_start_matches(['"', '\'', '`'])
            .trim_end_matches(['"', '\'', '`'])
            .to_string();
    }
    let p = prefix.trim_start();
    let p = match (p.get(..9), p.get(9..)) {
        (Some(head), Some(rest)) if head.eq_ignore_ascii_case("location:") => rest.trim_start(),
        _ => p,
    };
    if let Some(rest) = p.strip_prefix('/') {
        return !rest.starts_with('/') && !rest.starts_with('\\');
    }
    // `scheme://host/`: a host and the slash after it are fixed.
    if let Some((scheme, rest)) = p.split_once("://") {
        return !scheme.is_empty()
            && scheme.chars().all(|c| c.is_ascii_alphabetic())
            && rest
                .split_once('/')
                .is_some_and(|(host, _)| !host.is_empty() && !host.contains(['{', '$', '%']));
    }
    false
}

/// An assignment (or a loop's variable) in a function.
struct Assign<'t> {
    node: Node<'t>,
    /// The names it sets (a container's name for `a[k] = …`).
    names: Vec<String>,
    value: Node<'t>,
    /// It adds to the value (`.=`, `+=`), or sets a loop's variable: the
    /// earlier value still reaches on.
    adds: bool,
    /// Where the name holds the value: the assignment's end, a loop's
    /// header (its body, where the name is read, is inside the loop).
    set_by: usize,
    /// The literal key of the container's part it sets (none: it may set
    /// any part, or the whole).
    key: Option<String>,
}

/// The function around a sink: its assignments and its parameters.
struct Scope<'t> {
    node: Node<'t>,
    assigns: Vec<Assign<'t>>,
    /// The indices in `assigns` of each name's assignments: a function of
    /// thousands of assignments is not searched whole at every use.
    by_name: HashMap<String, Vec<usize>>,
    /// The byte ranges of the arms a constant condition rules out
    /// ([`constant`]): they never run.
    dead: Vec<(usize, usize)>,
    /// The arms a constant condition always takes, by node id.
    always: HashSet<usize>,
    /// Each parameter's name and its declaration.
    params: Vec<(String, Node<'t>)>,
    /// The values a condition around an arm checks to be a number or
    /// alphanumeric ([`guards`]).
    guards: Vec<guards::Guard>,
}

/// The scopes of one file's functions, each made once, by the function's
/// node: one per tree, for every question asked of it.
pub(crate) struct Scopes<'t> {
    by_function: HashMap<usize, Rc<Scope<'t>>>,
    /// Most nodes all traces of the file walk ([`FILE_BUDGET`]).
    file_budget: usize,
    /// Nodes walked by the traces of this file so far.
    spent: usize,
    /// Traces cut at their bound.
    cut: usize,
    /// The file's calls by callee, made the first time a trace reaches a
    /// parameter.
    calls: Option<CallIndex<'t>>,
}

/// The calls of one file's own functions, and how often each name is
/// defined.
#[derive(Default)]
struct CallIndex<'t> {
    /// Calls without a receiver, or on the object's own (`this.f(x)`,
    /// `self.f(x)`, `$this->f($x)`), by the callee's last name.
    calls: HashMap<&'t str, Vec<Node<'t>>>,
    /// How many functions of the file have each name.
    defined: HashMap<&'t str, usize>,
    /// The file's functions by name (the last of a name defined twice).
    functions: HashMap<&'t str, Node<'t>>,
    /// The names of the classes the file declares.
    classes: HashSet<&'t str>,
}

impl Default for Scopes<'_> {
    fn default() -> Self {
        Self {
            by_function: HashMap::new(),
            file_budget: FILE_BUDGET,
            spent: 0,
            cut: 0,
            calls: None,
        }
    }
}

impl<'t> Scopes<'t> {
    /// What the next trace may walk.
    fn budget(&self) -> usize {
        BUDGET
            .min(self.file_budget.saturating_sub(self.spent))
            .max(LEAST_BUDGET)
    }

    /// How many traces were cut at their bound: what they would have
    /// found is not known.
    pub(crate) fn cut_short(&self) -> usize {
        self.cut
    }

    /// The scope of the innermost function around `node`.
    fn around(&mut self, syntax: &'t Syntax, node: Node<'t>) -> Rc<Scope<'t>> {
        let func = function_around(node);
        Rc::clone(
            self.by_function
                .entry(func.id())
                .or_insert_with(|| Rc::new(Scope::of(syntax, func))),
        )
    }

    /// The function `call` runs, when the file defines one of its name
    /// and the call is made without a receiver, on the object's own, or
    /// on a new object of a class the file declares
    /// (`new Helper().run(x)`).
    fn callee_of(&mut self, syntax: &'t Syntax, call: &Call<'t>) -> Option<Node<'t>> {
        // Most calls are made on another object: no need for the index.
        if call.receiver.is_some_and(|r| {
            !OWN_OBJECTS.contains(&syntax.text_of(r))
                && !matches!(r.kind(), "object_creation_expression" | "new_expression")
        }) {
            return None;
        }
        let index = self.calls.get_or_insert_with(|| CallIndex::of(syntax));
        let ours = match call.receiver {
            None => true,
            Some(r) if OWN_OBJECTS.contains(&syntax.text_of(r)) => true,
            Some(r) if matches!(r.kind(), "object_creation_expression" | "new_expression") => r
                .child_by_field_name("type")
                .or_else(|| r.child_by_field_name("constructor"))
                .is_some_and(|t| index.classes.contains(syntax.text_of(t))),
            Some(_) => false,
        };
        let name = callee_name(syntax, call.node)?;
        if !ours || index.defined.get(name) != Some(&1) {
            return None;
        }
        index.functions.get(name).copied()
    }

    /// The calls in the file of the function `func`, when the file
    /// defines one function of its name.
    fn calls_of(&mut self, syntax: &'t Syntax, func: Node<'t>) -> Vec<Node<'t>> {
        let Some(name) = function_name(syntax, func) else {
            return Vec::new();
        };
        let index = self.calls.get_or_insert_with(|| CallIndex::of(syntax));
        if index.defined.get(name) != Some(&1) {
            return Vec::new();
        }
        index.calls.get(name).cloned().unwrap_or_default()
    }
}

impl<'t> CallIndex<'t> {
    fn of(syntax: &'t Syntax) -> Self {
        let mut index = Self::default();
        walk(syntax.root(), |n, _| {
            if !n.is_named() {
                return Visit::Skip;
            }
            if FUNCTION_KINDS.contains(&n.kind())
                && let Some(name) = function_name(syntax, n)
            {
                *index.defined.entry(name).or_default() += 1;
                index.functions.insert(name, n);
            }
            if CLASS_KINDS.contains(&n.kind())
                && let Some(name) = n.child_by_field_name("name")
            {
                index.classes.insert(syntax.text_of(name));
            }
            if METHOD_CALLS.contains(&n.kind())
                && Call::receiver_of(n).is_none_or(|r| OWN_OBJECTS.contains(&syntax.text_of(r)))
                && let Some(callee) = callee_name(syntax, n)
            {
                index.calls.entry(callee).or_default().push(n);
            }
            Visit::Enter
        });
        index
    }
}

/// Node kinds that declare a class, in every grammar.
const CLASS_KINDS: &[&str] = &[
    "class_declaration",
    "class_definition",
    "class",
    "record_declaration",
    "struct_declaration",
];

/// Most calls a trace goes down into a function of the file to what it
/// returns.
const RETURN_DEPTH: usize = 3;

/// A call of a function of the file whose returned values a trace walks:
/// where the function's parameters come from.
struct Frame<'t> {
    call: Call<'t>,
    /// The function the call is made in, and the call it was reached
    /// through, if any.
    caller: Rc<Scope<'t>>,
    outer: Option<Rc<Frame<'t>>>,
    depth: usize,
}

/// The values `func` returns (not those of a function inside it).
fn returned<'t>(func: Node<'t>) -> Vec<Node<'t>> {
    let mut out = Vec::new();
    walk(func, |n, _| {
        if n != func && FUNCTION_KINDS.contains(&n.kind()) {
            return Visit::Skip;
        }
        if matches!(n.kind(), "return_statement" | "return") {
            let mut c = n.walk();
            out.extend(
                n.named_children(&mut c)
                    .filter(|v| !v.kind().ends_with("comment"))
                    .take(1),
            );
            return Visit::Skip;
        }
        Visit::Enter
    });
    out
}

/// The names of the object a method runs on, in every grammar.
const OWN_OBJECTS: &[&str] = &["this", "self", "$this", "static", "parent", "cls", "base"];

/// Most calls a trace goes up from a parameter to its callers' arguments.
const CALLER_DEPTH: usize = 2;

/// The name a call `n` calls (`show` of `self.show(x)`), read off the
/// tree.
fn callee_name<'t>(syntax: &'t Syntax, n: Node<'t>) -> Option<&'t str> {
    let field = |name: &str| n.child_by_field_name(name);
    let name = field("name").or_else(|| field("method")).or_else(|| {
        let f = field("function")?;
        if matches!(f.kind(), "identifier" | "name") {
            return Some(f);
        }
        ["property", "attribute", "field", "name"]
            .iter()
            .find_map(|k| f.child_by_field_name(k))
    })?;
    matches!(
        name.kind(),
        "identifier" | "name" | "property_identifier" | "field_identifier"
    )
    .then(|| syntax.text_of(name))
}

/// The name `func` (a function's node) is called by: its own, or the
/// variable it is assigned to (`const f = (x) => …`).
fn function_name<'t>(syntax: &'t Syntax, func: Node<'t>) -> Option<&'t str> {
    let name = func.child_by_field_name("name").or_else(|| {
        let parent = func.parent()?;
        match parent.kind() {
            "variable_declarator" => parent.child_by_field_name("name"),
            _ => None,
        }
    })?;
    matches!(
        name.kind(),
        "identifier" | "name" | "property_identifier" | "field_identifier"
    )
    .then(|| syntax.text_of(name))
}

/// The position of parameter `name` (declared by `decl`) among the
/// arguments of a call of `func`, when it takes one argument there: not a
/// rest parameter, not the object a method runs on.
fn param_position(syntax: &Syntax, func: Node<'_>, decl: Node<'_>, name: &str) -> Option<usize> {
    if is_rest(syntax, decl) {
        return None;
    }
    let mut position = 0usize;
    for p in filled_params(syntax, func)? {
        // Go declares several names at once: `func f(a, b string)`.
        let mut names = p.walk();
        let declared: Vec<_> = if syntax.grammar == Grammar::Go {
            p.children_by_field_name("name", &mut names)
                .map(|n| syntax.text_of(n))
                .collect()
        } else {
            Vec::new()
        };
        if p == decl {
            return Some(position + declared.iter().position(|d| *d == name).unwrap_or(0));
        }
        position += declared.len().max(1);
    }
    None
}

/// The parameters of `func` that a call's arguments fill, in order:
/// Python's `self` and `cls` are not passed in the parentheses.
fn filled_params<'t>(syntax: &Syntax, func: Node<'t>) -> Option<Vec<Node<'t>>> {
    let params = func
        .child_by_field_name("parameters")
        .or_else(|| func.child_by_field_name("parameter"))?;
    let mut c = params.walk();
    let filled = params
        .named_children(&mut c)
        .filter(|p| !p.kind().ends_with("comment"))
        .enumerate()
        .filter(|(i, p)| {
            !(*i == 0
                && syntax.grammar == Grammar::Python
                && ["self", "cls"].contains(&syntax.text_of(*p)))
        })
        .map(|(_, p)| p)
        .collect();
    Some(filled)
}

/// Whether parameter `decl` takes the rest of a call's arguments.
fn is_rest(syntax: &Syntax, decl: Node<'_>) -> bool {
    let text = syntax.text_of(decl).trim_start();
    text.starts_with('*')
        || text.starts_with("...")
        || text.starts_with("params ")
        || ["splat", "rest", "variadic"]
            .iter()
            .any(|k| decl.kind().contains(k))
}

/// The innermost function around `node` (the root at top level).
fn function_around(node: Node<'_>) -> Node<'_> {
    let mut func = node;
    while !FUNCTION_KINDS.contains(&func.kind()) {
        match func.parent() {
            Some(p) => func = p,
            None => break,
        }
    }
    func
}

/// The kinds of node that call a method on an object, in every grammar.
const METHOD_CALLS: &[&str] = &[
    "call",
    "call_expression",
    "invocation_expression",
    "function_call_expression",
    "method_invocation",
    "member_call_expression",
    "nullsafe_member_call_expression",
    "scoped_call_expression",
];

/// Methods that put their arguments into the object they are called on.
const ADDERS: &[&str] = &[
    "append",
    "add",
    "addAll",
    "push",
    "put",
    "putAll",
    "extend",
    "insert",
    "unshift",
    "appendChild",
    "Add",
    "AddRange",
    "Append",
    "AppendFormat",
    "AppendLine",
    "WriteString",
];

/// Calls that format their first argument (a template) with the others.
const FORMATTERS: &[&str] = &[
    "format",
    "sprintf",
    "Sprintf",
    "vsprintf",
    "formatted",
    "Format",
    "printf_format",
];

/// Node kinds that run only sometimes, or more than once.
const BRANCHES: &[&str] = &[
    "if_statement",
    "else_clause",
    "elif_clause",
    "else_if_clause",
    "else",
    "if",
    "unless",
    "if_modifier",
    "unless_modifier",
    "conditional_expression",
    "ternary_expression",
    "switch_statement",
    "switch_block",
    "switch_case",
    "switch_default",
    "case_statement",
    "default_statement",
    "expression_case",
    "default_case",
    "case",
    "when",
    "for_statement",
    "for_in_statement",
    "foreach_statement",
    "enhanced_for_statement",
    "while_statement",
    "do_statement",
    "while",
    "until",
    "for",
    "try_statement",
    "catch_clause",
    "except_clause",
    "rescue",
    "match_statement",
    "case_clause",
];

impl<'t> Scope<'t> {
    /// The assignments and parameters of `func`, a function's node (or
    /// the root).
    fn of(syntax: &'t Syntax, func: Node<'t>) -> Self {
        let mut scope = Self {
            node: func,
            assigns: Vec::new(),
            by_name: HashMap::new(),
            dead: Vec::new(),
            always: HashSet::new(),
            params: Vec::new(),
            guards: Vec::new(),
        };
        if let Some(params) = func
            .child_by_field_name("parameters")
            .or_else(|| func.child_by_field_name("parameter"))
        {
            let mut c = params.walk();
            for p in params.named_children(&mut c) {
                for name in names_in(syntax, p) {
                    scope.params.push((name, p));
                }
            }
        }
        let mut choices = Vec::new();
        walk(func, |n, _| {
            if !n.is_named() {
                return Visit::Skip;
            }
            // A function inside is a scope of its own.
            if n != func && FUNCTION_KINDS.contains(&n.kind()) {
                return Visit::Skip;
            }
            if constant::CHOICES.contains(&n.kind()) {
                choices.push(n);
                guards::of_choice(syntax, n, &mut scope.guards);
            }
            scope.read(syntax, n);
            Visit::Enter
        });
        for (i, a) in scope.assigns.iter().enumerate() {
            for name in &a.names {
                scope.by_name.entry(name.clone()).or_default().push(i);
            }
        }
        let (dead, always) = constant::arms(syntax, func, &choices, &scope.assigns, &scope.params);
        scope.dead = dead
            .iter()
            .map(|n| (n.start_byte(), n.end_byte()))
            .collect();
        // An arm that always runs, and the block an `else` wraps.
        for arm in always {
            scope.always.insert(arm.id());
            if arm.kind().starts_with("else") {
                let mut c = arm.walk();
                scope
                    .always
                    .extend(arm.named_children(&mut c).map(|b| b.id()));
            }
        }
        scope
    }

    /// Whether `n` is a value a condition around it checks, and the name
    /// it is read from is not set again in the checked arm before it.
    fn checked(&self, syntax: &Syntax, n: Node<'_>, cwe: u32) -> bool {
        let text = syntax.text_of(n);
        self.guards.iter().any(|g| {
            g.cleans(cwe)
                && g.start <= n.start_byte()
                && n.end_byte() <= g.end
                && g.value == text
                && !self.assigns.iter().any(|a| {
                    g.start <= a.node.start_byte()
                        && a.node.start_byte() < n.start_byte()
                        && a.names.contains(&g.name)
                })
        })
    }

    /// Whether `node` is in an arm that never runs.
    fn is_dead(&self, node: Node<'_>) -> bool {
        self.dead
            .iter()
            .any(|(start, end)| *start <= node.start_byte() && node.end_byte() <= *end)
    }

    /// Records `n` if it assigns.
    fn read(&mut self, syntax: &'t Syntax, n: Node<'t>) {
        // `sb.append(x)`, `list.add(x)`, `$a->push(x)`: the object takes
        // the value in. (A call on anything but a plain name is not
        // built: most calls end here.)
        if METHOD_CALLS.contains(&n.kind())
            && Call::receiver_of(n)
                .is_some_and(|r| matches!(r.kind(), "identifier" | "variable_name"))
            && let Some(call) = Call::of(n, syntax)
            && ADDERS.contains(&call.last())
            && let (Some(receiver), Some(list)) = (call.receiver, call.list)
            && matches!(receiver.kind(), "identifier" | "variable_name")
        {
            self.assigns.push(Assign {
                node: n,
                names: vec![syntax.text_of(receiver).to_string()],
                value: list,
                adds: true,
                set_by: n.end_byte(),
                key: keys::put_key(syntax, &call),
            });
            return;
        }
        let field = |name: &str| n.child_by_field_name(name);
        let (left, value, adds) = match n.kind() {
            "assignment"
            | "assignment_expression"
            | "assignment_statement"
            | "short_var_declaration"
            | "reference_assignment_expression" => {
                let adds = field("operator")
                    .is_some_and(|o| syntax.text_of(o) != "=" && syntax.text_of(o) != ":=");
                (field("left"), field("right"), adds)
            }
            "augmented_assignment"
            | "augmented_assignment_expression"
            | "operator_assignment"
            | "compound_assignment_expr" => (field("left"), field("right"), true),
            "variable_declarator" | "var_spec" | "let_declaration" | "init_declarator" => {
                let left = field("name")
                    .or_else(|| field("pattern"))
                    .or_else(|| field("declarator"));
                // C#'s declarator has no field for its value: the last part.
                let value = field("value").or_else(|| {
                    let last = last_named(n)?;
                    (Some(last) != left).then_some(last)
                });
                (left, value, false)
            }
            "for_statement" | "for_in_statement" | "range_clause" => {
                (field("left"), field("right"), true)
            }
            "enhanced_for_statement" => (field("name"), field("value"), true),
            "foreach_statement" => {
                // `foreach ($list as $k => $v)`: the list, then the names.
                let mut c = n.walk();
                let parts: Vec<_> = n
                    .named_children(&mut c)
                    .filter(|p| !p.kind().ends_with("comment"))
                    .collect();
                (parts.get(1).copied(), parts.first().copied(), true)
            }
            _ => return,
        };
        let (Some(left), Some(value)) = (left, value) else {
            return;
        };
        let names = assigned_names(syntax, left);
        if names.is_empty() {
            return;
        }
        // `a[k] = v`, `o.f = v`: a part of the value changes, the rest stays.
        let adds = adds || PART_KINDS.contains(&left.kind()) || MEMBER_KINDS.contains(&left.kind());
        let looped = n.kind().contains("for") || n.kind() == "range_clause";
        self.assigns.push(Assign {
            node: n,
            names,
            value,
            adds,
            set_by: if looped {
                value.end_byte().max(left.end_byte())
            } else {
                n.end_byte()
            },
            key: keys::assigned_key(syntax, left),
        });
    }

    /// The assignments of `name` that reach a use at byte `at`: the last
    /// one before it that always runs on the way, and every one after
    /// that (in a branch, adding to it), latest first.
    fn reaching(&self, name: &str, at: usize) -> Vec<&Assign<'t>> {
        let Some(indices) = self.by_name.get(name) else {
            return Vec::new();
        };
        let mut before: Vec<&Assign<'t>> = indices
            .iter()
            .filter_map(|&i| self.assigns.get(i))
            .filter(|a| a.set_by <= at)
            .filter(|a| !self.is_dead(a.node))
            .collect();
        before.sort_by_key(|a| std::cmp::Reverse(a.node.start_byte()));
        let mut out = Vec::new();
        for a in before {
            out.push(a);
            if !a.adds && !self.sometimes(a.node, at) {
                break;
            }
        }
        out
    }

    /// Whether `node` sits in a branch or a loop that the byte `at` is
    /// outside of: it may not run on the way there.
    fn sometimes(&self, node: Node<'t>, at: usize) -> bool {
        let mut n = node;
        while let Some(p) = n.parent() {
            if p == self.node {
                return false;
            }
            if BRANCHES.contains(&p.kind())
                && !(p.start_byte() <= at && at < p.end_byte())
                && !self.always.contains(&n.id())
            {
                return true;
            }
            n = p;
        }
        false
    }
}

/// The value `n` assigns, when it is an assignment or a declaration with
/// a value.
fn assigned_value(n: Node<'_>) -> Option<Node<'_>> {
    match n.kind() {
        "assignment"
        | "assignment_expression"
        | "assignment_statement"
        | "short_var_declaration"
        | "augmented_assignment"
        | "augmented_assignment_expression"
        | "operator_assignment"
        | "compound_assignment_expr" => n.child_by_field_name("right"),
        "variable_declarator" | "var_spec" | "let_declaration" | "init_declarator" => {
            n.child_by_field_name("value")
        }
        _ => None,
    }
}

/// The value a `return` statement gives back: a flagged line that
/// returns a response's body (`return "<p>" + name + "</p>"`).
fn returned_value(n: Node<'_>) -> Option<Node<'_>> {
    if !matches!(n.kind(), "return_statement" | "return") {
        return None;
    }
    let mut c = n.walk();
    n.named_children(&mut c)
        .find(|v| !v.kind().ends_with("comment"))
}

/// The member an assignment sets and the value it sets it to
/// (`el.innerHTML = v`: `innerHTML` and `v`), when it sets a member.
fn member_assigned<'t>(syntax: &'t Syntax, n: Node<'t>) -> Option<(&'t str, Node<'t>)> {
    if !matches!(
        n.kind(),
        "assignment" | "assignment_expression" | "augmented_assignment_expression"
    ) {
        return None;
    }
    let left = n.child_by_field_name("left")?;
    if !MEMBER_KINDS.contains(&left.kind()) {
        return None;
    }
    let member = last_named(left)?;
    Some((syntax.text_of(member), n.child_by_field_name("right")?))
}

/// The names an assignment's left side sets: a name, each name of a tuple
/// or list, the container of `a[k]` and `$a['k']`.
fn assigned_names(syntax: &Syntax, left: Node<'_>) -> Vec<String> {
    let mut node = left;
    for _ in 0..16 {
        if !PART_KINDS.contains(&node.kind()) {
            break;
        }
        match container_of(node) {
            Some(n) => node = n,
            None => return Vec::new(),
        }
    }
    match node.kind() {
        "identifier" | "variable_name" | "instance_variable" => {
            vec![syntax.text_of(node).to_string()]
        }
        "pattern_list"
        | "tuple_pattern"
        | "list_pattern"
        | "expression_list"
        | "left_assignment_list"
        | "array_pattern"
        | "object_pattern"
        | "list_literal" => names_in(syntax, node),
        _ => Vec::new(),
    }
}

/// Every name under `node` (identifiers and PHP `$names`), by a cursor.
fn names_in(syntax: &Syntax, node: Node<'_>) -> Vec<String> {
    let mut out = Vec::new();
    walk(node, |n, _| {
        if matches!(
            n.kind(),
            "identifier" | "variable_name" | "shorthand_property_identifier_pattern"
        ) {
            out.push(syntax.text_of(n).to_string());
            Visit::Skip
        } else {
            Visit::Enter
        }
    });
    out
}

/// Fields whose name is not a value read: a member's name, a callee's
/// method, a type, a key, a keyword argument's name.
const NOT_VALUES: &[&str] = &[
    "property",
    "attribute",
    "field",
    "method",
    "name",
    "type",
    "constructor",
    "key",
    "label",
];

/// Node kinds that read an element of a container.
const PART_KINDS: &[&str] = &[
    "subscript",
    "subscript_expression",
    "element_reference",
    "index_expression",
    "element_access_expression",
    "array_access",
];

/// The container of `part`, a node of [`PART_KINDS`]: `a` of `a[k]`.
fn container_of(part: Node<'_>) -> Option<Node<'_>> {
    part.child_by_field_name("value")
        .or_else(|| part.child_by_field_name("object"))
        .or_else(|| part.child_by_field_name("array"))
        .or_else(|| part.child_by_field_name("operand"))
        .or_else(|| part.child_by_field_name("expression"))
        .or_else(|| part.named_child(0))
}

/// Node kinds that read a member of an object, a class or a package.
const MEMBER_KINDS: &[&str] = &[
    "field_access",
    "member_expression",
    "attribute",
    "member_access_expression",
    "class_constant_access_expression",
    "scoped_property_access_expression",
    "scoped_identifier",
    "selector_expression",
    "qualified_identifier",
    "scope_resolution",
];

/// The source kind of `configs/sources.toml` that a framework's request
/// parameters are.
const REQUEST: &str = "an HTTP request";

/// A cast's types that make a number (or a truth value) of anything.
const NUMBER_TYPES: &[&str] = &[
    "int", "integer", "float", "double", "bool", "boolean", "long", "short", "byte", "decimal",
    "uint", "real",
];

/// Parameter annotations and types that make a parameter a request value.
const REQUEST_ANNOTATIONS: &[&str] = &[
    "@RequestParam",
    "@PathVariable",
    "@RequestBody",
    "@RequestHeader",
    "@CookieValue",
    "@ModelAttribute",
    "@QueryParam",
    "@PathParam",
    "@FormParam",
    "@HeaderParam",
    "@CookieParam",
    "[FromQuery",
    "[FromForm",
    "[FromBody",
    "[FromRoute",
    "[FromHeader",
    // A parameter of a request's type.
    "HttpServletRequest",
    "ServletRequest",
    "HttpRequest",
];

/// One trace's walk.
struct Tracer<'a, 't> {
    syntax: &'t Syntax,
    sources: &'static SourceTable,
    class: &'a table::Class,
    /// The function the value being walked is in.
    scope: Rc<Scope<'t>>,
    scopes: &'a mut Scopes<'t>,
    walked: usize,
    /// Most nodes it walks: [`BUDGET`], less when the file's
    /// [`FILE_BUDGET`] is nearly spent.
    budget: usize,
    /// What else the walk saw, for [`Taint::line_status`].
    seen: Seen,
    /// The parameters the value came from, of functions their file never
    /// passes a source to.
    ends: Vec<End>,
    /// The other files' classes a call may be followed into (the
    /// skeptic's check; none in the run's pass).
    foreign: Option<&'a foreign::Foreign<'a>>,
}

/// A parameter a sink's value comes from, of a function that no call in
/// its file passes a source to: its callers in other files decide it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct End {
    /// The function's name.
    pub(crate) function: String,
    /// The parameter's name, and its place among a call's arguments.
    pub(crate) param: String,
    pub(crate) position: usize,
    /// How many arguments a call of the function may pass: the
    /// parameters a caller fills (not `self`).
    pub(crate) arity: usize,
    /// The class the function is a method of, if any.
    pub(crate) class: Option<String>,
    /// From the parameter to the value at the sink, in order.
    pub(crate) steps: Vec<Step>,
    /// Everything else in the value is a literal or a constant: what the
    /// callers pass for the parameters decides it whole (not when the
    /// value also reads the object's state or something the walk cannot
    /// follow).
    pub(crate) whole: bool,
}

/// What a walk met besides sources.
#[derive(Debug, Default)]
struct Seen {
    /// Calls that start on these rows (first and last) are the flagged
    /// line's own statement's: their arguments are its values, not
    /// results to follow.
    line_rows: Option<(usize, usize)>,
    /// Parameters of the function the value comes from.
    params: BTreeSet<String>,
    /// It reads the object's own state (`this`, `self`, `$this`).
    state: bool,
    /// A string literal is part of it: the value is built here (a
    /// command, a query, a path spliced together), not passed through.
    strings: bool,
    /// Something it does not follow: a call of another function, a name
    /// set outside the function, a walk cut at its bound.
    opaque: bool,
    /// A call of another function is among what it walked: what such a
    /// call returns may not depend on what it was given.
    calls: bool,
    /// A value the condition around it checks ([`guards`]) was passed over.
    checked: bool,
}

/// What a trace walked counts against its file's budget.
impl Drop for Tracer<'_, '_> {
    fn drop(&mut self) {
        self.scopes.spent = self.scopes.spent.saturating_add(self.walked);
        if self.walked > self.budget {
            self.scopes.cut += 1;
        }
    }
}

impl<'a, 't> Tracer<'a, 't> {
    fn new(
        syntax: &'t Syntax,
        sources: &'static SourceTable,
        class: &'a table::Class,
        scope: Rc<Scope<'t>>,
        scopes: &'a mut Scopes<'t>,
    ) -> Self {
        let budget = scopes.budget();
        Self {
            syntax,
            sources,
            class,
            scope,
            scopes,
            walked: 0,
            budget,
            seen: Seen::default(),
            ends: Vec::new(),
            foreign: None,
        }
    }

    /// The steps from a source to `value`, when one reaches it.
    fn trace(&mut self, value: Node<'t>) -> Option<Vec<Step>> {
        self.trace_from(value, Vec::new(), 0)
    }

    /// [`Tracer::trace`] of `value`, reached from the sink by the steps
    /// `via` (latest first), `depth` calls up from the sink's function.
    /// Within the function first; then, when none of it reaches a source,
    /// from each parameter it reached to the arguments the file's own
    /// calls of the function pass it, up to [`CALLER_DEPTH`] calls up.
    /// What the callers' walks see is not the sink's function's: it does
    /// not change what [`Taint::line_status`] says of it.
    fn trace_from(
        &mut self,
        value: Node<'t>,
        first_via: Vec<Step>,
        depth: usize,
    ) -> Option<Vec<Step>> {
        let mut reached: Vec<(String, Vec<Step>)> = Vec::new();
        let found = self.trace_within(value, first_via, &mut reached);
        if found.is_some() || reached.is_empty() || depth >= CALLER_DEPTH {
            return found;
        }
        let own = Rc::clone(&self.scope);
        let seen = std::mem::take(&mut self.seen);
        let mut found = None;
        'params: for (name, via) in reached {
            let Some((_, decl)) = own.params.iter().find(|(p, _)| *p == name) else {
                continue;
            };
            let Some(position) = param_position(self.syntax, own.node, *decl, &name) else {
                continue;
            };
            let sites = self.scopes.calls_of(self.syntax, own.node);
            if sites.is_empty() {
                self.end_at(own.node, &name, *decl, position, &via);
                continue;
            }
            for site in sites {
                if self.walked > self.budget {
                    break 'params;
                }
                let Some(call) = Call::of(site, self.syntax) else {
                    continue;
                };
                let Some(arg) = call.argument_for(&name, Some(position)) else {
                    continue;
                };
                self.scope = self.scopes.around(self.syntax, site);
                let mut via = via.clone();
                via.push(Step {
                    line: line_of(site),
                    what: format!("is passed as `{name}` to `{}`", shown(&call.dotted)),
                });
                if let Some(steps) = self.trace_from(arg, via, depth + 1) {
                    found = Some(steps);
                    break 'params;
                }
            }
        }
        self.scope = own;
        self.seen = seen;
        found
    }

    /// Notes that the value came from parameter `name` (declared by
    /// `decl`, at `position`) of `func`, which its file never calls.
    fn end_at(
        &mut self,
        func: Node<'t>,
        name: &str,
        decl: Node<'t>,
        position: usize,
        via: &[Step],
    ) {
        let Some(function) = function_name(self.syntax, func) else {
            return;
        };
        let mut steps = vec![Step {
            line: line_of(decl),
            what: format!("is `{name}`, a parameter of `{function}`"),
        }];
        steps.extend(via.iter().rev().cloned());
        self.ends.push(End {
            function: function.to_string(),
            param: name.to_string(),
            position,
            arity: across::arity(self.syntax, func),
            class: across::class_of(self.syntax, func).map(str::to_string),
            steps,
            whole: true,
        });
    }

    /// [`Tracer::trace_from`] within one function: the parameters the
    /// value comes from (with the steps to each) are pushed onto
    /// `reached`.
    fn trace_within(
        &mut self,
        value: Node<'t>,
        first_via: Vec<Step>,
        reached: &mut Vec<(String, Vec<Step>)>,
    ) -> Option<Vec<Step>> {
        // Each value to walk, with the steps that lead from it to the sink,
        // the function it is in and the call of that function whose
        // returned value it is (none for the sink's own function).
        type Item<'t> = (Node<'t>, Vec<Step>, Rc<Scope<'t>>, Option<Rc<Frame<'t>>>);
        let own = Rc::clone(&self.scope);
        let mut queue: Vec<Item<'t>> = vec![(value, first_via, Rc::clone(&own), None)];
        let mut followed: HashSet<(usize, usize, Option<String>)> = HashSet::new();
        let mut params_seen: BTreeSet<String> = BTreeSet::new();
        let mut next = 0;
        let mut found = None;
        while next < queue.len() {
            if next >= MOST_STEPS || self.walked > self.budget {
                self.seen.opaque = true;
                break;
            }
            let (node, via, scope, frame) = queue[next].clone();
            next += 1;
            self.scope = scope;
            let frame_id = frame.as_ref().map_or(0, |f| Rc::as_ptr(f) as usize);
            let mut uses = Vec::new();
            let mut helpers = Vec::new();
            let depth = frame.as_ref().map_or(0, |f| f.depth);
            if let Some(source) = self.walk(node, &mut uses, &mut helpers, depth) {
                let mut steps = vec![source];
                steps.extend(via.into_iter().rev());
                found = Some(steps);
                break;
            }
            // A call of a function of the file: what it returns.
            for (call, func) in helpers {
                let values = returned(func);
                // A function that returns nothing here (an expression
                // body, Ruby's last value) is not followed.
                if values.is_empty() {
                    self.seen.opaque = true;
                    self.seen.calls = true;
                    continue;
                }
                let what = format!("is returned by `{}`", shown(&call.dotted));
                let callee = Rc::new(Frame {
                    call,
                    caller: Rc::clone(&self.scope),
                    outer: frame.clone(),
                    depth: depth + 1,
                });
                for value in values {
                    let mut via = via.clone();
                    via.push(Step {
                        line: line_of(value),
                        what: what.clone(),
                    });
                    let scope = self.scopes.around(self.syntax, value);
                    queue.push((value, via, scope, Some(Rc::clone(&callee))));
                }
            }
            for (name, at, key) in uses {
                let reaching = self.scope.reaching(&name, at);
                if reaching.is_empty()
                    && let Some(f) = &frame
                    && let Some((_, decl)) = self.scope.params.iter().find(|(p, _)| *p == name)
                {
                    // A parameter of a function whose returned value this
                    // is: the call's argument for it.
                    let position = param_position(self.syntax, self.scope.node, *decl, &name);
                    match f.call.argument_for(&name, position) {
                        Some(arg) => {
                            let mut via = via.clone();
                            via.push(Step {
                                line: line_of(f.call.node),
                                what: format!(
                                    "is passed as `{name}` to `{}`",
                                    shown(&f.call.dotted)
                                ),
                            });
                            queue.push((arg, via, Rc::clone(&f.caller), f.outer.clone()));
                        }
                        None => self.seen.opaque = true,
                    }
                    continue;
                }
                if reaching.is_empty() {
                    if frame.is_none()
                        && params_seen.insert(name.clone())
                        && let Some(step) = self.param_source(&name)
                    {
                        let mut steps = vec![step];
                        steps.extend(via.into_iter().rev());
                        return Some(steps);
                    }
                    // A PHP `$NAME` is a variable, whatever its case (`$_SESSION`).
                    let constant = !name.starts_with('$') && sources::is_constant(&name);
                    if frame.is_none() && self.scope.params.iter().any(|(p, _)| *p == name) {
                        if !reached.iter().any(|(r, _)| *r == name) {
                            reached.push((name.clone(), via.clone()));
                        }
                        self.seen.params.insert(name);
                    } else if constant
                        || ((file_constant(self.syntax, &name) || go_package(self.syntax, &name))
                            && !bound_in_a_function(self.syntax, &name))
                    {
                        // A constant adds nothing from outside.
                    } else if matches!(self.syntax.grammar, Grammar::Java | Grammar::CSharp) {
                        // A bare name that is neither local nor a parameter
                        // is a class (`Runtime`, capitalized) or a field of
                        // the object.
                        if !name.starts_with(char::is_uppercase) {
                            self.seen.state = true;
                        }
                    } else {
                        self.seen.opaque = true;
                    }
                    continue;
                }
                for a in reaching {
                    // A read under a literal key sees what was put under
                    // it, or under a key that may be it.
                    if !keys::reaches(a.key.as_deref(), key.as_deref())
                        || !followed.insert((a.node.id(), frame_id, key.clone()))
                    {
                        continue;
                    }
                    let values = key
                        .as_deref()
                        .filter(|_| !a.adds)
                        .and_then(|k| keys::keyed_values(self.syntax, a.value, k))
                        .unwrap_or_else(|| vec![a.value]);
                    for value in values {
                        let mut via = via.clone();
                        via.push(Step {
                            line: line_of(a.node),
                            what: format!("`{name}` is set from it"),
                        });
                        queue.push((value, via, Rc::clone(&self.scope), frame.clone()));
                    }
                }
            }
        }
        self.scope = own;
        found
    }

    /// Walks `value`: the source in it, if any; else the names it reads
    /// (with where) pushed onto `uses`.
    /// A call of a function of the file (up to [`RETURN_DEPTH`] calls
    /// down) is not entered: it is pushed onto `helpers`, for what the
    /// function returns to be walked.
    fn walk(
        &mut self,
        value: Node<'t>,
        uses: &mut Vec<(String, usize, Option<String>)>,
        helpers: &mut Vec<(Call<'t>, Node<'t>)>,
        depth: usize,
    ) -> Option<Step> {
        let mut found = None;
        // A source's text is a part of the value's own: where the value
        // holds none, no part of it is one.
        let may_hold_source = !self.class.source_calls.is_empty()
            || self.sources.any_source(self.syntax.text_of(value));
        // The arguments of calls into other files' methods that return
        // them: walked after the value.
        let mut passed: Vec<Node<'t>> = Vec::new();
        walk(value, |n, field| {
            self.walked += 1;
            if self.walked > self.budget {
                return Visit::Stop;
            }
            if !n.is_named() {
                return Visit::Skip;
            }
            // The arm of a conditional expression that never runs.
            if !self.scope.dead.is_empty() && self.scope.is_dead(n) {
                return Visit::Skip;
            }
            let call = Call::of(n, self.syntax);
            if self.cleans(n, call.as_ref()) {
                return Visit::Skip;
            }
            if !self.scope.guards.is_empty() && self.scope.checked(self.syntax, n, self.class.cwe) {
                self.seen.checked = true;
                return Visit::Skip;
            }
            if may_hold_source && let Some(step) = self.source_at(n) {
                found = Some(step);
                return Visit::Stop;
            }
            if n.is_named() && n.kind().contains("string") {
                self.seen.strings = true;
            }
            // `java.nio.file.Paths`, `org.example.Utils`: a class named
            // with its package is no value.
            if self.syntax.grammar == Grammar::Java
                && qualified_class(self.syntax.text_of(n))
                && MEMBER_KINDS.contains(&n.kind())
            {
                return Visit::Skip;
            }
            // `Ctx.user`: a field of a class that is not named as a
            // constant may be set anywhere.
            if matches!(self.syntax.grammar, Grammar::Java | Grammar::CSharp)
                && MEMBER_KINDS.contains(&n.kind())
                && let (Some(object), Some(member)) = (n.named_child(0), last_named(n))
                && object != member
                && self
                    .syntax
                    .text_of(object)
                    .rsplit('.')
                    .next()
                    .is_some_and(|c| c.starts_with(char::is_uppercase))
                && !sources::is_constant(self.syntax.text_of(member))
                && !qualified_class(self.syntax.text_of(n))
            {
                self.seen.state = true;
                return Visit::Skip;
            }
            // `Utils.DIR`, `org.example.Config.BASE`, `static::SPEC`: a
            // member named as a constant is one, whatever it is read from.
            if MEMBER_KINDS.contains(&n.kind())
                && last_named(n).is_some_and(|m| {
                    sources::is_constant(self.syntax.text_of(m).trim_start_matches('$'))
                })
            {
                return Visit::Skip;
            }
            let own_object = matches!(n.kind(), "this" | "self")
                || (matches!(n.kind(), "identifier" | "variable_name")
                    && ["$this", "self"].contains(&self.syntax.text_of(n)));
            if own_object {
                self.seen.state = true;
                return Visit::Skip;
            }
            if let Some(call) = call {
                let own = self
                    .seen
                    .line_rows
                    .is_some_and(|(first, last)| (first..=last).contains(&n.start_position().row));
                let pure = self.sources.is_pure(call.last())
                    && !foreign::static_of_unknown_class(self.syntax, &call.dotted);
                if !own && !pure {
                    if depth < RETURN_DEPTH
                        && let Some(func) = self.scopes.callee_of(self.syntax, &call)
                    {
                        helpers.push((call, func));
                        return Visit::Skip;
                    }
                    let returns = self
                        .foreign
                        .and_then(|f| f.returns(self.syntax, &call, self.sources, self.class));
                    match returns {
                        Some(foreign::Returns::Constant) => return Visit::Skip,
                        Some(foreign::Returns::Params(places)) => {
                            passed.extend(places.iter().filter_map(|p| call.args.get(*p)));
                            return Visit::Skip;
                        }
                        Some(foreign::Returns::Source(step)) => {
                            found = Some(foreign::step_of(&call, &step));
                            return Visit::Stop;
                        }
                        Some(foreign::Returns::Unknown) | None => {}
                    }
                    self.seen.opaque = true;
                    self.seen.calls = true;
                }
            }
            if matches!(
                n.kind(),
                "identifier" | "variable_name" | "instance_variable"
            ) {
                let callee = n
                    .parent()
                    .and_then(|p| p.child_by_field_name("function"))
                    .is_some_and(|f| f == n);
                if !callee && !field.is_some_and(|f| NOT_VALUES.contains(&f)) {
                    uses.push((
                        self.syntax.text_of(n).to_string(),
                        n.start_byte(),
                        keys::read_key(self.syntax, n),
                    ));
                }
                return Visit::Skip;
            }
            if FUNCTION_KINDS.contains(&n.kind()) && n != value {
                return Visit::Skip;
            }
            Visit::Enter
        });
        for arg in passed {
            if found.is_some() {
                break;
            }
            found = self.walk(arg, uses, helpers, depth);
        }
        found
    }

    /// Whether `n` makes a value safe for the class: a sanitizer's call or
    /// a cast to a number.
    fn cleans(&self, n: Node<'t>, call: Option<&Call<'t>>) -> bool {
        if n.kind() == "cast_expression" && self.class.numbers_clean {
            let ty = n
                .child_by_field_name("type")
                .map(|t| self.syntax.text_of(t))
                .unwrap_or_default()
                .trim_matches(|c: char| c == '(' || c == ')' || c.is_whitespace())
                .to_lowercase();
            return NUMBER_TYPES.contains(&ty.as_str());
        }
        call.is_some_and(|c| self.class.sanitizers.contains(c.last()))
    }

    /// The source `n` is, when it is one: its text matches a source of a
    /// kind the class accepts and no part of it does on its own.
    fn source_at(&self, n: Node<'t>) -> Option<Step> {
        if !n.is_named() || n.byte_range().len() > 2_000 {
            return None;
        }
        // A call that is the class's source itself.
        if let Some(kind) = self.class.sources.first()
            && !self.class.source_calls.is_empty()
            && let Some(call) = Call::of(n, self.syntax)
            && table::names_call(&self.class.source_calls, &call.dotted)
        {
            return Some(Step {
                line: line_of(n),
                what: format!("{kind}: `{}`", shown(self.syntax.text_of(n))),
            });
        }
        let kind = self.source_kind(n)?;
        let mut c = n.walk();
        if n.named_children(&mut c)
            .any(|part| self.source_kind(part).is_some())
        {
            return None;
        }
        Some(Step {
            line: line_of(n),
            what: format!("{kind}: `{}`", shown(self.syntax.text_of(n))),
        })
    }

    fn source_kind(&self, n: Node<'t>) -> Option<&'static str> {
        let kind = self.sources.source_in(self.syntax.text_of(n))?;
        self.class.sources.iter().any(|s| s == kind).then_some(kind)
    }

    /// A parameter that its framework fills from the request.
    fn param_source(&self, name: &str) -> Option<Step> {
        if !self.class.sources.iter().any(|s| s == REQUEST) {
            return None;
        }
        let (_, decl) = self.scope.params.iter().find(|(n, _)| n == name)?;
        let text = self.syntax.text_of(*decl);
        if REQUEST_ANNOTATIONS.iter().any(|a| text.contains(a)) {
            return Some(Step {
                line: line_of(*decl),
                what: format!("a request parameter: `{}`", shown(text)),
            });
        }
        // A Flask route's `<name>` or `<type:name>`.
        let decorated = self
            .scope
            .node
            .parent()
            .filter(|p| p.kind() == "decorated_definition")?;
        let mut c = decorated.walk();
        let route = decorated.named_children(&mut c).find(|d| {
            let t = self.syntax.text_of(*d);
            d.kind() == "decorator"
                && t.contains("route")
                && (t.contains(&format!("<{name}>")) || t.contains(&format!(":{name}>")))
        })?;
        Some(Step {
            line: line_of(route),
            what: format!("a route parameter: `{name}`"),
        })
    }
}

/// Whether the file declares `name` at its top level as a constant of
/// literals: Go's `const name = "…"`, JavaScript's and TypeScript's
/// `const name = "…"` (never set again: the language forbids it).
fn file_constant(syntax: &Syntax, name: &str) -> bool {
    let literal = |value: Node<'_>| {
        // An object or a list made `const` can still be changed.
        if matches!(value.kind(), "object" | "array") {
            return false;
        }
        let mut only = true;
        walk(value, |n, _| {
            if matches!(
                n.kind(),
                "identifier" | "call_expression" | "member_expression" | "selector_expression"
            ) || n.kind().contains("template_substitution")
            {
                only = false;
                return Visit::Stop;
            }
            Visit::Enter
        });
        only
    };
    let root = syntax.root();
    let mut c = root.walk();
    root.named_children(&mut c).any(|top| {
        let specs: Vec<Node<'_>> = match (syntax.grammar, top.kind()) {
            (Grammar::Go, "const_declaration") => {
                let mut d = top.walk();
                top.named_children(&mut d)
                    .filter(|n| n.kind() == "const_spec")
                    .collect()
            }
            (Grammar::JavaScript | Grammar::TypeScript | Grammar::Tsx, "lexical_declaration")
                if top.child(0).is_some_and(|k| k.kind() == "const") =>
            {
                let mut d = top.walk();
                top.named_children(&mut d)
                    .filter(|n| n.kind() == "variable_declarator")
                    .collect()
            }
            _ => Vec::new(),
        };
        specs.into_iter().any(|spec| {
            let named = {
                let mut d = spec.walk();
                spec.children_by_field_name("name", &mut d)
                    .any(|n| syntax.text_of(n) == name)
            };
            named && spec.child_by_field_name("value").is_some_and(literal)
        })
    })
}

/// Whether a function of the file binds `name` itself (a parameter, a
/// local declared or assigned): a closure that reads it may read that
/// one, not the file's constant or package of the name.
fn bound_in_a_function(syntax: &Syntax, name: &str) -> bool {
    let mut bound = false;
    walk(syntax.root(), |n, _| {
        if bound {
            return Visit::Stop;
        }
        let inside = {
            let mut up = n.parent();
            let mut found = false;
            while let Some(p) = up {
                if FUNCTION_KINDS.contains(&p.kind()) {
                    found = true;
                    break;
                }
                up = p.parent();
            }
            found
        };
        let names: Vec<Node<'_>> = match n.kind() {
            "short_var_declaration"
            | "assignment_statement"
            | "assignment_expression"
            | "range_clause"
            | "for_in_statement" => n.child_by_field_name("left").into_iter().collect(),
            "variable_declarator"
            | "var_spec"
            | "const_spec"
            | "parameter_declaration"
            | "required_parameter"
            | "optional_parameter"
                if inside =>
            {
                let mut c = n.walk();
                n.children_by_field_name("name", &mut c)
                    .chain(n.child_by_field_name("pattern"))
                    .collect()
            }
            "formal_parameters" | "parameters" | "catch_clause" => vec![n],
            "arrow_function" => n.child_by_field_name("parameter").into_iter().collect(),
            _ => Vec::new(),
        };
        for part in names {
            walk(part, |id, _| {
                if matches!(
                    id.kind(),
                    "identifier" | "shorthand_property_identifier_pattern"
                ) && syntax.text_of(id) == name
                {
                    bound = true;
                    return Visit::Stop;
                }
                Visit::Enter
            });
        }
        Visit::Enter
    });
    bound
}

/// Whether `name` is a package a Go file imports (`fmt` of
/// `fmt.Sprintf`): a package is no value, what its functions return is
/// the call's.
fn go_package(syntax: &Syntax, name: &str) -> bool {
    if syntax.grammar != Grammar::Go {
        return false;
    }
    let mut found = false;
    let root = syntax.root();
    let mut c = root.walk();
    for top in root.named_children(&mut c) {
        if top.kind() != "import_declaration" {
            continue;
        }
        walk(top, |n, _| {
            if n.kind() != "import_spec" {
                return Visit::Enter;
            }
            let given = match n.child_by_field_name("name") {
                Some(alias) => syntax.text_of(alias).to_string(),
                None => n
                    .child_by_field_name("path")
                    .map(|p| {
                        syntax
                            .text_of(p)
                            .trim_matches('"')
                            .rsplit('/')
                            .next()
                            .unwrap_or("")
                            .to_string()
                    })
                    .unwrap_or_default(),
            };
            if given == name {
                found = true;
                return Visit::Stop;
            }
            Visit::Skip
        });
    }
    found
}

/// Whether `text` names a Java class with its package: two or more
/// lower-case names joined by dots, then one that starts with a capital
/// (`java.nio.file.Paths`; not `config.URL`).
fn qualified_class(text: &str) -> bool {
    let mut parts: Vec<&str> = text.split('.').map(str::trim).collect();
    let Some(last) = parts.pop() else {
        return false;
    };
    let word = |p: &str| {
        !p.is_empty()
            && p.chars().all(|c| c.is_alphanumeric() || c == '_')
            && !p.starts_with(|c: char| c.is_ascii_digit())
    };
    const ROOTS: &[&str] = &[
        "java", "javax", "jakarta", "org", "com", "net", "io", "sun", "android", "edu", "gov",
    ];
    parts.len() >= 2
        && ROOTS.contains(&parts[0])
        && word(last)
        && last.starts_with(char::is_uppercase)
        && parts
            .iter()
            .all(|p| word(p) && p.starts_with(|c: char| c.is_lowercase()))
        && !OWN_OBJECTS.contains(&parts[0])
}

/// `text` on one line, at most 80 characters.
fn shown(text: &str) -> String {
    let one: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if one.chars().count() > 80 {
        let cut: String = one.chars().take(77).collect();
        format!("{cut}...")
    } else {
        one
    }
}
