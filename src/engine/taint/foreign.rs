//! Calls into a class that another file declares, on the syntax trees.
//!
//! A Java or C# call whose receiver is a class its own file does not
//! declare (a variable's declared type, `new C(…)`, a static `C.m(…)` or
//! `pkg.C.m(…)`) is followed into the method of that name in each file the
//! skeptic has read that declares the class, implements it or extends it:
//! what those bodies return decides the call's value, as for a function of
//! the same file. A body that returns only literals and constants makes the
//! call a constant; one that returns its parameters passes the call's
//! arguments at those places on; a source in a body is a source of the
//! call; anything else (the object's state, a call it cannot follow) leaves
//! the call unknown. A class of the platform (`java.*`, `System.*`,
//! `String`) is never looked for; a class of the repository that no file
//! read declares is wanted, so the skeptic can find its file and read it.

use std::cell::RefCell;
use std::collections::{BTreeSet, HashMap};

use tree_sitter::Node;

use super::{
    Call, Grammar, Scopes, SourceTable, Step, Syntax, Tracer, Visit, filled_params, line_of,
    param_position, returned, shown, table, walk,
};
use crate::engine::sources::Files;
use crate::engine::syntax::{Trees, whole_text};
use crate::util::language::language_of;

/// Most calls deep a value is followed into other files' classes.
const DEPTH: usize = 3;

/// Packages of the platform and its libraries: their classes are never in
/// the repository.
pub(crate) const LIBRARY_PACKAGES: &[&str] = &[
    "java.",
    "javax.",
    "jakarta.",
    "sun.",
    "com.sun.",
    "org.w3c.",
    "org.xml.",
    "System.",
    "Microsoft.",
];

/// Classes a Java or C# file names without importing them (`java.lang`,
/// `System`) and the servlet and JDBC types every web handler declares.
pub(crate) const LIBRARY_CLASSES: &[&str] = &[
    "String",
    "StringBuilder",
    "StringBuffer",
    "Object",
    "Integer",
    "Long",
    "Short",
    "Byte",
    "Double",
    "Float",
    "Boolean",
    "Character",
    "CharSequence",
    "Number",
    "Math",
    "System",
    "Thread",
    "Runtime",
    "Process",
    "ProcessBuilder",
    "Class",
    "Iterable",
    "Exception",
    "RuntimeException",
    "HttpServletRequest",
    "HttpServletResponse",
    "HttpSession",
    "ServletRequest",
    "ServletResponse",
    "Cookie",
    "Connection",
    "Statement",
    "PreparedStatement",
    "CallableStatement",
    "ResultSet",
    "Console",
    "Environment",
    "Convert",
];

/// What a method of another file gives back, read from its bodies.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Returns {
    /// Only literals and constants.
    Constant,
    /// The arguments at these places, and otherwise literals and
    /// constants.
    Params(BTreeSet<usize>),
    /// A source reaches what it returns: the step that says so.
    Source(Step),
    /// Something the walk cannot follow.
    Unknown,
}

/// The other files' classes a trace may follow calls into: the files the
/// skeptic has read, parsed once each.
pub(crate) struct Foreign<'f> {
    trees: &'f Trees,
    files: &'f Files,
    /// The file the calls are made in.
    path: String,
    depth: usize,
    /// Classes of the repository a call goes into that no file read
    /// declares.
    wants: RefCell<BTreeSet<String>>,
    /// The bodies followed: their files and the lines they start on.
    followed: RefCell<BTreeSet<(String, u32)>>,
    /// What each method returns, by file, class, method and arity.
    known: RefCell<HashMap<(String, String, usize), Returns>>,
}

impl<'f> Foreign<'f> {
    pub(crate) fn new(trees: &'f Trees, files: &'f Files, path: &str) -> Self {
        Self::at(trees, files, path, 0)
    }

    fn at(trees: &'f Trees, files: &'f Files, path: &str, depth: usize) -> Self {
        Self {
            trees,
            files,
            path: path.to_string(),
            depth,
            wants: RefCell::default(),
            followed: RefCell::default(),
            known: RefCell::default(),
        }
    }

