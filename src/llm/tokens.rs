//! Counting tokens: exactly with the model family's own tokenizer where one
//! is public, otherwise as bytes / 3.
//!
//! Takes a model name; gives a [`TokenCounter`] that counts text. OpenAI's
//! models use the BPE encodings `o200k_base` (GPT-4o, GPT-4.1, GPT-4.5,
//! GPT-5, the o-series, gpt-oss) and `cl100k_base` (GPT-4, GPT-3.5, the
//! embedding models), counted with `bpe-openai` (GitHub's tokenizer crate:
//! tiktoken's counts; chosen over `tiktoken-rs`, which an earlier
//! measurement here found four times slower on code and slower to load;
//! `benches/tokens.rs` measures this crate's load and speed). Any other model
//! (Claude, Llama, Qwen, DeepSeek, ...) has no public tokenizer we can
//! ship, so it is counted as bytes / 3 and a run calibrates that on the
//! server's own counts (`budget.rs`). A leaf: it imports nothing of the
//! crate but the bytes estimate.

#[cfg(feature = "openai-tokenizer")]
use bpe_openai::Tokenizer;

/// How text is turned into a token count.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
// Built without the `openai-tokenizer` feature, no model is counted with
// an encoding.
#[cfg_attr(not(feature = "openai-tokenizer"), allow(dead_code))]
pub(crate) enum TokenCounter {
    /// bytes / 3, rounded up: a deliberately high estimate for code.
    #[default]
    Bytes,
    /// OpenAI's `o200k_base` encoding.
    O200k,
    /// OpenAI's `cl100k_base` encoding.
    Cl100k,
}

/// Model-name prefixes and their encodings, most specific first, after
/// tiktoken's own table. A router's `vendor/` prefix and a fine-tune's
/// `ft:` are stripped before matching.
const FAMILIES: &[(&str, TokenCounter)] = &[
    ("gpt-4o", TokenCounter::O200k),
    ("chatgpt-4o", TokenCounter::O200k),
    ("gpt-4.1", TokenCounter::O200k),
    ("gpt-4.5", TokenCounter::O200k),
    ("gpt-5", TokenCounter::O200k),
    ("gpt-oss", TokenCounter::O200k),
    ("codex-", TokenCounter::O200k),
    ("o1", TokenCounter::O200k),
    ("o3", TokenCounter::O200k),
    ("o4", TokenCounter::O200k),
    ("gpt-4", TokenCounter::Cl100k),
    ("gpt-3.5", TokenCounter::Cl100k),
    ("gpt-35", TokenCounter::Cl100k),
    ("text-embedding-3", TokenCounter::Cl100k),
    ("text-embedding-ada-002", TokenCounter::Cl100k),
];

impl TokenCounter {
    /// The counter for `model`: its family's encoding when it is one of
    /// OpenAI's (and the binary has the `openai-tokenizer` feature), else
    /// bytes / 3.
    pub(crate) fn for_model(model: &str) -> Self {
        if cfg!(not(feature = "openai-tokenizer")) {
            return Self::Bytes;
        }
        let name = model.rsplit('/').next().unwrap_or(model);
        let name = name
            .strip_prefix("ft:")
            .unwrap_or(name)
            .to_ascii_lowercase();
        FAMILIES
            .iter()
            .find(|(prefix, _)| {
                // `o1` must not take `o1x-custom` for OpenAI's o1, nor a
                // name like `omni`: the o-series is `o1`, `o1-mini`, ...
                name.strip_prefix(prefix).is_some_and(|rest| {
                    !prefix.starts_with('o')
                        || rest.is_empty()
                        || rest.starts_with('-')
                        || rest.starts_with('.')
                })
            })
            .map_or(Self::Bytes, |(_, counter)| *counter)
    }

