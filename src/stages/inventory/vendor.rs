//! The built-in list of vendored and generated paths (`configs/vendor.toml`,
//! after GitHub Linguist) compiled into one [`RegexSet`], and the decision
//! that weighs it against the `.gitattributes` lines.

use std::sync::LazyLock;

use regex::RegexSet;
use serde::Deserialize;

use super::gitattributes::{AttrMatch, AttrState, Attributes};
use super::{RuleSource, SkipReason};

/// The built-in list's name in error messages.
const BUILTIN_RULES_FILE: &str = "configs/vendor.toml";

/// The built-in list, compiled once per process.
static BUILTIN_RULES: LazyLock<Result<VendorRules, VendorRulesError>> = LazyLock::new(|| {
    VendorRules::parse(
        BUILTIN_RULES_FILE,
        include_str!("../../../configs/vendor.toml"),
    )
});

/// A list of vendored and generated path rules that cannot be used.
#[derive(Clone, Debug, thiserror::Error)]
pub enum VendorRulesError {
    #[error("{location}: {message}")]
    Syntax { location: String, message: String },
    #[error("{file}: [{section}] {pattern:?} is not a valid regex: {error}")]
    Pattern {
        file: String,
        section: &'static str,
        pattern: String,
        error: String,
    },
    #[error("{file}: [lock_files] {name:?} is not a file name (it must be non-empty, without `/`)")]
    LockName { file: String, name: String },
    #[error("{file}: the patterns do not compile together: {error}")]
    Set { file: String, error: String },
}

/// What a list entry marks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum RuleKind {
    Vendored,
    Generated,
    Lock,
}

#[derive(Debug)]
struct BuiltinRule {
    kind: RuleKind,
    /// As written in the list: a regex, or a lock file's name.
    shown: String,
}

/// Linguist-style rules for vendored and generated paths: regexes matched
/// against the repo-relative `/` path, all compiled into one [`RegexSet`].
#[derive(Debug)]
pub(crate) struct VendorRules {
    set: RegexSet,
    /// By set index, in the order vendored, generated, lock files.
    rules: Vec<BuiltinRule>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct VendorFile {
    vendored: PatternList,
    generated: PatternList,
    lock_files: NameList,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PatternList {
    patterns: Vec<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct NameList {
    names: Vec<String>,
}

impl VendorRules {
    /// The built-in list, `configs/vendor.toml`, compiled on first use.
    pub(crate) fn builtin() -> Result<&'static Self, VendorRulesError> {
        BUILTIN_RULES.as_ref().map_err(Clone::clone)
    }

    /// Parses and compiles a list in the format of `configs/vendor.toml`;
    /// `file` names it in errors.
    pub(crate) fn parse(file: &str, text: &str) -> Result<Self, VendorRulesError> {
        let parsed: VendorFile = toml::from_str(text).map_err(|e| {
            let line = e
                .span()
                .map(|s| text.get(..s.start).unwrap_or(text).matches('\n').count() + 1);
            VendorRulesError::Syntax {
                location: match line {
                    Some(l) => format!("{file}:{l}"),
                    None => file.to_string(),
                },
                message: e.message().to_string(),
            }
        })?;
        let mut rules = Vec::new();
        let mut regexes = Vec::new();
        for (kind, patterns) in [
            (RuleKind::Vendored, parsed.vendored.patterns),
            (RuleKind::Generated, parsed.generated.patterns),
        ] {
            for pattern in patterns {
                regexes.push(pattern.clone());
                rules.push(BuiltinRule {
                    kind,
                    shown: pattern,
                });
            }
        }
        for name in parsed.lock_files.names {
            if name.is_empty() || name.contains('/') {
                return Err(VendorRulesError::LockName {
                    file: file.to_string(),
                    name,
                });
            }
            regexes.push(format!("(^|/){}$", regex::escape(&name)));
            rules.push(BuiltinRule {
                kind: RuleKind::Lock,
                shown: name,
            });
        }
        let set = RegexSet::new(&regexes).map_err(|set_error| {
            // Name the pattern at fault when one alone does not compile.
            rules
                .iter()
                .zip(&regexes)
                .find_map(|(rule, regex)| {
                    regex::Regex::new(regex)
                        .err()
                        .map(|e| VendorRulesError::Pattern {
                            file: file.to_string(),
                            section: match rule.kind {
                                RuleKind::Vendored => "vendored",
                                RuleKind::Generated => "generated",
                                RuleKind::Lock => "lock_files",
                            },
                            pattern: rule.shown.clone(),
                            error: e.to_string(),
                        })
                })
                .unwrap_or_else(|| VendorRulesError::Set {
                    file: file.to_string(),
                    error: set_error.to_string(),
                })
        })?;
        Ok(Self { set, rules })
    }

    /// The number of patterns and names.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.rules.len()
    }

    /// The first rule of each kind that matches `path`. One pass of the set
    /// over the path; the rare match is then resolved to its rules.
    pub(super) fn matches(&self, path: &str) -> BuiltinMatch {
        let mut matched = BuiltinMatch::default();
        if !self.set.is_match(path) {
            return matched;
        }
        for index in self.set.matches(path).iter() {
            let Some(rule) = self.rules.get(index) else {
                continue;
            };
            let slot = match rule.kind {
                RuleKind::Vendored => &mut matched.vendored,
                RuleKind::Generated => &mut matched.generated,
                RuleKind::Lock => &mut matched.lock,
            };
            slot.get_or_insert(index);
        }
        matched
    }

    fn shown(&self, index: usize) -> String {
        self.rules
            .get(index)
            .map(|r| r.shown.clone())
            .unwrap_or_default()
    }
}

/// Which built-in rules matched one path (indices into [`VendorRules`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct BuiltinMatch {
    vendored: Option<usize>,
    generated: Option<usize>,
    lock: Option<usize>,
}