    /// The classes wanted: a call goes into each, and no file read
    /// declares it.
    pub(crate) fn wants(&self) -> BTreeSet<String> {
        self.wants.borrow().clone()
    }

    /// The methods a trace followed, by file and the line each starts
    /// on, in order of their paths.
    pub(crate) fn followed(&self) -> Vec<(String, u32)> {
        self.followed.borrow().iter().cloned().collect()
    }

    /// What `call` (made in `syntax`, this file's tree) returns, when it
    /// goes into a method of a class another file declares: `None` when it
    /// does not (a call of this file, of the platform, or one whose class
    /// is not written), and [`Returns::Unknown`] when no body is read.
    pub(super) fn returns<'t>(
        &self,
        syntax: &'t Syntax,
        call: &Call<'t>,
        sources: &'static SourceTable,
        class: &table::Class,
    ) -> Option<Returns> {
        if !matches!(syntax.grammar, Grammar::Java | Grammar::CSharp) {
            return None;
        }
        let (qualified, owner) = receiver_class(syntax, call)?;
        if declares(syntax, syntax.root(), &owner) || is_library(syntax, &qualified, &owner) {
            return None;
        }
        if self.depth >= DEPTH {
            return Some(Returns::Unknown);
        }
        let method = call.last().to_string();
        let arity = call.args.len();
        // A class of this file that extends it, or an object made here
        // with a body of its own (`new C() { … }`), may be what runs.
        // So may a class further down (one that extends a class that
        // extends it) in any file read: looked for once, not per file.
        if bodies_in(syntax, &owner, &method, arity).0
            || made_with_a_body(syntax, &owner)
            || self.extended_further(&owner)
        {
            return Some(Returns::Unknown);
        }
        let language = language_of(&self.path);
        let mut declared = false;
        let mut all: Option<Returns> = None;
        for (path, lines) in self.files {
            if *path == self.path || language_of(path) != language {
                continue;
            }
            let key = (path.clone(), format!("{owner}.{method}"), arity);
            if let Some(known) = self.known.borrow().get(&key) {
                declared = true;
                all = Some(join(all, known.clone()));
                continue;
            }
            let Some(text) = whole_text(lines.iter().map(|(n, l)| (*n, l.as_str()))) else {
                continue;
            };
            let parsed = self.trees.get(path, &text);
            let Ok(other) = parsed.as_ref() else {
                continue;
            };
            let (related, bodies) = bodies_in(other, &owner, &method, arity);
            if !related {
                continue;
            }
            declared = true;
            if bodies.is_empty() {
                continue;
            }
            let deeper = Foreign::at(self.trees, self.files, path, self.depth + 1);
            let mut returns: Option<Returns> = None;
            for func in bodies {
                let one = summary(other, func, sources, class, &deeper, path);
                // Where the body was read: its source's line, else its own.
                let at = match &one {
                    Returns::Source(step) => step.line,
                    _ => line_of(func),
                };
                self.followed.borrow_mut().insert((path.clone(), at));
                returns = Some(join(returns, one));
            }
            self.wants.borrow_mut().extend(deeper.wants());
            self.followed.borrow_mut().extend(deeper.followed());
            let returns = returns.unwrap_or(Returns::Unknown);
            self.known.borrow_mut().insert(key, returns.clone());
            all = Some(join(all, returns));
        }
        if !declared {
            self.wants.borrow_mut().insert(owner);
            return Some(Returns::Unknown);
        }
        Some(all.unwrap_or(Returns::Unknown))
    }

    /// Whether a class of a file read extends or implements a class that
    /// itself extends or implements `owner` (in any file read, this one
    /// included).
    fn extended_further(&self, owner: &str) -> bool {
        let trees: Vec<_> = self
            .files
            .iter()
            .filter_map(|(path, lines)| {
                let text = whole_text(lines.iter().map(|(n, l)| (*n, l.as_str())))?;
                Some(self.trees.get(path, &text))
            })
            .collect();
        let syntaxes: Vec<&Syntax> = trees
            .iter()
            .filter_map(|t| t.as_ref().as_ref().ok())
            .collect();
        let direct: Vec<String> = syntaxes
            .iter()
            .flat_map(|s| derived_names(s, owner))
            .collect();
        direct
            .iter()
            .any(|d| syntaxes.iter().any(|s| !derived_names(s, d).is_empty()))
    }
}

