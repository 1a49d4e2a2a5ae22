use super::*;

fn parsed(path: &str, text: &str) -> Syntax {
    parse(path, text, &Limits::default()).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The lines of `text` as the rules read them, trimmed at the end.
fn code(path: &str, text: &str) -> Vec<String> {
    parsed(path, text)
        .code_lines()
        .into_iter()
        .map(|l| l.trim_end().to_string())
        .collect()
}

#[test]
fn comments_and_docstrings_are_blanked_and_code_and_strings_are_not() {
    let java = "class A {\n  // Runtime.exec(cmd)\n  /* exec(\n   x) */ int a = 1;\n  String s = \"// not a comment\";\n}";
    assert_eq!(
        code("A.java", java),
        [
            "class A {",
            "",
            "",
            "         int a = 1;",
            "  String s = \"// not a comment\";",
            "}"
        ]
    );
    let python = "def f(x):\n    \"\"\"os.system(x) is what we avoid.\"\"\"\n    # eval(x)\n    return x  # eval\n";
    assert_eq!(
        code("a.py", python),
        ["def f(x):", "", "", "    return x", ""]
    );
    let php = "<?php\n# system($_GET['c']);\n$a = 1; // exec($a)\necho \"# $a\";\n";
    assert_eq!(
        code("a.php", php),
        ["<?php", "", "$a = 1;", "echo \"# $a\";", ""]
    );
    let ruby = "=begin\nsystem(params[:x])\n=end\nputs 1\n";
    assert_eq!(code("a.rb", ruby), ["", "", "", "puts 1", ""]);
}

#[test]
fn a_multibyte_comment_keeps_the_columns_of_the_code_after_it() {
    let js = "/* é */ eval(x);\n";
    let lines = code("a.js", js);
    assert_eq!(lines[0].find("eval"), js.find("eval"));
}

#[test]
fn a_file_over_the_size_limit_is_not_parsed() {
    let limits = Limits {
        max_bytes: 10,
        ..Limits::default()
    };
    assert_eq!(
        parse("a.py", "x = 1 + 2 + 3\n", &limits).err(),
        Some(Unparsed::TooLarge {
            bytes: 14,
            limit: 10
        })
    );
}

#[test]
fn a_parse_past_its_budget_is_cancelled() {
    let limits = Limits {
        budget: Duration::ZERO,
        ..Limits::default()
    };
    let text = "x = [1, 2, (3 + 4) * f(y)]\n".repeat(20_000);
    assert_eq!(
        parse("a.py", &text, &limits).err(),
        Some(Unparsed::OverTime(0))
    );
}

#[test]
fn a_tree_deeper_than_the_limit_is_not_used_and_a_deep_one_is_walked_without_recursion() {
    let deep = format!("x = {}1{}\n", "(".repeat(50_000), ")".repeat(50_000));
    let limits = Limits {
        max_depth: 1_000,
        ..Limits::default()
    };
    assert_eq!(
        parse("a.py", &deep, &limits).err(),
        Some(Unparsed::TooDeep(1_000))
    );
    // Within a limit high enough, the walk goes down 50,000 levels by its
    // cursor: no stack to overflow.
    let limits = Limits {
        max_depth: usize::MAX,
        ..Limits::default()
    };
    let s = parse("a.py", &deep, &limits).unwrap();
    assert_eq!(s.errors, 0);
}

#[test]
fn a_file_without_a_grammar_is_left_to_the_line_rules() {
    assert_eq!(
        parse("build.kt", "fun main() {}", &Limits::default()).err(),
        Some(Unparsed::NoGrammar)
    );
}

#[test]
fn text_that_is_not_code_parses_with_errors_counted_never_a_panic() {
    let s = parsed("a.java", "}}}} class ((( \u{0} \"unterminated\n");
    assert!(s.errors > 0);
    let s = parsed("a.py", "");
    assert_eq!((s.errors, s.code_lines()), (0, vec![String::new()]));
}

#[test]
fn the_run_parses_a_text_once_and_a_changed_text_again() {
    let trees = Trees::default();
    let a = trees.get("a.py", "x = 1\n");
    let b = trees.get("a.py", "x = 1\n");
    assert!(Arc::ptr_eq(&a, &b));
    let c = trees.get("a.py", "x = 2\n");
    assert!(!Arc::ptr_eq(&a, &c));
    let d = trees.get("b.py", "x = 1\n");
    assert!(!Arc::ptr_eq(&a, &d));
}

#[test]
fn the_run_keeps_parsed_texts_under_its_size() {
    let trees = Trees {
        keep_bytes: 12 * TREE_WEIGHT,
        ..Trees::default()
    };
    let a = trees.get("a.py", "x = 1\n");
    trees.get("b.py", "y = 1\n");
    trees.get("c.py", "z = 1\n");
    // `a.py` was let go: asked again, it is parsed again.
    assert!(!Arc::ptr_eq(&a, &trees.get("a.py", "x = 1\n")));
    assert!(trees.lock().bytes <= 12 * TREE_WEIGHT);
}

#[test]
fn a_forgotten_tree_weighs_nothing_and_is_parsed_again_when_asked() {
    let trees = Trees::default();
    let a = trees.get("a.py", "x = 1\n");
    let kept = trees.get("b.py", "y = 1\n");
    trees.forget("a.py", "x = 1\n");
    assert_eq!(trees.lock().bytes, 6 * TREE_WEIGHT);
    assert!(!Arc::ptr_eq(&a, &trees.get("a.py", "x = 1\n")));
    assert!(Arc::ptr_eq(&kept, &trees.get("b.py", "y = 1\n")));
    // Forgetting what is not kept changes nothing.
    trees.forget("c.py", "z = 1\n");
    assert_eq!(trees.lock().bytes, 12 * TREE_WEIGHT);
}

#[test]
fn whole_text_is_only_for_lines_from_the_first_without_a_gap() {
    let lines = [(1, "a"), (2, "b")];
    assert_eq!(whole_text(lines.into_iter()), Some("a\nb".into()));
    let gap = [(1, "a"), (3, "b")];
    assert_eq!(whole_text(gap.into_iter()), None);
    let later = [(2, "b")];
    assert_eq!(whole_text(later.into_iter()), None);
}

#[test]
fn the_node_on_a_row_holds_every_node_starting_there_and_nothing_of_other_rows() {
    let code = "def f(x):\n    a = 1; b = g(x,\n        2)\n    return a\n\n";
    let syntax = parse("r.py", code, &Limits::default()).unwrap();
    // Two statements on one row: the node holding both (here the body,
    // which starts there).
    let node = syntax.node_on_row(1).unwrap();
    assert_eq!(node.start_position().row, 1);
    let text = syntax.text_of(node);
    assert!(text.starts_with("a = 1; b = g(x,"), "{text}");
    // A row inside a call that started above: the smallest node holding
    // the row's text (the arguments), where the walk finds the `2`.
    let node = syntax.node_on_row(2).unwrap();
    assert_eq!(syntax.text_of(node), "(x,\n        2)");
    assert_eq!(syntax.text_of(syntax.node_on_row(3).unwrap()), "return a");
    // A blank row and a row past the end hold nothing.
    assert!(syntax.node_on_row(4).is_none());
    assert!(syntax.node_on_row(40).is_none());
}
