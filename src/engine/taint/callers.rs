//! A flagged value that comes from a parameter, followed to the callers
//! the `references` tool lists, as an agent follows it: the engine's
//! skeptic asks for the function's references, reads the files they are
//! in, and judges what each call passes, up to [`DEPTH`] calls up.
//!
//! - A call whose argument a source reaches (unchecked for the sink's
//!   kind): confirmed, with the trace across the files.
//! - Every call of the function passes a literal, a constant, or a value
//!   checked or cleaned for the sink's kind: refuted.
//! - Anything else (a use that is not a call, a list cut at its limit, a
//!   file that is not read, a value the walk cannot follow, no call at
//!   all): uncertain, with the reason.
//!
//! It knows only what the tools answered: the references listed and the
//! files read ([`Files`]).

use std::collections::BTreeSet;

use super::across::{CrossFlow, Open};
use super::{Call, End, Scopes, Step, Taint, Tracer, Visit, callee_name, on_tree, shown, walk};
use crate::engine::sources::Files;
use crate::engine::syntax::Trees;

/// Most calls up from the sink's function a value is followed.
const DEPTH: usize = 3;

/// Most functions one finding's callers are followed through.
const MOST_FUNCTIONS: usize = 12;

/// The `references` answer for one name, as the skeptic read it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Listed {
    /// Each line listed from the syntax trees: path and line.
    pub(crate) sites: Vec<(String, u32)>,
    /// Every reference is listed: none cut at the answer's limit, and no
    /// file searched by text names it.
    pub(crate) complete: bool,
    /// The files that define the name, when the answer names them all.
    pub(crate) defined: Option<Vec<String>>,
}

impl Listed {
    /// Whether a call of the name in `site` runs the definition in
    /// `own`: the name is defined in that file only, or `own` is the
    /// definition nearest the call (most directories in common, as a Go
    /// package, a Java package or a Python module's siblings are), and
    /// no other is as near. `None`: it cannot tell.
    fn runs(&self, site: &str, own: &str) -> Option<bool> {
        let defined = self.defined.as_ref()?;
        let mut files: Vec<&str> = defined.iter().map(String::as_str).collect();
        files.sort_unstable();
        files.dedup();
        if files == [own] {
            return Some(true);
        }
        let near = |def: &str| {
            site.split('/')
                .zip(def.split('/'))
                .take_while(|(a, b)| a == b)
                .count()
        };
        let best = files.iter().map(|d| near(d)).max()?;
        let nearest: Vec<&&str> = files.iter().filter(|d| near(d) == best).collect();
        match nearest.as_slice() {
            [one] => Some(**one == own),
            _ if !files.contains(&own) || near(own) < best => Some(false),
            _ => None,
        }
    }
}

/// What following the callers found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// The value has no parameter to follow: the check's own verdict
    /// stands.
    Nothing,
    /// A source reaches the value through a call: the flow, each step with
    /// its file, from the source to the sink.
    Confirmed(CrossFlow),
    /// Every call passes a clean value: the calls.
    Refuted(Vec<(String, u32)>),
    /// Why it cannot tell.
    Uncertain(String),
}

/// What the skeptic should ask next, and what it can say now.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Followed {
    /// Names whose references were not asked for yet.
    pub(crate) names: BTreeSet<String>,
    /// Files listed that are not read yet.
    pub(crate) files: BTreeSet<String>,
    /// The verdict on what is known; what is still wanted counts as
    /// unknown.
    pub(crate) outcome: Outcome,
}

/// What one call of an open end's function passes it.
enum Passed {
    Source(Vec<Step>),
    Clean,
    /// The caller's own parameters, which its file never passes a source.
    Param(Vec<End>),
    Unknown(String),
}

/// One end to follow: the function and parameter, the steps from it to
/// the sink (each with its file), and how many calls up it is.
struct Pending {
    end: End,
    path: String,
    sink: String,
    tail: Vec<(String, Step)>,
    depth: usize,
}

