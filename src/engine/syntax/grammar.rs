//! Which tree-sitter grammar reads a file, and whether this build has it.
//!
//! Each grammar crate sits behind a `lang-*` cargo feature (all on by
//! default). A file whose language has no grammar in this build is read by
//! the line rules alone, and the report says so.

use tree_sitter::Language;

use crate::util::language::{extension, language_of};

/// A grammar the engine knows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) enum Grammar {
    C,
    Cpp,
    CSharp,
    Go,
    Java,
    JavaScript,
    Php,
    Python,
    Ruby,
    Rust,
    TypeScript,
    Tsx,
}

impl Grammar {
    /// The grammar that reads `path`, by its language (and `.tsx`), if the
    /// engine knows one for it (whether or not this build has it).
    pub(crate) fn of_path(path: &str) -> Option<Self> {
        Some(match language_of(path)? {
            "c" => Self::C,
            "cpp" => Self::Cpp,
            "csharp" => Self::CSharp,
            "go" => Self::Go,
            "java" => Self::Java,
            "javascript" => Self::JavaScript,
            "php" => Self::Php,
            "python" => Self::Python,
            "ruby" => Self::Ruby,
            "rust" => Self::Rust,
            "typescript" if extension(path) == "tsx" => Self::Tsx,
            "typescript" => Self::TypeScript,
            _ => return None,
        })
    }

