//! `.gitattributes` files: the lines that set `linguist-vendored` or
//! `linguist-generated`, read as git reads them, and their patterns compiled
//! into one [`GlobSet`] in git's order of precedence.

use std::path::Path;

use globset::{Candidate, GlobBuilder, GlobSet, GlobSetBuilder};

/// A Linguist attribute's state on one `.gitattributes` line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum AttrState {
    /// `linguist-vendored`, or any value but `false`.
    Set,
    /// `-linguist-vendored` or `linguist-vendored=false`: overrides the
    /// built-in list.
    Unset,
    /// `!linguist-vendored`: back to what the built-in list says.
    Unspecified,
}

/// One `.gitattributes` line that mentions a Linguist attribute.
#[derive(Clone, Debug, PartialEq, Eq)]
struct AttrLine {
    /// 1-based.
    line: usize,
    /// As written (unquoted), relative to the file's directory.
    pattern: String,
    vendored: Option<AttrState>,
    generated: Option<AttrState>,
}

/// The Linguist lines of one `.gitattributes` file.
#[derive(Clone, Debug)]
pub(super) struct AttrFile {
    /// Repo-relative directory of the file, `""` at the root.
    dir: String,
    lines: Vec<AttrLine>,
}

/// Git ignores attribute files from this size on, and longer lines.
const ATTR_MAX_FILE_BYTES: u64 = 100 * 1024 * 1024;
const ATTR_MAX_LINE_BYTES: usize = 2048;

/// Reads `dir/.gitattributes` if there is one with Linguist lines. Like
/// git, a symlinked `.gitattributes` is not followed; invalid UTF-8 is read
/// lossily.
pub(super) fn read_gitattributes(dir: &Path, rel_dir: &str) -> Option<AttrFile> {
    let path = dir.join(".gitattributes");
    let meta = std::fs::symlink_metadata(&path).ok()?;
    if !meta.is_file() || meta.len() >= ATTR_MAX_FILE_BYTES {
        return None;
    }
    let bytes = std::fs::read(&path).ok()?;
    let lines = parse_gitattributes(&String::from_utf8_lossy(&bytes));
    (!lines.is_empty()).then(|| AttrFile {
        dir: rel_dir.to_string(),
        lines,
    })
}

/// The lines of a `.gitattributes` file that set, unset or unspecify
/// `linguist-vendored` or `linguist-generated`. A line git would ignore
/// (a `!pattern`, an invalid attribute name, a macro definition, one over
/// 2048 bytes) is ignored here too.
fn parse_gitattributes(text: &str) -> Vec<AttrLine> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut out = Vec::new();
    for (index, raw) in text.split('\n').enumerate() {
        if raw.len() >= ATTR_MAX_LINE_BYTES {
            tracing::debug!(
                ".gitattributes:{}: line over {ATTR_MAX_LINE_BYTES} bytes ignored",
                index + 1
            );
            continue;
        }
        if let Some(line) = parse_attr_line(raw, index + 1) {
            out.push(line);
        }
    }
    out
}

fn is_blank(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\r' | '\n')
}

fn parse_attr_line(raw: &str, line: usize) -> Option<AttrLine> {
    let text = raw.trim_start_matches(is_blank);
    if text.is_empty() || text.starts_with('#') {
        return None;
    }
    let (pattern, rest) = match text.strip_prefix('"').and_then(unquote_c_style) {
        Some(quoted) => quoted,
        None => {
            let end = text.find(is_blank).unwrap_or(text.len());
            (text[..end].to_string(), &text[end..])
        }
    };
    // `[attr]name ...` defines a macro; `!pattern` is refused by git.
    if pattern.is_empty() || pattern.starts_with("[attr]") || pattern.starts_with('!') {
        return None;
    }
    let mut vendored = None;
    let mut generated = None;
    for token in rest.split(is_blank).filter(|t| !t.is_empty()) {
        let (name, state) = if let Some(name) = token.strip_prefix('-') {
            (name, AttrState::Unset)
        } else if let Some(name) = token.strip_prefix('!') {
            (name, AttrState::Unspecified)
        } else if let Some((name, value)) = token.split_once('=') {
            // Linguist: any value but "false" counts as set.
            let state = if value == "false" {
                AttrState::Unset
            } else {
                AttrState::Set
            };
            (name, state)
        } else {
            (token, AttrState::Set)
        };
        let valid = !name.is_empty()
            && !name.starts_with('-')
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'));
        if !valid {
            // Git drops the whole line over one bad attribute name.
            tracing::debug!(".gitattributes:{line}: invalid attribute {name:?}; line ignored");
            return None;
        }
        // Later on the line wins, as in git.
        match name {
            "linguist-vendored" => vendored = Some(state),
            "linguist-generated" => generated = Some(state),
            _ => {}
        }
    }
    (vendored.is_some() || generated.is_some()).then_some(AttrLine {
        line,
        pattern,
        vendored,
        generated,
    })
}