/// Follows the value at `line` of `path` (flagged by `rule`) to its
/// callers: `listed` gives the `references` answers the skeptic has,
/// `files` the files it read.
pub(crate) fn follow(
    trees: &Trees,
    files: &Files,
    path: &str,
    line: u32,
    rule: Option<&str>,
    listed: &dyn Fn(&str) -> Option<Listed>,
) -> Followed {
    let mut out = Followed {
        names: BTreeSet::new(),
        files: BTreeSet::new(),
        outcome: Outcome::Nothing,
    };
    let opens = on_tree(trees, path, files, |taint, syntax| {
        let mut scopes = Scopes::default();
        let mut opens: Vec<Open> = Vec::new();
        taint.sinks_in(path, syntax, &mut scopes, &mut opens);
        opens.retain(|o| {
            o.line == line && rule.is_none_or(|r| taint.table.sink(r).is_none() || o.sink == r)
        });
        opens
    })
    .unwrap_or_default();
    let mut queue: Vec<Pending> = opens
        .into_iter()
        .map(|o| Pending {
            tail: o
                .end
                .steps
                .iter()
                .chain(std::iter::once(&o.last))
                .map(|s| (path.to_string(), s.clone()))
                .collect(),
            end: o.end,
            path: path.to_string(),
            sink: o.sink,
            depth: 1,
        })
        .collect();
    if queue.is_empty() {
        return out;
    }
    let mut unknown: Vec<String> = Vec::new();
    // A value that is not its parameters' alone is never refuted by what
    // the callers pass (it may still be confirmed by it).
    if let Some(p) = queue.iter().find(|p| !p.end.whole) {
        unknown.push(format!(
            "the value at line {line} also holds what `{}` reads besides its parameters",
            p.end.function
        ));
    }
    let mut clean: Vec<(String, u32)> = Vec::new();
    let mut followed = 0usize;
    while let Some(p) = queue.pop() {
        followed += 1;
        if followed > MOST_FUNCTIONS {
            unknown.push(format!("more than {MOST_FUNCTIONS} functions lead to it"));
            break;
        }
        let function = p.end.function.clone();
        let Some(listed) = listed(&function) else {
            out.names.insert(function.clone());
            unknown.push(format!("the references to `{function}` are not known"));
            continue;
        };
        if !listed.complete {
            unknown.push(format!(
                "not every reference to `{function}` was listed from the syntax trees"
            ));
        }
        let mut calls = 0usize;
        for (site_path, site_line) in &listed.sites {
            // The function's own file: its calls were followed by the
            // file's own trace, which found none.
            if *site_path == p.path {
                continue;
            }
            match listed.runs(site_path, &p.path) {
                Some(true) => {}
                // Another function of the same name.
                Some(false) => continue,
                None => {
                    unknown.push(format!(
                        "`{function}` is defined in more than one file, and which one {site_path}:{site_line} calls is not known"
                    ));
                    continue;
                }
            }
            if !files.contains_key(site_path) {
                out.files.insert(site_path.clone());
                unknown.push(format!("{site_path} is not read"));
                continue;
            }
            let passed = on_tree(trees, site_path, files, |taint, syntax| {
                passed_at(taint, syntax, *site_line, &p.end, &p.sink)
            });
            let Some(passed) = passed.filter(|p| !p.is_empty()) else {
                unknown.push(format!(
                    "{site_path}:{site_line} uses `{function}` other than by a call the engine reads"
                ));
                continue;
            };
            for (call_line, what) in passed {
                calls += 1;
                let call_step = (
                    site_path.clone(),
                    Step {
                        line: call_line,
                        what: format!(
                            "is passed as `{}` to `{function}`, defined in {}",
                            p.end.param, p.path
                        ),
                    },
                );
                match what {
                    Passed::Source(steps) => {
                        let mut trace: Vec<(String, Step)> =
                            steps.into_iter().map(|s| (site_path.clone(), s)).collect();
                        trace.push(call_step);
                        trace.extend(p.tail.iter().cloned());
                        out.outcome = Outcome::Confirmed(CrossFlow {
                            path: path.to_string(),
                            line,
                            sink: p.sink.clone(),
                            steps: trace,
                        });
                        return out;
                    }
                    Passed::Clean => clean.push((site_path.clone(), call_line)),
                    Passed::Param(ends) if p.depth < DEPTH => {
                        for end in ends {
                            let mut tail: Vec<(String, Step)> = end
                                .steps
                                .iter()
                                .map(|s| (site_path.clone(), s.clone()))
                                .collect();
                            tail.push(call_step.clone());
                            tail.extend(p.tail.iter().cloned());
                            queue.push(Pending {
                                end,
                                path: site_path.clone(),
                                sink: p.sink.clone(),
                                tail,
                                depth: p.depth + 1,
                            });
                        }
                    }
                    Passed::Param(_) => unknown.push(format!(
                        "{site_path}:{call_line} passes a parameter of its own function, {DEPTH} calls up from the sink"
                    )),
                    Passed::Unknown(why) => unknown.push(format!("{site_path}:{call_line} {why}")),
                }
            }
        }
        if calls == 0
            && listed
                .sites
                .iter()
                .all(|(s, _)| *s == p.path || files.contains_key(s))
        {
            unknown.push(format!(
                "no call of `{function}` in the other files of the scan"
            ));
        }
    }
    out.outcome = match unknown.first() {
        None if !clean.is_empty() => Outcome::Refuted(clean),
        None => Outcome::Nothing,
        Some(_) => {
            let mut reasons: Vec<String> = Vec::new();
            for u in unknown {
                if !reasons.contains(&u) {
                    reasons.push(u);
                }
            }
            let more = reasons.len().saturating_sub(3);
            reasons.truncate(3);
            let mut why = reasons.join("; ");
            if more > 0 {
                why.push_str(&format!("; and {more} more"));
            }
            Outcome::Uncertain(why)
        }
    };
    out
}