/// The names of the types `syntax` declares that extend or implement
/// `class`.
fn derived_names(syntax: &Syntax, class: &str) -> Vec<String> {
    let mut out = Vec::new();
    walk(syntax.root(), |n, _| {
        if TYPE_KINDS.contains(&n.kind())
            && derives(syntax, n, class)
            && let Some(name) = n.child_by_field_name("name")
        {
            out.push(syntax.text_of(name).to_string());
        }
        Visit::Enter
    });
    out
}

/// Whether `syntax` makes an object of `class` with a body of its own
/// (`new Cleaner() { … }`).
fn made_with_a_body(syntax: &Syntax, class: &str) -> bool {
    let mut found = false;
    walk(syntax.root(), |n, _| {
        if found {
            return Visit::Stop;
        }
        if n.kind() == "object_creation_expression"
            && n.child_by_field_name("type")
                .and_then(|t| type_name(syntax, t))
                .is_some_and(|t| t.rsplit('.').next() == Some(class))
        {
            let mut c = n.walk();
            if n.named_children(&mut c).any(|b| b.kind() == "class_body") {
                found = true;
                return Visit::Stop;
            }
        }
        Visit::Enter
    });
    found
}

/// Two bodies' answers as one: a source in either, else anything unknown,
/// else every parameter either returns.
fn join(a: Option<Returns>, b: Returns) -> Returns {
    match (a, b) {
        (None, b) => b,
        (Some(Returns::Source(s)), _) | (_, Returns::Source(s)) => Returns::Source(s),
        (Some(Returns::Unknown), _) | (_, Returns::Unknown) => Returns::Unknown,
        (Some(Returns::Constant), b) => b,
        (Some(a), Returns::Constant) => a,
        (Some(Returns::Params(mut a)), Returns::Params(b)) => {
            a.extend(b);
            Returns::Params(a)
        }
    }
}

/// What `func` (a method of `syntax`, the tree of `path`) returns.
fn summary<'t>(
    syntax: &'t Syntax,
    func: Node<'t>,
    sources: &'static SourceTable,
    class: &table::Class,
    foreign: &Foreign<'_>,
    path: &str,
) -> Returns {
    let values = returned(func);
    if values.is_empty() {
        return Returns::Unknown;
    }
    // What it returns may be the object's state: a source read there is
    // one, anything else is unknown.
    let state = reads_a_field(syntax, func);
    let mut scopes = Scopes::default();
    let mut positions = BTreeSet::new();
    for value in values {
        let scope = scopes.around(syntax, value);
        let params = scope.params.clone();
        let mut tracer = Tracer::new(syntax, sources, class, scope, &mut scopes);
        tracer.foreign = Some(foreign);
        let mut reached = Vec::new();
        if let Some(steps) = tracer.trace_within(value, Vec::new(), &mut reached) {
            // The source's own step, its line in that file.
            return Returns::Source(steps.first().map_or_else(
                || Step {
                    line: line_of(value),
                    what: String::new(),
                },
                |s| Step {
                    line: s.line,
                    what: format!("{} at {path}:{}", s.what, s.line),
                },
            ));
        }
        let seen = std::mem::take(&mut tracer.seen);
        if seen.opaque || seen.state {
            return Returns::Unknown;
        }
        for name in seen.params {
            let Some((_, decl)) = params.iter().find(|(p, _)| *p == name) else {
                return Returns::Unknown;
            };
            match param_position(syntax, func, *decl, &name) {
                Some(p) => {
                    positions.insert(p);
                }
                None => return Returns::Unknown,
            }
        }
    }
    if state {
        Returns::Unknown
    } else if positions.is_empty() {
        Returns::Constant
    } else {
        Returns::Params(positions)
    }
}

