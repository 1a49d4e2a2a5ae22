//! Secret redaction, applied to every tool result before it can reach a
//! provider.
//!
//! Takes a file's text; gives the text with each secret replaced by a
//! marker naming its kind (`[REDACTED:aws-access-key]`) and the list of
//! redactions (line, kind). Each redaction becomes a finding of the tool
//! layer itself: no model sees the secret, so none could report it.

use regex::Regex;
use serde::Serialize;

use crate::util::{ascii_word_boundaries, builtin_regex};

/// Pattern group meaning "the first capture group that took part".
const FIRST_GROUP: usize = usize::MAX;
/// Pattern group meaning "group 1, an unquoted value" (checked harder).
const UNQUOTED: usize = usize::MAX - 1;

/// One redacted secret.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub(crate) struct Redaction {
    /// 1-indexed line.
    pub line: u32,
    /// The kind, as the marker names it.
    pub kind: &'static str,
}

struct Pattern {
    kind: &'static str,
    regex: Regex,
    /// The capture group holding the secret (0: the whole match).
    group: usize,
}

/// The compiled secret patterns. Build once per run and share.
pub(crate) struct Redactor {
    patterns: Vec<Pattern>,
    begin_key: Regex,
    end_key: Regex,
    /// Every pattern at once over a whole text: most files hold no secret,
    /// and one pass over them replaces a pass per pattern per line.
    any: regex::RegexSet,
    /// Every pattern at once over one line, in `patterns`' order: only the
    /// patterns that match a line are run for their captures on it.
    per_line: regex::RegexSet,
}

/// A set of built-in patterns; one that does not compile is a fanscan bug
/// and fails loudly, as [`builtin_regex`] does.
fn builtin_set(patterns: impl IntoIterator<Item = String>) -> regex::RegexSet {
    regex::RegexSet::new(patterns).unwrap_or_else(|e| {
        panic!("a built-in secret pattern does not compile (a fanscan bug): {e}")
    })
}

const PLACEHOLDER_WORDS: &[&str] = &[
    "example",
    "changeme",
    "placeholder",
    "your",
    "xxxx",
    "dummy",
    "redacted",
    "secret123",
];

/// Values that are stand-ins when they are the whole value.
const DUMMY_VALUES: &[&str] = &[
    "pass", "password", "passwd", "secret", "pwd", "test", "user", "username", "foo", "bar",
    "admin", "root", "guest", "changeit", "xxx", "hunter2",
];