/// What each call of `end`'s function on `line` passes for its
/// parameter, by the call's line.
fn passed_at(
    taint: &Taint,
    syntax: &crate::engine::syntax::Syntax,
    line: u32,
    end: &End,
    sink: &str,
) -> Vec<(u32, Passed)> {
    let Some(row) = line.checked_sub(1).map(|r| r as usize) else {
        return Vec::new();
    };
    let Some(sink) = taint.table.sink(sink) else {
        return Vec::new();
    };
    let class = taint.table.class_of(sink);
    let mut calls = Vec::new();
    walk(syntax.root(), |n, _| {
        let (start, last) = (n.start_position().row, n.end_position().row);
        if last < row || start > row || !n.is_named() {
            return Visit::Skip;
        }
        if callee_name(syntax, n) == Some(end.function.as_str())
            && let Some(call) = Call::of(n, syntax)
        {
            calls.push(call);
        }
        Visit::Enter
    });
    let mut scopes = Scopes::default();
    let mut out = Vec::new();
    for call in calls {
        let at = super::line_of(call.node);
        let given = call.args.len() + call.keywords.len();
        if given > end.arity {
            out.push((
                at,
                Passed::Unknown(format!(
                    "passes more arguments than `{}` takes: another function of that name",
                    shown(&call.dotted)
                )),
            ));
            continue;
        }
        let Some(arg) = call.argument_for(&end.param, Some(end.position)) else {
            out.push((
                at,
                Passed::Unknown(format!("passes no argument for `{}`", end.param)),
            ));
            continue;
        };
        let scope = closure_owner(syntax, &mut scopes, call.node, arg);
        if scope.is_dead(call.node) {
            out.push((at, Passed::Clean));
            continue;
        }
        let mut tracer = Tracer::new(syntax, taint.sources, class, scope, &mut scopes);
        if let Some(steps) = tracer.trace(arg) {
            out.push((at, Passed::Source(steps)));
            continue;
        }
        let seen = std::mem::take(&mut tracer.seen);
        let ends = std::mem::take(&mut tracer.ends);
        drop(tracer);
        let passed = if seen.opaque {
            Passed::Unknown("passes a value the engine cannot follow".into())
        } else if seen.state {
            Passed::Unknown("passes a value of its object's own state".into())
        } else if seen.params.is_empty() {
            Passed::Clean
        } else if ends.iter().all(|e| e.whole)
            && seen
                .params
                .iter()
                .all(|p| ends.iter().any(|e| e.param == *p))
        {
            Passed::Param(ends)
        } else {
            Passed::Unknown(
                "passes a parameter of a function its own file calls with values the engine does not follow".into(),
            )
        };
        out.push((at, passed));
    }
    out
}