/// Whether the body of `func` names a field or property its class
/// declares (`return Term;` in C#, where a field is capitalized like a
/// class): what it returns is the object's state.
fn reads_a_field(syntax: &Syntax, func: Node<'_>) -> bool {
    let mut class = func.parent();
    while let Some(c) = class {
        if TYPE_KINDS.contains(&c.kind()) {
            break;
        }
        class = c.parent();
    }
    let Some(body) = class.and_then(|c| c.child_by_field_name("body")) else {
        return false;
    };
    let mut fields: Vec<&str> = Vec::new();
    let mut c = body.walk();
    for member in body.named_children(&mut c) {
        if !matches!(member.kind(), "field_declaration" | "property_declaration") {
            continue;
        }
        walk(member, |n, _| {
            if n.kind() == "variable_declarator" || n.kind() == "property_declaration" {
                let id = n.child_by_field_name("name").or_else(|| {
                    let mut d = n.walk();
                    n.named_children(&mut d).find(|x| x.kind() == "identifier")
                });
                if let Some(id) = id {
                    fields.push(syntax.text_of(id));
                }
            }
            Visit::Enter
        });
    }
    if fields.is_empty() {
        return false;
    }
    let mut reads = false;
    if let Some(b) = func.child_by_field_name("body") {
        walk(b, |n, _| {
            if n.kind() == "identifier" && fields.contains(&syntax.text_of(n)) {
                reads = true;
                return Visit::Stop;
            }
            Visit::Enter
        });
    }
    reads
}

/// The class whose method `call` runs, qualified as written and simple,
/// when the tree says: a static call on a class's name, a new object's
/// class, or a variable's declared type.
fn receiver_class(syntax: &Syntax, call: &Call<'_>) -> Option<(String, String)> {
    let receiver = call.receiver?;
    let text = syntax.text_of(receiver);
    let qualified = match receiver.kind() {
        "object_creation_expression" => type_name(syntax, receiver.child_by_field_name("type")?)?,
        "identifier" if !text.starts_with(char::is_uppercase) => {
            declared_type(syntax, receiver, text)?
        }
        "identifier"
        | "field_access"
        | "scoped_identifier"
        | "member_access_expression"
        | "qualified_name" => {
            // `Utils.m(…)`, `org.example.Utils.m(…)`: the last part is a
            // class's name.
            let last = text.rsplit('.').next()?.trim();
            if !last.starts_with(char::is_uppercase)
                || !text
                    .chars()
                    .all(|c| c.is_alphanumeric() || matches!(c, '_' | '$' | '.'))
            {
                return None;
            }
            text.to_string()
        }
        _ => return None,
    };
    let simple = qualified.rsplit('.').next()?.to_string();
    (!simple.is_empty() && simple.starts_with(char::is_uppercase)).then_some((qualified, simple))
}

/// A type's name without its type arguments or array brackets.
fn type_name(syntax: &Syntax, ty: Node<'_>) -> Option<String> {
    let text = syntax.text_of(ty);
    let name: String = text
        .split('<')
        .next()?
        .chars()
        .filter(|c| !c.is_whitespace() && !matches!(c, '[' | ']' | '?'))
        .collect();
    (!name.is_empty()).then_some(name)
}

/// The type `name` is declared with where `at` uses it: the last
/// declaration of that name before it in the innermost function that
/// declares it (a local, a parameter, a loop's variable), looking outward
/// function by function, else a field of the class around it; `var x =
/// new C(…)` is a `C`. A name bound without a type (a lambda's parameter)
/// has none.
fn declared_type(syntax: &Syntax, at: Node<'_>, name: &str) -> Option<String> {
    let before = at.start_byte();
    let mut scope = super::function_around(at);
    loop {
        match typed_in(syntax, scope, name, before) {
            Bound::Typed(t) => return Some(t),
            Bound::Untyped => return None,
            Bound::No => {}
        }
        let Some(up) = scope.parent() else {
            break;
        };
        let next = super::function_around(up);
        if next == scope || !super::FUNCTION_KINDS.contains(&next.kind()) {
            break;
        }
        scope = next;
    }
    // A field of the class around it.
    let mut class = Some(at);
    while let Some(c) = class {
        if TYPE_KINDS.contains(&c.kind()) {
            break;
        }
        class = c.parent();
    }
    let body = class?.child_by_field_name("body")?;
    let mut c = body.walk();
    let fields: Vec<Node<'_>> = body
        .named_children(&mut c)
        .filter(|m| matches!(m.kind(), "field_declaration" | "property_declaration"))
        .collect();
    fields
        .into_iter()
        .find_map(|f| match typed_in(syntax, f, name, usize::MAX) {
            Bound::Typed(t) => Some(t),
            _ => None,
        })
}