/// Git's C-style quoting of a pattern, after the opening quote: the
/// unquoted pattern and the rest of the line, or `None` if malformed (git
/// then reads the pattern unquoted).
fn unquote_c_style(text: &str) -> Option<(String, &str)> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'"' => return Some((String::from_utf8_lossy(&out).into_owned(), &text[i + 1..])),
            b'\\' => {
                let escaped = *bytes.get(i + 1)?;
                i += 2;
                out.push(match escaped {
                    b'a' => 0x07,
                    b'b' => 0x08,
                    b'f' => 0x0c,
                    b'n' => b'\n',
                    b'r' => b'\r',
                    b't' => b'\t',
                    b'v' => 0x0b,
                    b'\\' | b'"' => escaped,
                    b'0'..=b'3' => {
                        let digits = bytes.get(i..i + 2)?;
                        if !digits.iter().all(|d| (b'0'..=b'7').contains(d)) {
                            return None;
                        }
                        i += 2;
                        ((escaped - b'0') << 6) | ((digits[0] - b'0') << 3) | (digits[1] - b'0')
                    }
                    _ => return None,
                });
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    None
}

/// The glob (for `globset`, with `literal_separator`) that matches the
/// repo-relative paths a `.gitattributes` pattern in `dir` matches, by
/// git's rules: a pattern without `/` matches a name at any depth below
/// `dir`, one with a `/` is relative to `dir`; `**` is special only as a
/// whole path component; a pattern ending in `/` matches directories only,
/// so never a file (`None`), as does a malformed one.
fn attr_glob(dir: &str, pattern: &str) -> Option<String> {
    if pattern.ends_with('/') {
        return None;
    }
    let anywhere = !pattern.contains('/');
    let pattern = pattern.strip_prefix('/').unwrap_or(pattern);
    let mut glob = String::with_capacity(dir.len() + pattern.len() + 8);
    for c in dir.chars() {
        match c {
            '?' | '*' | '[' | ']' | '{' | '}' => {
                glob.push('[');
                glob.push(c);
                glob.push(']');
            }
            '\\' => glob.push_str("\\\\"),
            c => glob.push(c),
        }
    }
    if !dir.is_empty() {
        glob.push('/');
    }
    if anywhere {
        glob.push_str("**/");
    }
    let chars: Vec<char> = pattern.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        match chars[i] {
            '\\' => {
                // An escape at the end matches nothing in git.
                let next = *chars.get(i + 1)?;
                glob.push('\\');
                glob.push(next);
                i += 2;
            }
            '[' => {
                let mut end = i + 1;
                if matches!(chars.get(end), Some('!' | '^')) {
                    end += 1;
                }
                if chars.get(end) == Some(&']') {
                    end += 1;
                }
                while end < chars.len() && chars[end] != ']' {
                    end += if chars[end] == '\\' { 2 } else { 1 };
                }
                // An unclosed class matches nothing in git.
                if end >= chars.len() {
                    return None;
                }
                glob.push('[');
                for (k, &c) in chars.iter().enumerate().take(end + 1).skip(i + 1) {
                    glob.push(if k == i + 1 && c == '^' { '!' } else { c });
                }
                i = end + 1;
            }
            '*' => {
                let start = i;
                while chars.get(i) == Some(&'*') {
                    i += 1;
                }
                let whole = (start == 0 || chars[start - 1] == '/')
                    && (i == chars.len() || chars[i] == '/');
                glob.push_str(if i - start >= 2 && whole { "**" } else { "*" });
            }
            c @ ('{' | '}') => {
                glob.push('[');
                glob.push(c);
                glob.push(']');
                i += 1;
            }
            c => {
                glob.push(c);
                i += 1;
            }
        }
    }
    Some(glob)
}

/// One compiled `.gitattributes` line.
#[derive(Debug)]
pub(super) struct AttrRule {
    /// The `.gitattributes` file, repo-relative.
    pub(super) file: String,
    pub(super) line: usize,
    pub(super) pattern: String,
    pub(super) vendored: Option<AttrState>,
    pub(super) generated: Option<AttrState>,
}

/// Every `.gitattributes` line of the walk in one [`GlobSet`], in
/// precedence order: shallower files first, then by line, so the highest
/// matching index wins (deeper files and later lines override, as in git).
#[derive(Debug, Default)]
pub(super) struct Attributes {
    pub(super) set: GlobSet,
    pub(super) rules: Vec<AttrRule>,
}

/// The deciding `.gitattributes` line of each attribute for one path
/// (index into [`Attributes`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct AttrMatch {
    pub(super) vendored: Option<(AttrState, usize)>,
    pub(super) generated: Option<(AttrState, usize)>,
}

