//! Languages by file name and extension: what the inventory records, the
//! rules match on, and the offline engine explores. A leaf: it imports
//! nothing of the crate.

/// The language of a path, by extension or well-known name.
pub(crate) fn language_of(path: &str) -> Option<&'static str> {
    let name = path.rsplit('/').next().unwrap_or(path);
    let by_name = match name {
        "Dockerfile" | "Containerfile" => Some("dockerfile"),
        "Makefile" | "makefile" | "GNUmakefile" => Some("make"),
        "Jenkinsfile" => Some("groovy"),
        "Gemfile" | "Rakefile" => Some("ruby"),
        _ if name.starts_with("Dockerfile.") => Some("dockerfile"),
        _ if name.starts_with(".env") => Some("dotenv"),
        _ => None,
    };
    if by_name.is_some() {
        return by_name;
    }
    Some(match extension(path).as_str() {
        "rs" => "rust",
        "py" | "pyi" | "pyw" => "python",
        "js" | "mjs" | "cjs" | "jsx" => "javascript",
        "ts" | "tsx" | "mts" | "cts" => "typescript",
        "java" => "java",
        "kt" | "kts" => "kotlin",
        "go" => "go",
        "c" | "h" => "c",
        "cc" | "cpp" | "cxx" | "hpp" | "hh" | "hxx" => "cpp",
        "cs" => "csharp",
        "rb" => "ruby",
        "php" => "php",
        "sh" | "bash" | "zsh" | "ksh" => "shell",
        "ps1" | "psm1" => "powershell",
        "sql" => "sql",
        "yml" | "yaml" => "yaml",
        "toml" => "toml",
        "json" | "jsonc" => "json",
        "html" | "htm" => "html",
        "erb" => "erb",
        "j2" | "jinja" | "jinja2" => "jinja",
        "css" | "scss" | "sass" | "less" => "css",
        "tf" | "hcl" => "terraform",
        "scala" | "sc" => "scala",
        "swift" => "swift",
        "m" | "mm" => "objective-c",
        "lua" => "lua",
        "pl" | "pm" => "perl",
        "r" => "r",
        "dart" => "dart",
        "ex" | "exs" => "elixir",
        "erl" | "hrl" => "erlang",
        "hs" => "haskell",
        "ml" | "mli" => "ocaml",
        "clj" | "cljs" => "clojure",
        "groovy" | "gradle" => "groovy",
        "vue" => "vue",
        "svelte" => "svelte",
        "zig" => "zig",
        "nim" => "nim",
        "sol" => "solidity",
        "proto" => "protobuf",
        "md" | "markdown" => "markdown",
        "xml" => "xml",
        "ini" | "cfg" | "conf" => "ini",
        "s" | "asm" => "assembly",
        _ => return None,
    })
}

/// The lowercase extension of a path's file name (none for dotfiles).
pub(crate) fn extension(path: &str) -> String {
    let name = path.rsplit('/').next().unwrap_or(path);
    match name.rsplit_once('.') {
        Some((stem, ext)) if !stem.is_empty() => ext.to_ascii_lowercase(),
        _ => String::new(),
    }
}
