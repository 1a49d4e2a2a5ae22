//! Following a call into a class that another file declares.
//!
//! A Java or C# call whose receiver is a class this file does not declare
//! (a variable's declared type, `new C()`, or a static `pkg.C.m(…)` given
//! more than literals) is followed into the method of that name in every
//! file read that declares the class, implements it or extends it: what
//! those bodies return decides, as for a helper of the same file. A class
//! of the library (`java.*`, `javax.*`, `java.lang`'s names) is never looked
//! for; a class of the repository no file read declares is named in
//! [`Judged::wants`](super::Judged::wants), so that the skeptic can find
//! its file and read it before it answers.

use std::collections::BTreeSet;

use super::{
    Family, HELPER_DEPTH, HelperFile, Trace, code_of, definitions_in, family, starts_upper,
};
use crate::util::language::language_of;

/// Packages of the platform and its libraries: their classes are never in
/// the repository.
const LIBRARY_PACKAGES: &[&str] = &[
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
const LIBRARY_CLASSES: &[&str] = &[
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

/// The class of `recv` when it ends with `new C(…)` (arguments given),
/// qualified as written and simple.
fn new_object_before(recv: &str) -> Option<(String, String)> {
    let inner = recv.strip_suffix(')')?;
    // The `(` that opens the arguments.
    let mut depth = 1i32;
    let mut open = None;
    for (i, c) in inner.char_indices().rev() {
        match c {
            ')' => depth += 1,
            '(' => {
                depth -= 1;
                if depth == 0 {
                    open = Some(i);
                    break;
                }
            }
            _ => {}
        }
    }
    let head = inner.get(..open?)?.trim_end();
    let at = head
        .char_indices()
        .rev()
        .take_while(|(_, c)| c.is_alphanumeric() || matches!(c, '_' | '$' | '.'))
        .last()
        .map(|(i, _)| i)?;
    let qualified = &head[at..];
    let is_new = head[..at]
        .trim_end()
        .strip_suffix("new")
        .is_some_and(|b| !b.ends_with(|c: char| c.is_alphanumeric() || c == '_'));
    let simple = qualified.rsplit('.').next()?;
    (is_new && starts_upper(simple)).then(|| (qualified.to_string(), simple.to_string()))
}

/// The steps of `elsewhere` as a clause of a refuting answer: the files
/// the check followed calls into, or nothing.
pub(super) fn followed(elsewhere: &[(String, u32)]) -> String {
    let mut files: Vec<&str> = Vec::new();
    for (path, _) in elsewhere {
        if !files.contains(&path.as_str()) {
            files.push(path);
        }
    }
    if files.is_empty() {
        String::new()
    } else {
        format!(" (calls followed into {})", files.join(", "))
    }
}

impl<'a> Trace<'a> {
    /// The class whose method the call to `segments` (with `before` the
    /// text before it) runs, when another file may declare it: `None` in
    /// a language the check reads no types of, for a class of this file
    /// or of the library, and when the receiver's class is not written.
    pub(super) fn foreign_class(&self, before: &str, segments: &[&str]) -> Option<String> {
        if !matches!(language_of(self.path), Some("java" | "csharp")) {
            return None;
        }
        let (qualified, class) = match segments {
            [recv, _] if !starts_upper(recv) && !matches!(*recv, "this" | "self") => {
                self.declared_type(recv)?
            }
            [_] => {
                let recv = before.strip_suffix('.')?.trim_end();
                match super::local_object_before(recv) {
                    Some(class) => (class.to_string(), class.to_string()),
                    None => new_object_before(recv)?,
                }
            }
            _ => {
                let c = segments.iter().position(|s| starts_upper(s))?;
                if c + 2 != segments.len() || (c > 0 && !self.qualified_class(segments)) {
                    return None;
                }
                (segments[..=c].join("."), segments[c].to_string())
            }
        };
        if self.declares_class(&class) || self.is_library(&qualified, &class) {
            return None;
        }
        Some(class)
    }

    /// Whether the constructor call `segments` (with `rest` the text after
    /// its arguments) makes the receiver of a method this check follows
    /// into another file: `new C(…).m(…)` with `m` not a pure call and `C`
    /// a class of the repository, not of this file or the library.
    pub(super) fn builds_receiver(&self, segments: &[&str], rest: &str) -> bool {
        let Some(method) = rest
            .trim_start()
            .strip_prefix('.')
            .map(str::trim_start)
            .and_then(|r| r.split_once('('))
            .map(|(name, _)| name.trim())
        else {
            return false;
        };
        let Some(&class) = segments.last() else {
            return false;
        };
        let is_name = !method.is_empty()
            && method
                .chars()
                .all(|c| c.is_alphanumeric() || c == '_' || c == '$');
        is_name
            && !self.table.pure_calls.contains(method)
            && matches!(language_of(self.path), Some("java" | "csharp"))
            && !self.declares_class(class)
            && !self.is_library(&segments.join("."), class)
    }

    /// The type `recv` is declared with, qualified as written and simple:
    /// the last declaration above the line followed in the function, else
    /// one anywhere in the file (a field); `var x = new C(…)` is a `C`.
    fn declared_type(&self, recv: &str) -> Option<(String, String)> {
        let name = regex::escape(recv);
        let typed = self.patterns.get(format!(
            r"(?:^|[^\w$.])((?:[A-Za-z_][\w$]*\.)*[A-Z][\w$]*)\s*(?:<[^;=()]*>)?\s*(?:\[\s*\])*\s+{name}\s*(?:[=;,)]|$)"
        ))?;
        let inferred = self.patterns.get(format!(
            r"\bvar\s+{name}\s*=\s*new\s+((?:[A-Za-z_][\w$]*\.)*[A-Z][\w$]*)"
        ))?;
        let found = |text: &String| {
            let code = code_of(text, self.family).0;
            let c = typed.captures(&code).or_else(|| inferred.captures(&code))?;
            let qualified = c.get(1)?.as_str().to_string();
            let simple = qualified.rsplit('.').next()?.to_string();
            Some((qualified, simple))
        };
        self.lines
            .range(self.start..=self.at)
            .rev()
            .find_map(|(_, t)| found(t))
            .or_else(|| self.shown.values().find_map(found))
    }

    /// Whether `class` (written `qualified`) is the platform's: its
    /// package, or its import's, is a library's, or it is one of the
    /// names a file uses unimported.
    fn is_library(&self, qualified: &str, class: &str) -> bool {
        let qualified = if qualified.contains('.') {
            qualified.to_string()
        } else {
            self.imported(class).unwrap_or_else(|| class.to_string())
        };
        if qualified.contains('.') {
            LIBRARY_PACKAGES.iter().any(|p| qualified.starts_with(p))
        } else {
            LIBRARY_CLASSES.contains(&class)
        }
    }

    /// The qualified name an `import` (or C# `using`) of the file gives
    /// `class`.
    fn imported(&self, class: &str) -> Option<String> {
        let re = self.patterns.get(format!(
            r"^\s*(?:import|using)\s+(?:static\s+)?([\w.]+\.{})\s*;",
            regex::escape(class)
        ))?;
        self.shown
            .values()
            .find_map(|t| Some(re.captures(t)?.get(1)?.as_str().to_string()))
    }

    /// Whether a file read declares `class`, and the bodies of `method`
    /// in each file that declares, implements or extends it.
    fn bodies(&self, class: &str, method: &str) -> (bool, Vec<(&'a str, u32)>) {
        let class_re = regex::escape(class);
        let (Some(declares), Some(derives)) = (
            self.patterns.get(format!(
                r"\b(?:class|interface|enum|record|struct)\s+{class_re}\b"
            )),
            self.patterns.get(format!(
                r"\b(?:class|enum|record|struct)\s+[\w$]+[^{{;]*(?:\b(?:implements|extends)\b|:)[^{{;]*\b{class_re}\b"
            )),
        ) else {
            return (false, Vec::new());
        };
        let mut declared = false;
        let mut out = Vec::new();
        let files: &'a super::Files = self.files;
        for (path, lines) in files {
            if path == self.path || family(path) != Some(Family::Braces) {
                continue;
            }
            let mut related = false;
            for text in lines.values() {
                let code = code_of(text, Family::Braces).0;
                if declares.is_match(&code) {
                    declared = true;
                    related = true;
                } else if derives.is_match(&code) {
                    related = true;
                }
            }
            if related {
                out.extend(
                    definitions_in(Family::Braces, lines, method, self.patterns)
                        .into_iter()
                        .map(|def| (path.as_str(), def)),
                );
            }
        }
        (declared || !out.is_empty(), out)
    }

    /// Follows a call of `class`'s `method` (written `name`, with `args`)
    /// into its bodies in other files: a source there confirms, an
    /// unknown there stays unknown, and the parameters the bodies return
    /// are followed into the arguments. Whether the call was followed:
    /// when not, the reason is recorded and, for a class no file read
    /// declares, the class is wanted.
    pub(super) fn foreign_call(
        &mut self,
        class: &str,
        method: &str,
        name: &str,
        args: &[String],
        depth: u32,
    ) -> bool {
        let (declared, bodies) = self.bodies(class, method);
        if bodies.is_empty() {
            if declared {
                self.unknown(format!(
                    "a call to `{name}` (no body of `{method}` in `{class}` or a class that implements it, in the files read)"
                ));
            } else {
                self.wants.insert(class.to_string());
                self.unknown(format!(
                    "a call to `{name}` (class `{class}` is in no file read)"
                ));
            }
            return false;
        }
        let level = self.helper.as_ref().map_or(0, |(l, _)| *l) + 1;
        if level > HELPER_DEPTH {
            self.unknown(format!("a call to `{name}` (followed too far)"));
            return false;
        }
        let mut uses = BTreeSet::new();
        for (path, def) in bodies {
            let Some(shown) = self.files.get(path) else {
                continue;
            };
            let file = HelperFile {
                path,
                files: self.files,
                patterns: self.patterns,
                shown,
                go: false,
            };
            let value = Trace::helper_value(self.table, Family::Braces, file, def, level);
            self.elsewhere.push((path.to_string(), def));
            self.elsewhere
                .extend(value.flow.iter().map(|n| (path.to_string(), *n)));
            self.elsewhere.extend(value.elsewhere);
            self.wants.extend(value.wants);
            if let Some((line, kind)) = value.source {
                let at = self.at;
                self.source.get_or_insert((
                    at,
                    format!("{kind} (returned by `{class}.{method}`, {path}:{line})"),
                ));
                return true;
            }
            if let Some(unknown) = value.unknown {
                self.unknown(format!("{unknown} in `{class}.{method}` ({path}:{def})"));
            }
            uses.extend(value.uses);
        }
        for i in uses {
            match args.get(i) {
                Some(arg) => self.expr(arg, &[], depth + 1),
                None => self.unknown(format!(
                    "a call to `{name}` with fewer arguments than it reads"
                )),
            }
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Files, Judged, Patterns, SourceTable, judge};
    use crate::util::numbered;
    use std::collections::BTreeMap;

    /// Judges the line marked `SINK` of `main` (path `web/Main.java`) with
    /// `others` read beside it.
    fn judge_with(main: &str, others: &[(&str, &str)], rule: &str) -> Judged {
        let table = SourceTable::bundled().unwrap();
        let mut files: Files = BTreeMap::new();
        files.insert("web/Main.java".into(), numbered(main));
        for (path, text) in others {
            files.insert((*path).into(), numbered(text));
        }
        let line = main.lines().position(|l| l.contains("SINK")).unwrap() as u32 + 1;
        judge(
            table,
            &Patterns::default(),
            &crate::engine::syntax::Trees::default(),
            "web/Main.java",
            &files,
            line,
            Some(rule),
        )
    }

    const HOLDER: &str = "package app.util;\n\
        public class Holder {\n\
        \x20   private HttpServletRequest request;\n\
        \x20   public Holder(HttpServletRequest request) { this.request = request; }\n\
        \x20   public String fromRequest(String p) {\n\
        \x20       return request.getParameter(p);\n\
        \x20   }\n\
        \x20   public String fixed(String p) {\n\
        \x20       return \"bar\";\n\
        \x20   }\n\
        \x20   public String stored() {\n\
        \x20       return this.request.toString();\n\
        \x20   }\n\
        }\n";

    fn servlet(call: &str) -> String {
        format!(
            "package app.web;\n\
             public class Main extends HttpServlet {{\n\
             \x20 public void doPost(HttpServletRequest request, HttpServletResponse response) {{\n\
             \x20   app.util.Holder h = new app.util.Holder(request);\n\
             \x20   String v = {call};\n\
             \x20   String sql = \"SELECT * FROM t WHERE a = '\" + v + \"'\";\n\
             \x20   connection.createStatement().execute(sql); // SINK\n\
             \x20 }}\n\
             }}\n"
        )
    }

    #[test]
    fn a_method_of_another_files_class_is_followed_into_what_it_returns() {
        let others = [("app/util/Holder.java", HOLDER)];
        let j = judge_with(&servlet("h.fixed(\"k\")"), &others, "sql/execute-dynamic");
        assert_eq!(j.verdict, "refuted", "{j:?}");
        assert!(j.why.contains("app/util/Holder.java"), "{}", j.why);
        assert_eq!(j.elsewhere[0], ("app/util/Holder.java".to_string(), 8));
        let j = judge_with(
            &servlet("h.fromRequest(\"k\")"),
            &others,
            "sql/execute-dynamic",
        );
        assert_eq!(j.verdict, "confirmed", "{j:?}");
        assert!(j.why.contains("`Holder.fromRequest`"), "{}", j.why);
        assert!(j.why.contains("app/util/Holder.java:6"), "{}", j.why);
        // A value kept in the object is not followed: uncertain.
        let j = judge_with(&servlet("h.stored()"), &others, "sql/execute-dynamic");
        assert_eq!(j.verdict, "uncertain", "{j:?}");
        assert!(j.wants.is_empty());
    }

    #[test]
    fn a_method_called_on_a_new_object_is_followed_and_its_arguments_only_if_read() {
        let others = [("app/util/Holder.java", HOLDER)];
        let on_new = |call: &str| {
            servlet(call).replace("app.util.Holder h = new app.util.Holder(request);", "")
        };
        let j = judge_with(
            &on_new("new app.util.Holder(request).fixed(\"k\")"),
            &others,
            "sql/execute-dynamic",
        );
        assert_eq!(j.verdict, "refuted", "{j:?}");
        let j = judge_with(
            &on_new("new app.util.Holder(request).fromRequest(\"k\")"),
            &others,
            "sql/execute-dynamic",
        );
        assert_eq!(j.verdict, "confirmed", "{j:?}");
        let j = judge_with(
            &on_new("new app.util.Holder(request).stored()"),
            &others,
            "sql/execute-dynamic",
        );
        assert_eq!(j.verdict, "uncertain", "{j:?}");
        // A pure method of the object (its text) keeps the arguments.
        let j = judge_with(
            &on_new("new app.util.Holder(request.getParameter(\"x\")).toString()"),
            &others,
            "sql/execute-dynamic",
        );
        assert_ne!(j.verdict, "refuted", "{j:?}");
    }

    const TOOLS: &str = "package app.util;\n\
        public class Tools {\n\
        \x20   public static String command(String p) {\n\
        \x20       return \"echo\";\n\
        \x20   }\n\
        \x20   public static String home(String k) {\n\
        \x20       return System.getenv(k);\n\
        \x20   }\n\
        }\n";

    #[test]
    fn a_static_call_given_literals_is_followed_into_its_class_not_taken_as_a_constant() {
        let others = [("app/util/Tools.java", TOOLS)];
        let j = judge_with(
            &servlet("app.util.Tools.command(\"k\")"),
            &others,
            "sql/execute-dynamic",
        );
        assert_eq!(j.verdict, "refuted", "{j:?}");
        assert_eq!(j.elsewhere[0], ("app/util/Tools.java".to_string(), 3));
        // What the method returns decides, not that it was given literals.
        let j = judge_with(
            &servlet("app.util.Tools.home(\"k\")"),
            &others,
            "sql/execute-dynamic",
        );
        assert_ne!(j.verdict, "refuted", "{j:?}");
        // Its class not read: uncertain, and the class is wanted.
        let j = judge_with(
            &servlet("app.util.Tools.command(\"k\")"),
            &[],
            "sql/execute-dynamic",
        );
        assert_eq!(j.verdict, "uncertain", "{j:?}");
        assert_eq!(j.wants.iter().collect::<Vec<_>>(), ["Tools"]);
    }

    #[test]
    fn a_class_no_file_read_declares_is_wanted_and_the_library_is_not() {
        let j = judge_with(&servlet("h.fixed(\"k\")"), &[], "sql/execute-dynamic");
        assert_eq!(j.verdict, "uncertain");
        assert!(
            j.why.contains("class `Holder` is in no file read"),
            "{}",
            j.why
        );
        assert_eq!(j.wants.iter().collect::<Vec<_>>(), ["Holder"]);
        // `java.net.URI` is the platform's: not looked for.
        let j = judge_with(
            &servlet("new java.net.URI(request.getRequestURI()).getQuery()").replace(
                "String v = new java.net.URI(request.getRequestURI()).getQuery();",
                "java.net.URI u = new java.net.URI(x);\n    String v = u.getQuery();",
            ),
            &[],
            "sql/execute-dynamic",
        );
        assert!(j.wants.is_empty(), "{j:?}");
    }

    #[test]
    fn an_interfaces_call_follows_every_class_that_implements_it() {
        let iface = "package app.util;\npublic interface Shape {\n    String pass(String s);\n}\n";
        let one = "package app.util;\npublic class One implements Shape {\n    public String pass(String s) {\n        String r = s;\n        return r;\n    }\n}\n";
        let two = "package app.util;\npublic class Two implements app.util.Shape {\n    public String pass(String s) {\n        StringBuilder b = new StringBuilder(s);\n        return b.toString();\n    }\n}\n";
        let others = [
            ("app/util/Shape.java", iface),
            ("app/util/One.java", one),
            ("app/util/Two.java", two),
        ];
        let call = |arg: &str| {
            servlet(&format!("shape.pass({arg})")).replace(
                "app.util.Holder h = new app.util.Holder(request);",
                "app.util.Shape shape = app.util.Factory.make();",
            )
        };
        let j = judge_with(&call("\"constant\""), &others, "sql/execute-dynamic");
        assert_eq!(j.verdict, "refuted", "{j:?}");
        let files: Vec<&str> = j.elsewhere.iter().map(|(p, _)| p.as_str()).collect();
        assert!(files.contains(&"app/util/One.java") && files.contains(&"app/util/Two.java"));
        let j = judge_with(
            &call("request.getParameter(\"p\")"),
            &others,
            "sql/execute-dynamic",
        );
        assert_eq!(j.verdict, "confirmed", "{j:?}");
        // One implementation that keeps state makes the call unknown.
        let three = "package app.util;\npublic class Three implements Shape {\n    private String last;\n    public String pass(String s) {\n        return last;\n    }\n}\n";
        let mut more = others.to_vec();
        more.push(("app/util/Three.java", three));
        let j = judge_with(&call("\"constant\""), &more, "sql/execute-dynamic");
        assert_eq!(j.verdict, "uncertain", "{j:?}");
        assert!(j.why.contains("Three.java"), "{}", j.why);
    }
}