impl BuiltinMatch {
    /// Whether the built-in list alone skips the file.
    pub(super) fn skips(&self, include_vendored: bool) -> bool {
        self.lock.is_some()
            || (!include_vendored && (self.vendored.is_some() || self.generated.is_some()))
    }
}

/// Decides, from the built-in list and `.gitattributes`, whether a file is
/// skipped as vendored or generated.
pub(super) struct Decide<'a> {
    pub(super) rules: &'a VendorRules,
    pub(super) attributes: Attributes,
    pub(super) include_vendored: bool,
}

/// Which rule marked a file.
#[derive(Clone, Copy)]
enum Mark {
    Builtin(usize),
    Attr(usize),
}

impl Decide<'_> {
    pub(super) fn reason(&self, builtin: BuiltinMatch, attrs: AttrMatch) -> Option<SkipReason> {
        // A set attribute marks the file, an unset one clears the built-in
        // mark, an unspecified one (or none) leaves the built-in list's.
        let pick = |attr: Option<(AttrState, usize)>, builtin: Option<usize>| match attr {
            Some((AttrState::Set, index)) => Some(Mark::Attr(index)),
            Some((AttrState::Unset, _)) => None,
            Some((AttrState::Unspecified, _)) | None => builtin.map(Mark::Builtin),
        };
        let vendored = pick(attrs.vendored, builtin.vendored);
        let generated = pick(attrs.generated, builtin.generated);
        let lock = match attrs.generated {
            Some((AttrState::Unset, _)) => None,
            _ => builtin.lock,
        };
        if !self.include_vendored
            && let Some(mark) = vendored
        {
            let (rule, source) = self.describe(mark);
            return Some(SkipReason::Vendored { rule, source });
        }
        if let Some(index) = lock {
            return Some(SkipReason::Generated {
                rule: self.rules.shown(index),
                source: RuleSource::LockFile,
            });
        }
        if !self.include_vendored
            && let Some(mark) = generated
        {
            let (rule, source) = self.describe(mark);
            return Some(SkipReason::Generated { rule, source });
        }
        None
    }

    fn describe(&self, mark: Mark) -> (String, RuleSource) {
        match mark {
            Mark::Builtin(index) => (self.rules.shown(index), RuleSource::Linguist),
            Mark::Attr(index) => match self.attributes.rules.get(index) {
                Some(rule) => (
                    rule.pattern.clone(),
                    RuleSource::Gitattributes {
                        file: rule.file.clone(),
                        line: rule.line,
                    },
                ),
                None => (String::new(), RuleSource::Linguist),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn builtin_kind(path: &str) -> Option<(RuleKind, String)> {
        let rules = VendorRules::builtin().unwrap();
        let m = rules.matches(path);
        let (kind, index) = match (m.vendored, m.lock, m.generated) {
            (Some(i), _, _) => (RuleKind::Vendored, i),
            (None, Some(i), _) => (RuleKind::Lock, i),
            (None, None, Some(i)) => (RuleKind::Generated, i),
            (None, None, None) => return None,
        };
        Some((kind, rules.shown(index)))
    }

    #[test]
    fn the_builtin_list_compiles_and_follows_linguist() {
        let rules = VendorRules::builtin().unwrap();
        assert!(rules.len() > 100, "{}", rules.len());
        let vendored = [
            "vendor/github.com/x/y.go",
            "lib/Vendor/a.php",
            "third_party/zlib/zlib.c",
            "src/3rd-party/x.c",
            "web/node_modules/left-pad/index.js",
            "bower_components/a/b.js",
            "src/main/resources/webgoat/static/js/libs/jquery-ui-1.10.4.js",
            "static/js/libs/jquery-base.js",
            "static/js/jquery.js",
            "static/js/libs/ace.js",
            "static/css/bootstrap.css",
            "static/js/bootstrap-tooltip.js",
            "static/js/wysihtml5-0.3.0.js",
            "static/js/underscore.js",
            "static/js/backbone-1.4.0.js",
            "types/index.d.ts",
            "gradlew",
            "docs/_build/html/x.js",
            ".venv/lib/python3.12/site-packages/flask/app.py",
            "app/venv/bin/activate_this.py",
            "env/lib/python3.11/site-packages/requests/api.py",
            "usr/lib/python3/dist-packages/yaml/a.py",
            "__pypackages__/3.11/lib/click/core.py",
            ".tox/py311/lib/x.py",
            ".virtualenvs/app/lib/x.py",
        ];
        for path in vendored {
            let kind = builtin_kind(path).map(|(k, _)| k);
            assert_eq!(kind, Some(RuleKind::Vendored), "{path}");
        }
        let generated = [
            "web/app.min.js",
            "web/backbone-min.js",
            "web/site.min.css",
            "web/app.js.map",
            "api/v1/service.pb.go",
            "py/service_pb2.py",
            "py/service_pb2_grpc.py",
            "App/Form1.Designer.cs",
            "pkg/apis/zz_generated.deepcopy.go",
            "src/__generated__/Query.graphql.ts",
        ];
        for path in generated {
            let kind = builtin_kind(path).map(|(k, _)| k);
            assert_eq!(kind, Some(RuleKind::Generated), "{path}");
        }
        for path in [
            "Cargo.lock",
            "web/package-lock.json",
            "go.sum",
            "infra/.terraform.lock.hcl",
        ] {
            let kind = builtin_kind(path).map(|(k, _)| k);
            assert_eq!(kind, Some(RuleKind::Lock), "{path}");
        }
        let own = [
            "src/main.rs",
            "src/bootstrap/app.js",
            "src/angular/app/main.js",
            "src/vendoring.rs",
            "app/controllers/vendor_controller.rb",
            "static/js/webgoat.js",
            "static/js/goatApp/view/MenuView.js",
            "Jenkinsfile",
            ".github/workflows/ci.yml",
            "src/Cargo.lock.rs",
            "tools/release.sh",
            "src/venvtools/create.py",
            "app/environment.py",
            "src/packages/site.py",
        ];
        for path in own {
            assert_eq!(builtin_kind(path), None, "{path}");
        }
        assert_eq!(
            builtin_kind("vendor/a.js").map(|(_, r)| r).as_deref(),
            Some("(^|/)[Vv]endors?/")
        );
    }

    #[test]
    fn a_malformed_list_is_a_typed_error_naming_the_place() {
        let e = VendorRules::parse(
            "v.toml",
            "[vendored]\npatterns = ['(']\n[generated]\npatterns = []\n[lock_files]\nnames = []\n",
        )
        .unwrap_err();
        assert!(
            matches!(&e, VendorRulesError::Pattern { section: "vendored", pattern, .. } if pattern == "("),
            "{e}"
        );
        assert!(
            e.to_string()
                .starts_with("v.toml: [vendored] \"(\" is not a valid regex"),
            "{e}"
        );
        let e = VendorRules::parse(
            "v.toml",
            "[vendored]\npatterns = []\n[generated]\npattern = []\n",
        )
        .unwrap_err();
        assert!(matches!(e, VendorRulesError::Syntax { .. }), "{e}");
        assert!(e.to_string().starts_with("v.toml:4:"), "{e}");
        let e = VendorRules::parse("v.toml", "[vendored]\npatterns = []\n[generated]\npatterns = []\n[lock_files]\nnames = ['a/b.lock']\n").unwrap_err();
        assert!(matches!(e, VendorRulesError::LockName { .. }), "{e}");
        let ok = VendorRules::parse("v.toml", "[vendored]\npatterns = ['x/']\n[generated]\npatterns = []\n[lock_files]\nnames = ['a.lock']\n").unwrap();
        assert_eq!(ok.len(), 2);
        assert_eq!(ok.matches("b/a.lock").lock, Some(1));
        assert_eq!(ok.matches("ba.lock"), BuiltinMatch::default());
    }
}