impl Redactor {
    /// Compiles the patterns.
    pub(crate) fn new() -> Self {
        let table: &[(&'static str, &str, usize)] = &[
            (
                "aws-access-key",
                r"\b(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}\b",
                0,
            ),
            (
                "aws-secret-key",
                r#"(?i)aws_?secret_?(?:access_?)?key["']?\s*[:=]\s*["']?([A-Za-z0-9/+=]{40})\b"#,
                1,
            ),
            (
                "github-token",
                r"\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{36,}\b",
                0,
            ),
            ("github-token", r"\bgithub_pat_[A-Za-z0-9_]{22,}\b", 0),
            ("slack-token", r"\bxox[baprs]-[A-Za-z0-9-]{10,}", 0),
            (
                "slack-webhook",
                r"https://hooks\.slack\.com/services/[A-Za-z0-9/]{20,}",
                0,
            ),
            ("anthropic-key", r"\bsk-ant-[A-Za-z0-9_-]{20,}", 0),
            (
                "openai-key",
                r"\bsk-(?:proj-|svcacct-)?[A-Za-z0-9_-]{20,}",
                0,
            ),
            ("google-api-key", r"\bAIza[0-9A-Za-z_-]{35}\b", 0),
            ("stripe-key", r"\b(?:sk|rk)_live_[0-9a-zA-Z]{20,}\b", 0),
            // Assignments to secret-looking names (`DB_PASSWORD`,
            // `SECRET_KEY`, `client_secret`): quoted values anywhere...
            (
                "password",
                r#"(?i)(?:^|[^a-z0-9])[a-z0-9_-]*?(?:password|passwd|pwd|secret|api[_-]?key|auth[_-]?token|access[_-]?token|private[_-]?key)[a-z0-9_-]*["']?\s*(?::=|=>|=|:)\s*(?:"([^"\s]{6,})"|'([^'\s]{6,})')"#,
                FIRST_GROUP,
            ),
            // ...and unquoted ones only as a whole line (`.env`, YAML,
            // properties), never inside code.
            (
                "password",
                r#"(?i)^\s*(?:export\s+)?[a-z0-9_.-]*?(?:password|passwd|pwd|secret|api[_-]?key|auth[_-]?token|access[_-]?token|private[_-]?key)[a-z0-9_-]*\s*(?:=|:)\s*([^"'\s,;#&*:(){}\[\]<>]{8,})\s*$"#,
                UNQUOTED,
            ),
            (
                "url-credentials",
                r"\b[a-z][a-z0-9+.-]*://[^/\s:@]*:([^/\s@]{3,})@",
                1,
            ),
        ];
        let begin = r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----";
        // ASCII word boundaries: a Unicode one sends the regex crate to its
        // slowest engine on any non-ASCII text (a 776 KB Unicode table took
        // 84 s of redaction over its pages).
        let table: Vec<(&'static str, String, usize)> = table
            .iter()
            .map(|(kind, pattern, group)| (*kind, ascii_word_boundaries(pattern), *group))
            .collect();
        let any = builtin_set(
            table
                .iter()
                .map(|(_, pattern, _)| format!("(?m){pattern}"))
                .chain(std::iter::once(begin.to_string())),
        );
        let per_line = builtin_set(table.iter().map(|(_, pattern, _)| pattern.clone()));
        let patterns = table
            .iter()
            .map(|(kind, pattern, group)| Pattern {
                kind,
                regex: builtin_regex(pattern),
                group: *group,
            })
            .collect();
        Self {
            patterns,
            begin_key: builtin_regex(begin),
            any,
            per_line,
            end_key: builtin_regex(r"-----END [A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----"),
        }
    }

    /// Redacts `text`; returns the redacted text and what was redacted.
    /// Line numbers are kept: a redacted line stays one line.
    pub(crate) fn redact(&self, text: &str) -> (String, Vec<Redaction>) {
        if !self.any.is_match(text) {
            return (text.to_string(), Vec::new());
        }
        let mut out = String::with_capacity(text.len());
        let mut found = Vec::new();
        let mut in_key = false;
        for (index, line) in text.split_inclusive('\n').enumerate() {
            let number = u32::try_from(index + 1).unwrap_or(u32::MAX);
            let (body, ending) = match line.strip_suffix('\n') {
                Some(b) => (b, "\n"),
                None => (line, ""),
            };
            if in_key || self.begin_key.is_match(body) {
                if !in_key {
                    found.push(Redaction {
                        line: number,
                        kind: "private-key",
                    });
                }
                in_key = !self.end_key.is_match(body);
                out.push_str("[REDACTED:private-key]");
                out.push_str(ending);
                continue;
            }
            let redacted = self.redact_line(body, number, &mut found);
            out.push_str(&redacted);
            out.push_str(ending);
        }
        (out, found)
    }

    fn redact_line(&self, line: &str, number: u32, found: &mut Vec<Redaction>) -> String {
        let mut line = line.to_string();
        let mut hits = self.per_line.matches(&line);
        for (index, pattern) in self.patterns.iter().enumerate() {
            // A pattern runs for its captures only where it matches the
            // line as it is now (an earlier replacement changes it).
            if !hits.matched(index) {
                continue;
            }
            // Replace from the right so earlier offsets stay valid.
            let spans: Vec<(usize, usize)> = pattern
                .regex
                .captures_iter(&line)
                .filter_map(|c| match pattern.group {
                    FIRST_GROUP => (1..c.len()).find_map(|i| c.get(i)).map(|m| (m, false)),
                    UNQUOTED => c.get(1).map(|m| (m, true)),
                    group => c.get(group).map(|m| (m, false)),
                })
                .filter(|(m, unquoted)| !is_placeholder(pattern.kind, m.as_str(), *unquoted))
                .map(|(m, _)| m)
                .map(|m| (m.start(), m.end()))
                .collect();
            for &(start, end) in spans.iter().rev() {
                line.replace_range(start..end, &format!("[REDACTED:{}]", pattern.kind));
                found.push(Redaction {
                    line: number,
                    kind: pattern.kind,
                });
            }
            if !spans.is_empty() {
                hits = self.per_line.matches(&line);
            }
        }
        line
    }
}

impl Default for Redactor {
    fn default() -> Self {
        Self::new()
    }
}

/// Values that are obviously not real secrets: templates, masks, examples.
fn is_placeholder(kind: &str, value: &str, unquoted: bool) -> bool {
    let lower = value.to_ascii_lowercase();
    let first = value.chars().next().unwrap_or('*');
    let template = value.starts_with('$')
        || value.contains("${")
        || value.contains("{{")
        || (value.starts_with('<') && value.ends_with('>'))
        || value.contains("%(")
        || value.contains("%s")
        || value.starts_with("REDACTED")
        || value.chars().all(|c| c == first)
        || PLACEHOLDER_WORDS.iter().any(|w| lower.contains(w))
        || DUMMY_VALUES.contains(&lower.as_str());
    if template {
        return true;
    }
    if kind != "password" {
        // Token formats are specific enough; URL-encoded passwords hold `%`.
        return false;
    }
    // An environment variable's name, not its value: `api_key_env = "OPENAI_API_KEY"`.
    let env_name = value
        .chars()
        .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_');
    if env_name {
        return true;
    }
    // A property's key, not its value: `SOCKS_PASSWORD = "java.net.socks.password"`,
    // `"spring.datasource.password"`: dotted lower-case words, the secret's
    // own word among them.
    let property_key = value.contains('.')
        && value
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '.' | '_' | '-'))
        && ["password", "passwd", "pwd", "secret", "key", "token"]
            .iter()
            .any(|w| lower.split(['.', '_', '-']).any(|part| part == *w));
    if property_key {
        return true;
    }
    if unquoted {
        // Unquoted, it may be code (`password = user.password`,
        // `secret = load_secret()`): a secret has digits or symbols and no
        // call or member syntax.
        let code = value.contains(['(', ')', '.', '[', ']', '{', '}', '<', '>', '-'])
            && !value.contains(['!', '@', '#', '%', '^', '&', '*', '+', '=', '~']);
        let secretish = value.chars().any(|c| c.is_ascii_digit())
            || value.contains(['!', '@', '#', '%', '^', '&', '*', '+', '/', '=', '~']);
        return code || !secretish;
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_pattern_compiles() {
        let r = Redactor::new();
        assert_eq!(r.patterns.len(), 13);
        assert_eq!(r.patterns.len(), r.per_line.len());
    }

    #[test]
    fn redacts_each_kind_and_keeps_lines() {
        let r = Redactor::new();
        // fanscan:ignore[secret/aws-access-key] test fixture: the redactor must catch it
        let text = "a\nkey = \"AKIAIOSFODNN7EXAMPLF\"\nghp_abcdefghijklmnopqrstuvwxyz0123456789\n\
                    password = \"hunter22!\"\nSLACK=xoxb-1234567890-abcdef\nok line\n"; // fanscan:ignore[secret/slack-token] test fixture: the redactor must catch it
        let (out, found) = r.redact(text);
        assert_eq!(out.lines().count(), text.lines().count());
        // fanscan:ignore[secret/aws-access-key] test fixture: the redactor must catch it
        assert!(!out.contains("AKIAIOSFODNN7EXAMPLF"));
        assert!(out.contains("[REDACTED:aws-access-key]"));
        assert!(out.contains("[REDACTED:github-token]"));
        assert!(out.contains("password = \"[REDACTED:password]\""));
        assert!(out.contains("[REDACTED:slack-token]"));
        let kinds: Vec<_> = found.iter().map(|f| (f.line, f.kind)).collect();
        assert_eq!(
            kinds,
            vec![
                (2, "aws-access-key"),
                (3, "github-token"),
                (4, "password"),
                (5, "slack-token")
            ]
        );
    }

    #[test]
    fn redacts_whole_private_key_blocks() {
        let r = Redactor::new();
        let text =
            // fanscan:ignore[secret/private-key] test fixture: the redactor must catch it
            "x\n-----BEGIN RSA PRIVATE KEY-----\nMIIEow\nabc\n-----END RSA PRIVATE KEY-----\ny\n";
        let (out, found) = r.redact(text);
        assert_eq!(
            found,
            vec![Redaction {
                line: 2,
                kind: "private-key"
            }]
        );
        assert!(!out.contains("MIIEow"));
        assert!(out.ends_with("y\n"));
        assert_eq!(out.lines().count(), 6);
    }

    #[test]
    fn redacts_common_assignment_forms() {
        let r = Redactor::new();
        for (line, secret) in [
            ("DB_PASSWORD=\"hunter2hunter2\"", "hunter2hunter2"),
            // fanscan:ignore[secret/password] test fixture: the redactor must catch it
            ("SECRET_KEY = 'abcdef123456'", "abcdef123456"),
            ("  client_secret: \"s3cr3t-value\"", "s3cr3t-value"),
            ("password=hunter2hunter2", "hunter2hunter2"),
            ("  password: s3cr3tpass9", "s3cr3tpass9"),
            // fanscan:ignore[secret/url-credentials] test fixture: the redactor must catch it
            ("url = \"postgres://app:p%40ssw0rd@db/x\"", "p%40ssw0rd"),
            // fanscan:ignore[secret/url-credentials] test fixture: the redactor must catch it
            ("REDIS=redis://:s3cret@host:6379", "s3cret"),
            // fanscan:ignore[secret/url-credentials] test fixture: the redactor must catch it
            ("mysql://root:pa$$word@h", "pa$$word"),
        ] {
            let (out, found) = r.redact(line);
            assert!(!out.contains(secret), "{line} -> {out}");
            assert!(!found.is_empty(), "{line}");
        }
    }

    #[test]
    fn a_dotted_value_is_a_key_only_when_it_names_the_secret() {
        let r = Redactor::new();
        let (_, found) = r.redact("db_password = \"blue.harbor.2024\""); // fanscan:ignore[secret/password] test fixture: the redactor must catch it
        assert_eq!(found.len(), 1, "a dotted password is still a password");
        let (_, found) = r.redact("DB_PASSWORD_KEY = \"app.db.password\"");
        assert!(
            found.is_empty(),
            "a property key is not a password: {found:?}"
        );
    }

    #[test]
    fn leaves_placeholders_and_code_alone() {
        let r = Redactor::new();
        for line in [
            "password = \"${DB_PASSWORD}\"",
            "password: \"********\"",
            "let password = read_password();",
            "api_key = \"your-api-key-here\"",
            "x.unwrap_or(0)",
            "api_key_env = \"OPENAI_API_KEY\"",
            "public static final String JAVA_NET_SOCKS_PASSWORD = \"java.net.socks.password\";",
            "db_password_property = \"spring.datasource.password\"",
            "password = user.password",
            "secret = load_secret()",
            "let token = settings_token;",
            "password_hash = hash_password(input)",
            "fn test_with_key(alg: &'static Algorithm, my_private_key: &PrivateKey, test_key: &[u8]) {",
            "let secret = Secret::new(&P_SHA512, SECRET).expect(\"secret created\");",
            "Ok(ConnectionTrafficSecrets::Aes256Gcm { key, iv })",
            "fn new(secrets: &Secrets) -> Self {",
            "/// abc://username:password@example.com:123/path",
            "ret->extended_master_secret = !!extended_master_secret;",
            "    secret: OkmBlock,",
        ] {
            let (out, found) = r.redact(line);
            assert!(found.is_empty(), "{line}");
            assert_eq!(out, line);
        }
    }
}