/// How a name is bound in a part of a tree.
enum Bound {
    Typed(String),
    Untyped,
    No,
}

/// The last binding of `name` under `scope` that starts before byte
/// `before`, nested functions' too.
fn typed_in(syntax: &Syntax, scope: Node<'_>, name: &str, before: usize) -> Bound {
    let mut found = Bound::No;
    walk(scope, |n, _| {
        if n.start_byte() > before {
            return Visit::Stop;
        }
        match n.kind() {
            "local_variable_declaration"
            | "field_declaration"
            | "formal_parameter"
            | "catch_formal_parameter"
            | "enhanced_for_statement"
            | "variable_declaration"
            | "parameter"
            | "foreach_statement"
            | "property_declaration" => {}
            // A lambda's parameters carry no type.
            "lambda_expression" | "inferred_parameters" => {
                let params = n.child_by_field_name("parameters").unwrap_or(n);
                let mut hit = false;
                walk(params, |p, _| {
                    if p.kind() == "identifier" && syntax.text_of(p) == name {
                        hit = true;
                        return Visit::Stop;
                    }
                    if p.kind() == "formal_parameter"
                        || p.kind().ends_with("block")
                        || p.kind() == "body"
                    {
                        return Visit::Skip;
                    }
                    Visit::Enter
                });
                if hit && n.kind() == "lambda_expression" && params.kind() != "formal_parameters" {
                    found = Bound::Untyped;
                }
                return Visit::Enter;
            }
            _ => return Visit::Enter,
        }
        let Some(ty) = n.child_by_field_name("type") else {
            return Visit::Enter;
        };
        let mut names = Vec::new();
        for field in ["name", "left"] {
            if let Some(own) = n.child_by_field_name(field)
                && own.kind() == "identifier"
            {
                names.push((own, None));
            }
        }
        let mut c = n.walk();
        for d in n.named_children(&mut c) {
            if d.kind() == "variable_declarator" {
                let id = d.child_by_field_name("name").or_else(|| {
                    let mut dc = d.walk();
                    d.named_children(&mut dc).find(|x| x.kind() == "identifier")
                });
                if let Some(id) = id {
                    names.push((id, d.child_by_field_name("value")));
                }
            }
        }
        for (id, value) in names {
            if syntax.text_of(id) != name {
                continue;
            }
            let written = type_name(syntax, ty);
            found = match written.as_deref() {
                Some("var") => value
                    .filter(|v| v.kind() == "object_creation_expression")
                    .and_then(|v| v.child_by_field_name("type"))
                    .and_then(|t| type_name(syntax, t))
                    .map_or(Bound::Untyped, Bound::Typed),
                Some(t) => Bound::Typed(t.to_string()),
                None => Bound::Untyped,
            };
        }
        Visit::Enter
    });
    found
}

/// Whether `class` (written `qualified`) is the platform's: its package,
/// or its import's, is a library's, or it is one of the names a file uses
/// unimported.
fn is_library(syntax: &Syntax, qualified: &str, class: &str) -> bool {
    let qualified = if qualified.contains('.') {
        Some(qualified.to_string())
    } else {
        imported(syntax, class)
    };
    match qualified {
        Some(q) => LIBRARY_PACKAGES.iter().any(|p| q.starts_with(p)),
        None => LIBRARY_CLASSES.contains(&class),
    }
}

/// The qualified name an `import` (or C# `using`) of the file gives
/// `class`.
fn imported(syntax: &Syntax, class: &str) -> Option<String> {
    let root = syntax.root();
    let mut c = root.walk();
    root.named_children(&mut c)
        .filter(|n| matches!(n.kind(), "import_declaration" | "using_directive"))
        .find_map(|n| {
            let text = syntax.text_of(n);
            let body = text
                .trim_start_matches("import")
                .trim_start_matches("using")
                .trim()
                .trim_start_matches("static ")
                .trim_end_matches(';')
                .trim();
            (body.rsplit('.').next() == Some(class)).then(|| body.to_string())
        })
}