    /// The name the report uses.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::C => "c",
            Self::Cpp => "cpp",
            Self::CSharp => "csharp",
            Self::Go => "go",
            Self::Java => "java",
            Self::JavaScript => "javascript",
            Self::Php => "php",
            Self::Python => "python",
            Self::Ruby => "ruby",
            Self::Rust => "rust",
            Self::TypeScript => "typescript",
            Self::Tsx => "tsx",
        }
    }

    /// The cargo feature that brings this grammar.
    pub(crate) fn feature(self) -> &'static str {
        match self {
            Self::C => "lang-c",
            Self::Cpp => "lang-cpp",
            Self::CSharp => "lang-csharp",
            Self::Go => "lang-go",
            Self::Java => "lang-java",
            Self::JavaScript => "lang-javascript",
            Self::Php => "lang-php",
            Self::Python => "lang-python",
            Self::Ruby => "lang-ruby",
            Self::Rust => "lang-rust",
            Self::TypeScript | Self::Tsx => "lang-typescript",
        }
    }

    /// The grammar itself, when this build has it.
    pub(crate) fn language(self) -> Option<Language> {
        #[allow(unreachable_patterns)] // every arm is there with all features on
        match self {
            #[cfg(feature = "lang-c")]
            Self::C => Some(tree_sitter_c::LANGUAGE.into()),
            #[cfg(feature = "lang-cpp")]
            Self::Cpp => Some(tree_sitter_cpp::LANGUAGE.into()),
            #[cfg(feature = "lang-csharp")]
            Self::CSharp => Some(tree_sitter_c_sharp::LANGUAGE.into()),
            #[cfg(feature = "lang-go")]
            Self::Go => Some(tree_sitter_go::LANGUAGE.into()),
            #[cfg(feature = "lang-java")]
            Self::Java => Some(tree_sitter_java::LANGUAGE.into()),
            #[cfg(feature = "lang-javascript")]
            Self::JavaScript => Some(tree_sitter_javascript::LANGUAGE.into()),
            // PHP files are HTML with `<?php` islands: the grammar that
            // reads both.
            #[cfg(feature = "lang-php")]
            Self::Php => Some(tree_sitter_php::LANGUAGE_PHP.into()),
            #[cfg(feature = "lang-python")]
            Self::Python => Some(tree_sitter_python::LANGUAGE.into()),
            #[cfg(feature = "lang-ruby")]
            Self::Ruby => Some(tree_sitter_ruby::LANGUAGE.into()),
            #[cfg(feature = "lang-rust")]
            Self::Rust => Some(tree_sitter_rust::LANGUAGE.into()),
            #[cfg(feature = "lang-typescript")]
            Self::TypeScript => Some(tree_sitter_typescript::LANGUAGE_TYPESCRIPT.into()),
            #[cfg(feature = "lang-typescript")]
            Self::Tsx => Some(tree_sitter_typescript::LANGUAGE_TSX.into()),
            _ => None,
        }
    }

    /// The grammar's tags query (tree-sitter's `tags.scm`: what defines
    /// and what references a name), when this build has the grammar.
    /// TypeScript's adds its own forms to JavaScript's.
    pub(crate) fn tags_query(self) -> Option<String> {
        #[allow(unreachable_patterns)] // every arm is there with all features on
        match self {
            #[cfg(feature = "lang-c")]
            Self::C => Some(tree_sitter_c::TAGS_QUERY.into()),
            #[cfg(feature = "lang-cpp")]
            Self::Cpp => Some(tree_sitter_cpp::TAGS_QUERY.into()),
            #[cfg(feature = "lang-csharp")]
            Self::CSharp => Some(tree_sitter_c_sharp::TAGS_QUERY.into()),
            #[cfg(feature = "lang-go")]
            Self::Go => Some(tree_sitter_go::TAGS_QUERY.into()),
            #[cfg(feature = "lang-java")]
            Self::Java => Some(tree_sitter_java::TAGS_QUERY.into()),
            #[cfg(feature = "lang-javascript")]
            Self::JavaScript => Some(tree_sitter_javascript::TAGS_QUERY.into()),
            #[cfg(feature = "lang-php")]
            Self::Php => Some(tree_sitter_php::TAGS_QUERY.into()),
            #[cfg(feature = "lang-python")]
            Self::Python => Some(tree_sitter_python::TAGS_QUERY.into()),
            #[cfg(feature = "lang-ruby")]
            Self::Ruby => Some(tree_sitter_ruby::TAGS_QUERY.into()),
            #[cfg(feature = "lang-rust")]
            Self::Rust => Some(tree_sitter_rust::TAGS_QUERY.into()),
            #[cfg(all(feature = "lang-typescript", feature = "lang-javascript"))]
            Self::TypeScript | Self::Tsx => Some(format!(
                "{}\n{}",
                tree_sitter_javascript::TAGS_QUERY,
                tree_sitter_typescript::TAGS_QUERY
            )),
            #[cfg(feature = "lang-typescript")]
            Self::TypeScript | Self::Tsx => Some(tree_sitter_typescript::TAGS_QUERY.into()),
            _ => None,
        }
    }

    /// Every grammar, in order.
    #[cfg(test)]
    pub(crate) const ALL: [Self; 12] = [
        Self::C,
        Self::Cpp,
        Self::CSharp,
        Self::Go,
        Self::Java,
        Self::JavaScript,
        Self::Php,
        Self::Python,
        Self::Ruby,
        Self::Rust,
        Self::TypeScript,
        Self::Tsx,
    ];
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[cfg(feature = "all-languages")]
    fn every_grammar_of_a_full_build_loads_into_a_parser() {
        for grammar in Grammar::ALL {
            let Some(language) = grammar.language() else {
                panic!("{} is missing from a default build", grammar.name());
            };
            let mut parser = tree_sitter::Parser::new();
            parser
                .set_language(&language)
                .unwrap_or_else(|e| panic!("{}: {e}", grammar.name()));
        }
    }

    #[test]
    fn files_find_their_grammar() {
        assert_eq!(Grammar::of_path("a/b.py"), Some(Grammar::Python));
        assert_eq!(Grammar::of_path("ui/App.tsx"), Some(Grammar::Tsx));
        assert_eq!(Grammar::of_path("ui/app.ts"), Some(Grammar::TypeScript));
        assert_eq!(Grammar::of_path("x.h"), Some(Grammar::C));
        assert_eq!(Grammar::of_path("x.hpp"), Some(Grammar::Cpp));
        assert_eq!(Grammar::of_path("run.kt"), None);
        assert_eq!(Grammar::of_path("README.md"), None);
    }
}