    /// How it counts, as reports name it.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::Bytes => "bytes / 3",
            Self::O200k => "o200k_base",
            Self::Cl100k => "cl100k_base",
        }
    }

    /// Whether it is the model's own tokenizer (its counts are exact).
    pub(crate) fn exact(self) -> bool {
        match self {
            Self::Bytes => false,
            Self::O200k | Self::Cl100k => true,
        }
    }

    /// The tokens of `text`.
    pub(crate) fn count(self, text: &str) -> u64 {
        match self {
            Self::Bytes => crate::util::estimate_tokens(text.len() as u64),
            Self::O200k | Self::Cl100k => self.count_bpe(text),
        }
    }

    /// The tokens of `bytes` read from a file (not UTF-8: counted as the
    /// text a tool would show, with replacement characters).
    pub(crate) fn count_bytes(self, bytes: &[u8]) -> u64 {
        match self {
            Self::Bytes => crate::util::estimate_tokens(bytes.len() as u64),
            Self::O200k | Self::Cl100k => self.count(&String::from_utf8_lossy(bytes)),
        }
    }

    /// Counted with the BPE tokenizer, loaded once per process on first
    /// use (about 70 ms): an immutable table.
    #[cfg(feature = "openai-tokenizer")]
    fn count_bpe(self, text: &str) -> u64 {
        let tokenizer: &Tokenizer = match self {
            Self::O200k => bpe_openai::o200k_base(),
            Self::Cl100k => bpe_openai::cl100k_base(),
            Self::Bytes => return crate::util::estimate_tokens(text.len() as u64),
        };
        tokenizer.count(text) as u64
    }

    /// Without the tables (never reached: [`TokenCounter::for_model`]
    /// gives only bytes / 3 then).
    #[cfg(not(feature = "openai-tokenizer"))]
    fn count_bpe(self, text: &str) -> u64 {
        crate::util::estimate_tokens(text.len() as u64)
    }
}

#[cfg(all(test, feature = "openai-tokenizer"))]
mod tests {
    use super::*;

    #[test]
    fn openai_families_get_their_encoding_and_others_bytes() {
        for (model, counter) in [
            ("gpt-4o", TokenCounter::O200k),
            ("gpt-4o-mini-2024-07-18", TokenCounter::O200k),
            ("openai/gpt-4.1-mini", TokenCounter::O200k),
            ("gpt-5", TokenCounter::O200k),
            ("o1", TokenCounter::O200k),
            ("o3-mini", TokenCounter::O200k),
            ("o4-mini", TokenCounter::O200k),
            ("ft:gpt-4o-mini:acme::abc", TokenCounter::O200k),
            ("GPT-4o", TokenCounter::O200k),
            ("gpt-4-turbo", TokenCounter::Cl100k),
            ("gpt-4", TokenCounter::Cl100k),
            ("gpt-3.5-turbo", TokenCounter::Cl100k),
            ("claude-sonnet-4-5", TokenCounter::Bytes),
            ("qwen2.5-coder:1.5b", TokenCounter::Bytes),
            ("deepseek-chat", TokenCounter::Bytes),
            ("o1x-custom", TokenCounter::Bytes),
            ("omni-moderation", TokenCounter::Bytes),
            ("rules", TokenCounter::Bytes),
            ("", TokenCounter::Bytes),
        ] {
            assert_eq!(TokenCounter::for_model(model), counter, "{model}");
        }
    }

    #[test]
    fn counts_with_the_encoding_or_as_bytes_over_three() {
        // tiktoken: "hello world" is 2 tokens in both encodings.
        assert_eq!(TokenCounter::O200k.count("hello world"), 2);
        assert_eq!(TokenCounter::Cl100k.count("hello world"), 2);
        assert_eq!(TokenCounter::Bytes.count("hello world"), 4);
        assert_eq!(TokenCounter::O200k.count(""), 0);
        // Not UTF-8: counted as the text a tool shows.
        assert_eq!(
            TokenCounter::O200k.count_bytes(b"hello \xff"),
            TokenCounter::O200k.count("hello \u{fffd}")
        );
        assert_eq!(TokenCounter::Bytes.count_bytes(b"abcd"), 2);
        let code = "fn main() {\n    let x = compute(1, \"two\");\n    println!(\"{x}\");\n}\n";
        let exact = TokenCounter::O200k.count(code) as f64;
        assert!((15.0..40.0).contains(&exact), "{exact}");
        assert_eq!(TokenCounter::O200k.name(), "o200k_base");
        assert!(TokenCounter::Cl100k.exact() && !TokenCounter::Bytes.exact());
    }
}