/// The scope a call's argument is read in: the function around the call,
/// or, when that is a function without a name (a callback, `new
/// Promise((resolve, reject) => …)`, a lambda) that neither takes nor sets
/// a name the argument reads, the function it is written in, and so on
/// out to a named function: the callback reads that function's variables.
fn closure_owner<'t>(
    syntax: &'t crate::engine::syntax::Syntax,
    scopes: &mut Scopes<'t>,
    call: tree_sitter::Node<'t>,
    arg: tree_sitter::Node<'t>,
) -> std::rc::Rc<super::Scope<'t>> {
    let names = super::names_in(syntax, arg);
    let mut scope = scopes.around(syntax, call);
    for _ in 0..8 {
        let func = scope.node;
        let own =
            |n: &String| scope.params.iter().any(|(p, _)| p == n) || scope.by_name.contains_key(n);
        if super::function_name(syntax, func).is_some() || names.iter().any(own) {
            break;
        }
        let Some(parent) = func.parent() else {
            break;
        };
        let outer = scopes.around(syntax, parent);
        // The file's top level is no function: its names are not the
        // callback's to read here.
        if outer.node.parent().is_none() {
            break;
        }
        scope = outer;
    }
    scope
}

/// Reads a `references` answer ([`crate::tools::navigate`]'s text): its
/// `path:line: text    [kind ...]` lines, whether all of them are listed,
/// and whether a file searched by text names the symbol.
pub(crate) fn read_references(answer: &str) -> Listed {
    let mut sites = Vec::new();
    let mut header: Option<usize> = None;
    let mut by_text = false;
    let mut defined = None;
    for (i, line) in answer.lines().enumerate() {
        if i == 0 {
            header = if line.starts_with("no references to ") {
                Some(0)
            } else {
                line.split_once(' ').and_then(|(n, rest)| {
                    (rest.starts_with("reference") && !rest.contains("narrow with path"))
                        .then(|| n.parse().ok())
                        .flatten()
                })
            };
            continue;
        }
        if let Some(at) = line.strip_prefix("defined at: ") {
            // Each `path:line`; cut short with ", and N more".
            defined = (!at.contains(", and ")).then(|| {
                at.split(", ")
                    .filter_map(|d| d.rsplit_once(':').map(|(p, _)| p.to_string()))
                    .collect()
            });
            continue;
        }
        if line.starts_with("Text matches of ") {
            by_text = true;
            break;
        }
        let Some((path, rest)) = line.split_once(':') else {
            continue;
        };
        let Some((number, _)) = rest.split_once(':') else {
            continue;
        };
        if let Ok(number) = number.parse::<u32>()
            && line.trim_end().ends_with(']')
        {
            sites.push((path.to_string(), number));
        }
    }
    let complete = !by_text && header == Some(sites.len());
    Listed {
        sites,
        complete,
        defined,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::syntax::Limits;

    /// The Java twins of a sink two calls from its source: a servlet, a
    /// service, a data layer; `check` is what the servlet does first.
    fn java(check: &str) -> Files {
        let servlet = format!(
            "class CatalogServlet extends HttpServlet {{\n  private CatalogService service;\n  protected void doGet(HttpServletRequest req, HttpServletResponse resp) throws IOException {{\n    String category = req.getParameter(\"category\");\n{check}    resp.getWriter().println(service.countIn(category));\n  }}\n}}\n"
        );
        let service = "class CatalogService {\n  private ItemDao dao;\n  public int countIn(String category) throws SQLException {\n    ResultSet rs = dao.findByCategory(category);\n    return 1;\n  }\n}\n";
        let dao = "class ItemDao {\n  private Connection connection;\n  public ResultSet findByCategory(String category) throws SQLException {\n    Statement st = connection.createStatement();\n    return st.executeQuery(\"SELECT * FROM items WHERE category = '\" + category + \"'\");\n  }\n}\n";
        [
            ("inv/CatalogServlet.java", servlet.as_str()),
            ("inv/CatalogService.java", service),
            ("inv/ItemDao.java", dao),
        ]
        .into_iter()
        .map(|(p, t)| (p.to_string(), crate::util::numbered(t)))
        .collect()
    }

    /// `references` as the index would answer: every call of each name.
    fn answer(files: &Files, name: &str) -> Option<Listed> {
        let mut sites = Vec::new();
        for (path, lines) in files {
            for (n, line) in lines {
                if line.contains(&format!(".{name}(")) {
                    sites.push((path.clone(), *n));
                }
            }
        }
        Some(Listed {
            sites,
            complete: true,
            defined: Some(
                files
                    .iter()
                    .filter(|(_, lines)| lines.values().any(|l| l.contains(&format!(" {name}("))))
                    .map(|(p, _)| p.clone())
                    .collect(),
            ),
        })
    }

    fn followed(files: &Files) -> Followed {
        let trees = Trees::new(Limits::default());
        let listed = |name: &str| answer(files, name);
        follow(&trees, files, "inv/ItemDao.java", 5, None, &listed)
    }

    #[test]
    fn a_request_value_two_calls_up_is_confirmed_with_its_trace() {
        let files = java("");
        let Outcome::Confirmed(flow) = followed(&files).outcome else {
            panic!("{:?}", followed(&files));
        };
        let trace: Vec<String> = flow
            .steps
            .iter()
            .map(|(p, s)| format!("{p}:{}", s.line))
            .collect();
        assert_eq!(
            trace.first().map(String::as_str),
            Some("inv/CatalogServlet.java:4"),
            "{trace:?}"
        );
        assert_eq!(
            trace.last().map(String::as_str),
            Some("inv/ItemDao.java:5"),
            "{trace:?}"
        );
        assert!(
            trace.contains(&"inv/CatalogService.java:4".to_string()),
            "{trace:?}"
        );
    }

    #[test]
    fn every_caller_checking_the_value_refutes_it_and_one_that_does_not_confirms() {
        let checked = java(
            "    if (!java.util.Set.of(\"books\", \"music\").contains(category)) {\n      resp.sendError(400);\n      return;\n    }\n",
        );
        assert!(
            matches!(followed(&checked).outcome, Outcome::Refuted(_)),
            "{:?}",
            followed(&checked)
        );
        // The sink's value also reads the object's state: what the callers
        // pass does not decide it, so it is never refuted.
        let mut stateful = checked.clone();
        if let Some(dao) = stateful.get_mut("inv/ItemDao.java") {
            dao.insert(
                5,
                "    return st.executeQuery(\"SELECT * FROM \" + this.table + \" WHERE category = '\" + category + \"'\");".into(),
            );
        }
        let f = followed(&stateful);
        assert!(matches!(f.outcome, Outcome::Uncertain(_)), "{f:?}");
        // A check that does not leave proves nothing.
        let logged = java(
            "    if (!java.util.Set.of(\"books\").contains(category)) {\n      log(category);\n    }\n",
        );
        assert!(matches!(followed(&logged).outcome, Outcome::Confirmed(_)));
    }

    #[test]
    fn what_is_not_known_is_asked_for_or_left_uncertain() {
        let files = java("");
        let trees = Trees::new(Limits::default());
        // No answer yet: the name is wanted.
        let none = |_: &str| None;
        let f = follow(&trees, &files, "inv/ItemDao.java", 5, None, &none);
        assert_eq!(f.names, BTreeSet::from(["findByCategory".to_string()]));
        assert!(matches!(f.outcome, Outcome::Uncertain(_)));
        // A caller's file not read: wanted, and uncertain meanwhile.
        let mut partial = files.clone();
        partial.remove("inv/CatalogServlet.java");
        let listed = |name: &str| answer(&files, name);
        let f = follow(&trees, &partial, "inv/ItemDao.java", 5, None, &listed);
        assert_eq!(
            f.files,
            BTreeSet::from(["inv/CatalogServlet.java".to_string()])
        );
        assert!(matches!(f.outcome, Outcome::Uncertain(_)), "{f:?}");
        // A list cut at its limit never refutes.
        let checked = java("    if (!category.matches(\"[a-z]+\")) {\n      return;\n    }\n");
        let cut = |name: &str| {
            answer(&checked, name).map(|l| Listed {
                complete: false,
                ..l
            })
        };
        let f = follow(&trees, &checked, "inv/ItemDao.java", 5, None, &cut);
        assert!(matches!(f.outcome, Outcome::Uncertain(_)), "{f:?}");
        // No call anywhere: uncertain, never refuted.
        let nobody = |_: &str| Some(Listed::default());
        let f = follow(&trees, &files, "inv/ItemDao.java", 5, None, &nobody);
        assert!(matches!(f.outcome, Outcome::Uncertain(_)), "{f:?}");
    }

    #[test]
    fn a_callback_reads_the_variables_of_the_function_it_is_written_in() {
        let js = |check: &str| -> Files {
            let routes = format!(
                "const {{ search }} = require(\"./contacts\");\nrouter.get(\"/c\", async (req, res) => {{\n  const name = String(req.query.name || \"\");\n{check}  res.json(await search(name));\n}});\n"
            );
            let contacts = "const { contactsNamed } = require(\"./db\");\nfunction search(name) {\n  return new Promise((resolve, reject) => {\n    contactsNamed(name, (err, rows) => (err ? reject(err) : resolve(rows)));\n  });\n}\n";
            let db = "function contactsNamed(name, done) {\n  pool.query(\"SELECT * FROM contacts WHERE name = '\" + name + \"'\", done);\n}\n";
            [
                ("crm/routes.js", routes.as_str()),
                ("crm/contacts.js", contacts),
                ("crm/db.js", db),
            ]
            .into_iter()
            .map(|(p, t)| (p.to_string(), crate::util::numbered(t)))
            .collect()
        };
        let trees = Trees::new(Limits::default());
        let follow_js = |files: &Files| {
            let listed = |name: &str| {
                let mut l = answer(files, name)?;
                l.sites = files
                    .iter()
                    .flat_map(|(p, lines)| {
                        lines
                            .iter()
                            .filter(|(_, t)| {
                                t.contains(&format!("{name}(")) && !t.contains("function")
                            })
                            .map(move |(n, _)| (p.clone(), *n))
                    })
                    .collect();
                l.defined = Some(vec![
                    if name == "search" {
                        "crm/contacts.js"
                    } else {
                        "crm/db.js"
                    }
                    .to_string(),
                ]);
                Some(l)
            };
            follow(&trees, files, "crm/db.js", 2, None, &listed).outcome
        };
        assert!(
            matches!(follow_js(&js("")), Outcome::Confirmed(_)),
            "{:?}",
            follow_js(&js(""))
        );
        let checked =
            js("  if (!/^[\\w ]{1,64}$/.test(name)) {\n    return res.status(400).end();\n  }\n");
        assert!(
            matches!(follow_js(&checked), Outcome::Refuted(_)),
            "{:?}",
            follow_js(&checked)
        );
    }

    #[test]
    fn a_references_answer_is_read_with_its_completeness() {
        let full = "2 references to \"findByCategory\"\ndefined at: inv/D.java:3, lib/D.java:8\ninv/A.java:4: rs = dao.findByCategory(c);    [call in countIn]\ninv/B.java:9: x.findByCategory(\"a\")    [call]\n";
        let l = read_references(full);
        assert_eq!(
            l.sites,
            [("inv/A.java".to_string(), 4), ("inv/B.java".to_string(), 9)]
        );
        assert!(l.complete);
        assert_eq!(
            l.defined,
            Some(vec!["inv/D.java".to_string(), "lib/D.java".to_string()])
        );
        // The nearest definition is the one a call runs; a tie is unknown.
        assert_eq!(l.runs("inv/A.java", "inv/D.java"), Some(true));
        assert_eq!(l.runs("lib/x/A.java", "inv/D.java"), Some(false));
        assert_eq!(l.runs("app/A.java", "inv/D.java"), None);
        let cut = full.replace(
            "\"findByCategory\"\n",
            "\"findByCategory\", the first 60 listed; narrow with path\n",
        );
        assert!(!read_references(&cut).complete);
        let texts = format!(
            "{full}Text matches of \"findByCategory\" in 1 files of the scan that have no syntax tree (by text, not by syntax):\nk/A.kt:3: findByCategory(x)\n"
        );
        assert!(!read_references(&texts).complete);
        let none =
            read_references("no references to \"x\" in the syntax trees of the scan's files\n");
        assert!(none.complete && none.sites.is_empty());
    }
}