impl Attributes {
    pub(super) fn build(mut files: Vec<AttrFile>) -> Self {
        files.sort_by(|a, b| {
            let depth = |d: &str| {
                if d.is_empty() {
                    0
                } else {
                    d.matches('/').count() + 1
                }
            };
            depth(&a.dir)
                .cmp(&depth(&b.dir))
                .then_with(|| a.dir.cmp(&b.dir))
        });
        let mut builder = GlobSetBuilder::new();
        let mut rules = Vec::new();
        for file in files {
            let name = if file.dir.is_empty() {
                ".gitattributes".to_string()
            } else {
                format!("{}/.gitattributes", file.dir)
            };
            for line in file.lines {
                let Some(glob) = attr_glob(&file.dir, &line.pattern) else {
                    tracing::debug!("{name}:{}: pattern matches no file", line.line);
                    continue;
                };
                match GlobBuilder::new(&glob)
                    .literal_separator(true)
                    .backslash_escape(true)
                    .build()
                {
                    Ok(compiled) => {
                        builder.add(compiled);
                        rules.push(AttrRule {
                            file: name.clone(),
                            line: line.line,
                            pattern: line.pattern,
                            vendored: line.vendored,
                            generated: line.generated,
                        });
                    }
                    Err(e) => tracing::debug!("{name}:{}: pattern ignored: {e}", line.line),
                }
            }
        }
        match builder.build() {
            Ok(set) => Self { set, rules },
            Err(e) => {
                tracing::warn!(".gitattributes: Linguist attributes ignored: {e}");
                Self::default()
            }
        }
    }

    pub(super) fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// The last line that sets each attribute for `path`.
    pub(super) fn lookup(&self, path: &str, scratch: &mut Vec<usize>) -> AttrMatch {
        let mut found = AttrMatch::default();
        if self.rules.is_empty() {
            return found;
        }
        self.set
            .matches_candidate_into(&Candidate::new(path), scratch);
        for &index in scratch.iter().rev() {
            let Some(rule) = self.rules.get(index) else {
                continue;
            };
            if found.vendored.is_none() {
                found.vendored = rule.vendored.map(|s| (s, index));
            }
            if found.generated.is_none() {
                found.generated = rule.generated.map(|s| (s, index));
            }
            if found.vendored.is_some() && found.generated.is_some() {
                break;
            }
        }
        found
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gitattributes_lines_parse_as_git_reads_them() {
        let text = "\u{feff}# comment\n\
            vendor/ours.js -linguist-vendored\r\n\
            \tsrc/gen/** linguist-vendored\n\
            *.gen.ts linguist-generated=true text\n\
            a.js linguist-vendored=false linguist-generated\n\
            b.js !linguist-vendored\n\
            c.js linguist-vendored -linguist-vendored\n\
            \"with space/*.js\" linguist-vendored\n\
            \"q\\\\\\101.js\" linguist-vendored\n\
            !neg.js linguist-vendored\n\
            bad.js linguist-vendored in/valid\n\
            [attr]third linguist-vendored\n\
            *.sh text eol=lf\n\
            \n";
        let lines = parse_gitattributes(text);
        let got: Vec<(usize, &str, Option<AttrState>, Option<AttrState>)> = lines
            .iter()
            .map(|l| (l.line, l.pattern.as_str(), l.vendored, l.generated))
            .collect();
        use AttrState::{Set, Unset, Unspecified};
        assert_eq!(
            got,
            vec![
                (2, "vendor/ours.js", Some(Unset), None),
                (3, "src/gen/**", Some(Set), None),
                (4, "*.gen.ts", None, Some(Set)),
                (5, "a.js", Some(Unset), Some(Set)),
                (6, "b.js", Some(Unspecified), None),
                (7, "c.js", Some(Unset), None),
                (8, "with space/*.js", Some(Set), None),
                (9, "q\\A.js", Some(Set), None),
            ]
        );
        let long = format!(
            "{} linguist-vendored\nok.js linguist-vendored\n",
            "x".repeat(3000)
        );
        assert_eq!(parse_gitattributes(&long).len(), 1);
        assert_eq!(parse_gitattributes(&long)[0].line, 2);
        // An unterminated quote: git reads the pattern unquoted.
        assert_eq!(
            parse_gitattributes("\"a.js linguist-vendored")[0].pattern,
            "\"a.js"
        );
    }

    #[test]
    fn gitattributes_patterns_become_globs_by_gits_rules() {
        let cases = [
            ("", "*.js", Some("**/*.js")),
            ("", "/vendor/*.js", Some("vendor/*.js")),
            ("", "src/gen/**", Some("src/gen/**")),
            ("web", "*.js", Some("web/**/*.js")),
            ("web", "lib/*.js", Some("web/lib/*.js")),
            ("web", "/lib/**/x.js", Some("web/lib/**/x.js")),
            ("", "a**b/c", Some("a*b/c")),
            ("", "**/gen/**", Some("**/gen/**")),
            ("", "{a,b}.js", Some("**/[{]a,b[}].js")),
            ("", "[^a]x.js", Some("**/[!a]x.js")),
            ("", "vendor/", None),
            ("", "[ab.js", None),
            ("", "a\\", None),
            ("d[1]", "x.js", Some("d[[]1[]]/**/x.js")),
        ];
        for (dir, pattern, glob) in cases {
            assert_eq!(
                attr_glob(dir, pattern).as_deref(),
                glob,
                "{dir:?} {pattern:?}"
            );
        }
    }
}