/// Node kinds that declare a class or an interface, in Java and C#.
const TYPE_KINDS: &[&str] = &[
    "class_declaration",
    "interface_declaration",
    "enum_declaration",
    "record_declaration",
    "struct_declaration",
];

/// Whether the tree under `root` declares a type named `class`.
fn declares(syntax: &Syntax, root: Node<'_>, class: &str) -> bool {
    let mut found = false;
    walk(root, |n, _| {
        if found {
            return Visit::Stop;
        }
        if TYPE_KINDS.contains(&n.kind())
            && n.child_by_field_name("name")
                .is_some_and(|m| syntax.text_of(m) == class)
        {
            found = true;
            return Visit::Stop;
        }
        Visit::Enter
    });
    found
}

/// Whether `syntax` declares `class` or a type that implements or extends
/// it, and the bodies of `method` taking `arity` arguments in those types.
fn bodies_in<'t>(
    syntax: &'t Syntax,
    class: &str,
    method: &str,
    arity: usize,
) -> (bool, Vec<Node<'t>>) {
    let mut related = false;
    let mut bodies = Vec::new();
    walk(syntax.root(), |n, _| {
        if !TYPE_KINDS.contains(&n.kind()) {
            return Visit::Enter;
        }
        let named = n
            .child_by_field_name("name")
            .is_some_and(|m| syntax.text_of(m) == class);
        if !(named || derives(syntax, n, class)) {
            return Visit::Enter;
        }
        related = true;
        let Some(body) = n.child_by_field_name("body") else {
            return Visit::Enter;
        };
        let mut c = body.walk();
        for m in body.named_children(&mut c) {
            let takes = |m: Node<'t>| filled_params(syntax, m).is_some_and(|p| p.len() == arity);
            if m.kind() == "method_declaration"
                && m.child_by_field_name("body").is_some()
                && m.child_by_field_name("name")
                    .is_some_and(|x| syntax.text_of(x) == method)
                && takes(m)
            {
                bodies.push(m);
            }
        }
        Visit::Enter
    });
    (related, bodies)
}

/// Whether the type `n` declares names `class` among the types it
/// implements or extends.
fn derives(syntax: &Syntax, n: Node<'_>, class: &str) -> bool {
    let mut c = n.walk();
    n.named_children(&mut c)
        .filter(|p| {
            matches!(
                p.kind(),
                "superclass" | "super_interfaces" | "extends_interfaces" | "base_list"
            )
        })
        .any(|p| {
            let mut hit = false;
            walk(p, |t, _| {
                if matches!(t.kind(), "type_identifier" | "identifier")
                    && syntax.text_of(t) == class
                {
                    hit = true;
                    return Visit::Stop;
                }
                Visit::Enter
            });
            hit
        })
}

/// Whether `dotted`, a call's callee, is a static method of a class of the
/// repository (`Input::get`, `Helpers.lookup`): outside Java and C#, whose
/// platform's classes are named as such, a name the table takes for a pure
/// call (`get`) says nothing of what such a class returns (`Input::get('id')`
/// reads the request).
pub(super) fn static_of_unknown_class(syntax: &Syntax, dotted: &str) -> bool {
    if matches!(syntax.grammar, Grammar::Java | Grammar::CSharp) {
        return false;
    }
    let mut parts = dotted.rsplit('.');
    let (Some(_method), Some(class)) = (parts.next(), parts.next()) else {
        return false;
    };
    let class = class.trim_start_matches('\\');
    class.starts_with(char::is_uppercase)
        && class.chars().all(|c| c.is_alphanumeric() || c == '_')
        && !LIBRARY_CLASSES.contains(&class)
}

/// The step of a trace that a call's value came back from another file.
pub(super) fn step_of(call: &Call<'_>, source: &Step) -> Step {
    Step {
        line: line_of(call.node),
        what: format!("`{}` returns {}", shown(&call.dotted), source.what),
    }
}
