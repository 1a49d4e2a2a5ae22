//! Unit tests of the HTML page's pieces: escaping, the CSP hashes, the
//! evidence block and the charts.

use super::*;

#[test]
fn text_escapes_markup_and_shows_bidirectional_controls() {
    assert_eq!(
        text("<script>alert('x')</script> & \"q\""),
        "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; &quot;q&quot;"
    );
    // A right-to-left override would make `gnp.exe` read `exe.png`.
    assert_eq!(
        text("a\u{202E}gnp.exe"),
        "a<span class=\"ctl\">U+202E</span>gnp.exe"
    );
    assert_eq!(
        text("nul\u{0}x\r\n"),
        "nul<span class=\"ctl\">U+0000</span>x\n"
    );
    assert_eq!(
        attr("\"><img src=x onerror=alert(1)>"),
        "&quot;&gt;&lt;img src=x onerror=alert(1)&gt;"
    );
    assert_eq!(attr("a\nb\u{2066}"), "aU+000AbU+2066");
    // Right-to-left text itself is kept: it is text, not a control.
    assert_eq!(text("שלום"), "שלום");
}

#[test]
fn base64_matches_known_vectors() {
    for (input, expected) in [
        ("", ""),
        ("f", "Zg=="),
        ("fo", "Zm8="),
        ("foo", "Zm9v"),
        ("foobar", "Zm9vYmFy"),
    ] {
        assert_eq!(base64(input.as_bytes()), expected);
    }
    // The SHA-256 of "" as CSP writes it (`openssl dgst -sha256 -binary | base64`).
    assert_eq!(
        sha256_source(""),
        "sha256-47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU="
    );
}

#[test]
fn evidence_is_numbered_from_the_cited_line_and_the_range_highlighted() {
    let html = code("a <b>\nsecond\nthird", 10, 11);
    assert_eq!(
        html,
        "<pre class=\"code\"><span class=\"l hl\"><span class=\"n\">10</span>a &lt;b&gt;</span><span class=\"l hl\"><span class=\"n\">11</span>second</span><span class=\"l\"><span class=\"n\">12</span>third</span></pre>\n"
    );
}

#[test]
fn bars_scale_to_the_largest_and_escape_labels() {
    let svg = bars(
        "t",
        &[
            ("<a>".into(), 4, "fill-high".into()),
            ("b".into(), 1, "fill-low".into()),
            ("c".into(), 0, "fill-low".into()),
        ],
    );
    assert!(svg.contains("width=\"300\""), "{svg}");
    assert!(svg.contains("width=\"75\""), "{svg}");
    assert!(svg.contains("width=\"0\""), "{svg}");
    assert!(svg.contains("&lt;a&gt;") && !svg.contains("<a>"));
}

#[test]
fn directories_of_paths() {
    assert_eq!(dir_of("a/b/c.rs"), "a/b");
    assert_eq!(dir_of("c.rs"), ".");
}

#[test]
fn the_page_allows_only_its_own_style_and_script() {
    let head = format!(
        "style-src '{}'; script-src '{}'",
        sha256_source(CSS),
        sha256_source(SCRIPT)
    );
    assert!(head.starts_with("style-src 'sha256-"));
    // Nothing in the page's own code reaches out or uses inline styles,
    // which the policy would block.
    for needle in [
        "http://",
        "https://",
        "fetch(",
        "XMLHttpRequest",
        "style=",
        "eval(",
    ] {
        assert!(!SCRIPT.contains(needle), "script contains {needle}");
    }
    assert!(!CSS.contains("url("), "the style loads nothing");
}
